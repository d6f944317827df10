"""A GEMM row that is the winner of a shape search (Bekman's MAMF / MSMF finder) is priced as the
model's own best over the finder's grid (``validate.best_shape``), through the row's own compute
chain and clock; every other row keeps its named shape."""

from __future__ import annotations

import pytest

from trainsim.catalog import gpu
from trainsim.validate import best_shape
from trainsim.validate.kernels import _model, predict_kernel_row
from trainsim.workload.ops import Gemm

WINNER = "best shape of a brute-force search (a peak, not a typical shape)"


def _row(**cells) -> dict[str, str]:
    row = {"id": "r", "source": "stas00 (MAMF comparison table, v2)", "gpu": "b200-sxm-180gb",
           "kind": "gemm", "implementation": "cublas", "dtype": "bf16", "m": "1792",
           "n": "16128", "k": "3072", "measured_value": "1745", "measured_unit": "TFLOP/s",
           "note": WINNER}
    return {**row, **cells}


def test_the_grid_is_the_finders_1024_step_range():
    """mamf-finder.py's ``np.arange(0, 20480, 1024)`` for m, n and k, the empty 0 left out."""
    assert best_shape.SEARCH_GRID == tuple(range(0, 20480, 1024))[1:]
    assert best_shape.BEST_SHAPE.search(WINNER)
    assert not best_shape.BEST_SHAPE.search("column torch-bf16 (torch.mm/cuBLAS)")


def test_a_search_winner_is_priced_at_the_models_best_on_the_grid():
    """B200's v2 bf16 winner, 1792 x 16128 x 3072 (0.92 of the ceiling where the model prices
    it: a 128x128 tile's fixed cost at k = 3,072), is priced at the model's best grid shape, a
    deep-k GEMM of whole waves, and says which shape that was; without the words it keeps its
    own shape."""
    won = predict_kernel_row(_row())
    named = predict_kernel_row(_row(note="a shape"))
    model = _model("b200-sxm-180gb", "auto", False, True)
    rate, shape = best_shape.searched_best(model, Gemm("g", 1792, 16128, 3072, "bf16"))
    assert won.predicted == pytest.approx(rate / 1e12, rel=1e-9)
    assert won.predicted > 1.05 * named.predicted
    assert "harness" not in named.chosen
    assert f"{shape.m}x{shape.n}x{shape.k}" in won.chosen["harness"]
    assert shape.k > 3072 and {shape.m, shape.n, shape.k} <= set(best_shape.SEARCH_GRID)
    # the best is the best: no grid shape prices faster, the row's own shape included
    for m, n, k in ((1792, 16128, 3072), (1024, 1024, 1024), (8192, 8192, 8192),
                    (19456, 19456, 19456)):
        g = Gemm("g", m, n, k, "bf16")
        assert g.flops / model.explain(g)[0] <= rate


def test_the_search_keeps_the_rows_clock_and_dtype():
    """The MSMF winner (power-saturated) is the sustained model's best, the burst one's times the
    GPU's sustained fraction; an fp8 winner searches fp8 GEMMs."""
    burst = predict_kernel_row(_row(note=WINNER + "; MAMF")).predicted
    msmf = predict_kernel_row(_row(note=WINNER + "; MSMF")).predicted
    assert msmf == pytest.approx(burst * gpu("b200-sxm-180gb").sustained_of_burst, rel=2e-3)
    fp8 = predict_kernel_row(_row(dtype="fp8")).predicted
    assert fp8 > 1.8 * burst


def test_a_grouped_or_time_row_is_not_read_as_a_search():
    """Only a dense GEMM rated in TFLOP/s is a finder's winner; a grouped row keeps its shape."""
    grouped = _row(kind="gemm_grouped", groups="8", implementation="cutlass")
    assert "harness" not in predict_kernel_row(grouped).chosen
    timed = predict_kernel_row(_row(measured_value="0.1", measured_unit="ms"))
    assert "harness" not in timed.chosen
    assert timed.predicted == pytest.approx(
        predict_kernel_row(_row(measured_value="0.1", measured_unit="ms", note="")).predicted)
