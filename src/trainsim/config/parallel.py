"""Parallel strategy (Megatron-core naming): how one model is split over GPUs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from trainsim.config._build import check_fields, fields_state, require_positive
from trainsim.config.cached import cached
from trainsim.config.parallel_checks import (
    DATA_PARALLEL_IMPLS,
    DP_BUCKETS,
    RECOMPUTE_MODULES,
    TP_OVERLAP_METHODS,
    ZERO3_GATHER,
    check_data_parallel,
    check_moe_and_recompute,
    check_offloading,
    check_pp_layout,
    check_schedule,
)
from trainsim.config.schedule_names import ANY_CHUNKS, V_SCHEDULES, schedule_name
from trainsim.config.training import AttentionName
from trainsim.errors import ConfigError

__all__ = ["ALIASES", "ANY_CHUNKS", "DATA_PARALLEL_IMPLS", "DP_BUCKETS", "RECOMPUTE_MODULES",
           "TP_OVERLAP_METHODS", "V_SCHEDULES", "ZERO3_GATHER", "Dispatcher", "ParallelConfig",
           "schedule_name"]
# the checks of the fields alone and the names they take: config.parallel_checks (split63),
# re-exported here as before

Dispatcher = Literal["alltoall", "allgather", "deepep", "hybridep"]
"""Megatron-core's MoE token dispatchers (``moe_token_dispatcher_type``)."""


@dataclass(frozen=True)
class ParallelConfig:
    """Sizes of each parallel dimension and the switches that change what runs.

    Rank order is Megatron's default ``tp-cp-ep-dp-pp``: tensor-parallel ranks are adjacent
    (inside a node when tp <= GPUs per node), pipeline stages are the outermost dimension.
    The data-parallel size is derived: num_gpus / (tp * pp * cp).
    """

    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    context_parallel_size: int = 1
    cp_comm_type: Literal["p2p", "a2a", "all_gather"] = "p2p"
    """How context-parallel attention gets the keys it needs (Megatron-core --cp-comm-type):
    ``p2p`` ring attention, KV blocks passed around the CP ring behind the attention compute;
    ``a2a`` DeepSpeed-Ulysses, all-to-alls re-shard Q/K/V from sequence to heads and back;
    ``all_gather`` (Llama 3) all-gathers K/V over the CP group before attention."""
    expert_model_parallel_size: int = 1
    expert_tensor_parallel_size: int | None = None
    """Tensor parallelism inside each expert; None = 1 (Megatron-core's usual MoE setting)."""
    virtual_pipeline_model_parallel_size: int | None = None
    """Model chunks per pipeline rank (interleaved 1F1B); None or 1 = plain 1F1B."""
    microbatch_group_size_per_vp_stage: int | None = None
    """N, the micro-batches interleaved 1F1B runs through one model chunk before the next
    (Megatron-core ``--microbatch-group-size-per-virtual-pipeline-stage``, core_v0.10.0+,
    pipeline_parallel/schedules.py ``get_schedule_table``): warm-up ``2 (pp-1-rank) +
    (vpp-1) N`` forwards, so a smaller N keeps fewer micro-batches in flight. None = pp
    (depth-first); ignored without interleaving, as Megatron ignores it."""
    microbatch_group_rule: Literal["megatron", "flexible"] | None = None
    """Which N the framework's interleaved schedule runs (a framework profile sets it):
    ``megatron``, Megatron-core's checks (pp <= N <= m, and m % N is 0 or at least pp:
    schedules.py ``forward_backward_pipelining_with_interleaving``; outside them the order
    deadlocks or stalls, tests/test_microbatch_group.py); ``flexible``, the same and also fewer
    micro-batches than stages, N = m (Llama 3's schedule, Grattafiori et al. 2024 §3.3.2: "run
    fewer micro-batches than the number of stages"). None: Megatron's checks, and the
    pre-core_v0.10.0 order while N is not given (``workload.schedule``)."""
    kv_heads_split: bool = False
    """Every tensor-parallel rank holds its own KV heads, so tp must divide model.num_kv_heads
    (Megatron-core attention.py: ``divide(num_query_groups, tp)``; a framework profile sets it,
    feature ``kv_heads_split``, Megatron-core before core_v0.16.0). False: tp may also be a
    multiple of them, each KV head held by tp / heads ranks (``config.validity.kv_heads_fit``)."""
    flex_two_ranks: tuple[Dispatcher, ...] = ()
    """MoE token dispatchers that need ep x expert tp >= 2 ranks (Megatron-core
    MoEFlexTokenDispatcher asserts TPxEP > 1; a framework profile sets it, feature
    ``flex_dispatchers_two_ranks``). Empty: no such check (``config.validity``)."""
    cp_te_ring: tuple[AttentionName, ...] = ()
    """Attention kernels whose context parallelism over p2p is Transformer Engine's ring
    (AttnFuncWithCPAndKVP2P: ``workload.context_parallel.te_ring_forward``); a framework
    profile sets it, feature ``cp_te_ring``. Empty: a p2p ring is one kernel over the whole
    sequence beside a hidden exchange."""
    sequence_parallel: bool = False
    """Shard LayerNorm/dropout activations over TP ranks (Korthikanti et al. 2022)."""
    recompute: Literal["none", "selective", "full"] = "none"
    """Activation recomputation: Megatron's --recompute-granularity."""
    recompute_num_layers: int | None = None
    """With full recompute: layers recomputed in each model chunk, its first ones (Megatron's
    --recompute-method block --recompute-num-layers N); None = every layer."""
    recompute_modules: tuple[str, ...] | None = None
    """With selective recompute: the submodules re-run in backward (Megatron-core
    --recompute-modules: core_attn, layernorm, mla_up_proj, mlp, moe_act, moe, shared_experts);
    None = core_attn."""
    remat_policy: str | None = None
    """A JAX run's remat policy by name (MaxText ``remat_policy``, Paxml ``CHECKPOINT_POLICY``,
    lower case; ``custom:query_proj;out_proj`` for MaxText's custom policy's device tensors):
    the values ``jax.checkpoint`` keeps set what each layer re-runs and holds
    (``config.remat_policies``, ``workload.remat_policy``), not ``recompute_modules``. Needs
    recompute selective or full and a profile with ``remat_dce``; None = not stated."""
    cpu_offloading_num_layers: int = 0
    """Offload the saved activations of the first N transformer layers to host memory in the
    forward and reload them for the backward (Megatron-core --cpu-offloading
    --cpu-offloading-num-layers N, Transformer Engine's ``get_cpu_offload_context``); 0 = off.
    As Megatron-core requires (transformer_config.py): no pipeline parallelism, no
    recomputation, N below the model's layers (``memory.offload``)."""
    dp_replicate: int = 1
    """Hybrid sharded data parallelism (HSDP): the data-parallel ranks form ``dp_replicate``
    replicas, each sharding the model state over its own ``dp / dp_replicate`` ranks (with
    the CP ranks; ``RunConfig.shard_ranks``), the inner, adjacent ones. Parameters are
    gathered and gradients reduce-scattered inside a replica, then each rank all-reduces its
    gradient shard with the same shard of the other replicas (the outer group, stride
    tp*cp*dp/dp_replicate). torch FSDP1 ShardingStrategy.HYBRID_SHARD / _HYBRID_SHARD_ZERO2
    (torch/distributed/fsdp/_runtime_utils.py ``_reduce_grad``: reduce-scatter over
    ``state.process_group``, then ``dist.all_reduce(new_sharded_grad,
    group=state._inter_node_pg)``), FSDP2 on a 2-D mesh (torchtitan
    ``parallelism.data_parallel_replicate_degree``; torch/distributed/fsdp/_fully_shard/
    _fsdp_collectives.py ``foreach_reduce``: ``all_reduce_group`` "not None iff HSDP"),
    Megatron-core ``--num-distributed-optimizer-instances`` (distributed/
    param_and_grad_buffer.py ``start_grad_sync``: "With multiple DistOpt instances, we need to
    all-reduce across instances"). 1 = plain sharding over every data-parallel rank. Needs a
    sharded state (zero_stage >= 1 or distributed_optimizer)."""
    zero_stage: int = 0
    """ZeRO stage 0-3 (DeepSpeed). 1 is equivalent to Megatron's distributed optimizer."""
    distributed_optimizer: bool = False
    """Megatron --use-distributed-optimizer: optimizer state sharded over data-parallel ranks."""
    overlap_grad_reduce: bool = False
    """Overlap the data-parallel gradient reduction with backward (bucketed)."""
    overlap_param_gather: bool = False
    """Overlap the distributed optimizer's parameter all-gather with the next forward."""
    tp_comm_overlap: bool = False
    """Overlap TP communication with GEMMs (``tp_comm_overlap_method``)."""
    tp_comm_overlap_method: Literal["userbuffers", "p2p", "fused"] = "userbuffers"
    """How tp_comm_overlap hides the TP collectives (``pricing.Pricer``): ``userbuffers``
    (Transformer Engine, Megatron-core's --tp-comm-overlap: an all-gather's consumer GEMM in tp
    ring steps moved by copy engines, a reduce-scatter's producer in 4 pipelined chunks and the
    backward's bulk overlaps on the SMs their 16 communication SMs leave); ``p2p`` (PyTorch's
    async TP, torch.distributed._symmetric_memory: every overlapped GEMM in tp chunks, the
    exchange on copy engines); ``fused`` (communication inside the GEMM kernel's tiles,
    ByteDance's Flux as MegaScale's §3.2 fuses it: the GEMM whole, the collective's SMs shared
    while it runs). A framework profile sets it."""
    overlap_p2p_comm: bool = False
    """Pipeline send/recv on a separate stream, not blocking compute."""
    moe_overlap_ep_comm: bool = False
    """Hide expert-parallel all-to-alls behind compute of another micro-batch (Megatron-core
    --overlap-moe-expert-parallel-comm; DeepSeek-V3's DualPipe does the same)."""
    delay_wgrad_compute: bool | None = None
    """With ``moe_overlap_ep_comm``, compute the MoE layer's weight gradients after the
    backward's dispatch is issued (Megatron-core --delay-wgrad-compute,
    TransformerConfig.delay_wgrad_compute, which asserts overlap_moe_expert_parallel_comm: true
    without it is a ConfigError, read only with it, ``ep_pairs``; Megatron-Bridge
    comm_overlap.delay_wgrad_compute). None: the framework profile's default
    (``delay_wgrad_compute``, what its recipes set with the overlap), else off."""
    moe_shared_expert_overlap: bool | None = None
    """Run the shared experts on a side stream beside the expert all-to-alls (Megatron-core
    --moe-shared-expert-overlap, TransformerConfig.moe_shared_expert_overlap; core_v0.14.0-
    core_v0.16.0 moe/shared_experts.py ``SharedExpertMLP`` with token_dispatcher.py
    ``MoEAlltoAllTokenDispatcher``: fc1 and the activation beside the dispatch, fc2 beside the
    combine, their backward beside the exchanges' own, ``workload.moe_block``). Megatron-core
    refuses it with another dispatcher than ``alltoall``, with ``moe_overlap_ep_comm`` and with
    a recompute of ``shared_experts``. None: off, Megatron-core's default (Megatron-Bridge's
    DeepSeek, GLM-4.5, Kimi and Nemotron-H providers set it: a run on them states it)."""
    moe_permute_fusion: bool | None = None
    """Transformer Engine's fused token permutation (Megatron-core --moe-permute-fusion,
    TransformerConfig.moe_permute_fusion; Megatron-Bridge model.moe_permute_fusion). False: the
    PyTorch path of core_v0.14.0-core_v0.16.0 moe_utils.py ``permute``/``unpermute``/
    ``sort_chunks_by_idxs``, whose ``masked_select`` calls each wait for the GPU
    (``workload.moe_permute``). None: fused, as Megatron-Bridge's MoE recipes and model
    providers set it (Megatron-core's own default, False, is not what trainsim assumes)."""
    moe_token_dispatcher_type: Dispatcher = "alltoall"
    """How routed tokens reach their experts (Megatron-core --moe-token-dispatcher-type;
    ``deepep`` is its flex dispatcher with --moe-enable-deepep): ``alltoall`` permutes locally
    and exchanges token copies over EP; ``allgather`` gathers every token of the EP group on
    each rank and reduce-scatters the outputs back; ``deepep`` sends a token once per
    destination node over the network and fans it out over NVLink, with permutation fused
    into its communication kernels (deepseek-ai/DeepEP); ``hybridep`` is the flex dispatcher's
    HybridEP backend (core >= 0.16, moe_flex_dispatcher_backend), which also sorts the tokens by
    expert inside its kernels (``workload.moe_dispatch``)."""
    moe_router_dtype: Literal["fp32", "fp64"] | None = None
    """Dtype of the router's logits and routing probabilities (Megatron-core
    --moe-router-dtype, TransformerConfig.moe_router_dtype: "None means no changes for
    dtype", the probabilities stay in the run's 16-bit dtype); what the all-to-all dispatcher
    sends them in (``workload.moe_dispatch.probs_all_to_all``). A framework profile sets it."""
    moe_deepep_num_sms: int | None = None
    """SMs DeepEP's normal dispatch and combine kernels run on (Megatron-core
    --moe-deepep-num-sms, TransformerConfig.moe_deepep_num_sms, passed to
    ``Buffer.set_num_sms``; None: its default, ``workload.moe_dispatch.EXCHANGE_SMS``)."""
    moe_hybridep_num_sms: int | None = None
    """SMs HybridEP's dispatch and combine kernels run on (Megatron-core
    --moe-hybridep-num-sms, TransformerConfig.moe_hybridep_num_sms; None: its default,
    ``workload.moe_dispatch.EXCHANGE_SMS``). A framework profile sets it (Megatron-Bridge's
    perf overrides: 32)."""
    fp8_gemm_grid_excludes_exchange: bool = False
    """The run's fp8 GEMM library launches every fp8 GEMM, in every pass, on the SMs the expert
    exchange's kernels leave (``workload.moe_dispatch.exchange_sms``), whether an exchange runs
    beside it or not: DeepGEMM's persistent kernels take their grid from one process-wide SM
    count (deepseek-ai/DeepGEMM@5e365d30 deep_gemm/jit_kernels/utils.py ``set_num_sms``, "the
    maximum SM count for all GEMM kernels to use"), which DeepSeek sets to 132 less DeepEP's 20
    (deepseek-ai/profile-data@4496024 train.json: all 140 fp8 GEMM launches on 112 CTAs, also
    those with no DeepEP kernel beside). Priced by ``gemm_overlap.fixed_grid_scale``; with a
    dispatcher whose exchange is an NCCL collective (no SMs of its own) the grid is all SMs."""
    moe_dispatch_fp8: bool = False
    """Send dispatched tokens in fp8 (DeepSeek-V3 §3.3); the combine stays 16-bit."""
    decoder_first_pipeline_num_layers: int | None = None
    """Layers on the first pipeline stage (uneven split); None = even split."""
    decoder_last_pipeline_num_layers: int | None = None
    """Layers on the last pipeline stage (uneven split); None = even split."""
    pipeline_model_parallel_layout: str | None = None
    """Layers of every virtual stage (Megatron-core --pipeline-model-parallel-layout, e.g.
    ``Et|(tt|)*62tL``; see ``config.layout``); ``first:N,last:M`` sets the two fields above.
    Without vpp, vpp is the number of virtual stages over pp. ``balanced``: the most even
    layout with the embedding and loss counted as layers (``config.layout.balanced_layout``);
    ``front_loaded``: the remainder layers one each on the first virtual stages
    (``config.layout.front_loaded_layout``, NeMo Automodel's split); ``filled``: the stages
    filled in order, the last with the remainder, the MTP layers and the loss
    (``config.layout.filled_layout``, Megatron-Bridge's DeepSeek-V3 split)."""
    account_for_embedding_in_pipeline_split: bool = False
    """Count the embedding as one layer when splitting layers evenly (Megatron-core)."""
    account_for_loss_in_pipeline_split: bool = False
    """Count the loss (output layer) as one layer when splitting layers evenly (Megatron-core)."""
    ddp_bucket_size: int | None = None
    """Parameters per gradient bucket; None = Megatron's max(40M, 1M * dp)."""
    all_reduce_combine_bytes: int | None = None
    """XLA's ``--xla_gpu_all_reduce_combine_threshold_bytes`` where the run's script sets it:
    the largest all-reduce XLA's combiner makes of an unscanned stack's HSDP replica
    all-reduces (``training.unscanned_layers``, ``workload.xla_combine``). None: XLA's default."""
    dp_max_ctas: int | None = None
    """NCCL channels (thread blocks) the data-parallel communicators (``dp`` and ``dp_cp``) may
    run, their ``ncclConfig_t.maxCTAs``: NeMo's ``nccl_communicator_config_path`` YAML sets it
    per process group (MLPerf v5.x ``conf/nccl/custom_communicator_cta.yaml``: dp and dp_cp
    ``max_ctas 8``). Across nodes a ring then carries at most this many
    ``collectives.nccl.NET_CHANNEL_Bps`` (the analytical network's rings, trees and PAT; the
    flow backend bounds its ring-family collectives the same way). None: NCCL's own channel
    count."""
    defer_embedding_wgrad_compute: bool | None = None
    """Megatron-core's: the last stage keeps the output layer's weight-gradient inputs of the
    first ``wgrad_deferral_limit`` micro-batches (0: all) and computes them after the schedule
    (``deferred_wgrad``). None: the framework profile's rule (``embedding_wgrad_deferral``)."""
    wgrad_deferral_limit: int = 0
    """Micro-batches whose output-layer weight gradient is deferred; 0: every one."""
    dp_buckets: Literal["every_chunk", "first_chunk", "fixed", "whole"] | None = None
    """How the data-parallel reduction is cut into buckets, each one NCCL collective that pays
    its own launch and ring latency. ``every_chunk`` (None): every model chunk's last backward
    is split where buckets of ``ddp_bucket_size`` fill, one collective per part.
    ``first_chunk``: Megatron-core's DDP (core_v0.4-0.15 distributed_data_parallel.py and
    training.py ``disable_bucketing=(model_chunk_idx > 0)``): only pipeline rank 0's first chunk
    is bucketed; every other chunk is one bucket, reduced when its last backward ends.
    ``fixed``: Apex DistributedFusedAdam (NeMo's distributed_fused_adam): buckets of a fixed
    ``ddp_bucket_size`` elements whatever the data-parallel size, launched as they fill during
    a chunk's last backward (its gradient hooks; NeMo's grad_sync_func sends the rest when the
    chunk's backward ends), its parameters gathered bucket by bucket before its first forward.
    ``whole``: no buckets, each model chunk's whole gradient buffer is one collective after the
    backward (nanotron's ZeRO-1: ``sync_gradients_across_dp`` all-reduces the contiguous fp32
    buffer, huggingface/nanotron@e24d2483 optim/gradient_accumulator.py
    ``FP32GradientAccumulator.sync_gradients_across_dp``).
    A framework profile sets it (by ZeRO stage where they differ)."""
    data_parallel_impl: Literal["megatron", "deepspeed", "fsdp1", "fsdp2", "ddp"] = "megatron"
    """Who lays out the model state in memory (``memory.state``): ``megatron`` (Megatron-core
    DDP and distributed optimizer; Megatron-FSDP with zero_stage 3), ``deepspeed`` (ZeRO stages
    and, with pp > 1, its PipelineEngine), ``fsdp1`` / ``fsdp2`` (PyTorch FSDP: FlatParameter
    units / per-parameter DTensor shards), ``ddp`` (PyTorch DistributedDataParallel with fp32
    parameters under autocast). A framework profile sets it."""
    zero1_grad_reduce: Literal["reduce_scatter", "all_reduce"] = "reduce_scatter"
    """How ZeRO-1 (distributed optimizer) reduces the gradients at the end of the step before
    each rank updates its shard: ``reduce_scatter`` (Megatron's distributed optimizer), or
    ``all_reduce`` of the whole gradient, each rank then keeping its shard (DeepSpeed's stage 1
    with non-contiguous gradients, ``buffered_reduce_fallback``, and its BF16 optimizer's
    ``_bf16_reduce_grads``; InternEvo's HybridZeroOptimizer, over every data-parallel rank
    whatever its zero1 group, so with ``dp_replicate`` > 1 too). A framework profile sets it."""
    zero1_param_sync: Literal["all_gather", "broadcast"] = "all_gather"
    """How ZeRO-1/2 brings every rank the parameters the others updated after the step:
    ``all_gather`` of the shards, or ``broadcast``: each rank that owns parameters broadcasts
    its flat shard of whole tensors (assigned greedily, largest first, to the least-loaded
    rank) to the sharding group, one broadcast per owner, in series on one communicator and
    not overlapped (InternEvo c18bec9 hybrid_zero_optim.py ``_partition_param_list``,
    ``broadcast_params(overlap=False)``; ``workload.zero1_broadcast``). A profile sets it."""
    zero3_grad_reduce: Literal["reduce_scatter", "all_reduce"] = "reduce_scatter"
    """How DeepSpeed's stage 3 before v0.6 reduces each reduce bucket's gradients:
    ``reduce_scatter`` (``contiguous_gradients``: the gradients copied into the bucket, each
    reduce-scattered over the data-parallel group), or ``all_reduce`` of the bucket's whole
    gradients, each rank then keeping its partition (``contiguous_gradients`` false, the stage-3
    default from v0.3.13 to v0.4.2: ``reduce_ipg_grads`` -> ``buffered_reduce_fallback``).
    Other implementations reduce-scatter. A framework profile sets it."""
    pipeline_schedule: str | None = None
    """Order of the pipeline passes (``workload.pipeline_schedules``): gpipe, 1f1b,
    interleaved_1f1b, zb_h1 (= zb_1p), zb_h2, zb_2p, zb_v, interleaved_zb, dualpipe,
    dualpipe_v, looped_bfs, or torchtitan's names (GPipe, 1F1B, Interleaved1F1B, ZBVZeroBubble,
    InterleavedZeroBubble, DualPipeV, LoopedBFS). None: 1F1B, interleaved when vpp > 1."""
    optimizer_post_validation: bool = False
    """Validate the optimizer step after the fact instead of synchronizing every pipeline
    stage before it (Qi et al. 2024 §4, the zero-bubble code's --enable-optimizer-post-
    validation): a stage starts its next iteration as soon as its own step is done, so the
    iteration period is the longest stage's span (first pass to step), not the makespan."""
    zero3_gather: Literal["per_parameter", "per_unit", "per_block"] | None = None
    """How ZeRO-3 / FSDP gathers parameters before a pass: ``per_block`` / ``per_unit`` (FSDP:
    one all-gather per wrapped unit, prefetched ahead of the compute that needs it) or
    ``per_parameter`` (DeepSpeed ZeRO-3 of 2021: one blocking all-gather per parameter tensor,
    issued and waited for by the module hook before the module runs, again before its
    recompute and before its backward). None: gathered per pass, prefetched. A framework
    profile sets it."""

    def __post_init__(self) -> None:
        self._post_init()
        # vpp and etp are kept once read (below), but the checks may read vpp before they
        # fill virtual_pipeline_model_parallel_size (a V schedule's 2, a layout's stages):
        # what they kept is dropped, read again from the final fields
        self.__dict__.pop("vpp", None)
        self.__dict__.pop("etp", None)

    def _post_init(self) -> None:
        check_fields(self, "parallel")
        if "flash" in self.cp_te_ring:  # fuzz46: the old name, read as training.attention reads it
            object.__setattr__(self, "cp_te_ring", tuple(dict.fromkeys(
                "flash2" if a == "flash" else a for a in self.cp_te_ring)))
        require_positive("parallel", tp=self.tp, pp=self.pp, cp=self.cp, ep=self.ep,
                         expert_tensor_parallel_size=self.expert_tensor_parallel_size,
                         vpp=self.virtual_pipeline_model_parallel_size,
                         microbatch_group_size_per_vp_stage=self.microbatch_group_size_per_vp_stage,
                         ddp_bucket_size=self.ddp_bucket_size, dp_replicate=self.dp_replicate,
                         all_reduce_combine_bytes=self.all_reduce_combine_bytes,
                         dp_max_ctas=self.dp_max_ctas)
        check_pp_layout(self)
        check_schedule(self)
        check_data_parallel(self)
        if self.sequence_parallel and self.tp == 1:
            # Megatron silently disables it; we follow and keep it False in the resolved config.
            object.__setattr__(self, "sequence_parallel", False)
        if self.vpp > 1 and self.pp == 1:
            raise ConfigError("parallel.virtual_pipeline_model_parallel_size > 1 needs "
                              "pipeline_model_parallel_size > 1")
        if self.microbatch_group_rule not in (None, "megatron", "flexible"):
            raise ConfigError(f"parallel.microbatch_group_rule={self.microbatch_group_rule!r} "
                              "is unknown; known: megatron, flexible")
        for name in ("decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers"):
            v = getattr(self, name)
            if v is not None and v <= 0:  # Megatron-core: "must be larger than 0"
                raise ConfigError(f"parallel.{name}={v} must be > 0")
        check_moe_and_recompute(self)
        check_offloading(self)

    # Short names used throughout the code (the Megatron names stay the config keys); kept
    # once read (a search reads them ~10^6 times): __post_init__ changes none of the first
    # four's fields after check_fields (vpp's and etp's: dropped at its end), and a config is
    # frozen; not pickled (fields_state)
    __getstate__ = fields_state

    @cached
    def tp(self) -> int:
        return self.tensor_model_parallel_size

    @cached
    def pp(self) -> int:
        return self.pipeline_model_parallel_size

    @cached
    def cp(self) -> int:
        return self.context_parallel_size

    @cached
    def ep(self) -> int:
        return self.expert_model_parallel_size

    @cached
    def etp(self) -> int:
        return self.expert_tensor_parallel_size or 1

    @cached
    def vpp(self) -> int:
        return self.virtual_pipeline_model_parallel_size or 1

    @property
    def shards_optimizer(self) -> bool:
        return self.distributed_optimizer or self.zero_stage >= 1

    @property
    def effective_zero_stage(self) -> int:
        """The ZeRO stage the run shards by: Megatron's distributed optimizer without a stage
        is stage 1 (optimizer state sharded over the data-parallel ranks)."""
        return 1 if (self.distributed_optimizer and self.zero_stage == 0) else self.zero_stage


# Accepted short aliases in YAML and --set (tp=..., pp=..., ...).
ALIASES = {
    "tp": "tensor_model_parallel_size",
    "pp": "pipeline_model_parallel_size",
    "cp": "context_parallel_size",
    "ep": "expert_model_parallel_size",
    "etp": "expert_tensor_parallel_size",
    "vpp": "virtual_pipeline_model_parallel_size",
    # HSDP's replica count as Megatron-core and torchtitan name it
    "num_distributed_optimizer_instances": "dp_replicate",
    "data_parallel_replicate_degree": "dp_replicate",
}
