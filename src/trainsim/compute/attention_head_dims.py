"""The head width a fused attention kernel runs: the head dims it is instantiated for
(``KERNEL_HEAD_DIMS``), a model's head rounded up to the next (``kernel_head_dims``), and the
matmul work of the padded width over the work the FLOPs count (``padded_mma_share``), which
``compute.attention.fused_attention_work`` prices; its tiles and FlashAttention-2's operand
loads are those of the kernel's width.
"""

from __future__ import annotations

from trainsim.compute.fa2_traits import FA2_HEAD_DIMS
from trainsim.workload.ops import Attention

FA3_HEAD_DIMS = (64, 96, 128, 192, 256)
"""Head dims FlashAttention-3's Hopper kernels are built for; a query/key head is rounded up to
the next (Dao-AILab/flash-attention@0251105a hopper/flash_api.cpp L492-L509
``round_up_headdim``), a value head of another width on its own (L511-L518
``round_up_headdimv``, L878-L879: ``head_size_v_rounded``; MLA's 192 / 128 runs as it is)."""
KERNEL_HEAD_DIMS: dict[str, tuple[int, ...]] = {
    "flash2": FA2_HEAD_DIMS, "sdpa": FA2_HEAD_DIMS, "flash3": FA3_HEAD_DIMS,
    "cudnn": FA3_HEAD_DIMS}
"""The head dims each fused kernel is instantiated for (``kernel_head_dims``). A kernel built
for a wider head than the model's runs its matmuls over the whole instantiated width: the
loads of the missing columns are predicated off and zero-filled (FlashAttention-2's
``Is_even_K`` false: Dao-AILab/flash-attention@0251105a csrc/flash_attn/src/flash_fwd_kernel.h
L257, L276 ``copy<Is_even_MN, Is_even_K>``, whose ``Clear_OOB_K`` defaults to true:
src/utils.h L296-L316), the MMAs over the kernel's ``kHeadDim`` (``padded_mma_share``).
cuDNN's are not published: its kernels take FlashAttention-3's, the other warp-specialised
Hopper kernel of its family (``ATTENTION_FAMILY``): on the H200, cuDNN 9.19, 12 heads of 160
took 1.10-1.22x (forward) and 1.12-1.20x (backward) the time of 10 heads of 192, the same
FLOPs, at 16k tokens, s 512-16k, causal or not, where 192-wide kernels say 1.2x
(``benchmarks/hd42_headdim.py``; benchmarks/h200_2026-11-27_s41 run 7; not fitted). Kernels
not listed run the model's width."""


def kernel_head_dims(op: Attention) -> tuple[int, int]:
    """(query/key, value) head widths ``op``'s kernel runs: the model's (``op.qk_head_dim``
    where it differs from the value width, ``op.head_dim`` being their mean) each rounded up
    to the kernel's instantiated head dims (``KERNEL_HEAD_DIMS``); a width above the largest
    stays as it is. FlashAttention-2 takes one width for Q, K and V (Dao-AILab/flash-attention
    @0251105a csrc/flash_attn/flash_api.cpp L441 ``mha_fwd``: ``CHECK_SHAPE(v, batch_size,
    seqlen_k, num_heads_k, head_size)``), so a framework running MLA's 192 / 128 heads on it
    pads the values; that copy and the padded value matmul are not priced here (no row runs
    MLA on FA2; the DeepSeek-V3 example runs FA3, as DeepSeek's trace does)."""
    qk = op.qk_head_dim or op.head_dim
    v = 2 * op.head_dim - qk
    dims = KERNEL_HEAD_DIMS.get(op.impl)
    if dims is None:
        return qk, v

    def up(d: int) -> int:
        return next((k for k in dims if d <= k), d)

    return up(qk), up(v)


def padded_mma_share(op: Attention) -> float:
    """Matmul work of ``op``'s kernel over the work its FLOPs count (``Attention.flops``, at
    the mean head width): the kernel's query/key and value widths (``kernel_head_dims``) over
    the model's; 1 where the kernel is built for the model's head. FlashAttention-2 at a
    head of 80 runs its 96 kernel (1.2x); cuDNN at 160 FA3's 192 (1.2x); MLA's 192 / 128 on
    cuDNN 1.0."""
    qk, v = kernel_head_dims(op)
    return (qk + v) / (2.0 * op.head_dim)


__all__ = ["FA3_HEAD_DIMS", "KERNEL_HEAD_DIMS", "kernel_head_dims", "padded_mma_share"]
