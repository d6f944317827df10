"""benchmarks/gemm_error_budget.py: the per-GPU budget adds up to the validator's MAPE, the
two-source floor is the least error any prediction can have, and the tile choice it reports is
the analytic model's."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script, validate_file_sharing_kernels

from trainsim.catalog import gpu
from trainsim.compute import RooflineModel, roofline
from trainsim.workload.ops import Gemm

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def budget():
    return load_script(ROOT / "benchmarks" / "gemm_error_budget.py")


def test_pair_floor_is_the_least_summed_error_of_any_prediction(budget):
    for a, b in ((1.0, 1.0), (1.0, 1.3), (2.5, 1.7)):
        grid = [min(a, b) * 0.5 + i * 1e-4 for i in range(40000)]
        best = min(abs(p / a - 1) + abs(p / b - 1) for p in grid)
        assert budget.pair_floor(a, b) == pytest.approx(best, abs=2e-4)
        assert budget.pair_floor(a, b) == pytest.approx(abs(a - b) / max(a, b))


def _row(budget, i: int, ape: float, source: str):
    return budget.GemmRow(f"r{i}", "h100-sxm-80gb", source, "bf16", 4096, 4096, 4096, ape, -ape,
                          1e-4)


def test_points_add_up_to_the_mape_and_without_leaves_the_group_out(budget):
    rows = [_row(budget, 0, 0.10, "a"), _row(budget, 1, 0.30, "a"), _row(budget, 2, 0.05, "b")]
    out = budget.budget(rows, lambda r: r.source)
    assert sum(pts for *_, pts, _ in out) == pytest.approx(0.45 / 3)
    by = {name: (n, mape, without) for name, n, mape, _, _, without in out}
    assert by["a"] == (2, pytest.approx(0.20), pytest.approx(0.05))
    assert by["b"] == (1, pytest.approx(0.05), pytest.approx(0.20))


def test_tile_choice_is_the_models_own(budget):
    """H100 bf16 4096^3: 128x256 tiles, 512 of them on 132 SMs (3.88 waves, >= 2: whole
    waves, no split); 256 x 4096 x 8192: under one wave of 128x256 tiles, split along k."""
    tile, waves, parts, fixed = budget.tile_choice("h100-sxm-80gb", Gemm("g", 4096, 4096, 4096,
                                                                         "bf16"))
    assert (tile, parts) in (("128x256", 1), ("256x128", 1))
    assert waves == pytest.approx(512 / 132)
    k0 = roofline.GEMM_TILE_OVERHEAD_K
    assert fixed == pytest.approx(k0 / (4096 + k0))
    _, waves, parts, _ = budget.tile_choice("h100-sxm-80gb", Gemm("g", 256, 4096, 8192, "bf16"))
    assert waves < 1 and parts > 1
    # the chosen tile's efficiency is the one the roofline prices with
    spec = gpu("h100-sxm-80gb")
    assert RooflineModel(spec).gemm_efficiency(Gemm("g", 4096, 4096, 4096, "bf16")) == \
        pytest.approx(512 / 132 / 4 * 4096 / (4096 + k0))


def test_rows_carry_the_validators_errors(budget, monkeypatch):
    """Every dense GEMM row of the published file, with the error `trainsim validate` gives
    it (rate rows by rate, time rows by time). Both read the session's one run of the file
    (``helpers.validate_file_sharing_kernels``): a script that asked the validator anything
    else (another database, another file) gets the real function's answer."""
    validate_file = validate_file_sharing_kernels()
    monkeypatch.setattr(budget, "validate_file", validate_file)
    rows = {r.id: r for r in budget.gemm_rows(budget.PUBLISHED)}
    _, results = validate_file(budget.PUBLISHED)
    gemms = [res for res in results if res.extra.get("kind") == "gemm" and not res.error]
    assert len(rows) == len(gemms) > 300
    for res in gemms:
        assert rows[res.id].ape == pytest.approx(res.ape)


def test_shape_class_takes_the_first_class_that_applies(budget):
    """Small m before odd n before large k; the dtype splits 8-bit from 16-bit."""
    def row(m, n, k, dtype="bf16"):
        return budget.GemmRow("r", "h100-sxm-80gb", "s", dtype, m, n, k, 0.1, 0.1, 1e-4)

    assert budget.shape_class(row(512, 2112, 16384)) == "m<=512, 16-bit"
    assert budget.shape_class(row(4096, 2112, 16384, "fp8")) == "odd n, 8-bit"
    assert budget.shape_class(row(4096, 4096, 8192)) == "k>=8192, 16-bit"
    assert budget.shape_class(row(4096, 4096, 4096, "fp16")) == "regular, 16-bit"


def test_last_wave_is_the_share_of_the_sms_the_last_wave_fills(budget):
    assert budget.last_wave(3.0) == "full"
    assert budget.last_wave(0.3) == "<=0.5"
    assert budget.last_wave(4.2) == "<=0.25"
    assert budget.last_wave(1.97) == ">0.75"


def test_harness_oracle_finds_a_sources_own_factor_and_per_call_time(budget):
    """Time rows predicted at 1/1.1 of their time: a factor of 1.1 prices them exactly; rate
    rows predicted 2 us short: a per-call time of +2 us (factor 1) does."""
    def row(i, t, pred, rate):
        return budget.GemmRow(f"r{i}", "h100-sxm-80gb", "s", "bf16", 4096, 4096, 4096, 0.0,
                              pred / t - 1.0, t, rate)

    slow = [row(i, t, t / 1.1, False) for i, t in enumerate((1e-5, 5e-5, 3e-4))]
    f1, m1, *_ = budget.own_harness(slow)
    assert f1 == pytest.approx(1.1, abs=0.003) and m1 < 0.003
    short = [row(i, t, t - 2e-6, True) for i, t in enumerate((1e-5, 4e-5, 2e-4))]
    assert budget.harness_ape(short, 1.0, 0.0) == pytest.approx(
        sum(t / (t - 2e-6) - 1 for t in (1e-5, 4e-5, 2e-4)) / 3)
    *_, f2, b2, m2 = budget.own_harness(short)
    assert (f2, b2) == (pytest.approx(1.0), pytest.approx(2e-6)) and m2 < 1e-9


def test_truth_prices_paired_rows_at_the_measured_time_and_maps_it(budget):
    """A published row whose shape (or its transpose) the project timed is scored at that time;
    a shape timed twice at the geometric mean; published times 1.1 x measured + 2 us are found
    by the affine map exactly; unpaired rows keep the model's error."""
    def row(i, m, n, k, t, signed, gpu="h100-sxm-80gb"):
        return budget.GemmRow(f"r{i}", gpu, "s", "fp16", m, n, k, abs(signed), signed, t)

    own = [row(0, 1024, 4096, 512, 10e-6, 0.0), row(1, 4096, 1024, 512, 40e-6, 0.0),
           row(2, 2048, 2048, 2048, 50e-6, 0.0), row(3, 4096, 4096, 4096, 200e-6, 0.0)]
    meas = {(1024, 4096, 512): 20e-6, (2048, 2048, 2048): 50e-6, (4096, 4096, 4096): 200e-6}
    pub = [row(10 + i, m, n, k, 1.1 * t + 2e-6, -0.1) for i, ((m, n, k), t) in
           enumerate(meas.items())] + [row(20, 8192, 8192, 8192, 1e-3, 0.3)]
    t = budget.truth(pub, own)
    assert (t["n"], t["cell_n"]) == (3, 4)
    assert t["model"] == pytest.approx(0.1) and t["cell"] == pytest.approx(0.6 / 4)
    at = [abs(meas[s] / (1.1 * meas[s] + 2e-6) - 1) for s in meas]
    assert t["truth"] == pytest.approx(sum(at) / 3)
    assert t["cell_at_truth"] == pytest.approx((sum(at) + 0.3) / 4)
    a, b, mape = t["affine"]
    assert (a, b) == (pytest.approx(1.1), pytest.approx(2e-6)) and mape < 1e-9
    assert budget.pearson([1, 2, 3], [2, 4, 6.5]) > 0.99
