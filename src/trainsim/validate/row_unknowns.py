"""The candidate values of the cells a training row leaves empty (``unknowns``): what its
framework could have run there, the usual first choice first, for the tuner in
``validate.training`` (``validate.row_settings.training_base`` builds the row's raw config and
asks for them).
"""

from __future__ import annotations

from typing import Any

from trainsim.catalog import gpu, model_dict, model_name
from trainsim.catalog.defaults import stage_engines
from trainsim.catalog.fallback import fp8_weight_candidates, offload_offered
from trainsim.catalog.framework_rules import flex_backend_runs, uneven_layout, uneven_split
from trainsim.catalog.schema_checks import OPTION_FEATURES
from trainsim.config.validity import dispatcher_runs_on
from trainsim.errors import TrainsimError
from trainsim.search.rules import stage_interleavings
from trainsim.validate.common import _cell
from trainsim.validate.unnamed import UNNAMED_TUNED_OPTIONS, grad_reduce_candidates


def unknowns(row: dict[str, str], profile: Any,
             on: set[str] | frozenset[str] = frozenset()) -> dict[str, list[Any]]:
    """Candidate values of each empty cell the authors chose, the usual first choice first
    (the search starts from it), limited to what the row's framework could run. ``on``: the
    options the row runs whatever is tuned (its own, or its framework's ``recipe_options``)."""
    def can(feature: str) -> bool:
        return profile is None or profile.supports(feature) is not False

    unknown: dict[str, list[Any]] = {}
    if _cell(row, "micro_batch_size") is None:
        unknown["micro_batch_size"] = default_micro_batch(row, profile) or [1, 2, 4, 8]
    if _cell(row, "cp") is None and (cps := context_sizes(row, profile)):
        unknown["cp"] = cps
    pp = int(row["pp"])
    preset = model_dict(row["model"]) if model_name(row["model"]) else {}
    layers = _cell(row, "num_layers") or preset.get("num_layers")
    if _cell(row, "vpp") is None and _cell(row, "pipeline_layout") is None:
        looped = profile.defaults.get("pipeline_stages_per_rank") if profile else None
        # the framework splits the layers itself: its single-stage default schedule, or a
        # looped one with its own number of chunks per rank
        unknown["vpp"] = [1, looped] if looped and pp > 1 else \
            interleavings(row, profile, int(layers) if layers else None) \
            if can("interleaved_pipeline") else [1]
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
    modules_stated = _cell(row, "recompute_modules") is not None
    if _cell(row, "recompute") is None:
        # stated modules are selective recompute's (ParallelConfig: recompute_modules needs
        # recompute=selective): the row's own set, not tuned over; a candidate set replaced it
        # before, and a bad cell ('8') was routed around instead of naming the column
        unknown["recompute"] = ["selective"] if modules_stated else \
            ["none", "selective", *selective_sets(row, preset, profile), "full"]
    if _cell(row, "recompute") is None and not modules_stated and int(row["pp"]) == 1 \
            and layers and \
            _cell(row, "cpu_offloading_num_layers") is None and profile is not None and \
            (profile.supports("cpu_offloading") or offload_offered(row, profile)):
        # the recipes offload a share of the layers' activations instead of recomputing
        # (Megatron-core --cpu-offloading-num-layers; only with recompute none and pp 1)
        n = int(layers)
        unknown["cpu_offloading_num_layers"] = [0, n // 4, n // 2, 3 * n // 4]
    if _cell(row, "moe_dispatcher") is None and int(_cell(row, "ep") or 1) > 1 and \
            profile is not None and (dispatchers := flex_dispatchers(row, profile)):
        # the perf recipes of Megatron-based frameworks pick the flex dispatcher (its DeepEP
        # or HybridEP backend) for expert parallelism; the profile's default is the first choice
        default = profile.defaults.get("moe_dispatcher") or "alltoall"
        unknown["moe_token_dispatcher_type"] = list(dict.fromkeys([default, *dispatchers]))
    mtp = bool(int(_cell(row, "mtp_num_layers") or preset.get("mtp_num_layers") or 0))
    rule = uneven_layout(profile.name, profile.version, mtp) if profile is not None \
        else "balanced"
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
    if _cell(row, "options") is None:
        for key in tuned_switches(row, profile, on):
            unknown[key] = [False, True]
    if profile is None and _cell(row, "grad_reduce_dtype") is None:
        # no framework named: the frameworks differ on it, so it is the authors' choice
        # (``validate.unnamed``)
        unknown["grad_reduce_dtype"] = grad_reduce_candidates(row)
    elif profile is not None and _cell(row, "grad_reduce_dtype") is None and \
            (dtypes := bf16_reduce(row, profile)):
        unknown["grad_reduce_dtype"] = dtypes  # its default kept unless needed (KEPT_DEFAULTS)
    if weights := fp8_weight_candidates(row, profile):
        # a row on a framework with no profile here: fp8 weights where only they fit
        # (catalog.fallback.FALLBACK_KEPT)
        unknown["fp8_param_gather"] = weights
    if _cell(row, "zero_stage") is None and (stages := user_zero_stages(profile)):
        # a plain PyTorch loop wraps the model in the engine its user picks (DDP, FSDP
        # SHARD_GRAD_OP or FULL_SHARD: profile ``zero_stage_engines``); a row that does not say
        # which ran the profile's DDP (fp32 parameters under autocast, README) wherever DDP
        # fits, else the fastest FSDP stage that fits (``validate.training.PREFERRED``)
        unknown["zero_stage"] = stages
    if _cell(row, "distributed_optimizer") is None and _cell(row, "zero_stage") in (None, "0") \
            and (profile is None or profile.defaults.get("zero_stage") is None):
        # Megatron's choice between its DDP and its distributed optimizer (ZeRO-1); a framework
        # whose engine shards by itself (FSDP: profile ``zero_stage``) has none to make, and its
        # own stage applies to a row that states none (``catalog.defaults.zero_engine``)
        unknown["distributed_optimizer"] = [True, False] if can("distributed_optimizer") \
            else [False]
    return unknown


KEPT_DEFAULTS = ("grad_reduce_dtype",)
"""Unknowns of a row that names its framework whose first candidate, the framework's default,
the tuner keeps at the fastest setting of the other cells wherever it fits there
(``validate.training.tune``'s ``kept``): the other candidates are memory measures a run takes
only where that setting needs them, not speed choices. The gradient-reduce dtype: Megatron-LM
keeps --bf16 gradients in fp32 for their precision ("bfloat16 requires gradient accumulation
and all-reduce to be done in fp32", megatron/training/arguments.py validate_args at
core_v0.12.0 L582-594) and recipes that fit keep it (the MoE Model Zoo's Megatron-core configs,
yanring/Megatron-MoE-ModelZoo@8017e11 model_configs/benchmarking/*.yaml, pass no
--grad-reduce-in-bf16; the DeepSeek-V3 GB200 guide, NVIDIA/Megatron-LM@eb0783b6d3, keeps fp32
main gradients), while the fp8 performance recipes whose runs need the memory reduce in bf16
(NVIDIA/NeMo@v2.3.0 scripts/performance/utils.py set_primary_perf_configs L351
``grad_reduce_in_fp32 = False`` under fp8, with recompute_layers 0 for Llama 3.1 405B on 1,024
H100s in recommended_model_configs/model_configs_h100.csv)."""


def bf16_reduce(row: dict[str, str], profile: Any) -> list[str]:
    """The gradient-reduce dtypes of a bf16 or fp8 row with an empty ``grad_reduce_dtype`` on
    a framework whose default is fp32 but whose user may reduce in bf16 by a flag (profile
    ``grad_reduce_bf16_flag``: Megatron-LM's --grad-reduce-in-bf16, megatron-core 0.12 on):
    ``["fp32", "bf16"]``, the default first (``KEPT_DEFAULTS``); empty elsewhere (the
    profile's dtype holds)."""
    dtype = (_cell(row, "dtype") or "bf16").lower()
    if dtype not in ("bf16", "fp8") or not profile.supports("grad_reduce_bf16_flag") or \
            profile.grad_reduce_dtype(dtype) != "fp32":
        return []
    return ["fp32", "bf16"]


def tuned_switches(row: dict[str, str], profile: Any,
                   on: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The unknowns (``with_choice`` keys) of the option switches a row that states no options
    leaves to the tuner: those its framework leaves to its user at the row's version (profile
    ``tuned_options``: a flag that exists and is off by default, whose feature the profile
    does not mark false, ``catalog.schema_checks.OPTION_FEATURES``), each where it can act on
    the row and is not on already (``on``). ``dp_overlap`` needs data parallelism (its key
    ``overlap_grad_reduce`` alone where the version cannot overlap the parameter gather,
    profile ``overlap_param_gather`` false), ``tp_overlap`` tensor parallelism (and sequence
    parallelism, ``with_choice``), ``pp_overlap`` a stated interleaved pipeline (as
    ``recipe_options``), ``ep_overlap`` a stated expert-parallel size. A row that names no
    framework (``profile`` None) leaves ``validate.unnamed.UNNAMED_TUNED_OPTIONS`` to it."""
    tp, pp = int(row["tp"]), int(row["pp"])
    try:
        dp = int(row["num_gpus"]) // (tp * pp * int(_cell(row, "cp") or 1))
    except (KeyError, ValueError, ZeroDivisionError):
        dp = 2  # the config reports the bad sizes; the switch may act
    acts = {"dp_overlap": dp > 1, "tp_overlap": tp > 1,
            "pp_overlap": pp > 1 and int(_cell(row, "vpp") or 1) > 1,
            "ep_overlap": int(_cell(row, "ep") or 1) > 1, "cuda_graphs": True}
    keys = []
    tuned = UNNAMED_TUNED_OPTIONS if profile is None else \
        profile.defaults.get("tuned_options") or ()
    for option in tuned:
        feature = OPTION_FEATURES[option]
        if option in on or not acts[option] or (profile is not None and feature is not None
                                                 and profile.supports(feature) is False):
            continue
        if option == "dp_overlap" and profile is not None and \
                profile.supports("overlap_param_gather") is False:
            keys.append("overlap_grad_reduce")
        else:
            keys.append(SWITCH_KEYS[option])
    return keys


#: the ``with_choice`` key of each tuned option switch (``tuned_switches``)
SWITCH_KEYS = {"dp_overlap": "dp_overlap", "tp_overlap": "tp_comm_overlap",
               "pp_overlap": "overlap_p2p_comm", "ep_overlap": "moe_overlap_ep_comm",
               "cuda_graphs": "cuda_graphs"}


def interleavings(row: dict[str, str], profile: Any, layers: int | None) -> list[int]:
    """The vpp candidates of a row with an empty vpp on a framework with Megatron's interleaved
    schedule: 1, 2, 3, 4, 6 and 8, except where the row states ``pp_overlap`` and its framework
    overlaps pipeline sends only in the interleaved schedule (profile
    ``p2p_overlap_interleaved_only``: NVIDIA/Megatron-LM megatron/training/arguments.py at
    core_v0.8.0, ``validate_args`` lines 271-277, turns overlap_p2p_comm off, with a warning,
    when no virtual stage size is given). Such a run interleaved, so its candidates are every
    count of virtual stages above 1 that splits a pipeline stage's layers evenly
    (``--num-layers-per-virtual-pipeline-stage`` may be any divisor of the layers per stage,
    the same function's lines 254-270): 23 layers per stage interleave only as vpp 23, 7 only
    as vpp 7 (``search.rules.stage_interleavings``, which `trainsim search` enumerates too).
    Where the layers do not split over the pipeline stages, or a stage has a single layer, the
    list stays. A release without the overlap (Megatron-LM before 2023-05-31: profile
    ``p2p_overlap`` false, ``p2p_overlap_interleaved_only`` false) keeps the short list."""
    pp = int(row["pp"])
    short = [1, 2, 3, 4, 6, 8]
    if pp <= 1 or not layers or layers % pp or layers == pp or profile is None or \
            not profile.supports("p2p_overlap_interleaved_only"):
        return short
    if "pp_overlap" not in {o.strip() for o in (_cell(row, "options") or "").split(";")}:
        return short
    return stage_interleavings(layers // pp, True)[1:]  # as trainsim search does, less 1


def user_zero_stages(profile: Any) -> list[int]:
    """The ZeRO stages a row that names no stage could have run under ``profile``: where the
    framework has no stage of its own (profile ``zero_stage``) but runs several engines by
    stage (``zero_stage_engines``: a plain PyTorch loop in DDP, or in FSDP SHARD_GRAD_OP = 2 and
    FULL_SHARD = 3, torch/distributed/fsdp/api.py ShardingStrategy), every stage it runs
    (``catalog.defaults.stage_engines``), its default engine's first; empty where the
    framework decides (its default applies). DDP's sharded stage is left out: a plain
    loop's ZeRO-1 is an optimizer its script wraps by name
    (``ZeroRedundancyOptimizer``), which a row states, not one a row left unsaid."""
    if profile is None or profile.defaults.get("zero_stage") is not None \
            or not profile.defaults.get("zero_stage_engines"):
        return []
    default = profile.defaults.get("data_parallel_impl")
    stages = {s: e for s, e in stage_engines(profile).items() if e != "ddp" or s == 0}
    return sorted(stages, key=lambda s: (stages[s] != default, s))


def flex_dispatchers(row: dict[str, str], profile: Any) -> list[str]:
    """The flex dispatcher's backends the tuner tries for a row with an expert-parallel size
    and an empty dispatcher: ``deepep`` and ``hybridep`` where the profile lists each
    (``moe_dispatchers``: Megatron-core's --moe-flex-dispatcher-backend hybridep from
    core_v0.16.0, Megatron-Bridge's from v0.2.0), HybridEP only on a GPU its kernels run on
    (``config.validity.dispatcher_runs_on``: sm_90 or newer; an unknown GPU is left to the
    config to report) the profile's release accepts (``catalog.framework_rules.flex_backend_runs``:
    Megatron-Bridge 25.11 HybridEP on GB200 / GB300 only)."""
    try:
        spec = gpu(row["gpu"])
    except (KeyError, TrainsimError):
        spec = None
    arch = spec.sm_arch if spec is not None else None
    return [d for d in ("deepep", "hybridep") if profile.supports(d) and dispatcher_runs_on(d, arch)
            and (spec is None or flex_backend_runs(profile.name, profile.version, d, spec.name,
                                                   arch))]


def context_sizes(row: dict[str, str], profile: Any = None) -> list[int]:
    """The context-parallel sizes to tune for a row with an empty cp: every power of 2 (1
    included) that leaves each remaining rank whole sequences (each data-parallel rank takes
    whole sequences) and each CP rank two chunks of every sequence (Megatron-core's
    load-balanced causal split: seq % 2cp == 0). A framework with context parallelism (profile
    ``cp_te_ring`` or ``cp_sdpa_ring``) is offered all of them, the tuner keeping the fastest
    that fits (an empty cell is the authors' choice, README); elsewhere only the sizes the batch
    needs where cp 1 cannot run it (torchtitan's long-context rows: 1 sequence on 8 GPUs). An
    empty tp or pp counts as 1 here (the layouts are enumerated with cp 1, ``validate.layouts``).
    Empty where only cp 1 is left (Megatron's default)."""
    try:
        ranks = int(row["num_gpus"]) // (int(_cell(row, "tp") or 1) * int(_cell(row, "pp") or 1))
        batch, seq = int(row["global_batch_size"]), int(row["seq_length"])
    except (KeyError, ValueError, ZeroDivisionError):
        return []  # the config reports the bad sizes
    if ranks < 1:
        return []
    valid = [c for c in (2 ** i for i in range(ranks.bit_length()))
             if ranks % c == 0 and batch % (ranks // c) == 0 and (c == 1 or seq % (2 * c) == 0)]
    features = profile.features if profile is not None else {}
    if not (features.get("cp_te_ring") or features.get("cp_sdpa_ring")):
        valid = [] if batch % ranks == 0 else [c for c in valid if c > 1]
    return [] if valid == [1] else valid


def default_micro_batch(row: dict[str, str], profile: Any) -> list[int] | None:
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


def selective_sets(row: dict[str, str], preset: dict[str, Any], profile: Any) -> list[str]:
    """Selective-recompute candidates beyond core attention, as ``selective:<modules>``, for
    frameworks whose profile has Megatron-core's ``--recompute-modules``."""
    if profile is None or not profile.supports("recompute_modules"):
        return []
    moe = int(_cell(row, "num_experts") or preset.get("num_experts") or 0) > 1
    mla = preset.get("kv_lora_rank") is not None
    sets = (MOE_RECOMPUTE_SETS if moe else ()) + (MLA_RECOMPUTE_SETS if mla else ())
    return [f"selective:{m}" for m in sets]
