"""The fraction a grouped-GEMM family nobody measured borrows in ``fit_kernels.py``'s
held-out reports (``fit_grouped``, ``leave_one_source_out``), on its own fraction's basis.

``GROUPED_OF_GEMM`` is a main-loop fraction, the dense tile's fixed cost
(``roofline.GEMM_TILE_OVERHEAD_K``) charged on top, for a family that pays that cost (CUTLASS,
DeepGEMM), and the whole tile rate for one whose tiles hide it (``grouped.TILE_COST_HIDDEN``,
Triton: 43rd session, kern43). The plain mean of the two kinds of number compared unlike with
unlike; this converts each lender's fraction to the borrower's basis at the shapes priced
(43rd session, loso43). No constant.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from kernel_rows import Row, domain, grouped_family

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import grouped, roofline


def main_loop_share(rows: list[Row], impl: str) -> float:
    """The share of ``rows``' ``impl`` GEMMs' tile time that is main loop where the dense
    tile's fixed cost is paid (``roofline.GEMM_TILE_OVERHEAD_K``, a block-scaled kernel's
    promotion in the loop): the model's compute time of those GEMMs with the cost hidden
    (``grouped.TILE_COST_HIDDEN``) over their time with it paid, at the same fraction (their
    shapes only, never their measured times; 1.0 for no such GEMM). What converts one family's
    fraction to another's basis at these shapes (``borrowed_fraction``)."""
    hidden, paid = 0.0, 0.0
    shipped = grouped.TILE_COST_HIDDEN
    try:
        for r in rows:
            gpu = catalog_gpu(r.gpu)
            if not r.sustained:
                gpu = dataclasses.replace(gpu, sustained_of_burst=1.0)
            for op in r.ops:
                if getattr(op, "grouped", "") != impl:
                    continue
                work = op.flops / gpu.gemm_ceiling(op.dtype)
                grouped.TILE_COST_HIDDEN = shipped | {impl}
                hidden += work / roofline.grouped_efficiency(gpu, op)
                grouped.TILE_COST_HIDDEN = shipped - {impl}
                paid += work / roofline.grouped_efficiency(gpu, op)
    finally:
        grouped.TILE_COST_HIDDEN = shipped
    return hidden / paid if paid else 1.0


def borrowed_fraction(impl: str, fitted: dict[str, float], priced: list[Row]) -> float:
    """``GROUPED_OF_GEMM`` of a family no row was fitted for: the mean of the fitted
    families' effective rates at the shapes of ``priced``'s rows of that family (its kernel
    runs its tiles as fast as the measured libraries run theirs there, nothing saying
    otherwise), as a fraction on its own basis. A family whose tiles hide their fixed cost
    (``grouped.TILE_COST_HIDDEN``, Triton) has a fraction that is its whole tile rate; one that
    pays it has its main loop's, the cost charged on top: a paying family's fraction counts for
    a hiding one times the main-loop share at those shapes (``main_loop_share``), a hiding
    family's for a paying one over it. With no priced row of the family (no shapes to convert
    at) the plain mean of the fitted fractions."""
    fam = [r for r in priced if domain(r) == "grouped" and grouped_family(r) == impl]
    share = main_loop_share(fam, impl)
    hides = impl in grouped.TILE_COST_HIDDEN
    values = []
    for other, x in fitted.items():
        if (other in grouped.TILE_COST_HIDDEN) == hides:
            values.append(x)
        else:
            values.append(x * share if hides else x / share)
    return round(float(np.mean(values)), 2)
