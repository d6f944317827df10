"""Training rows: the iteration time (and memory) of a published run.

Empty cells in a row are settings the source did not state: the named framework's default at
that version where the framework decides, else a setting the authors tuned, so we choose the
fastest setting that fits in memory and report the choice ("unknown means tuned").
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from trainsim.bound import lower_bound_s
from trainsim.catalog import model_dict, names, node, run_config_from_dict
from trainsim.catalog.framework_schema import NVLINK_SCOPES
from trainsim.catalog.frameworks import uneven_layout, uneven_split
from trainsim.config import RunConfig
from trainsim.config._build import suggest
from trainsim.engine.loop import runs_shared
from trainsim.errors import ConfigError, TrainsimError
from trainsim.memo import stage_memory
from trainsim.memory.estimate import MEMORY_KINDS
from trainsim.memory.offload import copies_hidden
from trainsim.pricing import Pricer
from trainsim.result import Result
from trainsim.simulator import simulate
from trainsim.validate.common import GiB, RowResult, _cell, count_cell
from trainsim.validate.layouts import parallel_layouts, stated_pps
from trainsim.validate.vocab import framework_key, normalized_training_row, read_as

TRAINING_REQUIRED = ["id", "model", "gpu", "num_gpus", "gpus_per_node", "tp", "pp",
                     "global_batch_size", "seq_length", "measured_iteration_s"]
SHAPE_COLUMNS = ["hidden_size", "num_layers", "num_attention_heads", "num_kv_heads", "head_dim",
                 "ffn_hidden_size", "vocab_size", "activation", "tied_embeddings",
                 "attention_dropout", "hidden_dropout"]
# option -> (section, fields it turns on)
OPTION_FIELDS = {"tp_overlap": ("parallel", ("tp_comm_overlap",)),
                 "pp_overlap": ("parallel", ("overlap_p2p_comm",)),
                 # DP overlap "including the first all-gather and last reduce-scatter" (MegaScale
                 # §3.2): gradients reduce under the backward, parameters gather ahead of forward
                 "dp_overlap": ("parallel", ("overlap_grad_reduce", "overlap_param_gather")),
                 "ep_overlap": ("parallel", ("moe_overlap_ep_comm",)),
                 "cuda_graphs": ("training", ("cuda_graphs",)),
                 "compile": ("training", ("compile",)),
                 "launch_blocking": ("training", ("cuda_launch_blocking",))}
KNOWN_OPTIONS = set(OPTION_FIELDS) | {"parallel_block", "sliding_window", "fused_kernels", "lamb",
                                       "fake_balanced_gate"}
# format v2 column -> (section, config field), copied when the cell is not empty
COLUMN_FIELDS = {
    "cp": ("parallel", "cp"), "ep": ("parallel", "ep"),
    "vpp": ("parallel", "vpp"), "sequence_parallel": ("parallel", "sequence_parallel"),
    "recompute": ("parallel", "recompute"), "zero_stage": ("parallel", "zero_stage"),
    "distributed_optimizer": ("parallel", "distributed_optimizer"),
    "recompute_num_layers": ("parallel", "recompute_num_layers"),
    "recompute_modules": ("parallel", "recompute_modules"),
    "pipeline_layout": ("parallel", "pipeline_model_parallel_layout"),
    "cp_comm_type": ("parallel", "cp_comm_type"),
    "moe_dispatcher": ("parallel", "moe_token_dispatcher_type"),
    "micro_batch_size": ("training", "micro_batch_size"),
    "local_batch_size": ("training", "local_batch_size"),
    "dtype": ("training", "dtype"), "attention": ("training", "attention"),
    "grad_reduce_dtype": ("training", "grad_reduce_dtype"),
    "fp8_recipe": ("training", "fp8_recipe"), "framework": ("training", "framework"),
    "framework_version": ("training", "framework_version"),
    "moe_capacity_factor": ("model", "moe_capacity_factor"),
}


COUNT_COLUMNS = ("num_gpus", "gpus_per_node", "tp", "pp", "cp", "ep", "vpp", "global_batch_size",
                 "micro_batch_size", "local_batch_size", "seq_length", "num_layers",
                 "hidden_size", "num_attention_heads", "num_kv_heads", "head_dim", "ffn_hidden_size",
                 "vocab_size", "num_experts", "moe_top_k", "moe_ffn_hidden_size",
                 "recompute_num_layers")
"""Columns holding a count or a size (whole numbers >= 1; empty where a column may be)."""
NEEDED_COUNTS = ("num_gpus", "global_batch_size", "seq_length")
"""Count columns that may not be empty (gpus_per_node may: the GPU's catalog node; tp and pp
may: the authors' layout, tuned, ``validate.layouts``)."""
MODEL_SHAPE = ("hidden_size", "num_layers", "num_attention_heads", "vocab_size")
"""Shape columns a model that is not a preset needs (the rest take ModelConfig's defaults)."""


def _counts_checked(row: dict[str, str]) -> dict[str, str]:
    """``row`` with its count cells written as plain integers ('8.0' -> '8'), after checking
    each is a whole number >= 1: the tuner reads some with ``int()`` and divides by them."""
    out = dict(row)
    for col in COUNT_COLUMNS:
        if col in NEEDED_COUNTS or _cell(row, col) is not None:
            out[col] = str(count_cell(row, col))
    missing = [c for c in MODEL_SHAPE if _cell(row, c) is None]
    if _cell(row, "model") is None and missing:
        raise ConfigError("column 'model' is empty; give a preset name (e.g. llama3-8b) or the "
                          f"shape columns (missing: {', '.join(missing)})")
    return out


def _profile(row: dict[str, str]) -> Any:
    """The framework profile a row names, or None."""
    from trainsim.catalog.frameworks import framework_profile

    name = _cell(row, "framework")
    return framework_profile(name, _cell(row, "framework_version")) if name else None


def _training_base(row: dict[str, str]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Raw config of a row plus the candidate values of each unknown (empty) cell."""
    model: dict[str, Any] = {"preset": row["model"]}
    try:
        if _cell(row, "model") is None:  # a model the shape columns describe, named by the row
            model = {"name": _cell(row, "id") or "model"}
        else:
            model_dict(row["model"])
    except ConfigError as exc:  # not a preset: the shape columns must describe the model
        missing = [c for c in MODEL_SHAPE if _cell(row, c) is None]
        if missing:
            raise ConfigError(f"{exc}; or give the shape columns {', '.join(missing)}") from None
        model = {"name": row["model"]}
    for col in SHAPE_COLUMNS:
        if _cell(row, col) is not None:
            model[col] = _cell(row, col)
    for col, fieldname in (("num_experts", "num_experts"), ("moe_top_k", "moe_router_topk"),
                           ("moe_ffn_hidden_size", "moe_ffn_hidden_size")):
        if _cell(row, col) is not None:
            model[fieldname] = _cell(row, col)
    options = {o.strip() for o in (_cell(row, "options") or "").split(";") if o.strip()}
    options = options or _recipe_options(row, model)
    unknown_opts = options - KNOWN_OPTIONS
    if unknown_opts:
        name = min(unknown_opts)
        raise ConfigError(f"unknown option '{name}'{suggest(name, KNOWN_OPTIONS)}; known: "
                          f"{', '.join(sorted(KNOWN_OPTIONS))}")
    if "parallel_block" in options:
        model["parallel_block"] = True
    if "fake_balanced_gate" in options:  # Automodel's benchmark gate (model.moe_router)
        model["moe_router"] = "fake_balanced"
    if "sliding_window" in options and _preset_window(model) is None:
        # The file has no column for the window: take half the sequence, the common choice
        # (Mistral 7B and Gemma 2: 4,096 of 8,192 tokens). MegaScale (Jiang et al. 2024) does not
        # state its window; its Table 2 MFU-to-speed ratios imply attention work near 60 % of full
        # causal, which a window of s/2 (75 %) to s/3 gives.
        model["sliding_window"] = int(row["seq_length"]) // 2
    parallel: dict[str, Any] = {"tp": row["tp"], "pp": row["pp"]}
    training: dict[str, Any] = {"global_batch_size": row["global_batch_size"],
                                "seq_length": row["seq_length"], "dtype": "bf16"}
    for opt, (sec, fieldnames) in OPTION_FIELDS.items():
        for fieldname in fieldnames:
            (parallel if sec == "parallel" else training)[fieldname] = opt in options
    if "lamb" in options:
        training["optimizer"] = "lamb"
    cluster: dict[str, Any] = {"gpu": row["gpu"], "num_gpus": row["num_gpus"],
                               "gpus_per_node": _cell(row, "gpus_per_node") or _node_size(row)}
    if _cell(row, "nic_gbps_per_gpu"):
        cluster["nic_gbit_s_per_gpu"] = row["nic_gbps_per_gpu"]
    raw = {"model": model, "parallel": parallel, "training": training, "cluster": cluster}
    for col, (sec, key) in COLUMN_FIELDS.items():
        v = _cell(row, col)
        if v is not None:
            raw[sec][key] = v
    profile = _profile(row)
    if "attention" not in training and (profile is None or "fused_kernels" in options):
        # Without a framework: fp8 runs on Transformer Engine, whose attention is fused; the
        # "efficient operators" option is FlashAttention-2; otherwise Megatron's unfused path.
        fused = "fused_kernels" in options or training["dtype"] == "fp8"
        training["attention"] = "flash2" if fused else "unfused"
    return raw, _unknowns(row, profile)


def _recipe_options(row: dict[str, str], model: dict[str, Any]) -> set[str]:
    """Options the row's framework switches on for a row that states none: those it turns on
    for every run (profile ``run_options``) where their condition holds, and those its
    performance recipes switch on for an expert-parallel MoE run on the row's kind of system
    (its NVLink domain, ``catalog.framework_schema.NVLINK_SCOPES``) and fp8 recipe (profile
    ``moe_recipe_options``)."""
    profile = _profile(row)
    if profile is None:
        return set()
    out = {o for o in profile.defaults.get("run_options") or () if o != "pp_overlap"}
    if "pp_overlap" in (profile.defaults.get("run_options") or ()) and int(row["pp"]) > 1 and \
            int(_cell(row, "vpp") or 1) > 1:
        # Megatron-core overlaps pipeline sends with compute in the interleaved schedule only
        # (pipeline_parallel/schedules.py: forward_backward_pipelining_without_interleaving
        # never reads overlap_p2p_comm); a row whose vpp is tuned gets no pipeline overlap
        out.add("pp_overlap")
    preset = model_dict(model["preset"]) if "preset" in model else {}
    experts = int(model.get("num_experts") or preset.get("num_experts") or 0)
    if experts <= 1 or int(_cell(row, "ep") or 1) <= 1:
        return out
    domain = int(_cell(row, "gpus_per_node") or _node_size(row))
    kind = _cell(row, "fp8_recipe") or _cell(row, "dtype") or "bf16"
    for scope, by_recipe in (profile.defaults.get("moe_recipe_options") or {}).items():
        if domain > NVLINK_SCOPES[scope]:
            out |= set(by_recipe.get(kind, ()))
    return out


def _node_size(row: dict[str, str]) -> int:
    """GPUs per NVLink domain where the row is silent: the catalog node built around the
    row's GPU (8 for DGX/HGX, 72 for a GB200 NVL72 rack), at most the row's GPU count."""
    nodes = (node(n) for n in names("nodes"))
    size = int(next((n["gpus_per_node"] for n in nodes if n.get("gpu") == row["gpu"]), 8))
    try:
        return max(1, min(size, int(row["num_gpus"])))
    except ValueError:
        return size  # the config reports the bad GPU count


def _unknowns(row: dict[str, str], profile: Any) -> dict[str, list[Any]]:
    """Candidate values of each empty cell the authors chose, the usual first choice first
    (the search starts from it), limited to what the row's framework could run."""
    def can(feature: str) -> bool:
        return profile is None or profile.supports(feature) is not False

    unknown: dict[str, list[Any]] = {}
    if _cell(row, "micro_batch_size") is None:
        unknown["micro_batch_size"] = _default_micro_batch(row, profile) or [1, 2, 4, 8]
    if _cell(row, "vpp") is None and _cell(row, "pipeline_layout") is None:
        looped = profile.defaults.get("pipeline_stages_per_rank") if profile else None
        # the framework splits the layers itself: its single-stage default schedule, or a
        # looped one with its own number of chunks per rank
        unknown["vpp"] = [1, looped] if looped and int(row["pp"]) > 1 else \
            [1, 2, 3, 4, 6, 8] if can("interleaved_pipeline") else [1]
    pp = int(row["pp"])
    if pp > 1 and profile is not None and \
            profile.features.get("microbatch_group_size") == "flexible" and \
            any(v > 1 for v in unknown.get("vpp", [int(_cell(row, "vpp") or 1)])):
        # the framework makes the interleaved group size tunable and the source does not give
        # it: depth-first (pp), or 2 pp and 4 pp micro-batches per group, breadth-first as far
        # as the micro-batches allow (Grattafiori et al. 2024 §3.3.2: N between DFS and BFS
        # "for the best communication and memory efficiency")
        unknown["microbatch_group_size_per_vp_stage"] = [None, 2 * pp, 4 * pp]
    if _cell(row, "sequence_parallel") is None:
        unknown["sequence_parallel"] = [True, False] if int(row["tp"]) > 1 and \
            can("sequence_parallel") else [False]
    preset = model_dict(row["model"]) if row["model"] in names("models") else {}
    if _cell(row, "recompute") is None:
        unknown["recompute"] = ["none", "selective", *_selective_sets(row, preset, profile),
                                "full"]
    layers = _cell(row, "num_layers") or preset.get("num_layers")
    if _cell(row, "recompute") is None and int(row["pp"]) == 1 and layers and \
            profile is not None and profile.supports("cpu_offloading"):
        # the recipes offload a share of the layers' activations instead of recomputing
        # (Megatron-core --cpu-offloading-num-layers; only with recompute none and pp 1)
        n = int(layers)
        unknown["cpu_offloading_num_layers"] = [0, n // 4, n // 2, 3 * n // 4]
    if _cell(row, "moe_dispatcher") is None and int(_cell(row, "ep") or 1) > 1 and \
            profile is not None and profile.supports("deepep"):
        # the perf recipes of Megatron-based frameworks pick the flex (DeepEP) dispatcher for
        # cross-node expert parallelism; the profile's default is the first choice
        default = profile.defaults.get("moe_dispatcher") or "alltoall"
        unknown["moe_token_dispatcher_type"] = [default, "deepep"]
    rule = uneven_layout(profile.name, profile.version) if profile is not None else "balanced"
    vpps = [v for v in unknown.get("vpp") or [int(_cell(row, "vpp") or 1)] if pp > 1 or v == 1]
    if _cell(row, "pipeline_layout") is None and layers and \
            any(uneven_split(rule, int(layers), pp, v) for v in vpps) and \
            (profile is None or profile.supports("uneven_pipeline") is not False):
        # the even split cannot run: the framework's own uneven split (front-loaded: the even
        # one where the virtual stages divide the layers), else the authors placed the layers
        # by hand
        unknown["pipeline_model_parallel_layout"] = [rule]
    experts = int(_cell(row, "num_experts") or preset.get("num_experts") or 1)
    if _cell(row, "ep") is None and experts > 1:
        # an MoE run that does not say how its experts are spread: every expert-parallel size
        # that divides the experts and the ranks beside tensor and pipeline parallelism
        ranks = int(row["num_gpus"]) // (int(row["tp"]) * int(row["pp"]))
        unknown["ep"] = [e for e in (1, 2, 4, 8, 16, 32, 64, 128, 256)
                         if experts % e == 0 and ranks % e == 0]
    if _cell(row, "options") is None and int(row["tp"]) > 1 and profile is not None and \
            "tp_overlap" in (profile.defaults.get("tuned_options") or ()):
        # the framework leaves TP overlap to each recipe: the authors chose it (it needs
        # sequence parallelism, ``_with``)
        unknown["tp_comm_overlap"] = [False, True]
    if _cell(row, "distributed_optimizer") is None and _cell(row, "zero_stage") in (None, "0"):
        unknown["distributed_optimizer"] = [True, False] if can("distributed_optimizer") \
            else [False]
    return unknown


def _default_micro_batch(row: dict[str, str], profile: Any) -> list[int] | None:
    """The micro-batch size a pipelined run gets from its framework's default number of
    micro-batches (profile ``pipeline_microbatches``: "pp", as many as pipeline ranks), where
    the local batch divides into them; None where the framework leaves it to the user."""
    pp = int(row["pp"])
    if pp <= 1 or profile is None or profile.defaults.get("pipeline_microbatches") != "pp":
        return None
    try:
        ranks = int(row["tp"]) * pp * int(_cell(row, "cp") or 1)
        local, rest = divmod(int(row["global_batch_size"]), int(row["num_gpus"]) // ranks)
    except (ValueError, ZeroDivisionError):
        return None  # the config reports the bad sizes
    return [local // pp] if rest == 0 and local % pp == 0 and local >= pp else None


#: Megatron-core ``--recompute-modules`` sets that MoE and MLA recipes use besides core
#: attention (Megatron-Bridge DeepSeek-V3 ``mla_up_proj;mlp``, gpt-oss ``layernorm;moe_act``,
#: Megatron MoE model zoo Qwen3 ``layernorm;moe_act`` and ``moe``).
MOE_RECOMPUTE_SETS = ("moe_act", "layernorm;moe_act", "moe")
MLA_RECOMPUTE_SETS = ("mla_up_proj", "mla_up_proj;mlp", "mla_up_proj;layernorm;moe_act")


def _selective_sets(row: dict[str, str], preset: dict[str, Any], profile: Any) -> list[str]:
    """Selective-recompute candidates beyond core attention, as ``selective:<modules>``, for
    frameworks whose profile has Megatron-core's ``--recompute-modules``."""
    if profile is None or not profile.supports("recompute_modules"):
        return []
    moe = int(_cell(row, "num_experts") or preset.get("num_experts") or 0) > 1
    mla = preset.get("kv_lora_rank") is not None
    sets = (MOE_RECOMPUTE_SETS if moe else ()) + (MLA_RECOMPUTE_SETS if mla else ())
    return [f"selective:{m}" for m in sets]


def _preset_window(model: dict[str, Any]) -> int | None:
    """The sliding window a row's model already has (its preset's), if any."""
    if "preset" not in model:
        return None
    return model_dict(model["preset"]).get("sliding_window")


def _with(raw: dict[str, Any], choice: dict[str, Any]) -> dict[str, Any]:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    for key, value in choice.items():
        sec = "training" if key == "micro_batch_size" else "parallel"
        if key == "recompute" and value.startswith("selective:"):
            value, out[sec]["recompute_modules"] = "selective", value.split(":", 1)[1].split(";")
        out[sec][key] = value
    if choice.get("tp_comm_overlap") and not _truthy(out["parallel"].get("sequence_parallel")):
        # Megatron-LM arguments.py: "Tensor parallel communication/GEMM overlap can happen only
        # when sequence parallelism is enabled"; Megatron-Bridge's CommOverlapConfig turns it off
        raise ConfigError("tp_comm_overlap needs sequence_parallel")
    return out


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _fits(cfg: RunConfig) -> bool:
    hbm = cfg.cluster.gpu.hbm_bytes
    return all(stage_memory(cfg, s).total <= hbm for s in range(cfg.parallel.pp))


ENUMERATED = ("recompute", "microbatch_group_size_per_vp_stage")
"""Unknowns the tuner enumerates, descending over the others for each combination."""


def tune(raw: dict[str, Any], unknown: dict[str, list[Any]],
         evaluate: Callable[[RunConfig], float],
         bound: Callable[[RunConfig], float] | None = None) -> tuple[RunConfig, dict[str, Any]]:
    """Fastest setting of the unknown fields among those that fit in memory.

    The time is minimised by coordinate descent over the settings that fit, one field at a
    time, until no single change helps, once for each combination of the ``ENUMERATED``
    choices (recompute, the interleaved group size). A setting is built and
    its memory checked (no simulation) when the descent first reaches it, in the same order
    as checking every combination first would give, so the answer is the same. With
    ``bound`` (a lower bound on ``evaluate``), a change whose bound is already no faster than
    the current setting is rejected without simulating it, and an enumerated choice whose every
    fitting setting is bounded (or simulated) no faster than the best descent so far is not
    descended: neither could have been chosen.
    If nothing fits, the least-memory setting is returned (and flagged by the caller).
    """
    names = list(unknown)
    status: dict[tuple, tuple[RunConfig | None, float | None, str | None]] = {}

    def check(values: tuple) -> tuple[RunConfig | None, float | None, str | None]:
        """(config, peak memory, error) of a setting; memory None when its offload copies
        would not hide (the engine does not price them)."""
        hit = status.get(values)
        if hit is None:
            try:
                cfg = run_config_from_dict(_with(raw, dict(zip(names, values))))
            except ConfigError as exc:
                hit = (None, None, str(exc))
            else:
                mem = max(stage_memory(cfg, s).total for s in range(cfg.parallel.pp))
                hit = (cfg, mem if copies_hidden(cfg) else None, None)
            status[values] = hit
        return hit

    def fits(values: tuple) -> bool:
        cfg, mem, _ = check(values)
        return cfg is not None and mem is not None and mem <= cfg.cluster.gpu.hbm_bytes

    times: dict[tuple, float] = {}

    def cost(values: tuple) -> float:
        if values not in times:
            times[values] = evaluate(status[values][0])  # type: ignore[arg-type]
        return times[values]

    bounds: dict[tuple, float] = {}  # a setting's bound, computed once for every sweep

    def faster(cand: tuple, current: tuple) -> bool:
        now = cost(current)
        if bound is not None and cand not in times:
            if cand not in bounds:
                bounds[cand] = bound(status[cand][0])  # type: ignore[arg-type]
            if bounds[cand] >= now:
                return False
        return cost(cand) < now

    def descend(current: tuple, fixed: tuple[int, ...] = ()) -> tuple:
        improved = True
        while improved:
            improved = False
            for d, name in enumerate(names):
                for value in unknown[name] if d not in fixed else ():
                    cand = current[:d] + (value,) + current[d + 1:]
                    if cand != current and fits(cand) and faster(cand, current):
                        current, improved = cand, True
        return current

    # recompute (and the interleaved group size) is enumerated, the rest descended for each
    # choice: recomputing frees the memory that deeper interleaving or larger micro-batches
    # need, a pair of changes no single step of a descent makes; a group size matters only
    # with interleaving, which it may make fit. Each descent starts from the first setting
    # that fits with its enumerated choices (in the order of the candidate lists).
    d = tuple(names.index(n) for n in ENUMERATED if n in names)
    starts = []
    for combo in itertools.product(*(unknown[names[i]] for i in d)):
        lists = [[combo[d.index(i)]] if i in d else unknown[n] for i, n in enumerate(names)]
        start = next((v for v in itertools.product(*lists) if fits(v)), None)
        if start is not None:
            starts.append(start)
    if not starts:
        fallback: tuple[float, tuple, RunConfig] | None = None
        first_error: str | None = None
        for values in itertools.product(*(unknown[n] for n in names)):
            cfg, mem, error = check(values)
            first_error = first_error or error
            if cfg is not None and mem is not None and (fallback is None or mem < fallback[0]):
                fallback = (mem, values, cfg)
        if fallback is None:
            raise ConfigError(first_error or "no valid setting")
        return fallback[2], dict(zip(names, fallback[1]))
    def ruled_out(start: tuple, best_s: float) -> bool:
        """Whether no setting that fits with ``start``'s enumerated choices can be faster than
        ``best_s``: every one's simulated time or lower bound is at least that."""
        lists = [[start[i]] if i in d else unknown[n] for i, n in enumerate(names)]
        for v in itertools.product(*lists):
            if not fits(v):
                continue
            if v not in times and v not in bounds:
                bounds[v] = bound(status[v][0])  # type: ignore[misc, arg-type]
            if times.get(v, bounds.get(v, 0.0)) < best_s:
                return False
        return True

    # the fastest descent's end, the first one on ties (as ``min`` over them would pick); a
    # descent that the bounds of its enumerated choices rule out could not be faster: skipped
    best: tuple | None = None
    for start in starts:
        if best is not None and bound is not None and ruled_out(start, cost(best)):
            continue
        found = descend(start, d)
        if best is None or cost(found) < cost(best):
            best = found
    return status[best][0], dict(zip(names, best))  # type: ignore[index, arg-type]


def row_passes(row: dict[str, str]) -> float:
    """Pipeline passes of one iteration as the row's cells state it (2 x micro-batches x pp x
    vpp; an empty cp, micro-batch size or vpp taken as 1), 0.0 where a needed cell is not a
    count: a rough key for the order in which worker processes take rows (the longest
    first), never an input of a prediction."""
    try:
        n = {c: count_cell(row, c) if c in NEEDED_COUNTS or _cell(row, c) else 1
             for c in ("num_gpus", "tp", "pp", "cp", "global_batch_size", "micro_batch_size",
                       "vpp")}
    except ConfigError:
        return 0.0
    dp = max(1.0, n["num_gpus"] / (n["tp"] * n["pp"] * n["cp"]))
    return 2.0 * n["global_batch_size"] / (n["micro_batch_size"] * dp) * n["pp"] * n["vpp"]


def row_config(row: dict[str, str], chosen: dict[str, Any] | None = None,
               compute_db: str | None = "auto") -> RunConfig:
    """The config :func:`predict_training_row` simulates for ``row``, with ``chosen`` (its
    ``RowResult.chosen``: the tuner's settings for the row's empty cells) filled in: for tools
    that look closer at a validated row (benchmarks/pair_timeline.py)."""
    row = {**normalized_training_row(row)[0],
           **{k: str(v) for k, v in (chosen or {}).items() if k in ("tp", "pp")}}
    raw, _ = _training_base(_counts_checked(row))
    raw["cluster"]["compute_db"] = compute_db
    return run_config_from_dict(_with(raw, chosen or {}))


def _tuned(row: dict[str, str], compute_db: str | None
           ) -> tuple[RunConfig, dict[str, Any], Result]:
    """The row's config with its empty cells tuned (its tp and pp given), that setting and its
    simulated result."""
    raw, unknown = _training_base(row)
    raw["cluster"]["compute_db"] = compute_db
    simulated: dict[int, Result] = {}  # the tuner's results, by candidate, reused below
    # a candidate's pricer, shared by its bound and its simulation (the passes the bound
    # priced are not priced again); kept for this row only, so nothing outlives a setting
    pricers: dict[int, tuple[RunConfig, Pricer]] = {}

    def pricer_of(c: RunConfig) -> Pricer:
        hit = pricers.get(id(c))
        if hit is None or hit[0] is not c:
            hit = pricers[id(c)] = (c, Pricer(c))
        return hit[1]

    def evaluate(c: RunConfig) -> float:
        simulated[id(c)] = simulate(c, pricer=pricer_of(c))
        return simulated[id(c)].iteration_time_s

    def bound(c: RunConfig) -> float:
        return lower_bound_s(c, pricer_of(c))

    # candidates whose task graphs are equal run the event loop once (engine.runs_shared)
    with runs_shared():
        cfg, choice = tune(raw, unknown, evaluate, bound)
        result = simulated.get(id(cfg)) or simulate(cfg)
    return cfg, choice, result


def _tuned_layout(row: dict[str, str], compute_db: str | None
                  ) -> tuple[RunConfig, dict[str, Any], Result]:
    """:func:`_tuned`, over the (tp, pp) layouts ``validate.layouts`` gives where the row
    leaves either empty: the fastest layout whose tuned setting fits in memory (else the
    fastest), its empty tp, pp (and a vpp derived from a stated pipeline layout) reported among
    the chosen settings."""
    tp, pp = _cell(row, "tp"), _cell(row, "pp")
    if tp is not None and pp is not None:
        return _tuned(row, compute_db)
    raw, _ = _training_base({**row, "tp": tp or "1", "pp": pp or "1"})
    cp, ep, mb, vpp = (_cell(row, c) for c in ("cp", "ep", "micro_batch_size", "vpp"))
    layout = _cell(row, "pipeline_layout")
    pps_of_layout = stated_pps(layout, int(vpp) if vpp else None)

    def cells(t: int, p: int) -> dict[str, str]:
        """The row's cells for layout (t, p): with a stated pipeline layout and no vpp, vpp
        is the layout's stages over p, as Megatron-core derives it (``stated_pps``)."""
        got = {"tp": str(t), "pp": str(p)}
        if pps_of_layout is not None and vpp is None:
            got["vpp"] = str(max(pps_of_layout) // p)  # the largest pp: all the stages
        return got

    def could_fit(t: int, p: int) -> bool:
        """Whether the layout fits at its least-memory setting (full recompute, the smallest
        micro-batch, the distributed optimizer and sequence parallelism where they are
        candidates): one that does not cannot fit tuned."""
        base, unknown = _training_base({**row, **cells(t, p)})
        least = {"recompute": "full", "distributed_optimizer": True, "sequence_parallel": True}
        choice = {}
        for k, v in unknown.items():
            if v:
                choice[k] = min(v) if k == "micro_batch_size" else \
                    least[k] if k in least and least[k] in v else v[0]
        try:
            return _fits(run_config_from_dict(_with(base, choice)))
        except ConfigError:
            return False  # tried only if no layout passes: the tuner reports it
    profile = _profile(row)
    uneven = pps_of_layout is not None or profile is None or \
        profile.supports("uneven_pipeline") is not False
    pps = pps_of_layout if pp is None else (int(pp),)
    if pps is None and framework_key(_cell(row, "framework") or "") in \
            ("deepspeed", "megatron-deepspeed") and int(_cell(row, "zero_stage") or 0) >= 2:
        # DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3 ("ZeRO-2 and ZeRO-3 are
        # incompatible with pipeline parallelism": deepspeed/runtime/pipe/engine.py@v0.9.0
        # L56, @v0.16.4 L78), the engine Megatron-DeepSpeed's GPTModelPipe runs on
        # (pretrain_gpt.py@8387ae17 L56-58)
        pps = (1,)
    layouts = parallel_layouts(raw, int(tp) if tp else None, pps,
                               int(cp or 1), int(ep) if ep else None, int(mb) if mb else None,
                               int(vpp) if vpp else None, uneven, could_fit)
    best: tuple[tuple[bool, float], RunConfig, dict[str, Any], Result] | None = None
    error = None
    for t, p in layouts:
        try:
            cfg, choice, result = _tuned({**row, **cells(t, p)}, compute_db)
        except ConfigError as exc:
            error = error or f"tp={t} pp={p}: {exc}"
            continue
        key = (not result.fits_in_memory, result.iteration_time_s)
        if best is None or key < best[0]:
            tuned = {k: int(v) for k, v in cells(t, p).items() if _cell(row, k) is None}
            best = (key, cfg, {**tuned, **choice}, result)
    if best is None:
        empty = " and ".join(c for c, v in (("tp", tp), ("pp", pp)) if v is None)
        raise ConfigError(f"column {empty} empty and no tensor x pipeline layout of the "
                          f"{row['num_gpus']} GPUs runs" + (f" ({error})" if error else
                                                            " (none divides the model and batch)"))
    return best[1], best[2], best[3]


def predict_training_row(row: dict[str, str], compute_db: str | None = "auto") -> RowResult:
    """The row's iteration simulated as its framework ran it (empty cells tuned), with the
    kernel database ``compute_db`` ('auto': the one bundled for the row's GPU; None: the
    analytic model only; or a path)."""
    res = RowResult(id=row.get("id", "?"), measured=float(row["measured_iteration_s"]))
    source_key = framework_key(_cell(row, "framework") or "unknown")
    res.extra = {"source_key": source_key}
    if _cell(row, "measured_peak_memory_gib"):
        res.measured_memory_gib = float(row["measured_peak_memory_gib"])
    try:
        # other spellings of the vocabulary columns, read as the README's (``validate.vocab``)
        row, read = normalized_training_row(row)
        cfg, choice, result = _tuned_layout(_counts_checked(row), compute_db)
    except (TrainsimError, ValueError, KeyError) as exc:
        res.error = str(exc)
        return res
    except (ArithmeticError, LookupError, TypeError, AttributeError, RecursionError) as exc:
        # a trainsim bug on this row fails the row, not the file of rows after it
        res.error = f"internal error: {type(exc).__name__}: {exc} (a trainsim bug; please report)"
        return res
    res.predicted = result.iteration_time_s
    res.chosen = {k: v for k, v in choice.items()}
    kind = _cell(row, "memory_kind")
    if kind is not None and kind not in MEMORY_KINDS:
        res.error = f"memory_kind={kind!r} is not allocated, reserved or device"
        return res
    # a figure of the kind the row measured, at the stage whose figure is largest
    res.predicted_memory_gib = max(m.of_kind(kind) for m in result.memory) / GiB if kind \
        else result.peak_memory_bytes / GiB
    res.fits_in_memory = result.fits_in_memory
    t, p = cfg.training, cfg.parallel
    res.extra = {"mfu": result.mfu, "breakdown": result.breakdown, "source_key": source_key,
                 # what the framework profile (or the tool) used where the row is silent
                 "settings": {"attention": t.attention, "fp8_recipe": t.fp8_recipe,
                              "grad_reduce_in_fp32": t.grad_reduce_in_fp32,
                              "stage_layers": list(cfg.stage_layer_counts),
                              "moe_token_dispatcher_type": p.moe_token_dispatcher_type,
                              "moe_overlap_ep_comm": p.moe_overlap_ep_comm,
                              "cuda_graphs": t.cuda_graphs}, **read_as(read)}
    return res
