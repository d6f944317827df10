"""Data-parallel state as frameworks handle it around the layers: parameters gathered before a
pass (DeepSpeed ZeRO-3 one tensor at a time, FSDP one unit at a time) and the pass a framework
runs over the gradients after each backward (DeepSpeed's fp32 copies). Op lists only; the
simulator decides where they run."""

from __future__ import annotations

import math

from trainsim.catalog.frameworks import (
    framework_feature,
    framework_supports,
    profile_supports,
)
from trainsim.config import RunConfig
from trainsim.config.hybrid import layer_kind
from trainsim.model.counts import layer_tensors, norm_tensors
from trainsim.workload import fsdp2_copies
from trainsim.workload.fp8_gather import FP8_GATHER_MIN_ELEMENTS, fp8_weights_gathered
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import Comm, Elementwise, Op
from trainsim.workload.vocab import rank_vocab


def rank_tensors(cfg: RunConfig, layers: range | list[int]) -> list[tuple[float, bool]]:
    """(elements on this rank, routed expert) of each parameter tensor of ``layers`` as a rank
    holds them: dense tensors sharded over TP, routed experts over expert TP, and only this
    rank's ``num_experts / ep`` experts (every expert's tensors are alike)."""
    m, p = cfg.model, cfg.parallel
    out: list[tuple[float, bool]] = []
    tp, etp, ep = p.tp, p.etp, p.ep
    for i in layers:
        moe = layer_kind(m, i)
        hit = _LAYER_RANK_TENSORS.get((id(m), moe, tp, etp, ep))
        if hit is None or hit[0] is not m:
            if len(_LAYER_RANK_TENSORS) >= 4096:
                _LAYER_RANK_TENSORS.clear()
            tensors = layer_tensors(m, i)
            dense = [(n / tp, False) for n, expert in tensors if not expert]
            experts = [(n / etp, True) for n, expert in tensors if expert]
            hit = _LAYER_RANK_TENSORS[(id(m), moe, tp, etp, ep)] = (
                m, tuple(dense + experts[:len(experts) // ep]))
        out += hit[1]
    return out


_LAYER_RANK_TENSORS: dict[tuple[int, bool | str, int, int, int],
                          tuple[object, tuple[tuple[float, bool], ...]]] = {}
"""One layer's ``rank_tensors`` by (model identity, routed experts, tp, etp, ep), each kept
with its (frozen) model so an identity is never reused while kept: ``layer_tensors`` reads the
index only through ``is_moe_layer``, and a search or a ZeRO-3 task graph asks it of every
layer of every stage (~30,000 times in the 22B search). The same floats, in the same order."""


def end_matrices(cfg: RunConfig, first: bool, last: bool) -> int:
    """Vocabulary-sized matrices a virtual stage holds: the word embedding on the first, the
    output layer (or a tied embedding's copy) on the last, one for a tied model holding both."""
    return int(first) + int(last and not (first and cfg.model.tied_embeddings))


ZERO3_PERSISTENCE_THRESHOLD = 100_000
"""DeepSpeed ZeRO-3 keeps parameters of fewer elements than this gathered for the whole step
(``stage3_param_persistence_threshold``, default 1e5 since v0.3.13: biases and norms of any
sizeable model), so only larger tensors are gathered before each use."""


ZERO3_MAX_REUSE_DISTANCE = 1_000_000_000
"""DeepSpeed ZeRO-3 does not release a parameter after its module ran when the parameters
used before its next use hold fewer elements than this (``stage3_max_reuse_distance``,
default 1e9 in v0.3.13 zero/constants.py; ``PartitionedParameterCoordinator._keep_for_later``
measures the distance on the module trace recorded in the first step: ``_distance_in_numel``
adds the parameters of every module step between the release and the next use). Under
activation recompute a layer's backward follows its recompute forward at once: between a
tensor's recompute and its backward, every later module of the layer runs twice (its
recompute forward, then its backward), so only the tensors at the very end of the layer stay
gathered between the two."""


def _released_after_recompute(cfg: RunConfig, layers: range | list[int]
                              ) -> list[tuple[float, bool]]:
    """The tensors of recomputed ``layers`` that the backward gathers again after the
    recompute forward: those whose reuse distance (twice the elements of the layer's tensors
    after it in forward order: recomputed, then run backward, before the backward reaches it)
    is at least the limit."""
    out: list[tuple[float, bool]] = []
    for i in layers:
        tensors = rank_tensors(cfg, [i])
        after = 0.0
        for n, expert in reversed(tensors):
            if after >= ZERO3_MAX_REUSE_DISTANCE:
                out.append((n, expert))
            after += 2 * n
    return out


def zero3_tensor_gathers(cfg: RunConfig, layers: range | list[int], first: bool,
                         last: bool, after_recompute: bool = False) -> list[Op]:
    """One all-gather per parameter tensor of ``layers`` (plus the word embedding on the first
    virtual stage and the output layer on the last), as DeepSpeed's 2021 ZeRO-3 issues them: a
    tensor at a time, each over its data-parallel group (routed experts over theirs), 16-bit.
    Tensors under ``ZERO3_PERSISTENCE_THRESHOLD`` elements stay gathered. ``after_recompute``:
    the backward's gathers of recomputed layers, only the tensors released after the
    recompute (``ZERO3_MAX_REUSE_DISTANCE``)."""
    m = cfg.model
    if after_recompute:
        sizes = _released_after_recompute(cfg, layers)
    else:
        sizes = rank_tensors(cfg, layers)
    sizes += [(rank_vocab(cfg) * m.hidden_size, False)] * end_matrices(cfg, first, last)
    ops: list[Op] = []
    for n, expert in sizes:
        ranks = cfg.edp if expert else cfg.shard_ranks
        if n < ZERO3_PERSISTENCE_THRESHOLD or ranks == 1:
            continue
        group = "edp" if expert else "dp_cp"
        # _allgather_param allocates the gathered tensor with torch.zeros and calls
        # torch.cuda.synchronize() before each gather (DeepSpeed v0.3-0.4
        # partition_parameters.py): the host waits, then launches the rest
        sync = Elementwise("zero3_synchronize", bytes=0.0, kernels=0, host_sync=True)
        ops += list_all_gather_ops("zero3_gather", n * ACT, ranks, group, before_gather=[sync])
    return ops


def zero3_regathers(cfg: RunConfig, layer: int) -> list[Comm]:
    """DeepSpeed's (>= 0.6) all-gathers before the backward of recomputed ``layer``: the tensors
    its recompute forward released (``ZERO3_MAX_REUSE_DISTANCE``; ``PartitionedParameter
    Coordinator.__params_to_release``, v0.6.0 stage3.py), each its submodule's own
    ``all_gather_coalesced`` of one large tensor (``_all_gather_base``, no copies)."""
    out: list[Comm] = []
    for n, expert in _released_after_recompute(cfg, [layer]):
        ranks = cfg.edp if expert else cfg.shard_ranks
        if n >= ZERO3_PERSISTENCE_THRESHOLD and ranks > 1:
            out.append(Comm("zero3_regather", "all_gather", n * ACT,
                            "edp" if expert else "dp_cp"))
    return out


def list_all_gather_ops(name: str, size_bytes: float, ranks: int, group: str,
                        before_gather: list[Op] | None = None) -> list[Op]:
    """``torch.distributed.all_gather`` of a tensor of ``size_bytes`` (gathered) into a list
    of per-rank views of a buffer its caller fills with ``torch.zeros`` (DeepSpeed's ZeRO-3
    ``_allgather_param``, ``PartitionedTensor.full()``): the fill, ``before_gather``, the
    gather, then ProcessGroupNCCL's copies out of its own flat buffer, one per rank, reading
    and writing the whole tensor (pytorch/pytorch#33924; the copies went away with
    ``_all_gather_base``, pytorch/pytorch#57769), issued by its C++ loop
    (``Elementwise.cpp_kernels``). The list is a Python loop of one ``narrow`` per rank
    (``Elementwise.py_views``; v0.3.13 partition_parameters.py ``_allgather_param``, utils.py
    ``PartitionedTensor.full``), after ``before_gather``."""
    return [
        Elementwise(f"{name}_zeros", bytes=size_bytes),
        *(before_gather or []),
        Elementwise(f"{name}_views", bytes=0.0, kernels=0, py_views=ranks),
        Comm(f"{name}_all_gather", "all_gather", size_bytes, group),
        Elementwise(f"{name}_unflatten", bytes=2 * size_bytes, kernels=ranks, cpp_kernels=ranks),
    ]


def fsdp_unit_gathers(cfg: RunConfig, layers: range | list[int], first: bool,
                      last: bool) -> list[list[Comm]]:
    """All-gathers of each FSDP unit of a virtual stage in forward order, 16-bit: the root unit
    (word embedding, final norm and output layer; gathered when the first or last stage runs)
    and one unit per transformer block, its dense tensors over the data-parallel group and its
    routed experts over theirs.

    With fp8 GEMMs and ``fp8_param_gather`` the blocks' matmul weights are gathered in fp8:
    torchao's float8 training with ``enable_fsdp_float8_all_gather`` (torchtitan
    --float8.enable_fsdp_float8_all_gather, torchtitan/float8.py @ 9515a140 and 9dec370a: the
    weight is cast to fp8 before FSDP2's all-gather "so we can communicate in float8 to save
    bandwidth", docs/float8.md) and Megatron-FSDP's --fp8-param-gather both move 1 byte per
    element; the root unit (embedding, and the output layer torchtitan leaves in 16 bits)
    does not. Blocks of one kind (with or without routed experts: all ``layer_tensors`` reads
    of the index) share one list, built once."""
    m, p = cfg.model, cfg.parallel
    fp8 = fp8_weights_gathered(cfg)
    matrix = FP8_GATHER_MIN_ELEMENTS * m.hidden_size / p.tp

    def comms(unit: list[tuple[float, bool]]) -> list[Comm]:
        return [Comm("fsdp_unit_all_gather", "all_gather", nbytes, "edp" if expert else "dp_cp")
                for nbytes, expert in unit
                if nbytes > 0 and (cfg.edp if expert else cfg.shard_ranks) > 1]

    out: list[list[Comm]] = []
    if first or last:
        out.append(comms([(end_matrices(cfg, first, last) * rank_vocab(cfg) * m.hidden_size
                           * ACT, False)]))
    kinds: dict[bool | str, list[Comm]] = {}  # a block's unit by its kind (layer_kind)
    for i in layers:
        kind = layer_kind(m, i)
        if kind not in kinds:
            sizes = [(n * (1 if fp8 and n >= matrix else ACT), e)
                     for n, e in rank_tensors(cfg, [i])]
            kinds[kind] = comms([(sum(b for b, e in sizes if not e), False),
                                 (sum(b for b, e in sizes if e), True)])
        out.append(kinds[kind])
    return out


def fsdp_per_unit(cfg: RunConfig, zero: int) -> bool:
    """Whether the run's data-parallel ranks (more than one) gather and reduce-scatter per FSDP
    unit every micro-batch (the simulator's and ``search.layout_costs``' sharded path) at
    effective zero stage ``zero``: stage 3 of any engine; stage 2 as FSDP1's SHARD_GRAD_OP or
    torch's fully_shard with reshard_after_forward False (fsdp2 under profile
    ``fsdp2_copies``), each unit gathered for its forward and kept through its backward. Meta's
    own FSDP-style stage 2 (fsdp2 without the line) reduces once per step: not this path."""
    if cfg.shard_ranks <= 1:  # HSDP: one replica's ranks
        return False
    return zero >= 3 or zero == 2 and (cfg.parallel.data_parallel_impl == "fsdp1"
                                       or fsdp2_copies.applies(cfg))


def reduces_every_microbatch(cfg: RunConfig, fsdp: bool, overlap: bool | None = None) -> bool:
    """Whether every micro-batch's backward, not the last one's alone, reduce-scatters its
    gradient buckets as they become ready (profile ``dp_reduce_every_microbatch``): a sharded
    optimizer whose gradient hooks have no no-sync, under the gradient-reduce overlap, on
    data-parallel peers, outside ZeRO-3 / FSDP's per-unit path (``fsdp``), which reduces every
    micro-batch its own way. Alibaba's Megatron-LLaMA OverlappedDistributedOptimizer
    (megatron-llama.yaml): its ``_grad_hook`` copies each gradient into its bucket and
    reduce-scatters a full bucket on a side stream in every backward, and its
    ``backward_epilogue`` adds the reduced shard into the accumulated one after each.
    ``overlap``: the gradient-reduce overlap to read it under (None: the run's own; the
    search's bound asks it of a layout before the candidates' overlap is chosen)."""
    if zero2_reduces_every_microbatch(cfg, fsdp, overlap):
        return True
    if not profile_supports(cfg, "dp_reduce_every_microbatch"):
        return False  # first: the overlap and ZeRO switches are read only where it may apply
    p = cfg.parallel  # (memo.chunk_key keys the chunks on the answer, as they read it)
    overlapped = p.overlap_grad_reduce if overlap is None else overlap
    return (not fsdp and overlapped and cfg.shard_ranks > 1
            and p.effective_zero_stage in (1, 2) and p.data_parallel_impl == "megatron"
            and p.zero1_grad_reduce != "all_reduce")


def zero2_reduces_every_microbatch(cfg: RunConfig, fsdp: bool,
                                   overlap: bool | None = None) -> bool:
    """Whether DeepSpeed's ZeRO-2 engine reduces every micro-batch's gradient buckets as its
    backward fills them (profile ``zero2_reduce_every_microbatch``), under ``overlap_comm`` (the
    run's gradient-reduce overlap, or ``overlap``), on data-parallel peers. The engine's
    ``allreduce_gradients`` calls the optimizer's epilogue after every backward where gradients
    are partitioned and reduces only at the accumulation boundary otherwise (microsoft/DeepSpeed
    v0.5.10 deepspeed/runtime/engine.py L1643-1653, v0.14.0 L1916-1930); the gradient hook's
    ``reduce_ready_partitions_and_remove_grads`` reduces when ``partition_gradients`` (stage 2)
    or at the boundary (stage 1; v0.14.0 deepspeed/runtime/zero/stage_1_and_2.py L1410-1412),
    and ``average_tensor`` issues it on the reduction stream under ``overlap_comm``
    (L1033-1039). ZeRO-1 (and 3, the per-unit path ``fsdp``) are not this path. The
    collective stays the reduce-scatter the step's reduction is priced as."""
    if not profile_supports(cfg, "zero2_reduce_every_microbatch"):
        return False  # first: the engine's switches are read only where it may apply
    p = cfg.parallel  # (DeepSpeed's engine: zero_stage is the stage it runs)
    if fsdp or p.data_parallel_impl != "deepspeed" or p.zero_stage != 2 or cfg.shard_ranks <= 1:
        return False
    return bool(p.overlap_grad_reduce if overlap is None else overlap)


def fsdp_pp_mode(cfg: RunConfig) -> str | None:
    """How the run's ZeRO-3 / FSDP units behave under pipelining, as its framework profile
    says: ``"unsharded"`` (``fsdp_pp_unsharded``: torchtitan, gathered once per chunk and step,
    reduce-scattered after each chunk's last backward), ``"sync_every"``
    (``fsdp_pp_sync_every_microbatch``: NeMo Automodel, not resharded after the forward, every
    backward reduce-scatters and waits for its reductions), ``"regather"`` (neither: resharded
    after each pass, gathered again before the backward: Megatron-FSDP's optim_grads_params at
    core_v0.12.0-core_v0.19.0, whose pre-forward, post-forward and pre-backward hooks gather,
    release and gather each unit every micro-batch and whose ``grad_reduce_every_bprop``
    reduce-scatters after every backward; its ``microbatch_count == 0`` gates only HSDP's
    outer-group gather, tests/test_megatron_fsdp_pp.py); None without pipelining or without
    sharded parameters (zero stage below 3, or 2 under anything but torch's fully_shard:
    ``fsdp2_copies.applies``). fully_shard at zero 2 (reshard_after_forward False) runs the same
    no-sync under pipelining: torchtitan's zero 3 keeps its units gathered under PP anyway.
    The loader refuses a profile with both lines."""
    zero = cfg.parallel.zero_stage
    if cfg.parallel.pp <= 1 or zero < 2 or zero == 2 and not fsdp2_copies.applies(cfg):
        return None
    if profile_supports(cfg, "fsdp_pp_unsharded"):
        return "unsharded"
    if profile_supports(cfg, "fsdp_pp_sync_every_microbatch"):
        return "sync_every"
    return "regather"


def fsdp_grad_bytes(cfg: RunConfig) -> dict[str, int]:
    """Bytes per gradient element of ZeRO-3 / FSDP's reduce-scatter, by group (``dp_cp``:
    the non-expert parameters, ``edp``: the routed experts): the run's reduce dtype, or (profile
    ``fsdp_moe_reduce_fp32``) an MoE model's non-expert units in fp32 and its experts in their
    16-bit parameter dtype."""
    if cfg.model.is_moe and profile_supports(cfg, "fsdp_moe_reduce_fp32"):
        return {"dp_cp": 4, "edp": 2}
    width = 4 if cfg.training.grad_reduce_in_fp32 else 2
    return {"dp_cp": width, "edp": width}


def _grad_tensors(cfg: RunConfig, layers: range | list[int], first: bool,
                  last: bool) -> list[float]:
    """Elements of each weight-gradient tensor a rank holds for ``layers``, with the embedding
    and output matrices of the first and last stage, on the first a learned position table
    (whole on every TP rank, as ``workload.ddp_buckets`` and ``memory.params`` hold it: an
    ``nn.Embedding`` whose backward hands it a gradient like the word embedding's, GPT-2's
    ``wpe``) and on the last the final norm's weight (and bias), replicated over TP as
    ``workload.zero1_broadcast.stage_tensors`` holds it. Every pass priced from this list walks
    all of the model's trainable parameters, the final norm's among them (GPT-2's ``ln_f``,
    Llama's ``norm``; Megatron-core's ``final_layernorm`` on the post-process stage): autograd's
    ``AccumulateGrad`` runs for every leaf that requires a gradient; DeepSpeed's
    ``BF16_Optimizer.update_hp_grads`` loops over every ``lp`` of its ``bf16_groups``, the
    optimizer's whole param groups (microsoft/DeepSpeed v0.9.0 deepspeed/runtime/
    bf16_optimizer.py L91-L97, L273-L283; v0.16.0 L129-L137 keeps the trainable ones,
    L355-L365); nanotron's ``FP32GradientAccumulator.backward`` adds into the buffer of every
    parameter that requires a gradient (huggingface/nanotron@e24d2483 src/nanotron/optim/
    gradient_accumulator.py L169, L204-L208); Megatron-LM's 2021 local DDP hooks every
    ``param.requires_grad`` parameter of ``self.module.parameters()``
    (megatron/model/distributed.py ``DistributedDataParallel.__init__``)."""
    mdl = cfg.model
    tensors = [n for n, _ in rank_tensors(cfg, layers)]
    if first and mdl.position_embedding == "learned":
        tensors.append(float(mdl.max_position_embeddings * mdl.hidden_size))
    if last:
        tensors += [float(mdl.hidden_size)] * norm_tensors(mdl)
    return tensors + [rank_vocab(cfg) * mdl.hidden_size] * end_matrices(cfg, first, last)


def rank_grad_elements(cfg: RunConfig, layers: range | list[int], first: bool,
                       last: bool) -> tuple[tuple[float, int], tuple[float, int]]:
    """((elements, FSDP units) of the non-expert gradients, the same of the routed experts')
    a rank reduces for a virtual stage: one dense unit per block plus the root unit where the
    stage holds vocabulary matrices, one expert unit per MoE block."""
    mdl = cfg.model
    tensors = rank_tensors(cfg, layers)
    ends = end_matrices(cfg, first, last)
    dense = sum(n for n, e in tensors if not e) + ends * rank_vocab(cfg) * mdl.hidden_size
    experts = sum(n for n, e in tensors if e)
    return ((dense, len(layers) + int(ends > 0)),
            (experts, sum(mdl.is_moe_layer(i) for i in layers)))


def ddp_bucket_prep(cfg: RunConfig, params: float) -> list[Op]:
    """What Megatron's DDP runs over a gradient bucket of ``params`` parameters before its
    data-parallel collective, on the compute stream where the bucket becomes ready
    (``Bucket.start_grad_sync``), as the run's framework profile selects:

    * ``ddp_nan_check``: ``norm = grad_data.norm(p=2)`` then ``assert not norm.isnan()``: a
      reduction reading the bucket, and the host waits for the GPU to reach it
      (Megatron-LM@core_v0.6.0 to core_v0.8.0 megatron/core/distributed/
      param_and_grad_buffer.py, ``check_for_nan_in_grad`` from ``--no-check-for-nan-in-loss-
      and-grad``, on unless fp16 runs with dynamic loss scaling: megatron/training/arguments.py).
      From core_v0.10.0 the check goes through ``rerun_state_machine.validate_result``, which
      returns before the rejection function under ``--rerun-mode disabled`` (the default
      until core_v0.14.0): the norm is still computed, nothing waits; from core_v0.14.0
      (``validate_results``) isnan and isinf each wait (``ddp_nan_check_syncs``: 1 unstated);
    * ``ddp_grad_scale``: the bucket scaled in place by 1/dp before a summing collective
      (core_v0.6.0+ ``grad_data *= gradient_scaling_factor`` with ``average_in_collective``
      off; core_v0.4.0 grad_buffer.py and the 2021 megatron/model/distributed.py
      ``buffer_.data /= data_parallel_world_size``): reads and writes the bucket.

    The bucket holds gradients in the reduce dtype (``grad_reduce_in_fp32``)."""
    p, t = cfg.parallel, cfg.training
    if p.data_parallel_impl != "megatron" or params <= 0:
        return []
    grad = (4 if t.grad_reduce_in_fp32 else 2) * params
    ops: list[Op] = []
    if t.dtype != "fp16" and framework_supports(t.framework, t.framework_version,
                                                "ddp_nan_check"):
        syncs = framework_feature(t.framework, t.framework_version, "ddp_nan_check_syncs")
        ops.append(Elementwise("grad_bucket_norm", bytes=grad, kernels=2))
        ops += [Elementwise("grad_bucket_isnan_to_host", bytes=0.0, kernels=1, host_sync=True)
                for _ in range(1 if syncs is None else int(syncs))]
    # (Megatron-LLaMA's overlapped optimizer divides its reduced shard instead, L148)
    if cfg.dp > 1 and framework_supports(t.framework, t.framework_version, "ddp_grad_scale") \
            and not reduces_every_microbatch(cfg, False):
        ops.append(Elementwise("grad_bucket_scale", bytes=2 * grad))
    return ops


def bucket_copy_in(cfg: RunConfig, params: float) -> Elementwise | None:
    """The copy of ``params`` weight gradients into their reduce bucket before its collective,
    on the collective's stream, where the profile has ``dp_reduce_every_microbatch`` (None
    elsewhere): Megatron-LLaMA's ``Bucket.collect_param_grad`` casts each 16-bit ``param.grad``
    to the reduce dtype (``param.grad.to(self._grad_dtype)``, a tensor of its own) and copies it
    into the bucket (``target.copy_(grad)``), then drops the gradient (alibaba/Megatron-LLaMA@
    d2e05b8 megatron/optimizer/overlapped_dist_optimizer.py L114-132): read 2 + write r, then
    read r + write r bytes an element (r the reduce width; one copy where the dtypes agree)."""
    if params <= 0 or not profile_supports(cfg, "dp_reduce_every_microbatch"):
        return None
    grad = 2  # the 16-bit parameters' gradients (fp32 parameters are not this path)
    width = 4 if cfg.training.grad_reduce_in_fp32 else 2
    per = grad + width + (2 * width if width != grad else 0)
    return Elementwise("grad_bucket_copy_in", bytes=per * params,
                       kernels=2 if width != grad else 1)


def bucket_params(cfg: RunConfig) -> float:
    """Megatron DDP bucket size: max(40M, 1M * dp) parameters unless configured."""
    return cfg.parallel.ddp_bucket_size or max(40_000_000, 1_000_000 * cfg.dp)


def unbucketed_without_overlap(cfg: RunConfig) -> bool:
    """Whether the run's data-parallel reduction is one collective per gradient buffer (each
    model chunk's dense and routed-expert buffers) when the backward does not overlap it:
    Megatron's DDP sets its bucket size to None without ``overlap_grad_reduce`` (Megatron-LM
    core_v0.4.0 - core_v0.19.0 megatron/core/distributed/distributed_data_parallel.py
    ``DistributedDataParallel.__init__``: "Set bucket_size to infinity if overlap_grad_reduce
    is False"; its first form, megatron/model/distributed.py at e801b2bb, 2023-09, the same),
    so ``_ParamAndGradBuffer`` closes no bucket on size and ``finish_grad_sync`` issues one
    collective per bucket group after the backward. Before bucketing the local DDP all-reduced
    each dtype's contiguous buffer whole (megatron/model/distributed.py ``allreduce_gradients``
    at d07d29df, 2022-06) and the distributed optimizer reduce-scattered it whole
    (megatron/optimizer/distrib_optimizer.py ``reduce_model_grads``: one
    ``_reduce_scatter_base`` per model chunk and dtype). The profiles of frameworks on
    Megatron's DDP say so (``ddp_unbucketed_without_overlap``); not Apex's fixed buckets
    (``dp_buckets: fixed``), nor torch DDP's (nanotron), whose size holds either way, nor
    Megatron-FSDP (zero_stage 3). A ``shared_embedding`` bucket (core_v0.6.0 on, distributed
    optimizer, tied embedding over pipeline stages) is left in its buffer's one."""
    p = cfg.parallel
    return p.data_parallel_impl == "megatron" and p.zero_stage < 3 and \
        p.dp_buckets in (None, "every_chunk", "first_chunk") and \
        profile_supports(cfg, "ddp_unbucketed_without_overlap")


def dp_bucket_count(cfg: RunConfig, layers: int, chunk_params: float, stage: int,
                    chunk: int, overlap: bool | None = None) -> int:
    """Gradient buckets of one model chunk (at most one per layer); under ``dp_buckets:
    first_chunk`` only pipeline rank 0's first chunk is bucketed, under ``whole`` none is
    (see ParallelConfig), nor is any under Megatron's DDP without ``overlap`` (the run's
    ``overlap_grad_reduce`` unless given; ``unbucketed_without_overlap``)."""
    if cfg.parallel.dp_buckets == "whole" or \
            (cfg.parallel.dp_buckets == "first_chunk" and (stage or chunk)):
        return 1
    if not (cfg.parallel.overlap_grad_reduce if overlap is None else overlap) and \
            unbucketed_without_overlap(cfg):
        return 1
    return max(1, min(layers, math.ceil(chunk_params / bucket_params(cfg))))


def zeroed_grad_buffer(size_bytes: float) -> Elementwise:
    """Megatron's DDP zeroes its whole gradient buffer at the start of every iteration
    (``zero_grad_buffer`` -> ``ParamAndGradBuffer.reset``: ``grad_data.zero_()``,
    Megatron-LM@core_v0.8.0 megatron/core/distributed/, called from training.py ``train_step``;
    the 2021-2023 megatron/model/distributed.py ``zero_grad_buffer`` likewise; NeMo's
    data-parallel path, Apex's ``DistributedFusedAdam.zero_grad``, zeroes its contiguous
    gradient buffers the same way: apex/contrib/optimizers/distributed_fused_adam.py
    ``grad_buffer.zero_()``, with NeMo's ``contiguous_grad_buffer`` on by default,
    nemo/collections/nlp/models/language_modeling/megatron_base_model.py). Under the
    distributed optimizer the step's frame (``workload.elementwise.OPTIMIZER_BYTES_PER_PARAM``)
    counts the zeroing of the rank's shard only; this is the write of the rest of the buffer."""
    return Elementwise("grad_buffer_zero", bytes=size_bytes)


def grad_buffer_rest(cfg: RunConfig, total: float, local: float,
                     grad_bytes: int) -> Elementwise | None:
    """Megatron DDP's ``zero_grad_buffer`` beyond the shard the optimizer step's frame zeroes
    (``workload.sharding.zeroed_grad_buffer``; Apex's DistributedFusedAdam under NeMo), or
    None where nothing is left to zero. Megatron-FSDP keeps only the shard: its ``zero_grad``
    zeroes each group's ``main_grad_buffer.data``, which under ``optim_grads_params`` holds the
    rank's shard alone (Megatron-LM@03f77931 custom_fsdp/param_and_grad_buffer.py
    ``DataParallelBuffer.__init__`` sizes ``data`` by ``shard_bucket_index`` when
    ``is_data_distributed``; ``ParamAndGradBuffer.zero_grad``)."""
    p = cfg.parallel
    if p.data_parallel_impl != "megatron" or p.zero_stage >= 3 or total <= local:
        return None
    return zeroed_grad_buffer((total - local) * grad_bytes)


def unsharded_clip(cfg: RunConfig, total: float, local: float) -> Elementwise | None:
    """Gradient clipping over the fp32 gradients beyond the shard the optimizer step's frame
    clips (``workload.elementwise._STEP_FRAME_BYTES``: norm read 4, scale in place 8 bytes),
    where the profile says ``clip_unsharded_grads``: nanotron's ZeRO-1 keeps every fp32
    gradient buffer whole and ``clip_grad_norm`` takes a norm of each buffer and scales each
    in place with ``mul_`` (huggingface/nanotron@e24d2483 src/nanotron/optim/clip_grads.py,
    called from trainer.py ``training_step`` with ``grad_accumulator.get_grad_buffer(name)``
    for every parameter), before the sharded step. None elsewhere."""
    if not profile_supports(cfg, "clip_unsharded_grads") or total <= local:
        return None
    return Elementwise("grad_clip_unsharded", bytes=12.0 * (total - local), kernels=2)


def zero1_gather_copies(cfg: RunConfig, layers: range | list[int], first: bool, last: bool,
                        ranks: int) -> Elementwise | None:
    """Copies around ZeRO-1's parameter all-gather (profile ``zero1_gather_copies``): nanotron's
    ``_all_gather_params`` (huggingface/nanotron@e24d2483 optim/zero.py L217-L251) passes each
    tensor's per-rank slices to its ``all_gather_coalesced`` (distributed.py L153-L220): a cat of
    each rank's slices, ``dist.all_gather`` into that list (ProcessGroupNCCL copies each rank's
    part out of its flat buffer, pytorch/pytorch#33924), a ``copy_`` back per rank and tensor
    (``update_output``). 12 bytes a 16-bit parameter; ``ranks`` x (tensors + 2) kernels; from
    Python a slice and a ``copy_`` per (rank, tensor) and a cat per rank (``host.loop_host_s``)."""
    if ranks <= 1 or not profile_supports(cfg, "zero1_gather_copies"):
        return None
    tensors = _grad_tensors(cfg, layers, first, last)
    loop = ranks * len(tensors)
    return Elementwise("zero1_gather_copies", bytes=3.0 * 2 * ACT * sum(tensors),
                       kernels=ranks * (len(tensors) + 2), py_kernels=loop + ranks,
                       cpp_kernels=ranks, py_views=loop)
