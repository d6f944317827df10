"""The checks of ``config.parallel.ParallelConfig`` that read its fields alone, as functions of
the config, and the names its fields take. ``ParallelConfig.__post_init__`` calls them in the
order they ran there; split from ``config/parallel.py`` (split63), the code unchanged. Like
``__post_init__``, some write a field as read (``object.__setattr__`` on the frozen config)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from trainsim.config._build import require_positive, suggest
from trainsim.config.layout import LAYOUT_RULES, first_last, is_first_last, parse_layout
from trainsim.config.remat_policies import remat_policy_checked
from trainsim.config.schedule_names import ANY_CHUNKS, V_SCHEDULES, schedule_name
from trainsim.config.validity import deepspeed_pipeline_problem, zero_stages
from trainsim.errors import ConfigError, SettingReplaced

if TYPE_CHECKING:
    from trainsim.config.parallel import ParallelConfig

DATA_PARALLEL_IMPLS = ("megatron", "deepspeed", "fsdp1", "fsdp2", "ddp")
ZERO3_GATHER = ("per_parameter", "per_unit", "per_block")
DP_BUCKETS = ("every_chunk", "first_chunk", "fixed", "whole")
TP_OVERLAP_METHODS = ("userbuffers", "p2p", "fused")
RECOMPUTE_MODULES = ("core_attn", "layernorm", "mla_up_proj", "mlp", "moe_act", "moe",
                     "shared_experts")


def check_data_parallel(p: ParallelConfig) -> None:
    """The context-parallel and data-parallel fields (``ParallelConfig.__post_init__``, in its
    order): known names, the ZeRO stage each engine runs, HSDP replicas, DeepSpeed's pipeline."""
    if p.cp_comm_type not in ("p2p", "a2a", "all_gather"):
        raise ConfigError(f"parallel.cp_comm_type={p.cp_comm_type!r} is unknown; "
                          "use p2p (ring attention), a2a (Ulysses) or all_gather")
    if p.data_parallel_impl not in DATA_PARALLEL_IMPLS:
        raise ConfigError(f"parallel.data_parallel_impl={p.data_parallel_impl!r} is "
                          f"unknown{suggest(p.data_parallel_impl, DATA_PARALLEL_IMPLS)}; "
                          f"known: {', '.join(DATA_PARALLEL_IMPLS)}")
    if p.tp_comm_overlap_method not in TP_OVERLAP_METHODS:
        raise ConfigError(f"parallel.tp_comm_overlap_method={p.tp_comm_overlap_method!r}"
                          f" is unknown; known: {', '.join(TP_OVERLAP_METHODS)}")
    if p.dp_buckets is not None and p.dp_buckets not in DP_BUCKETS:
        raise ConfigError(f"parallel.dp_buckets={p.dp_buckets!r} is unknown; "
                          f"known: {', '.join(DP_BUCKETS)}")
    if p.zero3_gather is not None and p.zero3_gather not in ZERO3_GATHER:
        raise ConfigError(f"parallel.zero3_gather='{p.zero3_gather}' is unknown; "
                          f"known: {', '.join(ZERO3_GATHER)}")
    if p.zero_stage not in (0, 1, 2, 3):
        raise ConfigError(f"parallel.zero_stage={p.zero_stage} must be 0, 1, 2 or 3")
    allowed = zero_stages(p.data_parallel_impl)
    if p.effective_zero_stage not in allowed:
        # config.validity.ZERO_STAGES: what each engine runs, with its sources
        given = f"parallel.zero_stage={p.zero_stage}" + (
            " with distributed_optimizer=true" if p.distributed_optimizer else "")
        raise ConfigError(f"{given} under parallel.data_parallel_impl="
                          f"{p.data_parallel_impl}: that engine runs zero_stage "
                          f"{', '.join(map(str, allowed))} only")
    if p.dp_replicate > 1 and p.data_parallel_impl == "ddp" and \
            p.effective_zero_stage == 1:
        raise ConfigError(f"parallel.dp_replicate={p.dp_replicate} under "
                          "data_parallel_impl=ddp: ZeroRedundancyOptimizer shards over its "
                          "one process group, replicas are not modelled; use dp_replicate=1")
    if p.dp_replicate > 1 and p.data_parallel_impl == "deepspeed":
        raise ConfigError(f"parallel.dp_replicate={p.dp_replicate} under "
                          "data_parallel_impl=deepspeed: DeepSpeed's hierarchical "
                          "partitions (MiCS, ZeRO++ hpZ) are not modelled; use dp_replicate=1")
    if problem := deepspeed_pipeline_problem(p):
        raise ConfigError(problem)
    if p.dp_replicate > 1 and p.effective_zero_stage == 0:
        # every HSDP form shards: FSDP's HYBRID_SHARD, Megatron's instances of its
        # distributed optimizer; unsharded data parallelism is one replica per rank already
        raise ConfigError(f"parallel.dp_replicate={p.dp_replicate} needs a sharded state "
                          "(zero_stage >= 1 or distributed_optimizer=true): replicas of an "
                          "unsharded model are plain data parallelism")
    if p.dp_replicate > 1 and p.effective_zero_stage == 1 and \
            p.zero1_grad_reduce == "all_reduce" and p.cp > 1:
        # the whole-gradient all-reduce spans every data-parallel rank (InternEvo's zero1
        # groups), a group priced without the CP ranks
        raise ConfigError(f"parallel.dp_replicate={p.dp_replicate} with "
                          f"zero1_grad_reduce=all_reduce and cp={p.cp} is not modelled; "
                          "use cp=1 or zero1_grad_reduce=reduce_scatter")
    if p.data_parallel_impl == "deepspeed" and p.pp > 1 and p.zero_stage >= 2:
        # DeepSpeed runtime/pipe/engine.py PipelineEngine.__init__: assert
        # zero_optimization_stage() < 2, "ZeRO-2 and ZeRO-3 are incompatible with pipeline
        # parallelism", since fbece50b2 (2021-04-19), first released in v0.3.16 and kept
        # through deepspeedai/DeepSpeed@03f6f75 (ZeroStageEnum.gradients). Earlier releases
        # (the deepspeed profile's 2021-03 entry, v0.3.13-v0.3.15) lack the assert; their
        # pipelined ZeRO-2 is refused here too (not modelled). Only its engine: FSDP under
        # a pipeline (torchtitan) runs.
        raise ConfigError(f"parallel.zero_stage={p.zero_stage} with parallel.pp={p.pp}: "
                          "DeepSpeed's pipeline engine allows zero_stage 0 or 1 only (since "
                          "v0.3.16); use pp=1 or zero_stage<=1")


def check_moe_and_recompute(p: ParallelConfig) -> None:
    """The MoE dispatcher, weight-gradient and recompute fields (``ParallelConfig.__post_init__``,
    in its order; it may rewrite ``recompute_modules`` and ``remat_policy`` as read)."""
    require_positive("parallel", recompute_num_layers=p.recompute_num_layers,
                     moe_deepep_num_sms=p.moe_deepep_num_sms,
                     moe_hybridep_num_sms=p.moe_hybridep_num_sms)
    if p.moe_deepep_num_sms is not None and p.moe_deepep_num_sms % 2:
        # DeepEP v1.2.1 deep_ep/buffer.py Buffer.set_num_sms asserts an even count (a
        # channel is a pair of SMs, one sending, one receiving)
        raise ConfigError(f"parallel.moe_deepep_num_sms={p.moe_deepep_num_sms} must be "
                          "even (DeepEP's Buffer.set_num_sms asserts it)")
    if p.wgrad_deferral_limit < 0:  # Megatron-core model_parallel_config.py raises too
        raise ConfigError(f"parallel.wgrad_deferral_limit={p.wgrad_deferral_limit} < 0")
    if p.delay_wgrad_compute and not p.moe_overlap_ep_comm:
        # Megatron-core core_v0.16.0 transformer_config.py L1909-1912 asserts it
        raise ConfigError("parallel.delay_wgrad_compute=true needs moe_overlap_ep_comm=true "
                          "(Megatron's TransformerConfig asserts it)")
    if p.moe_shared_expert_overlap:
        # core_v0.14.0-core_v0.16.0 transformer_config.py __post_init__ raises on each
        if p.moe_token_dispatcher_type != "alltoall":
            raise ConfigError("parallel.moe_shared_expert_overlap=true needs "
                              "moe_token_dispatcher_type=alltoall (Megatron-core: \"only "
                              "works with alltoall token dispatcher\")")
        if p.moe_overlap_ep_comm:
            raise ConfigError("parallel.moe_shared_expert_overlap=true and "
                              "moe_overlap_ep_comm=true: Megatron-core asserts one or the "
                              "other")
        if "shared_experts" in (p.recompute_modules or ()):
            raise ConfigError("parallel.moe_shared_expert_overlap=true with "
                              "recompute_modules shared_experts: Megatron-core refuses it")
    if p.moe_permute_fusion is False and p.moe_token_dispatcher_type == "hybridep":
        # core_v0.16.0 token_dispatcher.py _HybridEPManager: its permute hooks return their
        # input; HybridEP's own kernels permute (moe_permute_fusion_into_hybridep)
        raise ConfigError("parallel.moe_permute_fusion=false has no unfused path under the "
                          "hybridep dispatcher (its own kernels permute)")
    if p.recompute_num_layers is not None and p.recompute != "full":
        raise ConfigError("parallel.recompute_num_layers needs recompute=full (Megatron's "
                          "block method recomputes whole layers)")
    if p.recompute_modules is not None:
        # read as training.cuda_graph_scope is (graph_scope_checked): 'mlp, core_attn' and
        # 'MLP' name Megatron-core's modules, not ' core_attn' and 'MLP'; and 'mlp core_attn'
        # as Megatron's own CLI reads it (megatron/training/arguments.py:
        # --recompute-modules nargs='*': the shell's words), no module name holding a space
        bad = [x for x in p.recompute_modules if not isinstance(x, str)]
        if bad:
            raise ConfigError(f"parallel.recompute_modules: {bad[0]!r} is not a module name; "
                              f"known: {', '.join(RECOMPUTE_MODULES)}")
        object.__setattr__(p, "recompute_modules",
                           tuple(w.lower() for x in p.recompute_modules
                                 for w in (x.split() or [x.strip()])))
        unknown = [x for x in p.recompute_modules if x not in RECOMPUTE_MODULES]
        if unknown:
            raise ConfigError(f"parallel.recompute_modules: unknown module '{unknown[0]}'"
                              f"{suggest(unknown[0], RECOMPUTE_MODULES)}; known: "
                              f"{', '.join(RECOMPUTE_MODULES)}")
        if p.recompute != "selective":
            raise ConfigError("parallel.recompute_modules needs recompute=selective")
    if p.remat_policy is not None:  # config.remat_policies: a known name, recompute on
        object.__setattr__(p, "remat_policy", remat_policy_checked(
            p.remat_policy, p.recompute, p.recompute_modules))


def check_offloading(p: ParallelConfig) -> None:
    """Megatron-core's checks (megatron/core/transformer/transformer_config.py, core_r0.16)."""
    n = p.cpu_offloading_num_layers
    if n < 0:
        raise ConfigError(f"parallel.cpu_offloading_num_layers={n} must be >= 0")
    if n and p.pp > 1:
        raise ConfigError("parallel.cpu_offloading_num_layers needs "
                          "pipeline_model_parallel_size=1 (Megatron-core has no CPU "
                          "offloading with pipeline parallelism)")
    if n and p.recompute != "none":
        raise ConfigError("parallel.cpu_offloading_num_layers needs recompute=none "
                          "(Megatron-core: CPU offloading does not work with activation "
                          "recomputation)")



def check_schedule(p: ParallelConfig) -> None:
    if p.pipeline_schedule is None:
        return
    name = schedule_name(p.pipeline_schedule)
    object.__setattr__(p, "pipeline_schedule", name)
    if p.pp == 1:  # no pipeline: the schedule has nothing to order
        # Megatron-LM megatron/core/pipeline_parallel/schedules.py get_forward_backward_func:
        # forward_backward_no_pipelining whenever the pipeline world size is 1 (core_v0.4.0
        # through core_v0.14.0)
        warnings.warn(f"parallel.pipeline_schedule={name} ignored at "
                      "pipeline_model_parallel_size=1: one stage runs its micro-batches "
                      "without a pipeline (Megatron's forward_backward_no_pipelining)",
                      SettingReplaced, stacklevel=2)
        object.__setattr__(p, "pipeline_schedule", None)
        return
    if name in V_SCHEDULES and p.virtual_pipeline_model_parallel_size is None:
        object.__setattr__(p, "virtual_pipeline_model_parallel_size", 2)
    if name in V_SCHEDULES and p.vpp != 2:
        raise ConfigError(f"parallel.pipeline_schedule={name} places two chunks per rank as a "
                          "V: parallel.virtual_pipeline_model_parallel_size must be 2, not "
                          f"{p.vpp}")
    interleaved = name in ("interleaved_1f1b", "interleaved_zb")
    if interleaved and p.vpp == 1:
        raise ConfigError(f"parallel.pipeline_schedule={name} needs "
                          "parallel.virtual_pipeline_model_parallel_size > 1")
    if name not in V_SCHEDULES + ANY_CHUNKS and not interleaved and p.vpp > 1:
        raise ConfigError(f"parallel.pipeline_schedule={name} runs one model chunk per rank; "
                          f"parallel.virtual_pipeline_model_parallel_size={p.vpp} needs "
                          "interleaved_1f1b, interleaved_zb, zb_v, dualpipe_v or looped_bfs")
    if p.microbatch_group_size_per_vp_stage is not None and p.vpp > 1 and \
            name != "interleaved_1f1b":
        raise ConfigError(f"parallel.microbatch_group_size_per_vp_stage groups Megatron's "
                          f"interleaved 1F1B; parallel.pipeline_schedule={name} orders its own passes")
    if name == "dualpipe" and p.pp % 2:
        raise ConfigError(f"parallel.pipeline_schedule=dualpipe needs an even "
                          f"parallel.pipeline_model_parallel_size, not {p.pp}")



def check_pp_layout(p: ParallelConfig) -> None:
    text = p.pipeline_model_parallel_layout
    if text is None or text in LAYOUT_RULES:
        return
    if is_first_last(text):
        first, last = first_last(text)
        if 0 in (first, last):  # Megatron-core: "must be larger than 0"
            raise ConfigError(f"parallel.pipeline_model_parallel_layout={text!r} puts 0 "
                              "layers on a stage; each stage needs at least one")
        object.__setattr__(p, "decoder_first_pipeline_num_layers", first)
        object.__setattr__(p, "decoder_last_pipeline_num_layers", last)
        object.__setattr__(p, "pipeline_model_parallel_layout", None)
        return
    stages = len(parse_layout(text))
    if p.pp == 1 and stages > 1:  # else reported as a vpp the user never set
        raise ConfigError(f"parallel.pipeline_model_parallel_layout={text!r} has {stages} "
                          "stages but pipeline_model_parallel_size is 1; set parallel.pp "
                          "(the layout's stages are pp x vpp)")
    if p.virtual_pipeline_model_parallel_size is None and stages % p.pp == 0:
        vpp = stages // p.pp
        object.__setattr__(p, "virtual_pipeline_model_parallel_size",
                           vpp if vpp > 1 else None)
    if p.decoder_first_pipeline_num_layers is not None or \
            p.decoder_last_pipeline_num_layers is not None:
        raise ConfigError("parallel.pipeline_model_parallel_layout and decoder_first/last_"
                          "pipeline_num_layers both place layers; give one of them")
