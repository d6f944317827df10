"""Model state of one rank as each data-parallel implementation lays it out in memory.

Weights, gradients and optimizer state are not the same bytes in every framework: Megatron's
gradient buffer is in the reduce dtype, DeepSpeed keeps fp16 gradients and makes an fp32 copy
of its partition at the step, PyTorch FSDP shards fp32 parameters and gathers 16-bit copies one
wrapped unit at a time, plain DDP keeps fp32 everything plus a bucket copy of the gradients.
Each layout below cites the source it was read from. ``P`` is the parameters the rank holds
before data-parallel sharding (after tensor, pipeline and expert parallelism); ``S`` the same
parameters sharded over the data-parallel group (dense over dp x cp, experts over expert-dp).

Per parameter (Adam; LAMB keeps the same two moments, SGD one momentum):

=================  ==========  ================  ============  =======================
layout             weights     gradients         optimizer     temporaries
=================  ==========  ================  ============  =======================
megatron           2 P         g P (buffer)      (4 + o) S|P   fp32 grad copy at step
deepspeed 0/1/2    2 P         2 P (1: full)     (4 + o) S|P   at the step: 16-bit
                               2 S (2) + bucket                partition (1: and its
                                                               copy), fp32 cast; bucket
deepspeed 3        2 S         2 S               (4 + o) S     gathered layers, bucket
fsdp1 / fsdp2      4 S         4 S               o S           unsharded 16-bit units
ddp                4 P         4 P + 4 P bucket  o P           autocast 16-bit copies;
                               (none at a one-                 foreach Adam: 4 P at
                               micro-batch loss)               the step
=================  ==========  ================  ============  =======================

``g`` is 4 with fp32 gradient reduction, else 2; ``o`` is 8 for Adam/LAMB and 4 for SGD.
Megatron with ``zero_stage: 3`` is Megatron-FSDP; fp8 training adds Transformer Engine's 8-bit
weight copies (weight and transpose) to the 16-bit ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import ParallelConfig, RunConfig, TrainingConfig
from trainsim.config.hybrid import layer_kind
from trainsim.config.training import OPTIMIZER_STATE_BYTES
from trainsim.memory.free_of import zero_free_kept
from trainsim.memory.params import stage_bf16_layer_params, stage_layer_params, stage_param_split
from trainsim.model.counts import layer_params
from trainsim.workload import fsdp2_copies
from trainsim.workload.fp8_gather import fp8_weight_shapes, fp8_weights_gathered
from trainsim.workload.ops import NVFP4_ELEMENT_BYTES
from trainsim.workload.optimizer_impl import optimizer_impl
from trainsim.workload.sharding import fsdp_pp_mode
from trainsim.workload.unshard_window import unshard_window
from trainsim.workload.vocab import rank_vocab
from trainsim.workload.zero1_broadcast import busiest_owner

DEEPSPEED_REDUCE_BUCKET = 500_000_000
"""DeepSpeed's ``reduce_bucket_size`` default, elements (deepspeed/runtime/zero/constants.py
ZERO_OPTIMIZATION_REDUCE_BUCKET_SIZE_DEFAULT = 500000000, unchanged from v0.3 to v0.16)."""
DEEPSPEED_PREFETCH_BUCKET = 50_000_000
"""ZeRO-3 ``stage3_prefetch_bucket_size`` default, elements (same constants file)."""
FP8_WEIGHT_LAYOUT_BYTES = {"delayed": (1.0, 1.0), "current": (1.0, 1.0),
                           "blockwise": (1.0 + 4 / 128**2, 1.0 + 4 / 128**2),
                           "mxfp8": (1.0 + 1 / 32, 1.0 + 1 / 32),
                           "nvfp4": (NVFP4_ELEMENT_BYTES, NVFP4_ELEMENT_BYTES)}
"""Bytes per Linear weight element of the fp8 copies Transformer Engine keeps across
micro-batches (``is_first_microbatch``): (row-wise, column-wise). The forward GEMM reads the
row-wise copy and the dgrad GEMM the column-wise (transposed) one; blockwise adds an fp32 scale
per 128x128 block, MXFP8 one E8M0 byte per 32 elements, NVFP4 a 4-bit value and an E4M3 byte
per 16 (its GEMMs take only TN, so both layouts: nvfp4.rst "Handling transposes"). Where the tensor cores take fp8 in
either layout (sm100-sm119, sm130 on: not sm120) the per-tensor recipes need no transposed
copy (TE checks the compute capability before it makes one). TransformerEngine@v2.4
transformer_engine/pytorch/module/linear.py, tensor/float8_tensor.py, tensor/mxfp8_tensor.py."""


@dataclass(frozen=True)
class ModelState:
    """Bytes of model state on one rank, and the temporary buffers its implementation adds."""

    weights: float
    gradients: float
    optimizer: float
    persistent: tuple[tuple[str, float], ...] = ()
    """Framework buffers allocated once and kept (DeepSpeed's reduce bucket)."""
    backward: tuple[tuple[str, float], ...] = ()
    """Buffers alive while a layer runs its backward (gathered parameters, unsharded grads)."""
    step: tuple[tuple[str, float], ...] = ()
    """Buffers alive during the optimizer step (fp32 gradient copies)."""
    step_gradients: float | None = None
    """Gradient bytes still held at the step when the implementation has moved them into one of
    the ``step`` buffers and freed the rest (None: ``gradients``)."""
    side_pool: float = 0.0
    """Bytes the caching allocator reserves for a side stream's own allocations, which the
    default stream cannot reuse (blocks belong to the stream that allocated them): reserved,
    not part of the allocated peak."""
    grad_pool: float = 0.0
    """Bytes of the gradient shards the optimizer steps on that a side stream allocated and that
    are free, but still reserved in that stream's pool, at the backward's peak (FSDP2 under
    pipelining, below): reserved beside the backward's peak; at the step they are allocated
    again (``step_gradients``)."""
    grads_freed: bool = False
    """Whether the loop frees the gradients after each step (``zero_grad(set_to_none=True)``,
    profile feature ``grads_set_to_none``): a step of one micro-batch reaches its backward's
    peak, at the loss, before any gradient exists (``memory.estimate``)."""
    layer_copies: tuple[tuple[str, float], ...] = ()
    """Buffers alive at the backward's peak, like ``backward``, that a layer under activation
    recompute does not keep into its backward: autocast's 16-bit copies of the layers' matmul
    weights, cached through the forward and freed when the autocast region ends, since a
    checkpoint keeps none of the tensors its layer saved (``memory.estimate``)."""

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + sum(b for _, b in self.persistent)


def _split(cfg: RunConfig, stage: int) -> tuple[float, float, float]:
    """(held, sharded, linear) parameters of a stage's rank: what it holds unsharded, the same
    sharded over data parallelism, and the share inside transformer layers' matmuls (the weights
    fp8 GEMMs read)."""
    dense, experts = stage_param_split(cfg, stage)
    sharded = dense / cfg.shard_ranks + experts / cfg.edp
    return dense + experts, sharded, stage_layer_params(cfg, stage)


def _unit_params(cfg: RunConfig) -> float:
    """Parameters of the largest FSDP / ZeRO-3 unit on a rank: one transformer layer (every
    framework here wraps or gathers per layer), sliced by tensor and expert parallelism."""
    m, p = cfg.model, cfg.parallel
    # a layer's parameters depend only on whether it has routed experts: one of each kind
    kinds = {layer_kind(m, i): i for i in range(m.num_layers)}
    return max(layer_params(m, i) for i in kinds.values()) / (p.tp * max(1, p.ep))


def _largest_matrix(cfg: RunConfig) -> float:
    """Elements of the largest weight matrix on a rank (fused QKV, fused or plain FC1, FC2)."""
    m, p = cfg.model, cfg.parallel
    h = m.hidden_size
    fc1 = m.ffn_size * h * (2 if m.activation == "swiglu" else 1)
    return max(h * (m.q_size + 2 * m.kv_size), fc1, m.ffn_size * h) / p.tp


def _optimizer_bytes(cfg: RunConfig) -> float:
    """Optimizer moments per parameter: Adam and LAMB two fp32 moments, SGD one momentum.
    Megatron-core's precision-aware optimizer keeps Adam's moments in ``exp_avg_dtype`` and
    ``exp_avg_sq_dtype`` (TE FusedAdam, megatron/core/optimizer/optimizer_config.py
    core_r0.16; DeepSeek-V3 keeps them in bf16, report §3.3.3)."""
    t = cfg.training
    if t.optimizer == "sgd":
        return 4.0
    return float(OPTIMIZER_STATE_BYTES[t.exp_avg_dtype] + OPTIMIZER_STATE_BYTES[t.exp_avg_sq_dtype])


def _master_bytes(cfg: RunConfig) -> float:
    """Bytes of the optimizer's master copy of a parameter in Megatron-core: fp32, except where
    the precision-aware optimizer hands the master weights to Transformer Engine's FusedAdam,
    which keeps only the 16 low bits of the fp32 value that a bf16 parameter lacks
    (``store_param_remainders``). Megatron-LM@2edffadb optimizer/optimizer_config.py L374-380
    sets ``use_precision_aware_optimizer_no_fp8_or_ds_fp8`` without fp8 or with
    ``fp8_recipe == "delayed"`` (fp32 ``main_params_dtype``), and only then
    optimizer/__init__.py L559-571 passes ``master_weights=True`` with ``store_param_remainders``
    (default True, optimizer_config.py L192; turned off below TE 2.1, L402-403; core_r0.11.0
    already passed it for every dtype) to TE's FusedAdam; under the other fp8 recipes Megatron
    keeps its own fp32 master shard (distrib_optimizer.py L383-406). TransformerEngine@v2.14
    optimizers/fused_adam.py L212-213 and L611-615 allocate the int16 remainders for every
    parameter whose dtype is bf16 (fp8 runs train bf16 parameters). With ``fp8_param_gather``
    under delayed scaling the Float8Tensor weights (nominal dtype bf16) get int16 remainders
    too, which ``multi_tensor_adam_fp8`` rejects (transformer_engine/common/multi_tensor/adam.cu
    L808 wants an fp32 master): that run fails, and config/run.py refuses it."""
    t = cfg.training
    if not t.use_precision_aware_optimizer:
        return 4.0
    if t.dtype == "bf16" or (t.dtype == "fp8" and t.fp8_recipe == "delayed"):
        return 2.0
    return 4.0


def _apex_state_bytes(cfg: RunConfig) -> tuple[float, float]:
    """(master, moments) bytes per sharded parameter of Apex's DistributedFusedAdam as NeMo 1.x
    sets it up (NVIDIA/NeMo@v2.0.0 nemo/collections/nlp/models/language_modeling/
    megatron_base_model.py L790-812 setup_optimization, unchanged since 456410d62c in 2022):
    its state dtype is ``optim.dtype`` (``training.optimizer_dtype``, default fp32) and, with no
    ``store_params`` in the optim config, it keeps a master copy (store_params) only with
    fp8_params, none where the state dtype is the model's (megatron_amp_O2: bf16 or fp16),
    and for fp32 state on a bf16 model only the 16 low bits (store_param_remainders). NVIDIA/apex
    contrib/optimizers/distributed_fused_adam.py StateBucket: ``params_shard`` in the state
    dtype, ``param_remainders_shard`` int16, ``exp_avg_shard`` and ``exp_avg_sq_shard`` in the
    state dtype."""
    t = cfg.training
    state = float(OPTIMIZER_STATE_BYTES[t.optimizer_dtype])
    model = "fp16" if t.dtype == "fp16" else "bf16"  # fp8 runs keep bf16 parameters
    if t.dtype == "fp8" and t.fp8_param_gather:
        master = state
    elif t.optimizer_dtype == model:
        master = 0.0
    elif t.optimizer_dtype == "fp32" and model == "bf16":
        master = 2.0
    else:
        master = state
    return master, 2.0 * state


def _fp8_copies(cfg: RunConfig, linear: float) -> float:
    """Bytes of Transformer Engine's cached fp8 weights for ``linear`` matmul parameters."""
    t = cfg.training
    if t.dtype != "fp8":
        return 0.0
    row, col = FP8_WEIGHT_LAYOUT_BYTES[t.fp8_recipe]
    if cfg.cluster.gpu.fp8_any_layout and t.fp8_recipe in ("delayed", "current"):
        col = 0.0
    return linear * (row + col)


def _weights(cfg: RunConfig, held: float, linear: float) -> float:
    """16-bit parameters plus fp8 copies; with ``fp8_param_gather`` (Megatron
    --fp8-param-gather) the matmul weights are stored only in fp8 (the parameter buffer is
    uint8), so the 16-bit copy of those is gone."""
    if fp8_weights_gathered(cfg):
        return 2.0 * (held - linear) + _fp8_copies(cfg, linear)
    return 2.0 * held + _fp8_copies(cfg, linear)


def _megatron(cfg: RunConfig, held: float, sharded: float, linear: float) -> ModelState:
    """Megatron-core DDP (megatron/core/distributed/param_and_grad_buffer.py): parameters in a
    contiguous 16-bit buffer, gradients in a contiguous buffer of the reduce dtype
    (``grad_reduce_in_fp32``); the optimizer keeps fp32 main parameters and moments, sharded over
    data-parallel ranks with the distributed optimizer (optimizer/distrib_optimizer.py), whole
    without it. 16-bit gradients are cast to fp32 main gradients at the step."""
    p, t = cfg.parallel, cfg.training
    g = 4.0 if t.grad_reduce_in_fp32 else 2.0
    moments = _optimizer_bytes(cfg)
    if p.zero_stage >= 3:  # Megatron-FSDP: everything sharded, one layer gathered at a time
        unit = _unit_params(cfg)
        gathered = 2 * 2.0 * unit + _fp8_copies(cfg, unit)
        weights = 2.0 * sharded
        if fp8_weights_gathered(cfg):
            # with --fp8-param-gather the matmul weights are Float8Tensors whose data Megatron-FSDP
            # keeps in uint8 buffers (megatron_fsdp param_and_grad_buffer.py groups
            # is_float8tensor params as torch.uint8): the shard and the gathered units are fp8
            weights = _weights(cfg, sharded, linear * sharded / held)
            gathered = 2 * _fp8_copies(cfg, unit)
        return ModelState(weights, g * sharded, (4.0 + moments) * sharded,
                          backward=(("gathered layer parameters (current + prefetched)", gathered),
                                    ("unsharded layer gradients", g * unit)))
    shard = sharded if p.shards_optimizer else held
    step = () if g == 4.0 else (("fp32 main gradients", 4.0 * shard),)
    master = _master_bytes(cfg)
    if p.shards_optimizer and t.optimizer != "sgd" and profile_supports(cfg, "apex_distributed_adam"):
        master, moments = _apex_state_bytes(cfg)
    return ModelState(_weights(cfg, held, linear), g * held, (master + moments) * shard,
                      step=step)


def _deepspeed(cfg: RunConfig, held: float, sharded: float, linear: float) -> ModelState:
    """DeepSpeed's ZeRO optimizers (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py; the fp16
    optimizer of runtime/fp16 for stage 0): 16-bit parameters flattened per group, 16-bit
    gradients (stage 1 keeps every gradient until the step, stage 2 only its partition),
    fp32 master partition and moments; at the step the gradient partition is flattened and
    cast to fp32. Gradients are copied into a reduce bucket of ``reduce_bucket_size`` elements
    (``contiguous_gradients``) before each reduction."""
    p = cfg.parallel
    moments = _optimizer_bytes(cfg)
    bucket_elems = min(float(p.ddp_bucket_size or DEEPSPEED_REDUCE_BUCKET), held)
    bucket = (("reduce bucket", 2.0 * bucket_elems),) if cfg.dp > 1 else ()
    if p.zero_stage >= 3:
        # ZeRO-3 gathers each submodule's own parameters before it runs (stage3.py
        # fetch_sub_module) and prefetches up to stage3_prefetch_bucket_size elements ahead
        gathered = 2.0 * (_largest_matrix(cfg) + min(DEEPSPEED_PREFETCH_BUCKET, held))
        return ModelState(2.0 * sharded, 2.0 * sharded, (4.0 + moments) * sharded, bucket,
                          backward=(("gathered submodule parameters (current + prefetched)",
                                     gathered),),
                          step=(("fp32 gradient partition", 4.0 * sharded),))
    shard = sharded if p.shards_optimizer else held
    t = cfg.training
    if t.dtype == "bf16" and t.grad_reduce_in_fp32 and p.zero_stage <= 1:
        # DeepSpeed's BF16 optimizer (runtime/bf16_optimizer.py, v0.6.3+): a flat fp32 gradient
        # of every parameter (fp32_groups_gradients_flat, zeros_like the bf16 flat buffer)
        # that each backward's bf16 gradients are added into (update_hp_grads; the bf16 ones
        # stay until the next backward clears them); the partition the optimizer steps on is a
        # view of it, so the step adds no buffer
        return ModelState(_weights(cfg, held, linear), (2.0 + 4.0) * held,
                          (4.0 + moments) * shard)
    grads = 2.0 * (sharded if p.zero_stage == 2 else held)
    # stage 1 flattens its gradients into a bucket only at the accumulation boundary, after
    # the last backward; stage 2 copies them in as the backward makes them (persistent)
    persistent = bucket if p.zero_stage == 2 else ()
    step = (() if p.zero_stage == 2 else bucket) + (
        ("flat 16-bit gradient partition", 2.0 * shard), ("fp32 gradient partition", 4.0 * shard))
    if p.zero_stage == 2:
        return ModelState(_weights(cfg, held, linear), grads, (4.0 + moments) * shard,
                          persistent, step=step)
    # stage 1 with contiguous_gradients (the default): at the boundary each reduced gradient of
    # the rank's partition is copied into one contiguous buffer (copy_grads_in_partition,
    # ``grads_in_partition``), the per-parameter gradients are freed (zero_grad), and the step
    # flattens that partition and casts it to fp32 while the buffer is still referenced
    # (``averaged_gradients``): three partition-sized buffers at the step
    step = step[:1] + (("contiguous 16-bit gradient partition", 2.0 * shard),) + step[1:]
    return ModelState(_weights(cfg, held, linear), grads, (4.0 + moments) * shard,
                      persistent, step=step, step_gradients=0.0)


def fp8_linear_share(cfg: RunConfig, linear: float) -> float:
    """Elements of ``linear`` (a rank's transformer-layer parameters) that FSDP keeps gathered
    at one byte rather than two: all of them where the run all-gathers its matmul weights in fp8
    (``workload.fp8_gather.fp8_weights_gathered``), none otherwise. torchao's float8 all-gather
    (torchtitan ``enable_fsdp_float8_all_gather``) casts each Float8Linear weight shard to fp8
    before FSDP2's all-gather and makes the unsharded parameter a ``Float8Tensor`` over the
    gathered uint8 data itself, with no 16-bit copy (pytorch/ao@eab345c (2024-12-23, the
    torchao of the tt2412 rows: torchtitan docs/performance.md @ d4c86e37) and @567cb4640
    torchao/float8/fsdp_utils.py L226-L276: ``fsdp_pre_all_gather`` returns
    ``(float8_tensor._data,)``, ``fsdp_post_all_gather`` returns ``Float8Tensor(data, scale,
    ...), (data,)``). A Float8Linear then reads that weight as it is, with no cast copy.
    Norms are a 1e-4 share of ``linear``, counted in."""
    return linear if fp8_weights_gathered(cfg) else 0.0


def _gathered_bytes(cfg: RunConfig, unit: float) -> float:
    """Bytes of one gathered FSDP unit of ``unit`` elements (a transformer layer on one rank):
    16-bit, less a byte per matmul weight element under fp8 all-gather (``fp8_linear_share``;
    the matmul weights of the largest layer kind, ``fp8_weight_shapes``)."""
    if not fp8_weights_gathered(cfg):
        return 2.0 * unit
    m = cfg.model
    kinds = {layer_kind(m, i): i for i in range(m.num_layers)}
    fp8 = max(sum(r * c * n for r, c, n, _ in fp8_weight_shapes(cfg, i)) for i in kinds.values())
    return 2.0 * unit - min(fp8, unit)


def _fsdp(cfg: RunConfig, held: float, sharded: float, linear: float) -> ModelState:
    """PyTorch FSDP with mixed precision (torch/distributed/fsdp/_flat_param.py for FSDP1,
    _composable/fsdp for FSDP2): each rank keeps its shard of the fp32 parameters and their fp32
    gradients, Adam's moments for that shard (the fp32 parameter is the master copy); each wrapped
    unit (a transformer layer) is all-gathered in the 16-bit ``param_dtype`` for its forward and
    backward, with the next one prefetched, and its gradient is reduce-scattered in
    ``reduce_dtype``. SHARD_GRAD_OP (zero_stage 2) keeps the gathered parameters from forward to
    backward."""
    p, t = cfg.parallel, cfg.training
    g = 4.0 if t.grad_reduce_in_fp32 else 2.0
    unit = _unit_params(cfg)
    # master: bytes of a sharded parameter and of its gradient shard; opt: of its moments.
    # With profile ``params_16bit`` the model is cast to the 16-bit dtype before sharding (no
    # fp32 master copy), so shards and gradients are 16-bit and torch.optim's Adam, whose
    # moments are ``zeros_like(param)``, keeps them in 16 bits too
    bits16 = profile_supports(cfg, "params_16bit")
    # FSDP2 all-gathers into one flat buffer per unit allocated on its all-gather copy-in
    # stream (_fsdp_collectives.py foreach_all_gather: ``all_gather_output`` is made inside
    # ``stream(all_gather_copy_in_stream)``, read at pytorch 01d66d21 (2024) and 010ae4a8
    # (2026, _fully_shard/)), then copies the parameters out into default-stream tensors. In
    # the forward the previous unit's buffer is freed only once the next unit's has been
    # allocated (_fsdp_param_group.py wait_for_unshard keeps it in comm_ctx.all_gather_state),
    # so that pool peaks at the root unit's buffer beside the first layer's
    # (torch's fully_shard only: fsdp2_copies.applies; at zero stage 2 too, whose units are
    # gathered into the same buffers, only not resharded after the forward)
    root = held - linear if p.zero_stage >= 3 else 0.0
    # bytes of one gathered unit: under fp8 all-gather its matmul weights are one byte each
    unit_b, held_b = _gathered_bytes(cfg, unit), 2.0 * held - fp8_linear_share(cfg, linear)
    side = max(2 * unit_b, 2.0 * root + unit_b) if fsdp2_copies.applies(cfg) else 0.0
    master, opt = (2.0, _optimizer_bytes(cfg) / 2) if bits16 else (4.0, _optimizer_bytes(cfg))
    mode = fsdp_pp_mode(cfg)
    window = unshard_window(cfg)
    if window is not None and window < p.vpp:
        # torch's pipeline runtime holds at most ``window`` of the stage's chunks gathered
        # (workload.unshard_window: a chunk leaving it is resharded): the root unit's chunk
        # and as many chunks' blocks beside it, at most
        root_b = 2.0 * root
        held_b = min(held_b, root_b + (held_b - root_b) * window / p.vpp)
    if mode == "unsharded":
        # every unit of the stage stays gathered from its first forward to the last
        # micro-batch's backward, and each backward adds its 16-bit gradients into an unsharded
        # accumulator of the reduce dtype (FSDP2 _fsdp_param.py to_accumulated_grad_if_needed,
        # accumulate_unsharded_grad_if_needed); the reduce-scatter after the last backward
        # leaves the fp32 gradient shard for the step and frees both
        # FSDP2 allocates each reduce-scatter output, which becomes the gradient shard, on its
        # reduce-scatter stream ("The RS output is allocated in the RS stream and used in the
        # default stream (for optimizer)", _fsdp_collectives.py foreach_reduce_scatter at
        # pytorch 01d66d21, 2024; foreach_reduce at 010ae4a8, 2026: "the GPU sharded gradient
        # is allocated in the RS stream"). torchtitan's step begins with optimizers.zero_grad()
        # (train.py @ 9dec370a; torch.optim's set_to_none default), which frees the shards into
        # that stream's pool, where the default stream cannot reuse them: during the next
        # step's backward, whose unsharded accumulators are default-stream memory, the pool
        # stays reserved at the shards' size
        pool = master * sharded if fsdp2_copies.applies(cfg) else 0.0
        return ModelState(master * sharded + held_b, g * held, opt * sharded,
                          backward=(("16-bit gradients of the layer in backward", 2.0 * unit),),
                          step_gradients=master * sharded, side_pool=side, grad_pool=pool)
    backward: tuple[tuple[str, float], ...] = (("unsharded layer gradients", (2.0 + g) * unit),)
    if mode == "sync_every":
        # not resharded after the forward, so the stage's 16-bit units stay gathered until the
        # backward (between a schedule's forward and backward passes, every unit is), but each
        # backward reduce-scatters its layer's gradients into the gradient shard at once
        return ModelState(master * sharded + held_b, master * sharded, opt * sharded,
                          backward=backward, side_pool=side)
    weights = master * sharded
    if p.zero_stage >= 3:
        # (without fp8 all-gather a Float8Linear casts its gathered 16-bit weight: the copy)
        gathered = 2 * unit_b if fp8_weights_gathered(cfg) else 2 * 2.0 * unit + _fp8_copies(
            cfg, unit)
        backward = (("gathered layer parameters (current + prefetched)", gathered),) + backward
        if held > linear:
            # the root unit (what no wrapped layer owns: embedding, final norm, output layer)
            # is not resharded after its forward, so its 16-bit parameters stay gathered from
            # the first forward op to the end of the backward (FSDP2 _fsdp_state.py _lazy_init
            # sets the root's post_forward_mesh_info = None; FSDP1 _runtime_utils.py
            # _post_forward_reshard frees the unsharded flat parameter only ``not
            # state._is_root``)
            backward = (("gathered root parameters (embedding, head)",
                         2.0 * (held - linear)),) + backward
    else:  # SHARD_GRAD_OP / ZeRO-2: 16-bit parameters stay gathered through the step
        weights += held_b
    return ModelState(weights, master * sharded, opt * sharded, backward=backward,
                      side_pool=side)


def _ddp(cfg: RunConfig, held: float, sharded: float, linear: float,
         head: float, stage: int = 0) -> ModelState:
    """A plain PyTorch loop (torch/nn/parallel/distributed.py): fp32 parameters and gradients,
    the optimizer's fp32 moments; DistributedDataParallel's reducer copies gradients into fp32
    buckets (``gradient_as_bucket_view=False``, the default) when there is more than one rank;
    ``torch.autocast`` casts each weight to 16 bits for its matmul and the backward keeps the
    cast copy: the layers' matmuls and the output layer's (``head``: its ``nn.Linear`` weight,
    the embedding's own where tied, is cast like any other; the embedding lookup is not a
    matmul and runs in fp32).

    torch.optim's foreach Adam/AdamW (``optimizer_impl`` foreach, the default on CUDA since
    torch 2.0) takes one list of every parameter of a device and dtype and makes a new tensor
    per parameter for the denominator before its final update:
    ``exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)`` (pytorch/pytorch@dc80ccde
    torch/optim/adam.py ``_multi_tensor_adam``; AdamW's decay is an in-place ``_foreach_mul_``),
    an fp32 copy of the moments, alive at the step's peak beside the model state.
    ``clip_grad_norm_`` adds nothing of that size: per-tensor norms and an in-place
    ``_foreach_mul_`` (the measured probes clip or not at the same peak).

    ZeRO-1 (``ZeroRedundancyOptimizer``, ``workload.zero1_broadcast``): the wrapped optimizer
    holds the moments, and takes its foreach list, of the rank's own whole tensors only, the
    busiest rank's share of the stage's; parameters, gradients and DDP's buckets stay whole
    (the broadcasts write into ``param.data``)."""
    buckets = (("DDP gradient buckets", 4.0 * held),) if cfg.dp > 1 else ()
    autocast = (("autocast 16-bit weight copy of the output layer", 2.0 * head),) if head else ()
    owned = held * (busiest_owner(cfg, stage)[0] if cfg.parallel.effective_zero_stage else 1.0)
    step: tuple[tuple[str, float], ...] = ()
    if cfg.training.optimizer == "adam" and optimizer_impl(cfg) == "foreach":
        step = (("foreach Adam sqrt(exp_avg_sq) list", 4.0 * owned),)
    return ModelState(4.0 * held, 4.0 * held, _optimizer_bytes(cfg) * owned, buckets,
                      backward=autocast, step=step,
                      grads_freed=bool(profile_supports(cfg, "grads_set_to_none")),
                      layer_copies=(("autocast 16-bit weight copies", 2.0 * linear),))


_LAYOUTS = {"megatron": _megatron, "deepspeed": _deepspeed, "fsdp1": _fsdp, "fsdp2": _fsdp}
"""The sharded layouts by ``data_parallel_impl``; ``ddp`` (:func:`_ddp`) also takes the stage's
output-layer weight (:func:`_model_state`)."""


def model_state(cfg: RunConfig, stage: int) -> ModelState:
    """Model-state bytes of one rank of pipeline stage ``stage`` under the config's
    ``parallel.data_parallel_impl`` (inside :func:`states_shared`, once per what it reads)."""
    if not _SHARED:
        return _model_state(cfg, stage)
    kept, training_class, parallel_class = _SHARED[-1]
    try:
        key = (id(cfg.model), id(cfg.cluster), training_class(cfg.training),
               parallel_class(cfg.parallel), stage)
    except TypeError:  # a field that cannot be hashed: nothing kept
        return _model_state(cfg, stage)
    hit = kept.get(key)
    if hit is not None and hit[0] is cfg.model and hit[1] is cfg.cluster:
        return hit[2]
    if len(kept) >= _SHARED_KEPT:
        kept.clear()
        training_class.clear()
        parallel_class.clear()
    out = _model_state(cfg, stage)
    kept[key] = (cfg.model, cfg.cluster, out)
    return out


class _Classes:
    """A small number per distinct value of ``read(obj)`` (the fields :func:`model_state`
    reads of a training or parallel config), kept by the object's identity (and the object
    with it, so its id is not reused): a search asks for the same few configs' states ~10^4
    times, and building and hashing the 32- and 44-field tuples on every call was ~3 % of
    its main process. Equal numbers for equal tuples, so the same answers are shared."""

    def __init__(self, read: Callable[[Any], tuple]) -> None:
        self.read = read
        self.numbers: dict[tuple, int] = {}
        self.of: dict[int, tuple[object, int]] = {}

    def __call__(self, obj: object) -> int:
        hit = self.of.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        number = self.numbers.setdefault(self.read(obj), len(self.numbers))  # TypeError: unkept
        self.of[id(obj)] = (obj, number)
        return number

    def clear(self) -> None:
        self.numbers.clear()
        self.of.clear()


def _model_state(cfg: RunConfig, stage: int) -> ModelState:
    held, sharded, linear = _split(cfg, stage)
    p, m = cfg.parallel, cfg.model
    if p.data_parallel_impl == "ddp":  # the output layer's matmul weight, on the last stage
        head = rank_vocab(cfg) * m.hidden_size if stage == p.pp - 1 else 0.0
        return _ddp(cfg, held, sharded, linear, head, stage)
    if p.data_parallel_impl in ("megatron", "deepspeed"):
        # the layers kept in bf16 under fp8 hold 16-bit weights and no fp8 copies
        linear -= stage_bf16_layer_params(cfg, stage)
    return _LAYOUTS[p.data_parallel_impl](cfg, held, sharded, linear)


NOT_READ = {"training": ("micro_batch_size",),
            "parallel": ("recompute", "recompute_modules", "recompute_num_layers")}
"""The fields the model state does not read (this module, ``memory.params`` and the parameter
counts they call read neither the micro-batch nor the activation recompute): the memory groups
of a search that differ only in them share one answer."""
_TRAINING_READ = attrgetter(*(f.name for f in dataclasses.fields(TrainingConfig)
                              if f.name not in NOT_READ["training"]))
_PARALLEL_READ = attrgetter(*(f.name for f in dataclasses.fields(ParallelConfig)
                              if f.name not in NOT_READ["parallel"]))
_SHARED: list[tuple[dict[tuple, tuple[object, object, ModelState]], _Classes, _Classes]] = []
_SHARED_KEPT = 65536


@contextmanager
def states_shared() -> Iterator[None]:
    """Inside it, :func:`model_state` keeps its answers by the model and cluster objects (kept
    with them), every other field it reads and the stage, and the activations in flight are
    kept across the optimizer shardings (``memory.free_of.zero_free_kept``): enter it around
    one question whose constants cannot change (a search, as ``pricing.shared``); outside,
    nothing is kept."""
    _SHARED.append(({}, _Classes(_TRAINING_READ), _Classes(_PARALLEL_READ)))
    try:
        with zero_free_kept():
            yield
    finally:
        _SHARED.pop()
