"""Grouped GEMMs (an MoE layer's experts) by implementation (``Gemm.grouped``).

Per-expert cuBLAS GEMMs (Transformer Engine's ``GroupedLinear``: ``GROUPED_STREAMS``) are
tiled each on its own, so few rows per expert leave SMs idle; one-kernel grouped GEMMs
(CUTLASS, ``torch._grouped_mm``, Triton, DeepGEMM) spread all groups' tiles at
``GROUPED_OF_GEMM`` of the dense rate; dropless routing half-fills each expert's last row
tile (``Gemm.ragged``).

The dense GEMM's tile, its fixed cost per tile and the block-scale promotion come from
``compute.roofline``, which calls in here: this module imports nothing from it.
"""

from __future__ import annotations

import math

from trainsim.compute import split_k
from trainsim.config import GPUSpec
from trainsim.workload.ops import Gemm

GROUPED_OF_GEMM: dict[str, float] = {"cutlass": 0.76, "triton": 0.71, "deepgemm": 0.91}
"""Rate of a one-kernel grouped GEMM's tiles as a fraction of a dense GEMM's on the same
GPU, by implementation family, after its tile and wave quantization (each group's rows tiled
on their own, the tiles of every group spread over the SMs together) and the dense tile
overhead. Published H100 measurements put ``torch._grouped_mm`` (CUTLASS) and the Triton MoE
kernels at 0.6-0.7 of the dense rate (pytorch/ao #2490, VeOmni #460, Liger-Kernel) while
DeepGEMM's grouped kernels run near its dense rate (DeepGEMM README; 0.91 of the fp8
rate without cuBLAS's split accumulator, ``gemm_rate``). Fitted by
``benchmarks/fit_kernels.py`` (its held-out sources excluded; CUTLASS 0.73 and Triton 0.69
before the benchmark loop's clock, ``roofline.LOOP_CLOCK_TAU_S``, was priced: 28th session).
Per-expert cuBLAS GEMMs (``multi_stream``, ``loop``) are cuBLAS's own dense GEMMs: no
fraction."""
FP8_SERIAL_PROMOTION = frozenset({"cutlass"})
"""One-kernel grouped GEMMs whose fp8 kernel without fast accumulation promotes Hopper's
limited-precision tensor-core sums into fp32 accumulators itself, between k tiles, with the
tensor cores idle: PyTorch's ``torch._scaled_grouped_mm`` (``use_fast_accum=False`` by default,
aten native_functions.yaml) runs CUTLASS's ``KernelPtrArrayTmaWarpSpecializedCooperative``
schedule rather than its ``...FP8FastAccum`` one (aten/src/ATen/native/cuda/ScaledGroupMM.cu
``Schedule``; 128x128x128 tiles "for slow accum to avoid spilling"), whose FP8 mainloop calls
``GmmaFP8Accumulation::promote_if_needed`` after each k tile: ``warpgroup_wait<0>`` and one
FADD per accumulator element every ``mma_promotion_interval`` MMAs (CUTLASS
include/cutlass/gemm/collective/fp8_accumulation.hpp ``promote_core``), the structure
``roofline.block_promotion_k`` prices for block-scaled kernels (``serial``). Its fp8 rate is
therefore the 16-bit fraction of the fp8 peak stretched by that promotion, not cuBLAS's
split-accumulator MAMF (``roofline.gemm_rate``); with fast accumulation it is the unstretched
16-bit fraction. No constant."""
GROUPED_STREAMS = {"multi_stream": 4, "loop": 1}
"""GEMMs in flight at once for implementations that launch one GEMM per group: Transformer
Engine's ``GroupedLinear`` issues each expert's cuBLAS GEMM on one of 4 compute streams in
turn (TransformerEngine common/util/multi_stream.cpp ``num_compute_streams = 4``,
common/gemm/cublaslt_gemm.cu ``multi_stream_cublas_gemm``); a plain loop runs one at a time.
The chunks of a GEMM overlapped with a TP collective (``userbuffers``) are cuBLAS's dense
GEMMs issued round-robin on 3 streams (TE pytorch/module/base.py ``_NUM_MAX_UB_STREAMS = 3``),
each chunk's last wave filled by the next chunk's tiles: priced as one grid of every chunk's
tiles at the dense rate."""


def _group_row_tiles(op: Gemm, tile: int) -> float:
    """Row tiles one group launches: ragged groups (dropless routing) hold ``m`` rows on
    average, their last tile half full on average (at least one tile)."""
    if op.ragged:
        return max(1.0, op.m / tile + 0.5)
    return float(math.ceil(op.m / tile))


def grouped_efficiency(gpu: GPUSpec, op: Gemm, *, tile: int, overhead_k: float,
                       stretch: float) -> float:
    """Fraction of the GEMM ceiling a grouped GEMM reaches: useful rows over launched row
    tiles, whole waves, each tile's fixed cost. One-kernel implementations spread every
    group's tiles over the SMs together (no split-k) at ``GROUPED_OF_GEMM`` of the dense
    rate; per-group GEMMs (``GROUPED_STREAMS``) are tiled each on its own, ``streams`` of
    them sharing the SMs at a time (split-k where their tiles leave SMs idle, with its serial
    fix-up: ``compute.split_k``), in ``ceil(groups / streams)`` rounds.

    ``tile`` is the dense GEMM's square output tile, ``overhead_k`` each tile's fixed cost in
    k-steps of its main loop, ``stretch`` the main-loop k-steps per useful k-step (block-scale
    promotion)."""
    sms = gpu.num_sms
    row_tiles = _group_row_tiles(op, tile)
    useful = op.m / tile / row_tiles
    n_tiles = math.ceil(op.n / tile)
    streams = GROUPED_STREAMS.get(op.grouped)
    if streams is None:
        waves = op.batch * row_tiles * n_tiles / sms
        return (useful * waves / math.ceil(waves) * op.k / (op.k * stretch + overhead_k)
                * GROUPED_OF_GEMM.get(op.grouped, 1.0))  # userbuffers chunks: dense cuBLAS
    together = min(streams, op.batch)
    tiles = together * row_tiles * n_tiles
    split = split_k.parts(op.k, sms, tiles, overhead_k, stretch)
    waves = tiles * split / sms
    rounds = op.batch / together
    return (useful * waves / math.ceil(waves) * op.k / split
            / split_k.tile_steps(op.k, split, overhead_k, stretch)
            * rounds / math.ceil(rounds))


def grouped_launches(op: Gemm) -> int:
    """Kernels a GEMM op launches one after another on the GPU (each pays ``LAUNCH_S``)."""
    streams = GROUPED_STREAMS.get(op.grouped)
    return math.ceil(op.batch / streams) if streams else 1
