"""Roofline kernel-time model with shape-dependent efficiency.

time = max(FLOPs / achievable FLOP/s, bytes / achievable B/s) + launch overhead

The constants are global and physical, each with its source:

* GEMM ceiling: the GPU's measured *maximum achievable matmul FLOP/s* (``GPUSpec.mamf_fraction``,
  e.g. A100 267.9 of 312 TFLOP/s, H100 792 of 989; Bekman, ml-engineering MAMF table).
  Below the ceiling, wave quantization: output tiles of 128x128 are spread over the SMs in
  whole waves, so a GEMM with 1.1 waves of tiles runs at 1.1/2 of the ceiling
  (NVIDIA, *Matrix Multiplication Background User's Guide*, "wave quantization").
* FlashAttention: forward reaches ~70 % and backward ~58 % of the GEMM ceiling
  (Dao 2023, FlashAttention-2, Figs. 4-6: A100, causal, head dim 128, 2k-16k tokens:
  ~190-230 TFLOP/s forward and ~160-190 backward against cuBLAS' ~270).
* Memory-bound kernels reach ~85 % of HBM bandwidth (STREAM-like copy kernels on A100/H100).
* Each kernel launch costs ~3 us of GPU time that cannot overlap its own work (stream
  serialization, tail effects); NVIDIA Nsight traces of Megatron show 2-5 us gaps.
"""

from __future__ import annotations

import math
from typing import Protocol

from trainsim.config import GPUSpec
from trainsim.workload.ops import Attention, Elementwise, Gemm

ATTN_FWD_OF_GEMM = 0.70
ATTN_BWD_OF_GEMM = 0.58
FLASH1_OF_FLASH2 = 0.5
"""The first FlashAttention runs at about half FlashAttention-2's rate ("around 2x speedup
compared to FlashAttention", Dao 2023, abstract; Figs. 4-6 on A100)."""
ATTN_DROPOUT_FWD, ATTN_DROPOUT_BWD = 0.80, 0.65
"""Fused attention with dropout generates a Philox random number per score, in the forward
and again in the backward: measured at 75-85 % (forward) and 60-70 % (backward) of the
no-dropout rate for cuDNN and FlashAttention kernels (Dao-AILab/flash-attention PR #2597)."""
HBM_EFFICIENCY = 0.85
LAUNCH_S = 3e-6
TILE = 128


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
            frac = ATTN_BWD_OF_GEMM if op.backward else ATTN_FWD_OF_GEMM
            if op.impl == "flash1":
                frac *= FLASH1_OF_FLASH2
            if op.dropout:
                frac *= ATTN_DROPOUT_BWD if op.backward else ATTN_DROPOUT_FWD
            return max(op.flops / (peak * frac), op.bytes / bw) + LAUNCH_S
        if isinstance(op, Elementwise):
            return op.bytes / bw + LAUNCH_S
        raise TypeError(f"not a compute op: {op!r}")
