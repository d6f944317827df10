"""Pipeline layouts: which layers sit on which (virtual) pipeline stage.

Megatron-core's ``--pipeline-model-parallel-layout`` names every slot of the model in order:
``E`` the embedding, ``t`` a transformer layer, ``m`` a multi-token-prediction layer, ``L`` the
loss (output layer); ``|`` ends a virtual stage, ``x*n`` and ``(...)*n`` repeat, and commas and
spaces only separate. Virtual stages are listed in model order, so stage ``v`` runs on pipeline
rank ``v % pp`` as its chunk ``v // pp`` (Megatron-core
``transformer/pipeline_parallel_layer_layout.py``; its docs split DeepSeek-V3's 61 layers and an
MTP layer over PP16 x VPP2 as ``Et*3|(tt|)*29,m|L``).

The other forms reduce to the same list: Megatron's ``--decoder-first/last-pipeline-num-layers``
(``first:N,last:M``; also BLOOM's DeepSpeed ``type:transformer|embedding`` partition, which
counts each embedding as a layer and so leaves one layer fewer on the first and last stage), and
Megatron-core's ``account_for_embedding_in_pipeline_split`` /
``account_for_loss_in_pipeline_split``, which count the embedding and the loss as one layer each
when splitting evenly (Megatron-Bridge's Llama 3.1 405B recipe: 126 layers + 2 = 128 slots over
PP8 x VPP8).
"""

from __future__ import annotations

import re

from trainsim.errors import ConfigError

SLOTS = frozenset("EtmL")
_REPEAT_GROUP = re.compile(r"\(([^()]*)\)\*(\d+)")
_REPEAT_ONE = re.compile(r"([EtmL])\*(\d+)")
_FIRST_LAST = re.compile(r"^\s*(first\s*:\s*\d+)?\s*,?\s*(last\s*:\s*\d+)?\s*$", re.IGNORECASE)


def is_first_last(text: str) -> bool:
    """Whether ``text`` is the ``first:N,last:M`` form (either part may be missing)."""
    return bool(text.strip()) and bool(_FIRST_LAST.match(text))


def first_last(text: str) -> tuple[int | None, int | None]:
    """Layers on the first and last pipeline stage of a ``first:N,last:M`` layout."""
    found = dict(re.findall(r"(first|last)\s*:\s*(\d+)", text.lower()))
    first, last = found.get("first"), found.get("last")
    return (int(first) if first else None, int(last) if last else None)


MAX_LAYOUT_SLOTS = 1_000_000
"""Most slots a layout string may expand to (model.num_layers is at most 100,000)."""


#: layout keywords that name a rule instead of spelling the stages
LAYOUT_RULES = ("balanced", "front_loaded", "filled")


def _repeat(text: str, count: str, layout: str) -> str:
    """``text`` ``count`` times, refusing an expansion past MAX_LAYOUT_SLOTS before making it."""
    if len(count) > 7 or len(text) * int(count) > MAX_LAYOUT_SLOTS:
        raise ConfigError(f"parallel.pipeline_model_parallel_layout={layout!r} expands to more "
                          f"than {MAX_LAYOUT_SLOTS:,} slots")
    return text * int(count)


def _refuse_rule_words(text: str) -> None:
    """Refuse a layout whose words name layout rules (``balanced,filled``, ``Balanced``) by
    that cause: one rule, spelt as listed, is the whole value; no list of rules is a layout."""
    words = [w for w in re.split(r"[\s,|]+", text) if w]
    rules = [w for w in words if w.lower().replace("-", "_") in LAYOUT_RULES]
    if not rules:
        return
    names = ", ".join(repr(r) for r in LAYOUT_RULES)
    where = f"parallel.pipeline_model_parallel_layout={text!r}"
    if len(words) == 1:
        raise ConfigError(f"{where}: did you mean {rules[0].lower().replace('-', '_')!r}? "
                          f"a layout rule is one of {names}, spelt so")
    raise ConfigError(f"{where} names layout rule(s) {', '.join(map(repr, rules))} in a list: "
                      f"a layout is one rule ({names}) as the whole value, or the stages "
                      "spelt with E, t, m, L and | (e.g. Et*3|(tt|)*29,m|L)")


def parse_layout(text: str) -> tuple[str, ...]:
    """Virtual stages of a Megatron-core layout string, each as its slot letters in order."""
    s = re.sub(r"[\s,]", "", text)
    for _ in range(64):  # innermost groups first; nesting deeper than this is not a layout
        expanded = _REPEAT_GROUP.sub(lambda g: _repeat(g.group(1), g.group(2), text), s)
        if len(expanded) > MAX_LAYOUT_SLOTS:
            raise ConfigError(f"parallel.pipeline_model_parallel_layout={text!r} expands to "
                              f"more than {MAX_LAYOUT_SLOTS:,} slots")
        if expanded == s:
            break
        s = expanded
    s = _REPEAT_ONE.sub(lambda g: _repeat(g.group(1), g.group(2), text), s)
    if len(s) > MAX_LAYOUT_SLOTS:
        raise ConfigError(f"parallel.pipeline_model_parallel_layout={text!r} expands to more "
                          f"than {MAX_LAYOUT_SLOTS:,} slots")
    bad = sorted(set(s) - SLOTS - {"|"})
    if bad:
        _refuse_rule_words(text)
        raise ConfigError(f"parallel.pipeline_model_parallel_layout={text!r}: unknown slot(s) "
                          f"{bad}; use E (embedding), t (layer), m (MTP layer), L (loss), | "
                          "between stages, x*n and (...)*n to repeat")
    return tuple(s.split("|"))


def check_layout(stages: tuple[str, ...], text: str, num_layers: int, mtp_layers: int,
                 pp: int, vpp: int) -> None:
    """Raise a ConfigError naming both counts when the layout does not fit the model or pipeline."""
    where = f"parallel.pipeline_model_parallel_layout={text!r}"
    if len(stages) != pp * vpp:
        raise ConfigError(f"{where} has {len(stages)} virtual stages but pp*vpp={pp}*{vpp}="
                          f"{pp * vpp}")
    joined = "".join(stages)
    if joined.count("t") != num_layers:
        raise ConfigError(f"{where} places {joined.count('t')} transformer layers (t) but "
                          f"model.num_layers={num_layers}")
    if joined.count("m") != mtp_layers:
        raise ConfigError(f"{where} places {joined.count('m')} MTP layers (m) but "
                          f"model.mtp_num_layers={mtp_layers}")
    if joined.count("E") != 1 or "E" not in stages[0]:
        raise ConfigError(f"{where}: the embedding (E) must appear once, in the first stage")
    if joined.count("L") != 1 or "L" not in stages[-1]:
        raise ConfigError(f"{where}: the loss (L) must appear once, in the last stage")
    # Megatron-core PipelineParallelLayerLayout.validate_layer_layout (NVIDIA/Megatron-LM
    # @00caa53a, megatron/core/transformer/pipeline_parallel_layer_layout.py): the flattened
    # layout starts with the embedding and ends with the loss, and no decoder layer follows an
    # MTP layer; within one stage too (``LEt*32`` at pp 1 was accepted: loss before embedding)
    if joined[0] != "E" or joined[-1] != "L":
        raise ConfigError(f"{where}: the layout must start with the embedding (E) and end with "
                          f"the loss (L), as Megatron-core requires; got {joined[0]!r} first, "
                          f"{joined[-1]!r} last")
    if "m" in joined and "t" in joined[joined.index("m"):]:
        raise ConfigError(f"{where}: a transformer layer (t) after an MTP layer (m); "
                          "Megatron-core places every decoder layer before the MTP layers")


def even_layout(num_layers: int, mtp_layers: int, pp: int, vpp: int, embedding: bool,
                loss: bool) -> tuple[str, ...]:
    """Megatron-core's even split with the embedding and/or loss counted as one layer each."""
    slots = ("E" if embedding else "") + "t" * num_layers + "m" * mtp_layers * loss + \
        ("L" if loss else "")
    n = pp * vpp
    if len(slots) % n:
        parts = [f"{num_layers} layers"] + (["the embedding"] if embedding else []) + \
            ([f"{mtp_layers} MTP layers", "the loss"] if loss else [])
        raise ConfigError(f"{' + '.join(parts)} = {len(slots)} slots do not split evenly over "
                          f"pp*vpp={pp}*{vpp}={n} virtual stages; give "
                          "parallel.pipeline_model_parallel_layout")
    each = len(slots) // n
    stages = [slots[i * each:(i + 1) * each] for i in range(n)]
    if not embedding:
        stages[0] = "E" + stages[0]
    if not loss:
        stages[-1] = stages[-1] + "m" * mtp_layers + "L"
    return tuple(stages)


def _cannot_fill(what: str, pp: int, vpp: int, rule: str) -> str:
    """The error of a layout rule that has fewer layers than virtual stages."""
    return (f"{what} cannot fill parallel.pp*vpp={pp}*{vpp}={pp * vpp} virtual stages "
            f"(pipeline_model_parallel_layout={rule})")


def front_loaded_layout(num_layers: int, mtp_layers: int, pp: int,
                        vpp: int) -> tuple[str, ...]:
    """The split that puts the remainder on the first virtual stages: ``num_layers //
    (pp*vpp)`` layers each and one more on each of the first ``num_layers % (pp*vpp)``, the
    embedding with the first stage and the MTP layers and loss with the last (NeMo
    Automodel's ``generate_hf_model_fqn_per_model_part``, pipelining/functional.py @ 89e3a9fd,
    for torch.distributed.pipelining)."""
    n = pp * vpp
    each, extra = divmod(num_layers, n)
    if each == 0:
        raise ConfigError(_cannot_fill(f"model.num_layers={num_layers}", pp, vpp, "front_loaded"))
    stages = ["t" * (each + (v < extra)) for v in range(n)]
    stages[0] = "E" + stages[0]
    stages[-1] += "m" * mtp_layers + "L"
    return tuple(stages)


def filled_layout(num_layers: int, mtp_layers: int, pp: int, vpp: int) -> tuple[str, ...]:
    """The split that fills the virtual stages in model order: ``ceil(num_layers / (pp*vpp))``
    layers on each, the embedding with the first, and the remainder on the last with the MTP
    layers and the loss, which stand in for the layers it lacks. Megatron-Bridge's DeepSeek-V3
    recipe places its 61 layers and MTP layer so for every (pp, vpp) it lists
    (``set_deepseek_v3_pipeline_model_parallel_layout``'s ``layout_map``: (4, 1) 16+16+16+13,
    (8, 1) and (4, 2) 8 x 7 + 5, (16, 1), (8, 2) and (4, 4) 4 x 15 + 1, the last with
    ``["mtp"] * mtp_layers + ["loss"]``; src/megatron/bridge/recipes/deepseek/deepseek_v3.py
    v0.1.0rc3 L116-130, v0.4.2 L29-49, v0.5.0 L74-75), and its perf scripts call it for every
    DeepSeek-V3 workload without a ``pp_layout`` (scripts/performance/configs/deepseek/
    deepseek_llm_pretrain.py v0.4.2 L69-73). Where filling would leave a stage before the last
    without a layer, the balanced layout places them instead."""
    n = pp * vpp
    each = -(-num_layers // n)
    if (n - 1) * each > num_layers:
        return balanced_layout(num_layers, mtp_layers, pp, vpp)
    stages = ["t" * each for _ in range(n - 1)] + ["t" * (num_layers - (n - 1) * each)]
    stages[0] = "E" + stages[0]
    stages[-1] += "m" * mtp_layers + "L"
    return tuple(stages)


def balanced_layout(num_layers: int, mtp_layers: int, pp: int, vpp: int) -> tuple[str, ...]:
    """The most even layout with the embedding and the loss (and MTP layers) counted as one
    layer each, for models whose layers no even split fits (Megatron-Bridge recipes write such
    layouts by hand): every virtual stage gets ``slots // (pp*vpp)`` slots and the remainder
    goes one each to the stages in the middle of the model, away from the embedding and loss."""
    n = pp * vpp
    slots = ["E"] + ["t"] * num_layers + ["m"] * mtp_layers + ["L"]
    each, extra = divmod(len(slots), n)
    if each == 0:
        raise ConfigError(_cannot_fill(
            f"model.num_layers={num_layers} (+ {len(slots) - num_layers} embedding, MTP and "
            "loss slots)", pp, vpp, "balanced"))
    start = (n - extra) // 2
    sizes = [each + (start <= v < start + extra) for v in range(n)]
    out, i = [], 0
    for size in sizes:
        out.append("".join(slots[i:i + size]))
        i += size
    return tuple(out)
