"""What attention dropout costs a fused attention kernel, per implementation and direction.

A fused kernel with dropout draws a Philox random number for every score it computes, in the
forward and again, from the same counters, in the backward. Two forms, by what was measured:

* **Draws per score** (``DROPOUT_CLOCKS_PER_SCORE``): where the kernel itself was timed with and
  without dropout, the draws are a time per computed score, in SM clocks, added to the kernel's
  work (``dropout_draw_s``). A Philox call is integer work on every SM, so the time follows
  the scores and the SM clock and does not shrink with the head dim: cuDNN's Hopper forward
  adds 281 us at head dim 128 and 271 us at 64 for the same 268 M scores (H200, run 7 below),
  where a slower matmul rate (the other form) would add half as much at 64.
* **A slower matmul rate** (``ATTN_DROPOUT_FWD``, ``ATTN_DROPOUT_BWD``) elsewhere: the only
  figures for those kernels are FlashAttention-4's on Blackwell, stated as fractions of the
  no-dropout rate.

FlashAttention-3 and FlashAttention-4 take no dropout (``config.run`` refuses it; Transformer
Engine turns both off for dropout and runs cuDNN), so neither is priced here.
"""

from __future__ import annotations

from trainsim.config import GPUSpec
from trainsim.workload.ops import Attention

ATTN_DROPOUT_FWD, ATTN_DROPOUT_BWD = 0.80, 0.65
"""(forward, backward) matmul rate with dropout over the rate without, for fused kernels with no
measured draws (``dropout_clocks_per_score`` None: cuDNN off Hopper, Triton, AMD's kernels).
FlashAttention-4's figures on Blackwell: Dao-AILab/flash-attention PR #2597 ("[Cute Sm100]
support dropout", open; GB200, bf16, 16 heads, ~32k tokens, p 0.125, beside cuDNN 9.24): "fwd ~
75-85%, bwd ~ 60-70% of no-drop TFLOPS", cuDNN's dropout backward 1.1-1.2x FA4's at head dim
128. On Hopper they price neither kernel measured there (H200, benchmarks/dropout54_fit.py):
cuDNN's forward takes 1.96-2.19x the time with dropout 0.1 (priced 1.2x), its backward
1.17-1.26x (priced ~1.5x); FlashAttention-2's backward 1.11-1.14x (priced ~1.5x)."""

DROPOUT_CLOCKS_PER_SCORE: dict[str, tuple[float, float]] = {
    "cudnn": (0.212, 0.119),
    "flash2": (0.078, 0.135),
    "mem_efficient": (0.404, 1.639),
}
"""(forward, backward) SM clocks of dropout draws per computed score (``_scores_and_tile``'s
count: whole tiles, a causal kernel's diagonal blocks in full), by the kernel the H200 timed
with dropout 0.1 and 0 (benchmarks/h200_2026-11-28_s54/device_checks54.json ``attn_dropout``:
torch 2.11, cuDNN 9.19, SDPA's cuDNN, flash and memory-efficient backends, b 1, 16 query
heads, 16 or 4 key/value heads, head dim 128, 4,096 and 8,192 tokens, causal). Fitted by
``benchmarks/dropout54_fit.py``: per kernel and direction the median over the four shapes of the
clocks that price the measured time ratio on top of the kernel's priced time with dropout off.
Held out: cuDNN's 8 shapes of run 7 (benchmarks/h200_2026-11-27_s40, head dim 64 and 128, b 1-4,
unmasked), FlashAttention-2's 8 of runs 1 and 4 there (benchmarks/kernels_h200_fa_dropout.csv) and
this session's run 4 (120 cuDNN and FA2 shapes as CUDA-graph replays: cuDNN's forward with dropout
priced at 3.0 % MAPE, was 50.8 %).

``flash2`` is FlashAttention-2's kernel, which PyTorch SDPA's flash backend vendors: both draw
one Philox call per 16 scores (pytorch/pytorch@b22c8075 aten/src/ATen/native/transformers/cuda/
flash_attn/dropout.h; Dao-AILab/flash-attention csrc/flash_attn/src/dropout.h) and launch the
same tiles with dropout (``fa2_traits``), so the SDPA figure carries to the flash-attn package.
The first FlashAttention draws one call per 8 scores (``FA1_DRAWS_OF_FA2``)."""

FA1_DRAWS_OF_FA2 = 2.0
"""Philox calls per score of the first FlashAttention over FlashAttention-2's: 16-bit thresholds,
8 scores a call (flash-attention v1.0.5 csrc/flash_attn/src/fmha/softmax.h
``apply_dropout_16bits``, L311-L335), against 8-bit thresholds, 16 a call (FA2's dropout.h).
Read from the code, not measured."""

DROPOUT_KERNEL = {"cudnn": "cudnn", "flash2": "flash2", "sdpa": "flash2", "flash1": "flash2",
                  "mem_efficient": "mem_efficient"}
"""The measured kernel (``DROPOUT_CLOCKS_PER_SCORE``) each implementation runs with dropout."""

DROPOUT_KERNEL_ARCH = {"cudnn": (90, 100)}
"""Compute capabilities [low, high) where the measured kernel is the one that runs: cuDNN's is
its Hopper ``sm90_flash_fprop_wgmma`` / ``sm90_flash_bprop_wgmma`` (the profiler's names, with
and without dropout); on Ampere and Blackwell cuDNN runs other kernels. FlashAttention-1/2's and
the memory-efficient ``mma.sync`` kernels are the same code on every NVIDIA GPU."""

EXP_PER_SM_CLOCK = 16
"""Exponentials an SM's special-function units issue a clock (FA3 paper §3.1, FA4 paper §1):
``GPUSpec.flops_per_exp`` is stated against it, so the exponential rate over this is the SMs'
clock rate."""


def dropout_clocks_per_score(impl: str, backward: bool, gpu: GPUSpec) -> float | None:
    """SM clocks of dropout draws per computed score of ``impl`` on ``gpu``
    (``DROPOUT_CLOCKS_PER_SCORE``), or None where no measured kernel of it runs there."""
    kernel = DROPOUT_KERNEL.get(impl)
    if kernel is None or gpu.vendor != "nvidia":
        return None
    low, high = DROPOUT_KERNEL_ARCH.get(kernel, (0, 1 << 30))
    if not low <= (gpu.sm_arch or 0) < high:
        return None
    clocks = DROPOUT_CLOCKS_PER_SCORE[kernel][int(backward)]
    return clocks * (FA1_DRAWS_OF_FA2 if impl == "flash1" else 1.0)


def dropout_rate_share(impl: str, backward: bool, gpu: GPUSpec) -> float:
    """Matmul rate with dropout over the rate without: 1 where the draws are priced per score
    (``dropout_clocks_per_score``), else ``ATTN_DROPOUT_FWD`` / ``ATTN_DROPOUT_BWD``."""
    if dropout_clocks_per_score(impl, backward, gpu) is not None:
        return 1.0
    return ATTN_DROPOUT_BWD if backward else ATTN_DROPOUT_FWD


def dropout_draw_s(gpu: GPUSpec, op: Attention, scores: float) -> float:
    """Seconds of ``op``'s dropout draws over ``scores`` computed scores on ``gpu``: 0 without
    dropout or where they are priced as a slower matmul rate (``dropout_rate_share``). The SMs
    run at the clock the matmuls and the exponentials run at (``GPUSpec.sustained_of_burst``,
    ``power_scale``)."""
    clocks = dropout_clocks_per_score(op.impl, op.backward, gpu) if op.dropout else None
    if not clocks:
        return 0.0
    sm_clock_rate = (gpu.flops("bf16") / gpu.flops_per_exp / EXP_PER_SM_CLOCK
                     * gpu.sustained_of_burst * gpu.power_scale)
    return scores * clocks / sm_clock_rate


__all__ = ["ATTN_DROPOUT_BWD", "ATTN_DROPOUT_FWD", "DROPOUT_CLOCKS_PER_SCORE", "FA1_DRAWS_OF_FA2",
           "dropout_clocks_per_score", "dropout_draw_s", "dropout_rate_share"]
