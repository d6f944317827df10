"""Split-k: an output tile's k loop shared by several SMs when the tiles leave SMs idle.

A GEMM whose output tiles are fewer than the SMs (or whose last, partial wave leaves SMs
idle: ``roofline.SPLIT_K_MAX_WAVES``) can split each tile's k loop over ``s`` SMs. The
partial sums are then added into the tile: cuBLASLt's ``CUBLASLT_REDUCTION_SCHEME_INPLACE``
adds the parts in the output buffer one after another (counters in the workspace keep them in
order; cuBLAS documentation, ``cublasLtReductionScheme_t``), as CUTLASS's serial split-k does
(``cutlass/gemm/kernel/gemm.h``, ``kSplitKSerial``: each k partition waits on a semaphore for
the previous one, then reads the tile, adds its part and stores it). Each part beyond the
first therefore pays an epilogue in turn, and a library picks the split that minimises the
tile's time rather than the deepest it can (``best_split``).

Pure functions of k-steps; ``compute.roofline`` (dense GEMMs) and ``compute.grouped``
(per-expert cuBLAS GEMMs) call them with their tile's fixed cost.
"""

from __future__ import annotations

import math

SPLIT_K_MIN = 512
"""cuBLAS and CUTLASS split the k loop over idle SMs when the output has fewer tiles than the
GPU has SMs, keeping each split at least this deep (the fit is flat from 256 to 1,024)."""

SPLIT_K_FIXUP = 0.75
"""k-steps each part of a split tile beyond the first adds, as a fraction of the tile's fixed
cost (``roofline.GEMM_TILE_OVERHEAD_K``, the prologue's pipeline fill and the epilogue's
convert and store): the serial fix-up reads the tile, adds its part and stores it again while
the next part waits, an epilogue of its own. Fitted by ``benchmarks/fit_kernels.py`` with the
tile overhead (fit sources and shape families; see RESULTS.md; 0.6 before the benchmark loop's
clock, ``roofline.LOOP_CLOCK_TAU_S``, was priced in the 28th session)."""


def tile_steps(k: float, split: int, overhead_k: float, stretch: float = 1.0) -> float:
    """k-steps one output tile takes when its k loop runs in ``split`` parts side by side:
    one part's main loop (``stretch`` k-steps per useful one), the tile's fixed cost and the
    serial fix-up of every part beyond the first (``SPLIT_K_FIXUP``)."""
    return k / split * stretch + overhead_k * (1.0 + (split - 1) * SPLIT_K_FIXUP)


def best_split(k: float, most: int, overhead_k: float, stretch: float = 1.0) -> int:
    """The number of parts, 1 to ``most``, that minimises ``tile_steps``: the continuous
    optimum sqrt(k x stretch / fix-up) rounded down or up (the fewer on a tie)."""
    if most <= 1:
        return 1
    fixup = SPLIT_K_FIXUP * overhead_k
    if fixup <= 0.0:
        return most
    best = math.sqrt(k * stretch / fixup)
    candidates = {min(most, max(1, math.floor(best))), min(most, max(1, math.ceil(best)))}
    return min(sorted(candidates), key=lambda s: tile_steps(k, s, overhead_k, stretch))


def parts(k: float, sms: int, tiles: int, overhead_k: float, stretch: float = 1.0) -> int:
    """The parts each of ``tiles`` output tiles sharing ``sms`` SMs splits its k loop into:
    the fastest (``best_split``) of those the idle SMs and ``SPLIT_K_MIN`` allow; 1 where the
    tiles fill the SMs."""
    return best_split(k, max(1, min(int(sms // tiles), int(k // SPLIT_K_MIN))), overhead_k,
                      stretch)
