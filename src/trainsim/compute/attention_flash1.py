"""The first FlashAttention's key-block passes and split-K exchange (v1.0.9 kernels), and the SM
clock that shared-memory and tensor work per SM clock are priced at. Split from
``compute.attention``, which re-exports every name here."""

from __future__ import annotations

import math

from trainsim.config import GPUSpec
from trainsim.workload.ops import Attention

TENSOR_FLOPS_PER_SM_CLOCK = {90: 4096, 100: 8192}
"""Dense 16-bit tensor FLOPs an SM does a clock through its own instructions, by architecture
(``GPUSpec.sm_arch`` rounded down to a listed one): Hopper 4096 (H100 989.4 TFLOP/s = 132 SMs x
4096 x 1.83 GHz), Blackwell 8192 (B200 2250 = 148 x 8192 x 1.86 GHz; B300 and GB300, 10.3, the
same tensor cores). Ampere's ``mma.sync`` issues 2048 on all (A100 312 = 108 x 2048 x 1.41 GHz)."""


FLASH1_KEY_BLOCK = {64: 256, 128: 128}
"""Keys one pass of the first FlashAttention's kernels holds on chip, by head dimension (the
entry of the smallest listed head dim at or above it): ``FMHA_kernel_traits<256, 64, ...>``
for head dims up to 64 and ``<128, 128, ...>`` for 128, forward and backward on A100 and H100
(Dao-AILab/flash-attention v1.0.9 csrc/flash_attn/src/fmha_{fwd,bwd}_hdim{32,64,128}.cu;
fmha_api.cpp: ``blocksize_c = head_size > 64 ? 128 : 256``). FA1 runs no head dim above 128
(fmha_api.cpp: ``TORCH_CHECK(... head_size <= 128)``); a run config asking for it is refused
(``config.run.RunConfig``)."""


def flash1_passes(op: Attention) -> float:
    """Key-block passes one query row of the first FlashAttention's kernels runs, on average
    (``flash1_pass_bytes``): every block of ``max_seqlen_k`` without a causal mask, the blocks
    up to the row's own with one (half of them plus the diagonal's, on average)."""
    block = next((b for hd, b in sorted(FLASH1_KEY_BLOCK.items()) if op.head_dim <= hd),
                 min(FLASH1_KEY_BLOCK.values()))
    row_keys = op.pairs / op.q_len  # keys each query row sees
    return max(1.0, (row_keys / block + 0.5) if op.causal else math.ceil(row_keys / block))


def flash1_pass_bytes(op: Attention) -> float:
    """HBM bytes of the first FlashAttention's kernels, which loop over key blocks *outside*
    and over query rows inside (Dao et al. 2022, Algorithm 1; v1.0.9
    ``fmha_fprop_kernel_1xN.h``, ``fmha_dgrad_kernel_1xN_loop.h``): each key block's pass
    reads every query row it sees again and carries the row's partial result through HBM in
    fp32. Forward, per query row and pass: Q (16-bit), the fp32 output accumulator ``o_tmp``
    read (after the first pass) and written (the 16-bit O on the last), the row's
    log-sum-exp. Backward: Q and dO, the fp32 ``dq_tmp`` accumulator read and written, the
    log-sum-exp and ``rowsum(dO * O)``; O read once, dQ written once. Keys and values are
    read once (dK, dV written once). Traffic is Theta(s^2 d^2 / M) (the paper's Theorem 2):
    per FLOP it grows with the head dimension, which is why FA1 runs slower per FLOP at head
    dim 128 than at 64 where FA2 runs faster (FA2 paper Figs. 4-5). Without a causal mask
    every row sees every key block of ``max_seqlen_k`` rounded up to whole blocks (fmha_api.cpp
    ``mha_fwd``/``mha_bwd``; ``max_loop_steps`` in fmha_fprop_kernel_1xN.h and
    fmha_dgrad_kernel_1xN_loop.h), so 384 keys at head dim 64 run 2 passes. Causal rows see the blocks up to their own: on
    average half the blocks plus the diagonal's."""
    d = op.head_dim
    passes = flash1_passes(op)
    rows = op.batch * op.heads * op.q_len
    kv = 2 * op.batch * op.kv_len * op.kv_heads * d * 2
    if op.backward:  # Q, dO, lse, dsum per pass; fp32 dQ accumulator; O once, dQ once
        per_row = passes * (4 * d + 8) + (passes - 1) * 8 * d + 4 * d
        return rows * per_row + 2 * kv
    per_row = passes * (2 * d + 8) + (passes - 1) * 8 * d + 2 * d  # Q, lse; o_tmp; O
    return rows * per_row + kv


FLASH1_SPLIT_K_WARPS = (4, 8)
"""(forward, backward) warps among which the first FlashAttention's kernels split the keys of
their output GEMM: ``FMHA_kernel_traits<S, D, STEP 16, WARPS_M 1, WARPS_N>`` with WARPS_N 4 in
every forward and 8 in every backward (Dao-AILab/flash-attention@8a2ece89
csrc/flash_attn/src/fmha_fwd_hdim{32,64,128}.cu, fmha_bwd_hdim{32,64,128}.cu), whose second
GEMM's tile is ``Cta_tile_extd<STEP, D, S, WARPS_M, 1, WARPS_N>`` (fmha/kernel_traits.h: the
warps split K, the keys). Each 16-row step of a pass ends with the warps' fp32 partial outputs
(O forward, dQ backward; 16 x head dim each) stored to shared memory, a ``__syncthreads()``
and every thread loading and adding all of them (fmha_fprop_kernel_1xN.h ``smem_o.store``,
``smem_o.load``; fmha_dgrad_kernel_1xN_loop.h ``smem_dq.store``, ``smem_dq.load``;
fmha/smem_tile.h ``Smem_tile_o``: a row of N x WARPS_K fp32). The FlashAttention-2 paper names
this "split-K" exchange as one reason FA1 is slower (Dao 2023, §3.3): FA2 splits the queries
among warps instead."""
SMEM_BYTES_PER_SM_CLOCK = 128
"""Shared-memory bytes an SM moves a clock (32 banks of 4 bytes: CUDA C++ Programming Guide,
"Shared Memory" of compute capabilities 8.x and 9.0)."""
MMA_SYNC_FLOPS_PER_SM_CLOCK = 2048
"""Dense 16-bit tensor FLOPs an Ampere SM does a clock (A100 312 TFLOP/s = 108 SMs x 2048 x
1.41 GHz); later SMs as ``TENSOR_FLOPS_PER_SM_CLOCK``."""


def sm_clock_hz(gpu: GPUSpec) -> float:
    """SM clocks a second, all SMs together, at the clock the matmuls run at in a priced kernel:
    the 16-bit peak over the tensor FLOPs an SM does a clock (Ampere's below Hopper), slowed
    as the matmuls are (``sustained_of_burst``, ``power_scale``)."""
    arch = gpu.sm_arch or 80
    per_clock = TENSOR_FLOPS_PER_SM_CLOCK[max(a for a in TENSOR_FLOPS_PER_SM_CLOCK if a <= arch)] \
        if arch >= min(TENSOR_FLOPS_PER_SM_CLOCK) else MMA_SYNC_FLOPS_PER_SM_CLOCK
    return gpu.flops("bf16") / per_clock * gpu.sustained_of_burst * gpu.power_scale


def flash1_split_k_bytes(op: Attention) -> float:
    """Shared-memory bytes of the first FlashAttention's split-K exchange
    (``FLASH1_SPLIT_K_WARPS``): per query row and key-block pass (``flash1_passes``), each warp
    stores its fp32 partial row of head-dim width and all of them are loaded back. Per FLOP it
    grows with the head dim over the key block: hd128 (128-key blocks) moves twice hd64's
    (256-key blocks) a FLOP, forward and backward."""
    warps = FLASH1_SPLIT_K_WARPS[op.backward]
    rows = op.batch * op.heads * op.q_len
    return rows * flash1_passes(op) * 2 * warps * op.head_dim * 4


def flash1_split_k_s(gpu: GPUSpec, op: Attention) -> float:
    """Seconds of ``flash1_split_k_bytes`` at ``SMEM_BYTES_PER_SM_CLOCK`` on every SM; added to
    the kernel's work, not overlapped: the CTA's warps wait at the ``__syncthreads()`` between
    the stores and the loads, and the step's next GEMM needs the sum's softmax statistics."""
    return flash1_split_k_bytes(op) / (SMEM_BYTES_PER_SM_CLOCK * sm_clock_hz(gpu))
