"""Roofline kernel-time model with shape-dependent efficiency.

time = max(FLOPs / achievable FLOP/s, bytes / achievable B/s) + launch overhead

The constants are global and physical, each with its source:

* GEMM ceiling: the GPU's measured *maximum achievable matmul FLOP/s* (``GPUSpec.mamf_fraction``,
  e.g. A100 267.9 of 312 TFLOP/s, H100 792 of 989; Bekman, ml-engineering MAMF table).
  Below the ceiling, wave quantization: output tiles of 128x128 are spread over the SMs in
  whole waves, so a GEMM with 1.1 waves of tiles runs at 1.1/2 of the ceiling
  (NVIDIA, *Matrix Multiplication Background User's Guide*, "wave quantization").
* Fused attention: each implementation runs at its own fraction of the GEMM ceiling, forward
  and backward (``ATTENTION_OF_GEMM``, sources there); kernels written for Ampere lose half
  of it on GPUs whose tensor cores need Hopper's instructions (``AMPERE_KERNEL_ON_HOPPER``).
* Memory-bound kernels reach ~85 % of HBM bandwidth (STREAM-like copy kernels on A100/H100).
* Each kernel launch costs ~3 us of GPU time that cannot overlap its own work (stream
  serialization, tail effects); NVIDIA Nsight traces of Megatron show 2-5 us gaps.
"""

from __future__ import annotations

import math
from typing import Protocol

from trainsim.config import GPUSpec
from trainsim.workload.ops import Attention, Elementwise, Gemm

ATTENTION_OF_GEMM: dict[str, tuple[float, float]] = {
    "flash2": (0.70, 0.58),
    "flash3": (0.77, 0.64),
    "cudnn": (0.77, 0.64),
    "flash4": (0.76, 0.63),
}
"""(forward, backward) rate of each fused attention kernel as a fraction of the GEMM ceiling
of the GPU it was written for, at typical training shapes (2k-16k tokens, head dim 64-128).

* ``flash2``: Dao 2023 (FlashAttention-2, arXiv:2307.08691) Figs. 4-6 on A100: ~190-230
  TFLOP/s forward and ~160-190 backward against cuBLAS' ~270. Its abstract's peak, "up to 73%
  of the theoretical maximum" (228 of 312 TFLOP/s = 0.85 of A100's MAMF), puts the typical
  rate at 0.70 / 0.85 = 0.82 of the peak; the other papers' headline peaks are turned into
  typical rates by that same 0.82.
* ``flash3``: Shah et al. 2024 (FlashAttention-3, arXiv:2407.08608) abstract: "up to 740
  TFLOPs/s (75% utilization)" in FP16 on H100, i.e. 0.93 of H100's MAMF (792), times 0.82.
* ``cudnn``: the same as FA3 on Hopper: the FA3 paper's Figs. 5-6 (H100, cuDNN 9) put cuDNN's
  fused attention within ~10% of FA3, ahead at short sequences and behind at long ones.
* ``flash4``: Zadouri et al. 2026 (FlashAttention-4, arXiv:2603.05451) abstract: "up to 1613
  TFLOPs/s (71% utilization)" in BF16 on B200, i.e. 0.92 of B200's MAMF (1745), times 0.82.

Backward rates without a headline figure (FA3, cuDNN, FA4) keep FA2's backward/forward ratio
(0.58 / 0.70 = 0.83): five matmuls and the dS recomputation weigh on every generation alike.
``sdpa`` is PyTorch's flash backend, i.e. FA2; ``flash1`` runs at ``FLASH1_OF_FLASH2`` of FA2;
``triton`` (llm-foundry's default, Tri Dao's Triton port of the FA2 algorithm,
``flash_attn_triton.py``) is priced as FA2 (Ampere-style ``mma`` like it); ``flex``
(torch FlexAttention) at ``FLEX_OF_FLASH2``.
"""
FLEX_OF_FLASH2 = (0.90, 0.85)
"""FlexAttention reaches "90% of FlashAttention2's performance in the forward pass and 85% in
the backward pass" (PyTorch blog, "FlexAttention: The Flexibility of PyTorch with the
Performance of FlashAttention", August 2024)."""
FLASH1_OF_FLASH2 = 0.5
"""The first FlashAttention runs at about half FlashAttention-2's rate ("around 2x speedup
compared to FlashAttention", Dao 2023, abstract; Figs. 4-6 on A100)."""
AMPERE_KERNEL_ON_HOPPER = 0.51
"""FA1, FA2 and PyTorch's flash backend issue Ampere's synchronous ``mma.sync``; Hopper's and
Blackwell's tensor cores reach their rate only through ``wgmma``/``tcgen05`` with TMA. FA2
runs at "only 35% utilization on the H100" (FA3 paper, abstract: 0.44 of H100's MAMF) against
73% on A100 (FA2 paper, abstract: 0.85 of A100's MAMF): 0.44 / 0.85 = 0.51."""
AMPERE_KERNELS = frozenset({"flash1", "flash2", "sdpa", "triton", "flex"})
ATTN_DROPOUT_FWD, ATTN_DROPOUT_BWD = 0.80, 0.65
"""Fused attention with dropout generates a Philox random number per score, in the forward
and again in the backward: measured at 75-85 % (forward) and 60-70 % (backward) of the
no-dropout rate for cuDNN and FlashAttention kernels (Dao-AILab/flash-attention PR #2597)."""
HBM_EFFICIENCY = 0.85
LAUNCH_S = 3e-6
TILE = 128


def has_hopper_tensor_cores(gpu: GPUSpec) -> bool:
    """An NVIDIA GPU of the Hopper generation or later: fp8 tensor cores arrived with Hopper's
    ``wgmma`` (an fp8-capable Ada GPU would be misread as one; the catalog holds none)."""
    return gpu.vendor == "nvidia" and "fp8" in gpu.peak_flops


def attention_fraction(impl: str, backward: bool, gpu: GPUSpec) -> float:
    """Fraction of ``gpu``'s GEMM ceiling a fused attention kernel ``impl`` reaches."""
    base = "flash2" if impl in ("flash1", "sdpa", "triton", "flex") else impl
    fwd, bwd = ATTENTION_OF_GEMM[base]
    frac = bwd if backward else fwd
    if impl == "flash1":
        frac *= FLASH1_OF_FLASH2
    if impl == "flex":
        frac *= FLEX_OF_FLASH2[1] if backward else FLEX_OF_FLASH2[0]
    if impl in AMPERE_KERNELS and has_hopper_tensor_cores(gpu):
        frac *= AMPERE_KERNEL_ON_HOPPER
    return frac


class ComputeModel(Protocol):
    name: str

    def time(self, op: Gemm | Attention | Elementwise) -> float: ...


class RooflineModel:
    """Prices compute ops on one GPU; pure and cacheable by op."""

    name = "roofline"

    def __init__(self, gpu: GPUSpec) -> None:
        self.gpu = gpu
        self._cache: dict[object, float] = {}

    def gemm_efficiency(self, op: Gemm) -> float:
        """Fraction of the GEMM ceiling left after wave quantization."""
        tiles = math.ceil(op.m / TILE) * math.ceil(op.n / TILE) * op.batch
        waves = tiles / self.gpu.num_sms
        return waves / math.ceil(waves)

    def time(self, op: Gemm | Attention | Elementwise) -> float:
        t = self._cache.get(op)
        if t is None:
            t = self._cache[op] = self._time(op)
        return t

    def _time(self, op: Gemm | Attention | Elementwise) -> float:
        bw = self.gpu.hbm_bw_Bps * HBM_EFFICIENCY
        if isinstance(op, Gemm):
            ceiling = self.gpu.gemm_ceiling(op.dtype) * self.gemm_efficiency(op)
            return max(op.flops / ceiling, op.bytes / bw) + LAUNCH_S
        if isinstance(op, Attention):
            peak = self.gpu.gemm_ceiling("bf16")
            if op.impl == "unfused":  # batched GEMMs for QK^T and AV plus softmax round trips
                return op.flops / peak + op.bytes / bw + 4 * LAUNCH_S
            frac = attention_fraction(op.impl, op.backward, self.gpu)
            if op.dropout:
                frac *= ATTN_DROPOUT_BWD if op.backward else ATTN_DROPOUT_FWD
            return max(op.flops / (peak * frac), op.bytes / bw) + LAUNCH_S
        if isinstance(op, Elementwise):
            return op.bytes / bw + LAUNCH_S
        raise TypeError(f"not a compute op: {op!r}")
