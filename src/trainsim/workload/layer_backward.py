"""The backward of a forward op list: dgrad and wgrad per GEMM, the conjugate of each TP / EP
collective, fp8 gradient casts and transposes (split out of ``workload.layers``, whose
``layer_forward`` builds the forward lists this reverses)."""

from __future__ import annotations

from dataclasses import replace

from trainsim.workload.context_parallel import (
    is_ring_op,
    is_te_ring_op,
    ring_backward,
    te_ring_backward,
)
from trainsim.workload.elementwise import BACKWARD_IMPL, backward_bytes, fp8_scale_update_op
from trainsim.workload.mamba_block import SSD, SSD_LAST, scan_backward
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import FULL_GRID, Attention, Comm, Elementwise, Gemm, Op
from trainsim.workload.shard import (
    CAST_KERNEL,
    FP8_GATHER_CAST_KERNEL,
    FP8_TRANSPOSE_BYTES,
    FP8_TRANSPOSE_KERNEL,
    LAYERNORM_MLP,
    Shard,
    activation_kind,
    amax_all_reduce,
    mxfp8_swizzle,
    wgrad_block_scales,
)

K_POS_EMB_GATHER = "k_pos_emb.all_gather"
"""The shared rotary key's 16-bit SP all-gather (``Shard.mla_local_down``): only RoPE reads it,
so the backward reduce-scatters its gradient and gathers nothing again."""


def _fp8_transpose(name: str, elements: int) -> Elementwise:
    """A transposed copy of an fp8 tensor: Transformer Engine's ``tex.fp8_transpose`` of a
    gathered operand, torchao's ``.t().contiguous()`` of a GEMM operand."""
    return Elementwise(name, bytes=elements * FP8_TRANSPOSE_BYTES, kernel=FP8_TRANSPOSE_KERNEL)


#: the backward collective of a forward one (Korthikanti et al. 2022 Fig. 5: an all-gather's
#: gradient is reduce-scattered and the reverse; an all-to-all's goes back the way it came); an
#: all-reduce (g) has none (the identity)
CONJUGATE = {"all_gather": "reduce_scatter", "reduce_scatter": "all_gather",
             "all_to_all": "all_to_all"}


PER_GROUP_WEIGHTS = ("multi_stream", "loop")
"""Grouped-GEMM implementations whose experts are modules of their own, a weight each
(Transformer Engine's ``GroupedLinear``: ``weight0`` .. ``weight{n-1}``, v2.3 pytorch/module/
grouped_linear.py ``__init__``; a loop over expert modules); a one-kernel grouped GEMM takes one
stacked weight (torchtitan's ``GroupedExperts``, Megatron-core's ``GroupedMLP``)."""


def weights_of(op: Gemm) -> int:
    """Parameters a GEMM's weight gradient is for: one per expert where each has its own."""
    return op.batch if not op.grouped or op.grouped in PER_GROUP_WEIGHTS else 1


def in_grouped_linear(op: Gemm) -> bool:
    """Whether an expert GEMM's weights are Transformer Engine ``GroupedLinear``'s (every
    grouped implementation but a loop over expert modules, each a TE ``Linear``)."""
    return op.grouped != "loop" and (op.batch > 1 or bool(op.grouped))


def backward_of(fwd: list[Op], sh: Shard) -> list[Op]:
    """Backward ops of a forward op list, in reverse order (dgrad + wgrad per GEMM).

    TP communication follows Megatron's ``LinearWithGradAccumulationAndAsyncCommunication``
    and Transformer Engine's column-parallel linears (Korthikanti et al. 2022 Fig. 5 for the
    conjugates): a row-parallel GEMM's output gradient is all-gathered before its dgrad under
    SP (blocking); a column-parallel GEMM re-gathers its saved input shard while its dgrad
    runs, then reduces the input gradient (reduce-scatter under SP, all-reduce without)
    while its wgrad runs, both asynchronously on the communication stream.
    """
    ops: list[Op] = []
    dgrad_at: int | None = None  # index in ``ops`` of the last GEMM's dgrad
    ring = sh.cp > 1 and sh.cp_ring and sh.cp_comm in ("all_gather", "p2p")
    te_ring = sh.cp_te_ring
    # where the backward of each forward op (by its index) starts in ``ops``
    starts: list[int] = [0] * len(fwd)
    for j in range(len(fwd) - 1, -1, -1):
        op = fwd[j]
        starts[j] = len(ops)
        if isinstance(op, Comm) and op.beside_next and op.beside_in_backward:
            # an exchange beside compute on the other stream issued after it (moe_block._beside):
            # Megatron-core gives its gradient the highest autograd sequence number
            # (shared_experts.py ``set_tensor_grad_fn_sequence_sr``), so the conjugate is issued
            # before that compute's backward and runs beside it
            if op.kind not in CONJUGATE:
                continue  # an all-reduce (g): the identity backward
            at = _beside_start(fwd, starts, j)
            ops.insert(at, _beside_conjugate(op, ops[at:]))
            if dgrad_at is not None and dgrad_at >= at:
                dgrad_at += 1
            continue
        if op.name.startswith(SSD):  # the fused conv1d + SSD scan: one backward for all
            if op.name == SSD_LAST:
                ops.extend(scan_backward(fwd, sh.num_sms))
            continue
        if (ring and is_ring_op(op)) or (te_ring and is_te_ring_op(op)):
            continue  # ring_backward / te_ring_backward below replace the ring's forward ops
        if ring and isinstance(op, Attention) and op.name == "attn_core":
            ops.extend(ring_backward(op, sh.cp_comm, sh.cp, sh.tokens, sh.kv_repeat, sh.compiled))
            continue
        if te_ring and isinstance(op, Attention) and op.name == "attn_core":
            ops.extend(te_ring_backward(op, sh.cp, sh.tokens))
            continue
        if isinstance(op, Gemm):
            if sh.fp8_module_scale_update and not op.grouped and (
                    sh.te_linear_mlp or op.name != LAYERNORM_MLP[0]):
                update = fp8_scale_update_op(op.name)  # the module's backward starts here
                ops.append(replace(update, name=f"{update.name}.bwd"))
            if op.dtype == "fp8" and sh.fp8_local_cast and op.seq_parallel == "scatter":
                # the output gradient's own rows are cast before SP gathers them in fp8, the
                # gathered gradient transposed for wgrad (shard.FP8_ROWWISE_GATHER_RECIPES)
                if sh.fp8_recipe == "current":
                    ops.append(amax_all_reduce(f"{op.name}.grad_amax_all_reduce"))
                ops.append(Elementwise(f"{op.name}.grad_fp8_cast",
                                       bytes=op.m // sh.tp * op.n * sh.fp8_gather_cast_bytes,
                                       kernels=sh.fp8_cast_kernels, kernel=FP8_GATHER_CAST_KERNEL))
                if sh.fp8_gathered_transpose:
                    ops.append(_fp8_transpose(f"{op.name}.grad_fp8_transpose", op.m * op.n))
            elif op.dtype == "fp8":  # the output gradient is cast and transposed as well
                if sh.fp8_sharded_amax and not op.grouped:  # its amax reduced over TP first
                    ops.append(amax_all_reduce(f"{op.name}.grad_amax_all_reduce"))
                ops.append(Elementwise(f"{op.name}.grad_cast_transpose",
                                       bytes=op.batch * op.m * op.n * sh.fp8_cast_bytes,
                                       kernels=op.batch * sh.fp8_cast_kernels, kernel=CAST_KERNEL))
            if op.dtype == "fp8" and sh.fp8_weight_transpose and not op.grouped:
                ops.append(_fp8_transpose(f"{op.name}.weight_fp8_transpose", op.batch * op.n * op.k))
            # dgrad and wgrad keep cuBLAS's split accumulator: Transformer Engine
            # ``_2X_ACC_DGRAD = _2X_ACC_WGRAD = True``, torchao ``gemm_config_grad_input`` and
            # ``gemm_config_grad_weight`` default ``use_fast_accum=False``
            grad_kind = activation_kind(sh, op, "scatter")
            swizzle = mxfp8_swizzle(sh, f"{op.name}.dgrad", op,
                                    ((grad_kind, op.m * op.n), ("weight", op.n * op.k)))
            if swizzle:
                ops.append(swizzle)
            ops.append(replace(op, name=f"{op.name}.dgrad", n=op.k, k=op.n, fp8_fast_accum=False))
            dgrad_at = len(ops) - 1
            if op.shares_input:  # its input gradient is added to its siblings'
                ops.append(Elementwise(f"{op.name}.grad_sum", bytes=3 * ACT * op.batch * op.m * op.k,
                                       kernel="residual_add"))
            if op.dtype == "fp8" and sh.fp8_local_cast and op.seq_parallel == "gather" \
                    and sh.fp8_gathered_transpose \
                    and not (op.shares_input and sh.compiled):
                # the re-gathered fp8 input, transposed for wgrad once the gather is waited on
                ops.append(_fp8_transpose(f"{op.name}.input_fp8_transpose", op.m * op.k))
            elif op.dtype == "fp8" and sh.fp8_row_cast_only and op.seq_parallel == "scatter" \
                    and not op.grouped and not op.shares_input:
                # TE 1.x: the row-parallel input was cast alone (shard.te_row_cast_only)
                ops.append(_fp8_transpose(f"{op.name}.input_fp8_transpose", op.batch * op.m * op.k))
            swizzle = mxfp8_swizzle(sh, f"{op.name}.wgrad", op, (
                (grad_kind, op.m * op.n),
                (activation_kind(sh, op, "gather"), op.m * op.k)))
            if swizzle:
                ops.append(swizzle)
            # the wgrad's ragged dimension is its k (tokens), not its rows; a worst-case-grid
            # kernel's wgrad is a full-grid one (VeOmni@bfe4b650 fused_moe/group_gemm.py
            # L166-237: group_gemm_same_mn, one program per weight tile of each expert)
            ops.append(replace(op, name=f"{op.name}.wgrad", m=op.k, k=op.m, ragged=False,
                               grouped=FULL_GRID.get(op.grouped, op.grouped),
                               fp8_fast_accum=False, accumulate_bytes=sh.main_grad_bytes,
                               fp8_block_scales=wgrad_block_scales(sh, op),
                               param_hooks=weights_of(op) if sh.main_grad_bytes else 0,
                               dummy_cached=sh.cached_dummy_wgrad_grouped
                               if in_grouped_linear(op) else sh.cached_dummy_wgrad))
        elif isinstance(op, Attention):
            ops.append(replace(op, name=f"{op.name}.bwd", backward=True))
        elif isinstance(op, Elementwise):
            if op.name.endswith(("cast_transpose", "fp8_cast", "fp8_transpose",
                                 "fp8_scale_update", "mxfp8_swizzle")) or \
                    op.host_sync:
                continue  # no backward of its own; the gradient's cast and update are added above
            nbytes, kernels = backward_bytes(op)
            ops.append(Elementwise(f"{op.name}.bwd", bytes=nbytes, flops=op.flops,
                                   kernels=kernels, py_kernels=op.bwd_py_kernels,
                                   kernel=op.kernel and f"{op.kernel}.bwd",
                                   impl=BACKWARD_IMPL.get(op.impl, op.impl),
                                   elem_bytes=op.elem_bytes, engine_calls=op.bwd_engine_calls,
                                   node_passes=op.bwd_node_passes, full_wave=op.full_wave,
                                   atomic_adds=op.bwd_atomic_adds))
        elif isinstance(op, Comm):
            if op.group == "cp" and op.kind == "send_recv":  # dKV goes around the ring too
                ops.append(replace(op, name=f"{op.name}.bwd", bytes=2 * op.bytes))
                # keep it after the attention backward it overlaps with
                ops[-1], ops[-2] = ops[-2], ops[-1]
                continue
            grad = op.bytes if op.grad_bytes is None else op.grad_bytes
            if grad == 0:
                continue  # an integer tensor's collective (routing counts): no gradient
            if op.group == "tp" and op.kind == "all_gather" and dgrad_at is not None \
                    and op.name != K_POS_EMB_GATHER:
                # column-parallel entry: re-gather the saved input under the consumer's dgrad,
                # reduce-scatter the input gradient under its wgrad (just emitted)
                if not sh.sp_gathered_saved:
                    ops.insert(dgrad_at + 1, Comm(f"{op.name}.bwd_regather", "all_gather",
                                                  op.bytes, "tp", overlap_with_previous=True))
                ops.append(Comm(f"{op.name}.bwd", "reduce_scatter", grad, "tp",
                                overlap_with_previous=True))
                continue
            if op.kind in CONJUGATE:  # all-reduce (g) has the identity as its conjugate
                ops.append(Comm(f"{op.name}.bwd", CONJUGATE[op.kind], grad, op.group,  # type: ignore[arg-type]
                                domain_fanout=op.domain_fanout))
        else:  # pragma: no cover - exhaustive
            raise TypeError(op)
    if sh.tp > 1 and not sh.sp:
        # The f operator (identity forward) all-reduces input gradients of the QKV and FC1 GEMMs
        # (once for both in a parallel block, where they share their input), under the wgrad.
        first = next(op.name for op in fwd if isinstance(op, Gemm))  # qkv_proj, or MLA's first
        names = (first,) if sh.parallel_block or first == "fc1" else (first, "fc1")
        _insert_after_dgrad(ops, tuple(f"{n}.dgrad" for n in names), sh)
    return ops


def _beside_start(fwd: list[Op], starts: list[int], j: int) -> int:
    """Where, in the backward list, the backward of the ``fwd[j].beside_next`` compute ops after
    ``fwd[j]`` starts (they were met, in reverse, just before it)."""
    left, last = fwd[j].beside_next, j  # type: ignore[union-attr]
    for i in range(j + 1, len(fwd)):
        if left == 0:
            break
        if not isinstance(fwd[i], Comm):
            left, last = left - 1, i
    return starts[last]


def _beside_conjugate(op: Comm, after: list[Op]) -> Comm:
    """The backward exchange of ``op``, beside the compute ops ``after`` it."""
    grad = op.bytes if op.grad_bytes is None else op.grad_bytes
    return Comm(f"{op.name}.bwd", CONJUGATE[op.kind], grad, op.group,  # type: ignore[arg-type]
                domain_fanout=op.domain_fanout,
                beside_next=sum(not isinstance(o, Comm) for o in after))


def _insert_after_dgrad(ops: list[Op], names: tuple[str, ...], sh: Shard) -> None:
    for name in names:
        for i, op in enumerate(ops):
            if isinstance(op, Gemm) and op.name == name:  # all-reduce its input gradient (T x k)
                ops.insert(i + 2, Comm(f"{name}.all_reduce", "all_reduce", sh.tokens * op.n * ACT,
                                       "tp", overlap_with_previous=True))
                break
