"""Fill what a run config leaves out from its framework's profile, and refuse what it cannot do.

A config that names ``training.framework`` (and ``framework_version``) gets that framework's
defaults for the settings it does not give: the attention kernel, the gradient-reduce dtype,
the fp8 recipe, the MoE dispatcher, the context-parallel exchange, how the pipeline split counts the embedding and loss, CUDA
graphs, the DDP bucket size and whether the gradient reduction overlaps the backward; and the
model's dropouts, which a framework's recipes set per model family (:data:`DROPOUTS`: the run's
own, else the profile's for the model's position-embedding family, else the preset's). A setting
the framework could not run at that version (sequence parallelism in Megatron-DeepSpeed 2022,
say) is an error that cites the profile's source.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import Any

from trainsim.catalog.attention_rules import (  # also from here
    SDPA_ENABLE_GQA_SINCE,
    gpu_vendor,
    sdpa_enable_gqa_problem,
    sink_attention,
    sink_kernels,
    softcap_attention,
    window_attention_problem,
)
from trainsim.catalog.raw_values import given as _given
from trainsim.catalog.raw_values import number as _number
from trainsim.catalog.raw_values import truthy
from trainsim.config._build import SYNONYMS, suggest
from trainsim.config.parallel import ALIASES
from trainsim.errors import ConfigError, SettingReplaced

GRAD_REDUCE_DTYPES = ("fp32", "bf16", "fp16")

# (section, config field, profile feature it needs) for switches a framework may lack
_NEEDS_FEATURE = (
    ("parallel", "sequence_parallel", "sequence_parallel"),
    ("parallel", "distributed_optimizer", "distributed_optimizer"),
    ("parallel", "tp_comm_overlap", "tp_comm_overlap"),
    ("parallel", "overlap_p2p_comm", "p2p_overlap"),
    ("training", "cuda_graphs", "cuda_graphs"),
    ("training", "use_precision_aware_optimizer", "precision_aware_optimizer"),
)
SEARCH_SWITCHES = tuple((key, feature) for sec, key, feature in _NEEDS_FEATURE
                        if sec == "parallel") + \
    (("virtual_pipeline_model_parallel_size", "interleaved_pipeline"),)
"""(parallel field, profile feature it needs) for the parallel settings the loader refuses
where the framework lacks the feature (``_NEEDS_FEATURE``'s parallel switches and the
interleaved pipeline's virtual stages, ``apply_framework``): the ones a search must never
offer such a framework (``search.candidate.Base.lacks``, ``search.space``)."""
SEARCH_SIZES = (("tp", "tensor_parallel", "tensor parallelism"),
                ("pp", "pipeline_parallel", "pipeline parallelism"),
                ("cp", "context_parallel", "context parallelism"))
"""(parallel size, profile feature it needs, the refusal's words): a size above 1 is refused
where the framework (at its release) lacks the feature (``apply_framework``); the search
offers such a framework size 1 only (``search.space.lacked_sizes``)."""
# (section, config field, profile default) filled when the config leaves the field out
_DEFAULTED = (
    ("training", "fp8_recipe", "fp8_recipe"),
    ("training", "cuda_graphs", "cuda_graphs"),
    ("parallel", "moe_token_dispatcher_type", "moe_dispatcher"),
    ("parallel", "moe_router_dtype", "moe_router_dtype"),
    ("parallel", "moe_hybridep_num_sms", "moe_hybridep_num_sms"),
    ("parallel", "ddp_bucket_size", "ddp_bucket_size"),
    ("parallel", "dp_max_ctas", "dp_max_ctas"),
    ("parallel", "dp_buckets", "dp_buckets"),
    ("parallel", "data_parallel_impl", "data_parallel_impl"),
    ("parallel", "zero3_gather", "zero3_gather"),
    ("parallel", "tp_comm_overlap_method", "tp_comm_overlap_method"),
    ("parallel", "overlap_grad_reduce", "overlap_grad_reduce"),
    ("parallel", "zero1_grad_reduce", "zero1_grad_reduce"),
    ("parallel", "zero1_param_sync", "zero1_param_sync"),
    ("parallel", "zero3_grad_reduce", "zero3_grad_reduce"),
    ("training", "expandable_segments", "expandable_segments"),
    ("training", "modules", "modules"),
    ("training", "cross_entropy", "cross_entropy"),
    ("training", "norm", "norm"),
    ("parallel", "cp_comm_type", "cp_comm_type"),
)
_PLACEMENT = ("pipeline_model_parallel_layout", "decoder_first_pipeline_num_layers",
              "decoder_last_pipeline_num_layers")


DROPOUTS = ("attention_dropout", "hidden_dropout")
"""The model's dropout probabilities a framework profile states (``defaults``), each one of:
a number, what the framework sets for every model (MLPerf's GPT-3 reference 0.0, torchtitan's
dropout-free model code); a mapping by the model's position-embedding family (``learned``: the
GPT-2/3 lineage, ``rope``, ``alibi``, ``none``) where the framework's recipes set it per model
family (Megatron-LM's ``--attention-dropout`` default 0.1 under its GPT-3 scripts, 0.0 in every
Llama / Mixtral / DeepSeek one); or null, and a family the mapping does not list: the model's
own value (its preset or Hugging Face config). Precedence, first that states it: the run's own
(a model field its config writes; a validation row's dropout cells), then the profile's, then
the model preset's, then ``ModelConfig``'s 0.0 (:func:`framework_dropouts`)."""


def profile_dropouts(profile: Any, position_embedding: str) -> dict[str, float]:
    """The dropout probabilities ``profile`` sets for a model of this position-embedding
    family, by :data:`DROPOUTS` field; a field it leaves to the model is absent."""
    return profile_dropouts_of(profile.defaults, position_embedding)


def profile_dropouts_of(defaults: Any, position_embedding: str) -> dict[str, float]:
    """:func:`profile_dropouts` of a profile's ``defaults`` mapping."""
    out = {}
    for key in DROPOUTS:
        value = defaults.get(key)
        if isinstance(value, dict):
            value = value.get(position_embedding)
        if value is not None:
            out[key] = float(value)
    return out


def framework_dropouts(model: Any, raw: Any, profile: Any) -> Any:
    """``model`` (a ``ModelConfig``) with the dropouts ``profile`` sets for its family in place
    of its preset's (:data:`DROPOUTS`' precedence), but for a field ``raw``, the run's model
    section, writes itself; the same object where nothing changes."""
    stated = set(raw) if isinstance(raw, dict) else set()
    changes = tuple((k, v) for k, v in profile_dropouts(profile, model.position_embedding).items()
                    if k not in stated and getattr(model, k) != v)
    if not changes:
        return model
    try:
        return _with_fields(model, changes)
    except TypeError:  # a field that does not hash: built afresh
        return dataclasses.replace(model, **dict(changes))


@functools.lru_cache(maxsize=256)
def _with_fields(model: Any, changes: tuple[tuple[str, float], ...]) -> Any:
    """``dataclasses.replace`` memoized: a row's tuner builds its model hundreds of times."""
    return dataclasses.replace(model, **dict(changes))


def grad_reduce_field(training: dict[str, Any]) -> None:
    """Read ``training.grad_reduce_dtype`` (format v2's name) into ``grad_reduce_in_fp32``."""
    if "grad_reduce_dtype" not in training:
        return
    value = str(training.pop("grad_reduce_dtype")).strip().lower()
    if value not in GRAD_REDUCE_DTYPES:
        raise ConfigError(f"training.grad_reduce_dtype={value!r} is not one of "
                          f"{list(GRAD_REDUCE_DTYPES)}")
    if "grad_reduce_in_fp32" in training:
        raise ConfigError("training.grad_reduce_dtype and training.grad_reduce_in_fp32 say the "
                          "same thing; give one")
    training["grad_reduce_in_fp32"] = value == "fp32"


def gpu_arch(gpu: Any) -> str | None:
    """Architecture of a catalog GPU as framework kernels select by it (``GPUSpec.sm_arch``):
    sm80 (Ampere), sm90 (Hopper), sm100 (Blackwell), ...; ``amd`` for any AMD GPU (ROCm builds
    choose their kernels by vendor: ROCm Transformer Engine's attention, ``ck``); None if
    unknown. A GPU given inline as a mapping reads the same way (its ``vendor``, its
    compute capability or peaks); one too incomplete to build still answers ``amd`` by its
    vendor (the mapping's own error comes when the cluster is built)."""
    from trainsim.catalog import gpu as catalog_gpu
    from trainsim.catalog import gpu_from_dict

    try:
        spec = gpu_from_dict(gpu) if isinstance(gpu, dict) else catalog_gpu(str(gpu))
    except ConfigError:
        return "amd" if gpu_vendor(gpu) == "amd" else None
    if spec.vendor == "amd":
        return "amd"
    arch = spec.sm_arch
    return None if arch is None else f"sm{arch}"


def _v_schedule(text: Any) -> bool:
    """Whether a raw ``parallel.pipeline_schedule`` names a V schedule (zb_v, dualpipe_v: two
    chunks a rank, vpp 2 whether said or not); an unknown name is left to ``ParallelConfig``."""
    from trainsim.config.schedule_names import V_SCHEDULES, schedule_name

    try:
        return schedule_name(str(text)) in V_SCHEDULES
    except ConfigError:
        return False


def _looped_bfs(text: Any) -> bool:
    """Whether a raw ``parallel.pipeline_schedule`` names the looped BFS schedule (an unknown
    name is left for ``ParallelConfig`` to refuse)."""
    from trainsim.config.schedule_names import schedule_name

    try:
        return schedule_name(str(text)) == "looped_bfs"
    except ConfigError:
        return False


def apply_framework(parallel: dict[str, Any], training: dict[str, Any],
                    gpu: Any = None) -> None:
    """Fill missing fields of the raw ``parallel`` and ``training`` sections in place from
    ``training.framework``'s profile; raise where a given setting contradicts it."""
    grad_reduce_field(training)
    if _given(parallel.get("all_reduce_combine_bytes")) and \
            not truthy(training.get("unscanned_layers")):
        raise ConfigError("parallel.all_reduce_combine_bytes needs training.unscanned_layers "
                          "(a scanned stack's replica all-reduces combine within the loop "
                          "body, one a layer, as priced without it)")
    name = training.get("framework")
    if not _given(name):
        if truthy(training.get("unscanned_layers")):
            raise ConfigError("training.unscanned_layers=true needs training.framework (whose "
                              "profile reads an unscanned layer stack: maxtext)")
        if truthy(training.get("xla_layers")):
            raise ConfigError("training.xla_layers=true needs training.framework (whose profile "
                              "has layers of its own beside Transformer Engine's: paxml)")
        if _given(training.get("framework_version")):  # it dates a framework's defaults
            raise ConfigError(f"training.framework_version={training['framework_version']!r} "
                              "needs training.framework (whose defaults at that version apply)")
        return
    from trainsim.catalog.frameworks import feature_source, framework_profile, short_source

    version = training.get("framework_version")
    profile = framework_profile(str(name), str(version) if _given(version) else None)
    training["framework"] = profile.name
    # the row's own version, and the profile entry read for it where that is older
    stated = str(version).strip() if _given(version) else profile.version
    where = f"{profile.name} {stated}" + ("" if stated == profile.version
                                          else f" (the profile's {profile.version} entry)")
    sections = {"parallel": parallel, "training": training}
    for sec, key, feature in _NEEDS_FEATURE:
        if truthy(sections[sec].get(key)) and profile.supports(feature) is False:
            raise ConfigError(f"{sec}.{key}=true but {where} has no {feature.replace('_', ' ')} "
                              f"(source: {feature_source(profile, feature)})")
    odt = str(training.get("optimizer_dtype") or "fp32").lower()
    if odt not in ("fp32", "bf16", "fp16"):  # the value first, then who takes it (fuzz46)
        raise ConfigError(f"training.optimizer_dtype={odt!r} is unknown; known: fp32, bf16, fp16"
                          + suggest(odt.strip(), ("fp32", "bf16", "fp16")))
    if odt != "fp32" and profile.supports("apex_distributed_adam") is not True:
        raise ConfigError(f"training.optimizer_dtype={odt} but {where}'s optimizer is not Apex's "
                          "DistributedFusedAdam (profile feature apex_distributed_adam), whose "
                          "``dtype`` it is; Megatron-core takes exp_avg_dtype / exp_avg_sq_dtype "
                          "with use_precision_aware_optimizer")
    if truthy(training.get("unscanned_layers")) and \
            profile.supports("unscanned_layers") is not True:
        raise ConfigError(f"training.unscanned_layers=true but {where} has no unscanned layer "
                          "stack read (profile feature unscanned_layers: MaxText "
                          "scan_layers=false); leave it unset")
    if truthy(training.get("xla_layers")) and profile.supports("xla_layers") is not True:
        raise ConfigError(f"training.xla_layers=true but {where} has no layers of its own in "
                          "place of Transformer Engine's to run (profile feature xla_layers: "
                          "Paxml's ENABLE_TE=0); leave it unset")
    from trainsim.catalog.run_framework import graph_scopes_problem

    graph_scopes_problem(training.get("cuda_graph_scope"), profile, where)
    replica_keys = ["dp_replicate", *(k for k, v in ALIASES.items() if v == "dp_replicate")]
    replicas = next((parallel[k] for k in replica_keys if k in parallel), None)
    if _number(replicas) > 1 and profile.supports("hybrid_shard") is False:
        raise ConfigError(f"parallel.dp_replicate={replicas} but {where} has no hybrid sharded "
                          f"data parallelism (source: {feature_source(profile, 'hybrid_shard')})")
    offload = parallel.get("cpu_offloading_num_layers")
    if _number(offload) > 0 and profile.supports("cpu_offloading") is False:
        raise ConfigError(f"parallel.cpu_offloading_num_layers={offload} but {where} has no "
                          "activation CPU offloading (source: "
                          f"{feature_source(profile, 'cpu_offloading')})")
    flex_backend_problem(parallel, profile, where, gpu)
    for short, feature, words in SEARCH_SIZES:
        keys = [ALIASES[short], short,
                *(k for k, v in SYNONYMS["parallel"].items() if v == short)]
        size = next((parallel[k] for k in keys if k in parallel), None)
        if _number(size) > 1 and profile.supports(feature) is False:
            raise ConfigError(f"parallel.{short}={size} but {where} has no {words} "
                              f"(source: {feature_source(profile, feature)})")
    vpp = parallel.get("virtual_pipeline_model_parallel_size", parallel.get("vpp"))
    if _number(vpp) > 1 and profile.supports("interleaved_pipeline") is False:
        raise ConfigError(f"parallel.vpp={vpp} but {where} has no interleaved pipeline "
                          f"(source: {short_source(profile.source)})")
    sched = parallel.get("pipeline_schedule")
    pp = next((parallel[k] for k in ("pipeline_model_parallel_size", "pp",
                                     *(k for k, v in SYNONYMS["parallel"].items() if v == "pp"))
               if k in parallel), 1)
    if _given(sched) and _v_schedule(sched) and _number(pp) > 1 and \
            profile.supports("interleaved_pipeline") is False:  # robust63: vpp=2 set unsaid
        raise ConfigError(f"parallel.pipeline_schedule={sched!r} places two model chunks per "
                          f"rank as a V but {where} has no interleaved pipeline (source: "
                          f"{short_source(profile.source)})")
    if _given(sched) and _looped_bfs(sched) and profile.supports("looped_bfs_schedule") is not True:
        raise ConfigError(f"parallel.pipeline_schedule={sched!r} but {where} does not run "
                          "torch.distributed.pipelining's ScheduleLoopedBFS (profile feature "
                          "looped_bfs_schedule; torchtitan's profile has it)")
    group = profile.features.get("microbatch_group_size")
    if _given(parallel.get("microbatch_group_size_per_vp_stage")) and group == "none":
        raise ConfigError(f"parallel.microbatch_group_size_per_vp_stage is not in {where} "
                          f"(source: {short_source(profile.source)})")
    if group in ("megatron", "flexible") and "microbatch_group_rule" not in parallel:
        parallel["microbatch_group_rule"] = group  # its table order (workload.schedule)
    if profile.supports("kv_heads_split") and "kv_heads_split" not in parallel:
        parallel["kv_heads_split"] = True  # RunConfig refuses a tp the KV heads cannot split over
    two_ranks = profile.features.get("flex_dispatchers_two_ranks")
    if two_ranks and "flex_two_ranks" not in parallel:
        parallel["flex_two_ranks"] = tuple(two_ranks)  # RunConfig: config.validity.dispatcher_fits
    te_ring = profile.features.get("cp_te_ring")
    if te_ring and "cp_te_ring" not in parallel:
        parallel["cp_te_ring"] = tuple(te_ring)  # workload.shard; RunConfig: te_ring_window_problem
    arch = gpu_arch(gpu) if gpu is not None else None
    if "attention" not in training:
        attention = profile.attention_for(arch)
        if attention is not None:
            training["attention"] = attention
    sdpa = (profile.defaults.get("sdpa_by_arch") or {}).get(arch)
    if sdpa and str(training.get("attention", "")).lower() == "sdpa":
        # SDPA is a dispatcher: which kernel it runs is this torch release's choice on this GPU
        training["attention"] = sdpa
    zero_engine(parallel, profile, where, str(version) if _given(version) else None)
    for sec, key, default in _DEFAULTED:
        value = profile.defaults.get(default)
        if isinstance(value, dict) and key == "dp_buckets":  # by ZeRO stage
            value = value.get(str(_effective_stage(parallel)))
        if key not in sections[sec] and value is not None:
            sections[sec][key] = value
    problem = overlap_problem(parallel, profile, where) or \
        grad_fusion_problem(parallel, training, profile, where)
    if problem:
        raise ConfigError(problem)
    if "fp8_param_gather" not in training:
        from trainsim.config.training import TrainingConfig

        # the recipe the run states, else the profile's (filled above), else TrainingConfig's
        recipe = training.get("fp8_recipe") or TrainingConfig.fp8_recipe
        gather = profile.fp8_param_gather(str(recipe))
        if gather is not None:
            training["fp8_param_gather"] = gather
    elif truthy(training["fp8_param_gather"]) and profile.supports("megatron_fsdp_16bit_params") \
            and _effective_stage(parallel) >= 3 and str(training.get("dtype", "")).lower() == "fp8" \
            and _engine(parallel) == "megatron":
        # workload.fp8_gather.fp8_weights_gathered keeps the weights 16-bit there, as the
        # release's perf scripts and Megatron-LM do (nemo.yaml megatron_fsdp_16bit_params)
        warnings.warn(f"training.fp8_param_gather=true under {where} with Megatron-FSDP "
                      "(zero_stage 3): that release keeps 16-bit weights under Megatron-FSDP, "
                      "so they are gathered and cast to fp8 per module instead",
                      SettingReplaced, stacklevel=2)
    if "grad_reduce_in_fp32" not in training:
        reduce = profile.grad_reduce_dtype(str(training.get("dtype", "bf16")).lower())
        if reduce is not None:
            training["grad_reduce_in_fp32"] = reduce == "fp32"
    if not any(_given(parallel.get(k)) for k in _PLACEMENT):
        for key in ("account_for_embedding_in_pipeline_split",
                    "account_for_loss_in_pipeline_split"):
            if key not in parallel and profile.defaults.get(key):
                parallel[key] = True


def _engine(parallel: dict[str, Any]) -> str | None:
    """A raw parallel section's ``data_parallel_impl`` as ParallelConfig reads it (its text
    stripped, any case: robust59, ' Megatron ' was "another engine" here and megatron there),
    ``megatron`` where unset; None for a name no engine has (ParallelConfig refuses it)."""
    from trainsim.config.parallel import DATA_PARALLEL_IMPLS

    impl = parallel.get("data_parallel_impl")
    impl = str(impl).strip().lower() if _given(impl) else "megatron"
    return impl if impl in DATA_PARALLEL_IMPLS else None


def grad_fusion_problem(parallel: dict[str, Any], training: dict[str, Any], profile: Any,
                        where: str) -> str | None:
    """Why a stated ``training.gradient_accumulation_fusion`` cannot be, or None: it is
    Megatron's switch (``data_parallel_impl`` megatron: its DDP, distributed optimizer and
    FSDP), and on it needs a release that has the fusion (profile ``unfused_grad_accumulation``
    not ``all``: Megatron-LM from 83b1e42f, 2022-02-13)."""
    stated = training.get("gradient_accumulation_fusion")
    if not _given(stated):
        return None
    impl = _engine(parallel)
    if impl is not None and impl != "megatron":
        return (f"training.gradient_accumulation_fusion is Megatron's switch, but {where} runs "
                f"data_parallel_impl={impl}, which accumulates gradients its own way; leave it "
                "empty")
    if truthy(stated) and profile.features.get("unfused_grad_accumulation") == "all":
        from trainsim.catalog.frameworks import feature_source

        return (f"training.gradient_accumulation_fusion=true but {where} has no gradient "
                "accumulation fusion (Megatron-LM from 83b1e42f, 2022-02-13; source: "
                f"{feature_source(profile, 'unfused_grad_accumulation')})")
    return None


def flex_backend_problem(parallel: dict[str, Any], profile: Any, where: str, gpu: Any) -> None:
    """Refuse a flex dispatcher backend the profile's release does not accept on the run's GPU
    (profile ``flex_backend_gpus``; Megatron-Bridge's validate_flex_dispatcher_backend raises
    ValueError before the model is built). A GPU the catalog does not name is left alone."""
    disp = parallel.get("moe_token_dispatcher_type")
    if disp not in ("deepep", "hybridep") or gpu is None or isinstance(gpu, dict):
        return
    from trainsim.catalog import gpu as catalog_gpu
    from trainsim.catalog.framework_rules import flex_backend_runs

    try:
        spec = catalog_gpu(str(gpu))
    except ConfigError:
        return
    if not flex_backend_runs(profile.name, profile.version, disp, spec.name, spec.sm_arch):
        allowed = ", ".join(profile.features["flex_backend_gpus"][disp])
        raise ConfigError(f"parallel.moe_token_dispatcher_type={disp} but {where} accepts it "
                          f"on {allowed} only, not {spec.name} (its validate_flex_dispatcher_"
                          "backend raises; profile feature flex_backend_gpus); use alltoall")


def zero_stages_run(profile: Any, version: str | None = None) -> tuple[int, ...] | None:
    """The ZeRO stages a framework runs at ``version`` where fewer than its engines run: those
    its profile lists (feature ``zero_stages``: nanotron 0 and 1), less those first released
    after ``version`` (:func:`unreleased_stages`: NeMo's 3 before 25.04, Megatron-LM's 3
    before 2025-02-26); None: every stage its engines run. One reading for the loader
    (:func:`zero_engine` refuses the rest) and the search (``Base.zero_runs`` offers these)."""
    runs = profile.features.get("zero_stages")
    listed = None if runs is None else tuple(int(s) for s in runs)
    late = unreleased_stages(profile, version)
    if not late:
        return listed
    every = listed if listed is not None else tuple(stage_engines(profile))
    return tuple(s for s in every if s not in late)


def unreleased_stages(profile: Any, version: str | None) -> tuple[int, ...]:
    """The ZeRO stages whose first release (profile ``zero_stage_releases``) is after the
    framework's ``version`` (``catalog.frameworks.released_before``: a date at the precision
    written, so ``2025-02`` includes a release of 2025-02-26 and ``2025-02-10`` does not);
    none where the run names no version."""
    firsts = profile.features.get("zero_stage_releases") or {}
    if version is None or not firsts:
        return ()
    from trainsim.catalog.frameworks import released_before

    return tuple(sorted(int(s) for s, first in firsts.items()
                        if released_before(profile.name, str(version), str(first))))


def stages_phrase(stages: tuple[int, ...] | list[int]) -> str:
    """``zero_stage 0, 1 only``, or ``no stage`` where there is none: how a refusal names the
    stages at which a framework overlaps a switch."""
    return f"zero_stage {', '.join(map(str, stages))} only" if stages else "no stage"


def stage_engines(profile: Any, version: str | None = None) -> dict[int, str]:
    """Every ZeRO stage a framework runs (at ``version``: :func:`zero_stages_run`), by stage,
    with the engine that runs it: its default engine's stages (``config.validity.zero_stages``)
    and those of profile ``zero_stage_engines`` (a plain PyTorch loop: 0 DDP, 2 and 3 FSDP)."""
    from trainsim.config.validity import zero_stages

    engines = {int(k): v for k, v in (profile.defaults.get("zero_stage_engines") or {}).items()}
    default = profile.defaults.get("data_parallel_impl")
    runs = zero_stages_run(profile, version)
    return {s: engines.get(s, default) for s in sorted(set(zero_stages(default)) | set(engines))
            if runs is None or s in runs}


def _effective_stage(parallel: dict[str, Any]) -> int:
    """``ParallelConfig.effective_zero_stage`` of a raw parallel section: stage 0 with the
    distributed optimizer is ZeRO-1."""
    stage = int(_number(parallel.get("zero_stage")))
    return 1 if stage == 0 and truthy(parallel.get("distributed_optimizer")) else stage


OVERLAP_ACTS = {"overlap_grad_reduce": (0, 1, 2, 3), "overlap_param_gather": (1, 2, 3)}
"""The ZeRO stages at which each data-parallel overlap switch acts (no parameter gather to
overlap without a sharded state): where a framework's profile limits it (:func:`overlap_stages`)
the loader refuses it at those stages only, so a run that turns both on at stage 0 (the
validation files' ``dp_overlap``) is not refused for the gather it does not have."""


def overlap_stages(profile: Any, switch: str) -> tuple[int, ...] | None:
    """The ZeRO stages at which the framework can overlap ``switch`` (an ``OVERLAP_ACTS``
    key) with the passes, where its feature of that name lists them ([]: none); None where
    it does not (true or false record what the framework's runs do without a check: the rows
    and the profile's default say whether a run overlaps). nanotron: the gradient reduction
    at stage 0 only (its ZeRO-1 has no DDP and reduces after the backward) and the parameter
    gather at none (ZeroDistributedOptimizer.step gathers after the step). A profile's
    ``<switch>_setting`` names the framework setting the stages hold under, which the refusal
    ends with (nanotron: accumulate_grad_in_fp32, the benchmarks' setting)."""
    value = profile.features.get(switch)
    return tuple(int(s) for s in value) if isinstance(value, list) else None


def overlap_problem(parallel: dict[str, Any], profile: Any, where: str) -> str | None:
    """The one-line refusal of a data-parallel overlap switch the run turns on at a ZeRO stage
    where it acts (``OVERLAP_ACTS``) but the framework cannot overlap it
    (:func:`overlap_stages`); None where none."""
    from trainsim.catalog.frameworks import feature_source

    stage = _effective_stage(parallel)
    for switch, acts in OVERLAP_ACTS.items():
        stages = overlap_stages(profile, switch)
        if stages is None or not truthy(parallel.get(switch)) or stage not in acts or \
                stage in stages:
            continue
        can = f"at {stages_phrase(stages)}"
        setting = profile.features.get(f"{switch}_setting")
        return (f"parallel.{switch}=true under {where}: it overlaps that {can}, not at "
                f"{stage} (source: {feature_source(profile, switch)})"
                + (f" ({setting})" if setting else ""))
    return None


def zero_engine(parallel: dict[str, Any], profile: Any, where: str,
                version: str | None = None) -> None:
    """The ZeRO stage and data-parallel engine of a run that names a framework, in place.

    A run that states no ``zero_stage`` gets the profile's (an FSDP engine has no unsharded
    stage, ``config.validity.ZERO_STAGES``), whatever it says of ``distributed_optimizer``:
    under FSDP that switch names no other layout. A stated stage the profile's engine does not
    run selects the engine the framework runs it with (profile ``zero_stage_engines``: a plain
    PyTorch loop shards with FSDP), unless the run names its engine; a stage no engine of the
    framework runs here (the framework lacks it, or trainsim does not model how it runs it:
    ZeroRedundancyOptimizer, Megatron-FSDP's optim_grads) is refused in one line naming the
    stages that run; so is a stage on a ``version`` older than the release that first ran it
    (profile ``zero_stage_releases``)."""
    from trainsim.config.validity import zero_stages

    stage = parallel.get("zero_stage")
    if not _given(stage):
        default_stage = profile.defaults.get("zero_stage")
        if default_stage is not None:
            parallel["zero_stage"] = default_stage
            switch = parallel.get("distributed_optimizer")
            if _given(switch) and not truthy(switch) and int(_number(default_stage)) > 0:
                warnings.warn(f"parallel.distributed_optimizer={switch} under {where}: its "
                              f"{profile.defaults.get('data_parallel_impl')} engine has no "
                              f"unsharded stage, so the run shards at zero_stage {default_stage}",
                              SettingReplaced, stacklevel=2)
        return
    if _number(stage) not in (0, 1, 2, 3):
        return  # a stage ParallelConfig refuses by itself
    runs = zero_stages_run(profile)
    if runs is not None and _effective_stage(parallel) not in runs:
        _refuse_stage(parallel, profile, where, version)
    if int(_number(stage)) in unreleased_stages(profile, version):
        from trainsim.catalog.frameworks import feature_source

        first = profile.features["zero_stage_releases"][str(int(_number(stage)))]
        raise ConfigError(f"parallel.zero_stage={stage} under {where}: ZeRO stage {stage} "
                          f"first shipped in {profile.name} {first} (source: "
                          f"{feature_source(profile, 'zero_stage_releases')})")
    if _given(parallel.get("data_parallel_impl")):
        return  # the run's own engine
    engines = {int(k): v for k, v in (profile.defaults.get("zero_stage_engines") or {}).items()}
    default = profile.defaults.get("data_parallel_impl")
    engine = engines.get(int(_number(stage)))
    if engine is not None:
        parallel["data_parallel_impl"] = engine
        return
    if default is not None and _effective_stage(parallel) not in zero_stages(default):
        _refuse_stage(parallel, profile, where, version)


def _refuse_stage(parallel: dict[str, Any], profile: Any, where: str,
                  version: str | None = None) -> None:
    """The one-line refusal of a ZeRO stage no engine of the framework runs
    (:func:`stage_engines`), naming the stages that run at ``version`` and their engines."""
    stage = parallel.get("zero_stage")
    if _effective_stage(parallel) != int(_number(stage)):
        stage = f"{stage} with distributed_optimizer=true (ZeRO-1)"
    by_engine: dict[str, list[str]] = {}
    for s, engine_of_s in stage_engines(profile, version).items():
        by_engine.setdefault(str(engine_of_s), []).append(str(s))
    runs = sorted(s for stages in by_engine.values() for s in stages)
    how = "; ".join(f"{', '.join(v)}: {k}" for k, v in by_engine.items())
    raise ConfigError(f"parallel.zero_stage={stage} under {where}: zero_stage "
                      f"{', '.join(runs)} only ({how})")


__all__ = ["DROPOUTS", "GRAD_REDUCE_DTYPES", "OVERLAP_ACTS", "SDPA_ENABLE_GQA_SINCE",
           "SEARCH_SIZES", "SEARCH_SWITCHES", "apply_framework", "flex_backend_problem",
           "framework_dropouts", "gpu_arch", "gpu_vendor", "grad_reduce_field",
           "overlap_problem", "overlap_stages", "profile_dropouts", "profile_dropouts_of",
           "sdpa_enable_gqa_problem", "sink_attention", "sink_kernels", "softcap_attention",
           "stage_engines", "stages_phrase", "truthy", "unreleased_stages",
           "window_attention_problem", "zero_engine", "zero_stages_run"]
