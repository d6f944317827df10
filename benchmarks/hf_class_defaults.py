"""Regenerate ``src/trainsim/catalog/hf_defaults.py``: the defaults transformers' config
classes give the config.json fields trainsim reads, per model_type.

``python benchmarks/hf_class_defaults.py > src/trainsim/catalog/hf_defaults.py`` with the
transformers release named in the output installed (the table was written with 5.24.0). A field
is listed when its config class (a strict dataclass in transformers v5) declares it, trainsim's
readers (``catalog/hf_config.py``, ``hf_text_config.py``, ``hf_families.py``, ``hf_biases.py``)
name it, and it is not one of the core sizes whose absence trainsim refuses
(``hf_config.model_from_hf_config``: a hand-written file, not a class default of another size).
A field typed without ``None`` rejects an explicit null in transformers
(``StrictDataclassFieldValidationError``), so trainsim refuses it too. Beside the defaults:
``READS``, which of the names trainsim reads for any family (``READ_KEYS``) each family's classes
read at all (``reads``), ``ROTARY``, the families with rotary positions (fuzz31), and ``GATED_MLP``,
whether each family's built MLP is gated (fuzz31b: ``mlp_gated``, from a model built on the meta
device, so torch is needed too).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
import types
import typing
import warnings
from pathlib import Path

FAMILIES = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma",
            "gemma2", "gemma3_text", "phi", "phi3", "falcon", "gpt_neox", "gptj", "codegen",
            "mpt", "dbrx", "glm4_moe", "bitnet", "deepseek_v2", "deepseek_v3", "cohere",
            "cohere2", "gpt2", "starcoder2", "olmo", "olmo2", "gpt_oss", "stablelm", "granite",
            "llama4_text", "qwen3_next", "olmoe", "qwen3_5_text", "qwen3_5_moe_text", "exaone",
            "flex_olmo", "gpt_bigcode", "granitemoe", "helium", "minimax_m2", "olmo3", "opt",
            "persimmon", "phimoe", "smollm3", "glm4", "glm", "seed_oss", "exaone4",
            "ernie4_5", "apertus", "arcee", "internlm3", "ministral3", "solar_open", "sarvam_mla",
            "sarvam_moe", "youtu", "minicpm3", "granitemoeshared", "vaultgemma", "bloom")
CORE = {"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "n_embd",
        "n_head", "n_layer", "d_model", "n_heads", "n_layers", "model_type"}
SKIP = {"rope_parameters", "layer_types", "mlp_only_layers", "attn_config", "ffn_config",
        "text_config", "vision_config", "is_encoder_decoder"}
ROOT = Path(__file__).resolve().parents[1] / "src" / "trainsim" / "catalog"
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
READ_KEYS = ("num_key_value_heads", "head_dim", "intermediate_size", "n_inner", "ffn_dim",
             "max_position_embeddings", "attention_dropout", "hidden_dropout", "attn_pdrop",
             "resid_pdrop", "use_sliding_window", "max_window_layers", "sliding_window_pattern",
             "attn_logit_softcapping", "swiglu_limit", "num_experts_per_tok", "moe_topk",
             "moe_intermediate_size", "shared_expert_intermediate_size", "n_shared_experts",
             "decoder_sparse_step", "moe_layer_freq", "first_k_dense_replace", "q_lora_rank",
             "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "attention_chunk_size",
             "use_qk_norm", "attention_bias", "attention_out_bias", "mlp_bias", "qkv_bias",
             "rms_norm_eps", "hidden_act", "activation_function", "use_parallel_residual",
             "interleave_moe_layer_step", "intermediate_size_mlp", "full_attention_interval",
             "qk_layernorm")
"""The config.json names ``hf_config.model_from_hf_config`` reads for any family (its Llama-style
reader), each of which a family's transformers classes may or may not read. The names with
rules of their own stay out: ``kv_lora_rank`` (``hf_families.MLA_MODEL_TYPES``),
``sliding_window`` (``hf_config.SLIDING_WINDOW_MODEL_TYPES``), the expert counts
(``hf_families.EXPERT_COUNT_NAMES``) and ``num_nextn_predict_layers`` (MTP layers: the recipe's
choice, no class builds them)."""


def reads(cls: type) -> set[str]:
    """The names ``cls`` and its family's modeling file read: the dataclass fields, the
    ``attribute_map`` names, the ``kwargs.get("...")`` / ``kwargs.pop("...")`` of its
    configuration file, and every ``config.NAME`` / ``getattr(config, "NAME"`` of
    ``modeling_<family>.py`` beside it (a file's extra key becomes an attribute of the config
    object, which a modeling file may read by ``getattr``)."""
    import inspect

    names = {f.name for f in dataclasses.fields(cls)} | set(getattr(cls, "attribute_map", {}))
    conf = Path(inspect.getfile(cls))
    names |= set(re.findall(r'kwargs\.(?:get|pop)\(\s*"(\w+)"', conf.read_text()))
    modeling = conf.with_name(conf.name.replace("configuration_", "modeling_"))
    if not modeling.exists():  # a configuration without transformers' modeling (remote code)
        return set()
    text = modeling.read_text()
    names |= set(re.findall(r"config\.(\w+)", text))
    return names | set(re.findall(r'getattr\(\s*(?:self\.)?config,\s*"(\w+)"', text))


def _mlp_weights(model: object, hidden: int) -> list[tuple[int, int]]:
    """(numel per expert, numel / hidden per expert) of each weight matrix of the first layer's
    feed-forward: the first module whose class name ends in ``Experts`` (the routed experts,
    router and shared expert apart), else in ``MLP``, else the first layer's own linear
    children (``OPTDecoderLayer`` holds fc1 and fc2 itself). Biases are left out (gpt-oss's
    expert biases are 2-D)."""
    modules = list(model.named_modules())  # type: ignore[attr-defined]
    mlp = next((m for _, m in modules if type(m).__name__.endswith("Experts")), None) \
        or next((m for _, m in modules if type(m).__name__.lower().endswith("mlp")), None)
    if mlp is not None:
        params = [p for n, p in mlp.named_parameters() if p.ndim >= 2 and "bias" not in n]
    else:
        layer = next(m for n, m in modules if re.search(r"\.0$", n))
        params = [p for n, p in layer.named_parameters() if n.count(".") == 1 and p.ndim >= 2]
    out = []
    for p in params:
        experts = p.shape[0] if p.ndim == 3 else 1
        out.append((p.numel() // experts, p.numel() // experts // hidden))
    return out


def mlp_gated(kind: str) -> bool | None:
    """Whether transformers' model of ``kind`` builds a gated MLP (gate, up and down matrices:
    3 x hidden x ffn a layer) or a plain one (2 x hidden x ffn), from its first layer's weights
    on the meta device; None where the model cannot be built (remote code, a config the class
    refuses). The narrowest matrix's other side is the ffn width (a fused gate_up_proj is twice
    it)."""
    import torch
    from hf_reference import _core
    from transformers import CONFIG_MAPPING, AutoConfig, AutoModelForCausalLM

    core = _core(kind, CONFIG_MAPPING[kind])
    hidden = next(v for k, v in core.items() if k in ("hidden_size", "n_embd", "d_model"))
    try:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(AutoConfig.for_model(kind, **core))
    except Exception:  # noqa: BLE001 - any refusal: no flag, the activation rule reads it
        return None
    weights = _mlp_weights(model, hidden)
    ratio = sum(n for n, _ in weights) / (hidden * min(f for _, f in weights))
    if ratio not in (2.0, 3.0):
        raise SystemExit(f"{kind}: feed-forward of {ratio} x hidden x ffn, neither 2 nor 3")
    return ratio == 3.0


def nullable(tp: object) -> bool:
    if isinstance(tp, str):
        return "None" in tp or "Optional" in tp
    return type(None) in typing.get_args(tp) if typing.get_origin(tp) in (
        typing.Union, types.UnionType) else tp is type(None)


def main() -> None:
    import transformers
    from transformers import CONFIG_MAPPING

    read = set()
    for name in ("hf_config.py", "hf_text_config.py", "hf_families.py", "hf_biases.py"):
        read |= set(re.findall(r'"([a-z_0-9]+)"', (ROOT / name).read_text()))
    required: dict[str, dict[str, object]] = {}
    optional: dict[str, dict[str, object]] = {}
    aliases: dict[str, dict[str, str]] = {}
    fields: dict[str, list[str]] = {}
    rotary: list[str] = []
    experts: dict[str, list[str]] = {}
    gated: dict[str, bool] = {}
    for kind in FAMILIES:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            flag = mlp_gated(kind)
        if flag is not None:
            gated[kind] = flag
        cls = CONFIG_MAPPING[kind]
        own = {f.name for f in dataclasses.fields(cls)}
        mapped = getattr(cls, "attribute_map", {})
        named = [k for k in EXPERT_KEYS if k in own or mapped.get(k) in own]
        if named:
            experts[kind] = named
        if {"rope_parameters", "rotary_dim"} & {f.name for f in dataclasses.fields(cls)}:
            rotary.append(kind)
        found = reads(cls)
        if found:
            fields[kind] = [k for k in READ_KEYS if k in found]
        if getattr(cls, "attribute_map", None):
            aliases[kind] = dict(cls.attribute_map)
        for f in dataclasses.fields(cls):
            if f.name not in read or f.name in CORE | SKIP or f.default is dataclasses.MISSING:
                continue
            if nullable(f.type):
                if f.default is not None:
                    optional.setdefault(kind, {})[f.name] = f.default
            else:
                required.setdefault(kind, {})[f.name] = f.default
    print(f'"""Defaults of transformers {transformers.__version__} config classes for the '
          'config.json fields trainsim\nreads, by ``model_type`` (written by '
          '``benchmarks/hf_class_defaults.py``; each family\'s class is\n'
          '``src/transformers/models/<family>/configuration_<family>.py``).\n\n'
          '``NOT_NULL``: fields whose class type has no None: a missing field takes the '
          'default, an\nexplicit null is refused (transformers raises '
          '``StrictDataclassFieldValidationError``).\n``NULLABLE``: fields typed ``... | None`` '
          'with a default that is not None: a missing field takes\nthe default, a null keeps '
          'its meaning (no window, no rank...).\n``ALIASES``: each class\'s ``attribute_map`` '
          '(another name -> the field it sets): a config.json\ngiving the field under another '
          'name takes no default for it.\n``READS``: of ``READ_KEYS``, the names each family\'s '
          'config class or modeling file reads\n(a family without transformers\' modeling code has '
          'none listed); a name outside it in a file\nof that family sets nothing in transformers '
          'and is ignored (``hf_families.unread``).\n``ROTARY``: the families whose config class '
          'has ``rope_parameters`` or ``rotary_dim``: rotary\npositions, whether the file '
          'writes a theta or not (Falcon\'s ALiBi is read apart).\n``EXPERT_NAMES``: the '
          'routed-expert count names each family\'s class holds (its field, or an\n'
          '``attribute_map`` name of it), for the families ``hf_families.EXPERT_COUNT_NAMES`` '
          'does not list.\n``GATED_MLP``: whether each family\'s built MLP is gated (gate, up and down '
          'matrices) or plain\n(two), whatever ``hidden_act`` says: its modeling file\'s MLP '
          'class fixes the matrices and the\nactivation only fills them (a family left out '
          'could not be built: its activation decides)."""\n')
    print("from __future__ import annotations\n\nfrom typing import Any\n")
    print(f'TRANSFORMERS_VERSION = "{transformers.__version__}"\n')
    for name, table in (("NOT_NULL", required), ("NULLABLE", optional)):
        print(f"{name}: dict[str, dict[str, Any]] = {{")
        for kind in sorted(table):
            items = [f'"{k}": {json.dumps(v) if isinstance(v, str) else repr(v)}'
                     for k, v in table[kind].items()]
            lines, line = [], f'    "{kind}": {{'
            for i, item in enumerate(items):
                item += "}," if i == len(items) - 1 else ","
                if len(line) + 1 + len(item) > 99:
                    lines.append(line)
                    line = " " * (8 + len(kind)) + item
                else:
                    line += ("" if line.endswith("{") else " ") + item
            print("\n".join([*lines, line]))
        print("}\n")
    print("ALIASES: dict[str, dict[str, str]] = {")
    for kind in sorted(aliases):
        items = ", ".join(f'"{a}": "{f}"' for a, f in aliases[kind].items())
        line = f'    "{kind}": {{{items}}},'
        if len(line) > 99:  # one alias a line
            pad = " " * (8 + len(kind))
            line = f'    "{kind}": {{' + f",\n{pad}".join(
                f'"{a}": "{f}"' for a, f in aliases[kind].items()) + "},"
        print(line)
    print("}\n")
    print("READ_KEYS = (" + _wrap([json.dumps(k) for k in READ_KEYS], 13) + ")\n")
    print("READS: dict[str, frozenset[str]] = {k: frozenset(v.split()) for k, v in {")
    for kind in sorted(fields):
        words = " ".join(fields[kind])
        head = f'    "{kind}": '
        lines, line = [], '"'
        for w in words.split():
            if len(head) + len(line) + len(w) + 3 > 99:
                lines.append(line + ' "')
                line = '"' + w
            else:
                line += ("" if line == '"' else " ") + w
        lines.append(line + '",')
        print(head + ("\n" + " " * len(head)).join(lines))
    print("}.items()}\n")
    print("ROTARY = frozenset({" + _wrap([json.dumps(k) for k in sorted(rotary)], 20) + "})\n")
    print("EXPERT_NAMES: dict[str, tuple[str, ...]] = {")
    for kind in sorted(experts):
        print(f'    "{kind}": ({", ".join(json.dumps(k) for k in experts[kind])},),')
    print("}\n")
    print("GATED_MLP: dict[str, bool] = {")
    for value in (True, False):
        names = [json.dumps(k) for k in sorted(k for k, v in gated.items() if v is value)]
        print(f"    **dict.fromkeys(({_wrap(names, 20)}), {value}),")
    print("}")


def _wrap(items: list[str], pad: int) -> str:
    lines, line = [], ""
    for item in items:
        if line and pad + len(line) + len(item) + 2 > 99:
            lines.append(line.rstrip())
            line = ""
        line += item + ", "
    return ("\n" + " " * pad).join([*lines, line.rstrip().rstrip(",")])


if __name__ == "__main__":
    main()
