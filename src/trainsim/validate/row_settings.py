"""A training row's settings: the raw config its cells state and the candidate values of the
cells it leaves empty (the tuner in ``validate.training`` chooses among them).

The candidate values live in ``validate.row_unknowns`` (importable from here).

Empty cells are settings the source did not state: the named framework's default at that version
where the framework decides, else a setting the authors tuned ("unknown means tuned").
"""

from __future__ import annotations

from typing import Any

from trainsim.catalog import gpu, model_dict, model_name, names, node
from trainsim.catalog.defaults import OVERLAP_ACTS, overlap_stages, truthy
from trainsim.catalog.fallback import read_by_fallback
from trainsim.catalog.schema_checks import NVLINK_SCOPES
from trainsim.config._build import suggest
from trainsim.config.cluster import segment_domains
from trainsim.config.model import HF_GELU_ACTIVATIONS
from trainsim.errors import ConfigError, TrainsimError
from trainsim.validate.common import _cell, count_cell
from trainsim.validate.row_unknowns import (  # noqa: F401 - re-exported: the row's candidates
    MLA_RECOMPUTE_SETS,
    MOE_RECOMPUTE_SETS,
    SWITCH_KEYS,
    context_sizes,
    default_micro_batch,
    flex_dispatchers,
    interleavings,
    selective_sets,
    tuned_switches,
    unknowns,
    user_zero_stages,
)

TRAINING_REQUIRED = ["id", "model", "gpu", "num_gpus", "gpus_per_node", "tp", "pp",
                     "global_batch_size", "seq_length", "measured_iteration_s"]
SHAPE_COLUMNS = ["hidden_size", "num_layers", "num_attention_heads", "num_kv_heads", "head_dim",
                 "ffn_hidden_size", "vocab_size", "activation", "tied_embeddings",
                 "attention_dropout", "hidden_dropout",
                 # multi-token-prediction layers (Megatron-core --mtp-num-layers): optional,
                 # beyond format v2; 0 = none (a DeepSeek-V3 run without MTP), empty = the preset's
                 "mtp_num_layers",
                 # dense transformer layers before the first MoE layer (Megatron-core
                 # --moe-layer-freq '([0]*k+[1]*(L-k))', HF first_k_dense_replace): optional,
                 # beyond format v2; empty = the preset's (a truncated DeepSeek run may keep 1)
                 "moe_first_dense_layers"]
# option -> (section, fields it turns on)
OPTION_FIELDS = {"tp_overlap": ("parallel", ("tp_comm_overlap",)),
                 "pp_overlap": ("parallel", ("overlap_p2p_comm",)),
                 # DP overlap "including the first all-gather and last reduce-scatter" (MegaScale
                 # §3.2): gradients reduce under the backward, parameters gather ahead of forward
                 "dp_overlap": ("parallel", ("overlap_grad_reduce", "overlap_param_gather")),
                 # the gather half alone, Megatron's own flag name: the parameter all-gathers
                 # ahead of each chunk's forward while the gradients reduce after the backward
                 # (Megatron-Bridge@v0.1.0rc3 scripts/performance/run_script.py L94-95 turns
                 # overlap_grad_reduce off for DeepSeek-V3 on H100, training/comm_overlap.py
                 # L542-545 keeps overlap_param_gather at DP > 1; Megatron-core core_v0.14.0
                 # distributed_data_parallel.py L66-68: one bucket per buffer without the
                 # reduce overlap, L322 / L431 the gather overlap on its own switch)
                 "overlap_param_gather": ("parallel", ("overlap_param_gather",)),
                 "ep_overlap": ("parallel", ("moe_overlap_ep_comm",)),
                 # the shared experts on a side stream beside the expert all-to-alls (Megatron-core
                 # moe_shared_expert_overlap: NeMo's Llama4Config sets it, NVIDIA/NeMo@7a8f1cc7bc
                 # nemo/collections/llm/gpt/model/llama.py)
                 "shared_expert_overlap": ("parallel", ("moe_shared_expert_overlap",)),
                 "cuda_graphs": ("training", ("cuda_graphs",)),
                 "compile": ("training", ("compile",)),
                 "launch_blocking": ("training", ("cuda_launch_blocking",)),
                 "enable_gqa": ("training", ("sdpa_enable_gqa",)),
                 "no_grad_clip": ("training", ("no_grad_clip",)),
                 # the token and position lookups as one-hot GEMMs (MaxText use_iota_embed)
                 "onehot_embedding": ("training", ("onehot_embedding",)),
                 # Praxis's own layers, not Transformer Engine's (Paxml ENABLE_TE=0)
                 "xla_layers": ("training", ("xla_layers",)),
                 # the decoder layers as separate parameters (MaxText scan_layers=false)
                 "unscanned_layers": ("training", ("unscanned_layers",)),
                 # Megatron-core's use_precision_aware_optimizer (TE FusedAdam keeps the master
                 # weights: int16 remainders of bf16 parameters, memory.state._master_bytes), as
                 # NeMo's performance scripts set it for bf16 runs (NVIDIA/NeMo@b4148d2169
                 # scripts/performance/utils.py L422-423 set_primary_perf_configs, from
                 # 1053bed8be 2025-05-05)
                 "precision_aware_optimizer": ("training", ("use_precision_aware_optimizer",)),
                 # Megatron-core's tp_only_amax_red: delayed scaling's amaxes reduced over TP x CP
                 # only (config.training.TrainingConfig.tp_only_amax_red)
                 "tp_only_amax_red": ("training", ("tp_only_amax_red",))}
KNOWN_OPTIONS = set(OPTION_FIELDS) | {"parallel_block", "sliding_window", "fused_kernels", "lamb",
                                       "fake_balanced_gate", "hf_modules"}
# format v2 column -> (section, config field), copied when the cell is not empty
COLUMN_FIELDS = {
    "cp": ("parallel", "cp"), "ep": ("parallel", "ep"),
    "vpp": ("parallel", "vpp"), "sequence_parallel": ("parallel", "sequence_parallel"),
    "recompute": ("parallel", "recompute"), "zero_stage": ("parallel", "zero_stage"),
    "distributed_optimizer": ("parallel", "distributed_optimizer"),
    "recompute_num_layers": ("parallel", "recompute_num_layers"),
    "recompute_modules": ("parallel", "recompute_modules"),
    # a JAX run's remat policy by name (MaxText remat_policy, Paxml CHECKPOINT_POLICY;
    # custom:<names> for MaxText's custom device tensors): an optional column beyond format v2,
    # empty or absent = not stated (the recompute / recompute_modules cells say what re-runs)
    "remat_policy": ("parallel", "remat_policy"),
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
    # XLA's --xla_gpu_all_reduce_combine_threshold_bytes where the run's script sets it (with
    # the unscanned_layers option, workload.xla_combine): an optional column beyond format v2,
    # empty or absent = XLA's default
    "all_reduce_combine_bytes": ("parallel", "all_reduce_combine_bytes"),
    # the NICs' transport where the source states it (AWS p5: EFA): an optional column beyond
    # format v2, empty or absent = InfiniBand / RoCE (ClusterConfig.fabric)
    "fabric": ("cluster", "fabric"),
    # NVLink SHARP where the run's NCCL had it (ClusterConfig.nvls, NCCL_NVLS_ENABLE): 0 where
    # the source's stack turned it off (aws-ofi-nccl v1.7.2-aws on sets NCCL_NVLS_ENABLE=0 on
    # AWS under NCCL 2.18.5, platform-aws.c): an optional column beyond format v2, empty or
    # absent = on where the GPU's NVSwitch has it
    "nvls": ("cluster", "nvls"),
    # the NCCL release the run's stack loaded (2.19.4; an NGC container's, from NVIDIA's release
    # notes), which sizes NCCL's NVLS buffers on NVSwitch nodes (memory.nccl_buffers): an
    # optional column beyond format v2, empty or absent = not stated, those buffers not counted
    "nccl_version": ("cluster", "nccl_version"),
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
    # the first / last transformer layers kept in bf16 under fp8 or NVFP4 (Megatron-core
    # --first-last-layers-bf16 with --num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16,
    # torchtitan's NVFP4 bf16 tail): optional columns beyond format v2, empty or absent = 0
    "num_layers_at_start_in_bf16": ("training", "num_layers_at_start_in_bf16"),
    "num_layers_at_end_in_bf16": ("training", "num_layers_at_end_in_bf16"),
    # 0/1: the matmul weights kept quantized and all-gathered so (Megatron --fp8-param-gather,
    # --fp4-param-gather under NVFP4): an optional column beyond format v2, empty or absent =
    # the framework's default for the recipe
    "fp8_param_gather": ("training", "fp8_param_gather"),
    # 0/1: whether the weight-gradient GEMMs accumulate into main_grad themselves (Megatron
    # --no-gradient-accumulation-fusion: 0): an optional column beyond format v2, empty or
    # absent = the framework's default at its version (``workload.wgrad_fusion``)
    "gradient_accumulation_fusion": ("training", "gradient_accumulation_fusion"),
    # tensor parallelism inside each expert (Megatron-core --expert-tensor-parallel-size, NeMo 2
    # perf scripts -et / etp_size): an optional column beyond format v2, empty or absent = 1, or
    # the TP where the row's framework leaves it to Megatron-core (``moe_etp_unset_is_tp``)
    "etp": ("parallel", "expert_tensor_parallel_size"),
    # GPUs behind one NIC where the source's machines have fewer NICs than GPUs (InternEvo's
    # 4 x 100 Gb RoCE for 8 A100, DGX-1's 4 EDR ports): an optional column beyond format v2,
    # empty or absent = 1 (a NIC a GPU); nic_gbps_per_gpu stays each GPU's share of its NIC
    "gpus_per_nic": ("cluster", "gpus_per_nic"),
    # 0/1 and a count: Megatron-core's defer_embedding_wgrad_compute and wgrad_deferral_limit
    # where the run's config script sets them (MLPerf DEFER_EMBEDDING_WGRAD_COMPUTE,
    # WGRAD_DEFERRAL_LIMIT): optional columns beyond format v2, empty or absent = the
    # framework profile's rule (``embedding_wgrad_deferral``) and 0 (every micro-batch)
    "defer_embedding_wgrad_compute": ("parallel", "defer_embedding_wgrad_compute"),
    "wgrad_deferral_limit": ("parallel", "wgrad_deferral_limit"),
}


COUNT_COLUMNS = ("num_gpus", "gpus_per_node", "tp", "pp", "cp", "ep", "vpp", "global_batch_size",
                 "micro_batch_size", "local_batch_size", "seq_length", "num_layers",
                 "hidden_size", "num_attention_heads", "num_kv_heads", "head_dim", "ffn_hidden_size",
                 "vocab_size", "num_experts", "moe_top_k", "moe_ffn_hidden_size",
                 "recompute_num_layers", "ddp_bucket_size", "dp_replicate", "dp", "etp",
                 "gpus_per_nic", "all_reduce_combine_bytes")
"""Columns holding a count or a size (whole numbers >= 1; empty where a column may be). ``dp``
(beyond format v2: the README derives it as num_gpus / (tp*pp*cp)) is a check where a table
states it: a row whose dp contradicts its other sizes fails, and an empty tp or pp is tuned
among the layouts with that dp."""
ZERO_COUNT_COLUMNS = ("cpu_offloading_num_layers", "zero_stage", "mtp_num_layers",
                      "wgrad_deferral_limit",
                      "moe_first_dense_layers",
                      "num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16")
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
    dp, sizes = _cell(out, "dp"), [_cell(out, c) for c in ("tp", "pp")]
    if dp is not None and None not in sizes:
        product = int(sizes[0]) * int(sizes[1]) * int(_cell(out, "cp") or 1) * int(dp)
        if product != int(out["num_gpus"]):
            raise ConfigError(f"column dp={dp} contradicts the others: tp*pp*cp*dp = "
                              f"{sizes[0]}*{sizes[1]}*{_cell(out, 'cp') or 1}*{dp} = {product}, "
                              f"but num_gpus={out['num_gpus']}")
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


def _is_moe(model: dict[str, Any]) -> bool:
    """Whether the raw model (a preset, with the row's cells over it) has routed experts."""
    experts = model.get("num_experts")
    if experts is None and "preset" in model:
        experts = model_dict(model["preset"]).get("num_experts")
    return int(experts or 0) > 1


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
    if model.get("activation") in HF_GELU_ACTIVATIONS and model["activation"] != "gelu":
        # a Hugging Face module's name (gelu_new, ...): a 2-matrix MLP running that module
        model.update(activation="gelu", hidden_act=model["activation"])
    for col, fieldname in (("num_experts", "num_experts"), ("moe_top_k", "moe_router_topk"),
                           ("moe_ffn_hidden_size", "moe_ffn_hidden_size")):
        if _cell(row, col) is not None:
            model[fieldname] = _cell(row, col)
    stated = stated_options(row)
    profile = None if stated else row_profile(row)
    options = stated or recipe_options(row, model, profile)  # a stated cell is the whole list
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
        for fieldname in fieldnames:  # a field two options turn on (dp_overlap's gather): either
            section = parallel if sec == "parallel" else training
            section[fieldname] = section.get(fieldname, False) or opt in options
    if "lamb" in options:
        training["optimizer"] = "lamb"
    if "hf_modules" in options:
        # the model is Hugging Face transformers' own (LlamaForCausalLM under DeepSpeed): its
        # modules run one kernel per PyTorch op (TrainingConfig.modules), whatever the
        # framework's reference model fused; a framework builds no model of its own there
        training["modules"] = "eager"
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
    if "moe_capacity_factor" in model:
        # format v2: "a number = token dropping at that capacity with padded, static shapes"
        # (validation README): Megatron-core's moe_pad_expert_input_to_capacity (default False),
        # which every capacity row's run sets (NeMo's MegatronTokenDropCallback default True)
        model["moe_pad_expert_input_to_capacity"] = True
    if stated:  # a row's own options are checked before its framework is read
        profile = row_profile(row)
        if not read_by_fallback(row):
            _dropped_defaults(row, model, profile, stated)
    if _cell(row, "etp") is None and _cell(row, "tp") is not None and profile is not None \
            and profile.features.get("moe_etp_unset_is_tp") and _is_moe(model):
        # an expert TP the run left unset: the framework's, the TP (``moe_etp_unset_is_tp``)
        parallel["expert_tensor_parallel_size"] = row["tp"]
    gathers = None if profile is None else overlap_stages(profile, "overlap_param_gather")
    sharded = _gather_stage(parallel)
    if parallel.get("overlap_param_gather") and gathers is not None and (
            gathers == () or (sharded is not None and sharded not in gathers)):
        # dp_overlap's gather half where the framework overlaps no parameter gather at any
        # stage (profile ``overlap_param_gather: []``: nanotron's gather and InternEvo's
        # broadcasts wait after the step) or at the row's sharded stage (a plain PyTorch
        # loop's ZeRO-1: ZeroRedundancyOptimizer.step waits for its broadcasts): the run
        # overlaps its gradient reduction only
        parallel["overlap_param_gather"] = False
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


def stated_options(row: dict[str, str]) -> set[str]:
    """The features a row's options cell lists. A stated cell is the complete list of the run's
    features (validation README: "features the run used"), the framework's defaults it kept
    included; only an empty cell is a setting the source did not state, which takes the
    framework's defaults (``recipe_options``) and its user's choices (``tuned_switches``). The
    format has no negation, so a run that turned a default off (the NeMo Launcher's 24.01
    gpt3/175b.yaml: ``overlap_p2p_comm: False`` on an interleaved pipeline; SimuMax's 'sync'
    cases: ``--no-overlap-p2p-communication``) can be written only this way."""
    return {o.strip() for o in (_cell(row, "options") or "").split(";") if o.strip()}


def _dropped_defaults(row: dict[str, str], model: dict[str, Any], profile: Any,
                      stated: set[str]) -> None:
    """Warn, in one line, where a stated options cell leaves out options the row's framework
    turns on for it where the cell is empty (``recipe_options``): the cell is the run's whole
    list (:func:`stated_options`), so the row runs without them. graphs58: the 57th session's
    what-if wrote ``cuda_graphs`` alone in a Nemotron 3 row's cell and lost the profile's
    ``dp_overlap`` without a word (exposed DP 0.593 -> 1.614 s). ``dp_overlap`` is not named
    where the row has no data- or context-parallel ranks (nothing to reduce over them). Not
    called for a row on a framework with no profile here (``catalog.fallback.read_by_fallback``):
    the defaults are then the fallback stack's, which its cell could not have listed (the blind
    Automodel DeepSeek-V3 rows were told to list Megatron-core's pp_overlap, which their torch
    2.8 pipeline schedule does not have: automodel.yaml ``p2p_overlap``)."""
    import warnings

    from trainsim.errors import TrainsimWarning

    dropped = _left_out(recipe_options(row, model, profile), stated)
    try:
        if int(row["num_gpus"]) == int(row["tp"]) * int(row["pp"]):
            dropped.discard("dp_overlap")
    except (KeyError, TypeError, ValueError):
        pass  # a count the config refuses by its own words
    if dropped:
        version = _cell(row, "framework_version") or profile.version
        warnings.warn(f"row {_cell(row, 'id') or '?'}: its options cell "
                      f"'{_cell(row, 'options')}' leaves out {', '.join(sorted(dropped))}, "
                      f"which {profile.name} {version} turns on where the cell is empty; a "
                      "stated cell is the run's whole list, so the row runs without them (list "
                      "them to keep them)", TrainsimWarning, stacklevel=3)


def omitted_defaults(row: dict[str, str]) -> set[str]:
    """The options the row's framework would turn on for it (``recipe_options``) that its
    stated options cell leaves out, which the row therefore runs without: empty for an empty
    cell (the defaults apply). A check for row authors (``benchmarks/options_omitted.py``):
    a cell copied from a command line's flags misses the defaults the command left on."""
    stated = stated_options(row)
    if not stated:
        return set()
    model: dict[str, Any] = \
        {"preset": row["model"]} if _cell(row, "model") and model_name(row["model"]) else {}
    if _cell(row, "num_experts") is not None:
        model["num_experts"] = _cell(row, "num_experts")
    return _left_out(recipe_options(row, model, row_profile(row)), stated)


def _left_out(defaults: set[str], stated: set[str]) -> set[str]:
    """The framework's defaults a stated cell leaves out; ``dp_overlap`` is not left out by a
    cell that states its gather half alone (``overlap_param_gather``): the row says which half
    its run overlapped (Megatron-Bridge's H100 DeepSeek-V3 runs, OPTION_FIELDS)."""
    out = defaults - stated
    if "overlap_param_gather" in stated:
        out.discard("dp_overlap")
    return out


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
    # a hybrid model has no combined 1F1B (Megatron-core builds schedule plans for GPTModel
    # only; Megatron-Bridge@067f987d perf_recipes/nemotronh/gb200/nemotronh.py's Nano recipes
    # leave the expert all-to-all overlap off)
    never = {"ep_overlap"} if model.get("hybrid_layer_pattern") or \
        preset.get("hybrid_layer_pattern") else set()
    for scope, by_recipe in (profile.defaults.get("moe_recipe_options") or {}).items():
        if domain > NVLINK_SCOPES[scope]:
            out |= set(by_recipe.get(kind, ())) - never
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


def preset_window(model: dict[str, Any]) -> int | None:
    """The sliding window a row's model already has (its preset's), if any."""
    if "preset" not in model:
        return None
    return model_dict(model["preset"]).get("sliding_window")


def with_choice(raw: dict[str, Any], choice: dict[str, Any]) -> dict[str, Any]:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    for key, value in choice.items():
        sec = "training" if key in ("micro_batch_size", "cuda_graphs", "grad_reduce_dtype",
                                    "fp8_param_gather") else "parallel"
        if key == "recompute" and value.startswith("selective:"):
            value, out[sec]["recompute_modules"] = "selective", value.split(":", 1)[1].split(";")
        if key == "dp_overlap":  # the option's two switches (OPTION_FIELDS), tuned together
            for fieldname in OPTION_FIELDS["dp_overlap"][1]:
                out[sec][fieldname] = value
            continue
        out[sec][key] = value
    if choice.get("fp8_param_gather") and not (
            truthy(out["parallel"].get("distributed_optimizer"))
            or str(out["parallel"].get("zero_stage", "")).strip() == "1"):
        # Megatron-LM@core_v0.9.0 megatron/training/arguments.py L316: "--fp8-param-gather only
        # supported with distributed optimizer" (catalog.fallback.fp8_weight_candidates)
        raise ConfigError("fp8_param_gather needs the distributed optimizer")
    if choice.get("tp_comm_overlap") and not truthy(out["parallel"].get("sequence_parallel")):
        # Megatron-LM arguments.py: "Tensor parallel communication/GEMM overlap can happen only
        # when sequence parallelism is enabled"; Megatron-Bridge's CommOverlapConfig turns it off
        raise ConfigError("tp_comm_overlap needs sequence_parallel")
    return out


def _gather_stage(parallel: dict[str, Any]) -> int | None:
    """The row's ZeRO stage where it states one at which there is a parameter gather to
    overlap (1-3: ``catalog.defaults.OVERLAP_ACTS``), else None (not dropped for it)."""
    stage = parallel.get("zero_stage")
    if stage in (None, ""):
        return None
    value = 1 if int(float(stage)) == 0 and truthy(parallel.get("distributed_optimizer")) \
        else int(float(stage))
    return value if value in OVERLAP_ACTS["overlap_param_gather"] else None
