"""The epilogue of a GEMM that adds its output into an existing buffer (``Gemm.accumulate_bytes``:
a weight gradient accumulating into Megatron's ``main_grad``, cuBLAS's beta 1).

A GEMM's tiles end with an epilogue that converts the fp32 sums and stores the output tile; the
fitted fixed cost of a tile (``roofline.GEMM_TILE_OVERHEAD_K``, 219 k-steps of the 16-bit main
loop) holds that store of 16-bit C: on the H100 a 128 x 128 tile's 219 k-steps are 1.4 us at the
sustained rate, about the 1.5 us its 32 KB take at one SM's share of the HBM (3.35 TB/s x 0.85
over 132 SMs), the SMs of a wave storing together after their main loops. An accumulating
epilogue first reads the old C and then writes it back in the buffer's dtype: ``2 x
accumulate_bytes`` an element where the fitted cost holds 2. ``accumulate_epilogue_s`` prices
the difference at the HBM rate after the main loop, as the store is: the tiles' main loops do
not hide it.

Measured (kernel level): MooreThreads/SimuMax's B200 GEMM tables (``benchmarks/
kernels_simumax_b200.csv``, TE 2.11 ``general_gemm`` / ``general_grouped_gemm``) time the same
weight gradients into an fp32 and a bf16 ``main_grad``: the fp32 one is slower by 0.80 (median
of 82 dense shapes, quartiles 0.46-1.46) and 0.86 (16 per-expert grouped shapes, 0.81-0.93) of
its 4 extra bytes an element at the HBM rate (``benchmarks/fp8moe55_pairs.py --kernels``),
where an epilogue hidden under the main loops would make it 0. No GPU here times beta 1
against beta 0 on Hopper (RESULTS.md, 55th session, fp8moe55: the device check). No constant.
"""

from __future__ import annotations

from trainsim.config import GPUSpec
from trainsim.workload.ops import Gemm

STORED_BYTES = 2
"""Bytes an element of the 16-bit output store the fitted per-tile cost already holds."""


def accumulate_epilogue_s(gpu: GPUSpec, op: Gemm, hbm_efficiency: float) -> float:
    """Seconds an accumulating GEMM's epilogue adds after its main loops: the old buffer read
    and the wider write, beyond the 16-bit store (module doc); 0 for a fresh output."""
    if not op.accumulate_bytes:
        return 0.0
    extra = 2 * op.accumulate_bytes - STORED_BYTES
    return op.batch * op.m * op.n * extra / (gpu.hbm_bw_Bps * hbm_efficiency)


__all__ = ["STORED_BYTES", "accumulate_epilogue_s"]
