"""A GEMM row that is the best result of a shape search, priced as the model's best on that search.

Bekman's *maximum achievable matmul FLOP/s* finder (stas00/ml-engineering
compute/accelerator/benchmarks/mamf-finder.py) times ``torch.mm`` over a grid of shapes
(``--m_range``, ``--n_range``, ``--k_range``: ``np.arange(start, stop, step)`` each, L418-431
@744d01e) and reports the fastest; its table lists the winning shape "for reproducibility" and
warns that "there could be many others with similar performance" (compute/accelerator/README.md
@744d01e, notes under the MAMF table; the fast-mamf branch @082816f9: "There are usually many
shapes with near-identical performance"). Such a row measures a maximum over shapes, not the shape
it names: the winner is where the library's own tiles happened to fill the SMs best and its timing
noise ran highest. Priced at its named shape, the model answers another question, and answers it
with the tiles and waves of its own kernel menu at a shape chosen by another's (gemm32 / gemm37:
the H100 fp8 winner 1024 x 9216 x 14336 is 4.36 waves of the model's 128x128 tiles, priced at 0.82
of the ceiling the same row defines). So the validator prices the row as the model's own best rate
over the finder's search (``searched_best``), through the same compute chain the row would be
priced by (a bundled database's records included), at the row's dtype, accumulation and clock.

The grid is the finder's documented one at its 1024 step (benchmarks/README.md @744d01e: the "fp8
on NVIDIA GPUs" example's ``0 20480 1024``, the step of its "more exhaustive search" example; the
empty 0 shape left out): m, n, k in 1024 .. 19456. A 256-step search over the same range (the
README's H100 example; e.g. the H200 fp8 winner 1280 x 4096 x 12032 lies on a 256 step) holds every
shape of it, so the model's best here is at most its best there. The fast-mamf branch's ``--search
auto`` searches shapes built to fill whole waves of 128x256 tiles (mamf-finder.py @082816f9
``wave_mn_layouts``), a different set that the grid stands in for. No constant.
"""

from __future__ import annotations

import functools
import re

from trainsim.compute import ChainModel
from trainsim.workload.ops import Gemm

BEST_SHAPE = re.compile(r"\bbest shape\b", re.IGNORECASE)
"""A note saying the row's shape is the winner of a shape search (kernels_published.csv: "best
shape of a brute-force search (a peak, not a typical shape)")."""

SEARCH_GRID = tuple(range(1024, 20480, 1024))
"""m, n and k of the searched shapes: mamf-finder.py's ``np.arange(0, 20480, 1024)`` without 0."""


def searched_best(model: ChainModel, op: Gemm) -> tuple[float, Gemm]:
    """(FLOP/s, shape) of the fastest GEMM ``model`` prices on ``SEARCH_GRID``, at ``op``'s dtype
    and fp8 accumulation (a dense GEMM: the finder times ``torch.mm`` / ``torch._scaled_mm``)."""
    return _best(model, op.dtype, op.fp8_fast_accum)


@functools.cache
def _best(model: ChainModel, dtype: str, fast_accum: bool) -> tuple[float, Gemm]:
    best_rate, best_op = 0.0, None
    for m in SEARCH_GRID:
        for n in SEARCH_GRID:
            for k in SEARCH_GRID:
                g = Gemm("gemm", m, n, k, dtype, fp8_fast_accum=fast_accum)
                rate = g.flops / model.explain(g)[0]
                if rate > best_rate:
                    best_rate, best_op = rate, g
    assert best_op is not None  # the grid is not empty
    return best_rate, best_op
