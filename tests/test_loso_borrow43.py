"""The leave-one-source-out report's borrowing: a grouped-GEMM family nobody measured takes
the measured families' effective rate at its own rows' shapes, on its own fraction's basis
(``fit_kernels.borrowed_fraction``), whether or not its tiles hide their fixed cost."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from trainsim.compute import grouped, roofline


@pytest.fixture(scope="module")
def rows(fit_script):
    return fit_script.load([fit_script.BUNDLED_DIR / f for f in fit_script.FILES])


def _family(fit_script, rows, impl):
    fam = [r for r in rows if fit_script.domain(r) == "grouped"
           and fit_script.grouped_family(r) == impl]
    assert fam
    return fam


def _as(rows, impl):
    """The same rows with their grouped GEMMs run by ``impl``."""
    return [dataclasses.replace(r, ops=[dataclasses.replace(op, grouped=impl)
                                        if getattr(op, "grouped", "") else op for op in r.ops])
            for r in rows]


@pytest.mark.parametrize("target, lender", [("triton", "cutlass"), ("deepgemm", "triton")])
def test_a_borrowed_fraction_prices_the_rows_as_fast_as_the_lender_would(fit_script, rows,
                                                                        target, lender):
    """Across the tile-cost treatments (Triton hides it, CUTLASS and DeepGEMM pay it), the
    borrowed fraction prices the target's rows in the time the lender's fraction gives the
    same GEMMs run the lender's way: like compared with like, not the bare number."""
    assert (target in grouped.TILE_COST_HIDDEN) != (lender in grouped.TILE_COST_HIDDEN)
    fam = _family(fit_script, rows, target)
    shipped = dict(roofline.GROUPED_OF_GEMM)
    try:
        x = 0.8
        borrowed = fit_script.borrowed_fraction(target, {lender: x}, fam)
        assert borrowed != x  # the tile cost moves it one way or the other
        roofline.GROUPED_OF_GEMM[target] = borrowed
        own = fit_script.predict(fam).sum()
        roofline.GROUPED_OF_GEMM[lender] = x
        lent = fit_script.predict(_as(fam, lender)).sum()
        roofline.GROUPED_OF_GEMM[target] = x  # the plain number, the old rule
        plain = fit_script.predict(fam).sum()
    finally:
        roofline.GROUPED_OF_GEMM.update(shipped)
    assert own == pytest.approx(lent, rel=0.01)
    assert abs(plain / lent - 1) > 0.05
    assert grouped.TILE_COST_HIDDEN == frozenset({"triton"})  # put back


def test_the_main_loop_share_is_below_one_and_rises_with_k(fit_script, rows):
    fam = _family(fit_script, rows, "triton")
    by_k = {}
    for r in fam:
        for op in r.ops:
            if getattr(op, "grouped", "") == "triton":
                by_k.setdefault(op.k, []).append(dataclasses.replace(r, ops=[op]))
    shares = {k: fit_script.main_loop_share(v, "triton") for k, v in by_k.items()}
    assert len(shares) >= 2
    ks = sorted(shares)
    assert all(0 < shares[k] < 1 for k in ks)
    assert all(shares[a] < shares[b] for a, b in itertools.pairwise(ks))
    assert fit_script.main_loop_share([], "triton") == 1.0


def test_a_lender_of_the_same_treatment_or_no_shapes_lends_its_number(fit_script, rows):
    fam = _family(fit_script, rows, "deepgemm")
    assert fit_script.borrowed_fraction("deepgemm", {"cutlass": 0.74}, fam) == 0.74
    assert fit_script.borrowed_fraction("triton", {"cutlass": 0.7, "deepgemm": 0.9}, []) == 0.8


def test_leave_one_source_out_borrows_on_a_common_basis(fit_script, rows):
    """DeepGEMM left out: its borrowed fraction is the mean of CUTLASS's and Triton's on the
    paying basis, above the plain mean (Triton's fraction carries the tile cost); the shipped
    constants are back after."""
    shipped = dict(roofline.GROUPED_OF_GEMM)
    out = {src: (n, mape, consts) for src, n, mape, consts in
           fit_script.leave_one_source_out(rows)}
    assert roofline.GROUPED_OF_GEMM == shipped
    _, _, consts = next(v for s, v in out.items() if "DeepGEMM" in s)
    assert consts["deepgemm"] > round(float(np.mean([consts["cutlass"], consts["triton"]])), 2)
