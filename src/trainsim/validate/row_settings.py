"""A training row's settings: the raw config its cells state and the candidate values of the
cells it leaves empty (the tuner in ``validate.training`` chooses among them).

Empty cells are settings the source did not state: the named framework's default at that version
where the framework decides, else a setting the authors tuned ("unknown means tuned").
"""

from __future__ import annotations

from typing import Any

from trainsim.catalog import gpu, model_dict, model_name, names, node
from trainsim.catalog.defaults import stage_engines, truthy
from trainsim.catalog.frameworks import flex_backend_runs, uneven_layout, uneven_split
from trainsim.catalog.schema_checks import NVLINK_SCOPES, OPTION_FEATURES
from trainsim.config._build import suggest
from trainsim.config.cluster import segment_domains
from trainsim.config.validity import dispatcher_runs_on
from trainsim.errors import ConfigError, TrainsimError
from trainsim.search.rules import stage_interleavings
from trainsim.validate.common import _cell, count_cell
from trainsim.validate.unnamed import UNNAMED_TUNED_OPTIONS, grad_reduce_candidates

TRAINING_REQUIRED = ["id", "model", "gpu", "num_gpus", "gpus_per_node", "tp", "pp",
                     "global_batch_size", "seq_length", "measured_iteration_s"]
SHAPE_COLUMNS = ["hidden_size", "num_layers", "num_attention_heads", "num_kv_heads", "head_dim",
                 "ffn_hidden_size", "vocab_size", "activation", "tied_embeddings",
                 "attention_dropout", "hidden_dropout",
                 # multi-token-prediction layers (Megatron-core --mtp-num-layers): optional,
                 # beyond format v2; 0 = none (a DeepSeek-V3 run without MTP), empty = the preset's
                 "mtp_num_layers"]
# option -> (section, fields it turns on)
OPTION_FIELDS = {"tp_overlap": ("parallel", ("tp_comm_overlap",)),
                 "pp_overlap": ("parallel", ("overlap_p2p_comm",)),
                 # DP overlap "including the first all-gather and last reduce-scatter" (MegaScale
                 # §3.2): gradients reduce under the backward, parameters gather ahead of forward
                 "dp_overlap": ("parallel", ("overlap_grad_reduce", "overlap_param_gather")),
                 "ep_overlap": ("parallel", ("moe_overlap_ep_comm",)),
                 "cuda_graphs": ("training", ("cuda_graphs",)),
                 "compile": ("training", ("compile",)),
                 "launch_blocking": ("training", ("cuda_launch_blocking",)),
                 "enable_gqa": ("training", ("sdpa_enable_gqa",)),
                 # Megatron-core's use_precision_aware_optimizer (TE FusedAdam keeps the master
                 # weights: int16 remainders of bf16 parameters, memory.state._master_bytes), as
                 # NeMo's performance scripts set it for bf16 runs (NVIDIA/NeMo@b4148d2169
                 # scripts/performance/utils.py L422-423 set_primary_perf_configs, from
                 # 1053bed8be 2025-05-05)
                 "precision_aware_optimizer": ("training", ("use_precision_aware_optimizer",))}
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
    # Apex DistributedFusedAdam's state dtype where the run's NeMo 1.x config sets ``optim.dtype``
    # (memory.state._apex_state_bytes): an optional column beyond format v2, empty or absent = fp32
    "optimizer_dtype": ("training", "optimizer_dtype"),
    "fp8_recipe": ("training", "fp8_recipe"), "framework": ("training", "framework"),
    "framework_version": ("training", "framework_version"),
    "moe_capacity_factor": ("model", "moe_capacity_factor"),
    # parameters per data-parallel bucket where the run's config sets them (Megatron-core
    # DistributedDataParallelConfig.bucket_size; NeMo / MLPerf BUCKET_SIZE): an optional column
    # beyond format v2, empty or absent = the framework profile's default
    "ddp_bucket_size": ("parallel", "ddp_bucket_size"),
    # the NICs' transport where the source states it (AWS p5: EFA): an optional column beyond
    # format v2, empty or absent = InfiniBand / RoCE (ClusterConfig.fabric)
    "fabric": ("cluster", "fabric"),
    # NVLink SHARP where the run's NCCL had it (ClusterConfig.nvls, NCCL_NVLS_ENABLE): 0 where
    # the source's stack turned it off (aws-ofi-nccl v1.7.2-aws on sets NCCL_NVLS_ENABLE=0 on
    # AWS under NCCL 2.18.5, platform-aws.c): an optional column beyond format v2, empty or
    # absent = on where the GPU's NVSwitch has it
    "nvls": ("cluster", "nvls"),
    # the parts of a layer the run's CUDA graphs capture (Megatron-core / Megatron-Bridge
    # cuda_graph_scope, ';'-separated: attn;moe_router;moe_preprocess), with the cuda_graphs
    # option: an optional column beyond format v2, empty or absent = the whole layer
    "cuda_graph_scope": ("training", "cuda_graph_scope"),
    # HSDP's replicas (FSDP HYBRID_SHARD, torchtitan data_parallel_replicate_degree, Megatron
    # num_distributed_optimizer_instances): an optional column beyond format v2, empty or
    # absent = 1 (the state sharded over every data-parallel rank)
    "dp_replicate": ("parallel", "dp_replicate"),
    # the first N transformer layers whose saved activations go to host memory (Megatron-core
    # --cpu-offloading-num-layers; NeMo 2 perf scripts activation_offload_layers): an optional
    # column beyond format v2, empty or absent = the tuner's choice where the framework offloads
    # (``unknowns``), 0 = no offloading
    "cpu_offloading_num_layers": ("parallel", "cpu_offloading_num_layers"),
}


COUNT_COLUMNS = ("num_gpus", "gpus_per_node", "tp", "pp", "cp", "ep", "vpp", "global_batch_size",
                 "micro_batch_size", "local_batch_size", "seq_length", "num_layers",
                 "hidden_size", "num_attention_heads", "num_kv_heads", "head_dim", "ffn_hidden_size",
                 "vocab_size", "num_experts", "moe_top_k", "moe_ffn_hidden_size",
                 "recompute_num_layers", "ddp_bucket_size", "dp_replicate")
"""Columns holding a count or a size (whole numbers >= 1; empty where a column may be)."""
ZERO_COUNT_COLUMNS = ("cpu_offloading_num_layers", "zero_stage", "mtp_num_layers")
"""Count columns where 0 is a value (off): whole numbers >= 0 (a ZeRO stage written '0.0' was
not the '0' that lets the tuner choose Megatron's distributed optimizer, ``unknowns``)."""
TRAINING_COLUMNS = frozenset(
    [*TRAINING_REQUIRED, *SHAPE_COLUMNS, *COLUMN_FIELDS, *COUNT_COLUMNS, *ZERO_COUNT_COLUMNS,
     "source", "note", "num_experts", "moe_top_k", "moe_ffn_hidden_size", "options",
     "nic_gbps_per_gpu", "measured_peak_memory_gib", "memory_kind"])
"""Every column a training row is read from (format v2 and the optional ones beyond it)."""
NEEDED_COUNTS = ("num_gpus", "global_batch_size", "seq_length")
"""Count columns that may not be empty (gpus_per_node may: the GPU's catalog node; tp and pp
may: the authors' layout, tuned, ``validate.layouts``)."""
MODEL_SHAPE = ("hidden_size", "num_layers", "num_attention_heads", "vocab_size")
"""Shape columns a model that is not a preset needs (the rest take ModelConfig's defaults)."""


def counts_checked(row: dict[str, str]) -> dict[str, str]:
    """``row`` with its count cells written as plain integers ('8.0' -> '8'), after checking
    each is a whole number >= 1: the tuner reads some with ``int()`` and divides by them."""
    out = dict(row)
    for col in COUNT_COLUMNS:
        if col in NEEDED_COUNTS or _cell(row, col) is not None:
            out[col] = str(count_cell(row, col))
    for col in ZERO_COUNT_COLUMNS:
        if _cell(row, col) is not None:
            out[col] = str(count_cell(row, col, least=0))
    missing = [c for c in MODEL_SHAPE if _cell(row, c) is None]
    if _cell(row, "model") is None and missing:
        raise ConfigError("column 'model' is empty; give a preset name (e.g. llama3-8b) or the "
                          f"shape columns (missing: {', '.join(missing)})")
    return out


def row_profile(row: dict[str, str]) -> Any:
    """The framework profile a row names, or None."""
    from trainsim.catalog.frameworks import framework_profile

    name = _cell(row, "framework")
    return framework_profile(name, _cell(row, "framework_version")) if name else None


def _near_preset(name: str) -> None:
    """Warn where a model cell that is no preset is one letter or so from one: the row is read
    from its shape columns alone, without the preset's other fields (a Qwen3-235B-A22B row
    named 'qwen3-235b-a22' lost its MoE and QK-norm fields silently: 78.3 s against 69.9 s)."""
    import difflib
    import warnings

    from trainsim.errors import TrainsimWarning

    close = difflib.get_close_matches(name.strip().lower(), names("models"), n=1, cutoff=0.85)
    if close:
        warnings.warn(f"model {name!r} is no preset (did you mean {close[0]!r}?); the row's "
                      "model is its shape columns alone, without the preset's other fields",
                      TrainsimWarning, stacklevel=3)


def training_base(row: dict[str, str]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
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
        _near_preset(row["model"])
    for col in SHAPE_COLUMNS:
        if _cell(row, col) is not None:
            model[col] = _cell(row, col)
    for col, fieldname in (("num_experts", "num_experts"), ("moe_top_k", "moe_router_topk"),
                           ("moe_ffn_hidden_size", "moe_ffn_hidden_size")):
        if _cell(row, col) is not None:
            model[fieldname] = _cell(row, col)
    stated = {o.strip() for o in (_cell(row, "options") or "").split(";") if o.strip()}
    profile = None if stated else row_profile(row)
    options = stated or recipe_options(row, model, profile)
    unknown_opts = options - KNOWN_OPTIONS
    if unknown_opts:
        name = min(unknown_opts)
        raise ConfigError(f"unknown option '{name}'{suggest(name, KNOWN_OPTIONS)}; known: "
                          f"{', '.join(sorted(KNOWN_OPTIONS))}")
    if "parallel_block" in options:
        # the option is the formulation y = x + MLP(LN(x)) + Attention(LN(x)) with one LN(x)
        # (Jiang et al. 2024 MegaScale §3.1, after GPT-J's one ``ln_1``); a preset that is a
        # parallel block already keeps its own norms (GPT-NeoX's two)
        if not ("preset" in model and model_dict(model["preset"]).get("parallel_block")):
            model.setdefault("parallel_block_norms", 1)
        model["parallel_block"] = True
    if "fake_balanced_gate" in options:  # Automodel's benchmark gate (model.moe_router)
        model["moe_router"] = "fake_balanced"
    if "sliding_window" in options and preset_window(model) is None:
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
                               "gpus_per_node": _cell(row, "gpus_per_node")}
    if cluster["gpus_per_node"] is None:
        cluster["gpus_per_node"], shares = node_layout(row)
        if shares is not None:
            cluster["domain_gpus"] = list(shares)
    if _cell(row, "nic_gbps_per_gpu"):
        cluster["nic_gbit_s_per_gpu"] = row["nic_gbps_per_gpu"]
    raw = {"model": model, "parallel": parallel, "training": training, "cluster": cluster}
    for col, (sec, key) in COLUMN_FIELDS.items():
        v = _cell(row, col)
        if v is not None:
            raw[sec][key] = v
    if stated:  # a row's own options are checked before its framework is read
        profile = row_profile(row)
    if "attention" not in training and (profile is None or "fused_kernels" in options):
        # Without a framework: fp8 runs on Transformer Engine, whose attention is fused; the
        # "efficient operators" option is FlashAttention-2; otherwise Megatron's unfused path.
        # Without a framework FlashAttention-2 is TrainingConfig's default: left unset, so that
        # the config's sink rule (catalog.defaults.sink_attention) replaces it for a model whose
        # softmax has a sink, whatever describes the model (a preset, a config.json).
        fused = "fused_kernels" in options or training["dtype"] == "fp8"
        if not fused:
            training["attention"] = "unfused"
        elif profile is not None:
            training["attention"] = "flash2"
    return raw, unknowns(row, profile, options)


def recipe_options(row: dict[str, str], model: dict[str, Any], profile: Any) -> set[str]:
    """Options the row's framework switches on for a row that states none: those it turns on
    for every run (profile ``run_options``) where their condition holds, and those its
    performance recipes switch on for an expert-parallel MoE run on the row's kind of system
    (its NVLink domain, ``catalog.schema_checks.NVLINK_SCOPES``) and fp8 recipe (profile
    ``moe_recipe_options``). ``profile``: the row's (``row_profile``)."""
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
    domain = int(_cell(row, "gpus_per_node") or node_size(row))
    kind = _cell(row, "fp8_recipe") or _cell(row, "dtype") or "bf16"
    for scope, by_recipe in (profile.defaults.get("moe_recipe_options") or {}).items():
        if domain > NVLINK_SCOPES[scope]:
            out |= set(by_recipe.get(kind, ()))
    return out


def node_size(row: dict[str, str]) -> int:
    """GPUs per NVLink domain where the row is silent: the most of the row's GPUs one domain
    holds (``node_layout``)."""
    size, shares = node_layout(row)
    return max(shares) if shares else size


def node_layout(row: dict[str, str]) -> tuple[int, tuple[int, ...] | None]:
    """The NVLink domain of a row silent about it, and the row's GPUs in each domain where they
    differ: the smallest catalog node built around the row's GPU (a server: DGX-1 V100, not the
    16-GPU DGX-2; a GB200 NVL72 rack where the GPU comes only so), at most the row's GPU count.
    The row's GPU is compared as the catalog entry it names ("NVIDIA GB200" is gb200). A node
    made of trays (its ``gpus_per_tray``: the NVL72 racks' 18 compute trays of 4 GPUs) takes a
    job larger than a rack in Slurm segments of whole trays as NeMo's performance scripts submit
    it (``config.cluster.segment_domains``): 256 GPUs are 64 to a rack (the domain stated as 64,
    as Megatron-Bridge's GB200 runs state it), 76 are 72 + 4 (the rack and its shares). A
    server is taken whole."""
    try:
        name = gpu(row["gpu"]).name
    except TrainsimError:
        name = row["gpu"]  # the config reports the unknown GPU
    built = [node(n) for n in names("nodes")]
    entry = min((n for n in built if n.get("gpu") == name),
                key=lambda n: (int(n["gpus_per_node"]), n["name"]), default=None)
    size = int(entry["gpus_per_node"]) if entry else 8
    try:
        gpus = int(row["num_gpus"])
    except ValueError:
        return size, None  # the config reports the bad GPU count
    tray = int((entry or {}).get("gpus_per_tray") or 0)
    if tray and gpus > size and gpus % size:
        if gpus % tray:
            raise ConfigError(f"{gpus} {name} GPUs are not whole {tray}-GPU trays of "
                              f"{entry['name']}: state the row's gpus_per_node (its NVLink "
                              "domain)")
        shares = segment_domains(gpus // tray, tray, size // tray)
        if len(set(shares)) == 1:
            return shares[0], None
        return size, shares
    return max(1, min(size, gpus)), None


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
            profile.supports("cpu_offloading"):
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
    if _cell(row, "options") is None:
        for key in tuned_switches(row, profile, on):
            unknown[key] = [False, True]
    if profile is None and _cell(row, "grad_reduce_dtype") is None:
        # no framework named: the frameworks differ on it, so it is the authors' choice
        # (``validate.unnamed``)
        unknown["grad_reduce_dtype"] = grad_reduce_candidates(row)
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
    framework decides (its default applies)."""
    if profile is None or profile.defaults.get("zero_stage") is not None \
            or not profile.defaults.get("zero_stage_engines"):
        return []
    default = profile.defaults.get("data_parallel_impl")
    stages = stage_engines(profile)
    return sorted(stages, key=lambda s: (stages[s] != default, s))


def flex_dispatchers(row: dict[str, str], profile: Any) -> list[str]:
    """The flex dispatcher's backends the tuner tries for a row with an expert-parallel size
    and an empty dispatcher: ``deepep`` and ``hybridep`` where the profile lists each
    (``moe_dispatchers``: Megatron-core's --moe-flex-dispatcher-backend hybridep from
    core_v0.16.0, Megatron-Bridge's from v0.2.0), HybridEP only on a GPU its kernels run on
    (``config.validity.dispatcher_runs_on``: sm_90 or newer; an unknown GPU is left to the
    config to report) the profile's release accepts (``catalog.frameworks.flex_backend_runs``:
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


def preset_window(model: dict[str, Any]) -> int | None:
    """The sliding window a row's model already has (its preset's), if any."""
    if "preset" not in model:
        return None
    return model_dict(model["preset"]).get("sliding_window")


def with_choice(raw: dict[str, Any], choice: dict[str, Any]) -> dict[str, Any]:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    for key, value in choice.items():
        sec = "training" if key in ("micro_batch_size", "cuda_graphs", "grad_reduce_dtype") \
            else "parallel"
        if key == "recompute" and value.startswith("selective:"):
            value, out[sec]["recompute_modules"] = "selective", value.split(":", 1)[1].split(";")
        if key == "dp_overlap":  # the option's two switches (OPTION_FIELDS), tuned together
            for fieldname in OPTION_FIELDS["dp_overlap"][1]:
                out[sec][fieldname] = value
            continue
        out[sec][key] = value
    if choice.get("tp_comm_overlap") and not truthy(out["parallel"].get("sequence_parallel")):
        # Megatron-LM arguments.py: "Tensor parallel communication/GEMM overlap can happen only
        # when sequence parallelism is enabled"; Megatron-Bridge's CommOverlapConfig turns it off
        raise ConfigError("tp_comm_overlap needs sequence_parallel")
    return out
