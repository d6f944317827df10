"""benchmarks/ovl44_dispatch_split.py: the tuned Hopper Bridge rows' miss split into the
overlap's price and the dispatcher the recipe did not run (a diagnostic)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import ovl44_dispatch_split as ds

# (what, measured A, measured B, priced A, priced B) as ab_pairs returns them
PAIRS = [
    ("Bridge Qwen3-30B-A3B EP 16, 16 H100: hybridep over alltoall, overlap off",
     40.0, 24.0, 42.0, 21.0),
    ("Bridge Qwen3-30B-A3B EP 16, 16 H100: hybridep over alltoall, overlap on",
     30.0, 20.0, 28.0, 20.0),
    (("Qwen3-235B TP2 PP8 VP4 EP32, 256 H100: zoo DeepEP + overlap (bf16) over Bridge "
     "25.11 alltoall + overlap (fp8)"), 20.0, 17.0, 19.0, 15.0),
    ("the same layout, zoo DeepEP: overlap on over off", 19.0, 17.0, 19.0, 16.0),
]


def test_variants_cover_each_dispatcher_with_and_without_the_overlap():
    row = {"id": "r", "options": "", "moe_dispatcher": ""}
    got = ds.variants(row)
    assert [label for label, _ in got][:2] == ["as written (main)", "ep_overlap tuned"]
    assert got[1][1] is None  # priced under the patched tuner
    stated = {(v["moe_dispatcher"], v["options"]) for _, v in got[2:]}
    assert stated == {(d, "pp_overlap;dp_overlap" + o) for d in ds.DISPATCHERS
                      for o in ("", ";ep_overlap")}
    assert row == {"id": "r", "options": "", "moe_dispatcher": ""}  # the row is not changed


def test_ab_table_gives_each_ratio_and_their_quotient_by_hand():
    lines = ds.ab_table(PAIRS[1:2])
    # measured 20/30 = 0.667, priced 20/28 = 0.714, priced over measured 1.071
    assert lines[2].endswith("| 30.00 -> 20.00 | 0.667 | 28.00 -> 20.00 | 0.714 | 1.071 |")


def test_twin_ratios_are_measured_over_priced_of_the_overlapped_twins():
    r = ds.twin_ratios(PAIRS)
    assert r["hybridep"] == pytest.approx(20.0 / 20.0)
    assert r["deepep"] == pytest.approx(17.0 / 16.0)


def test_split_takes_the_faster_flex_dispatcher_at_its_twin_ratio(monkeypatch):
    monkeypatch.setattr(ds, "row_of", lambda row_id, *a, **k: {"measured_iteration_s": "40"})
    got = {"x": {"ep_overlap tuned": 26.0, "deepep + overlap": 27.0,
                 "hybridep + overlap": 26.0, "recipe cells (errata)": 38.0}}
    line = ds.split_table(got, PAIRS, rows=("x",))[2]
    # hybridep 26.0 s x twin ratio 1.0 = 26.0 s (-35.0 %); the run's 40 s x the measured
    # HybridEP-over-alltoall ratio with the overlap 20/30 = 26.67 s (-33.3 %); recipe -5.0 %
    assert line == ("| x | -35.0 | 26.00 (hybridep) | 1.000 (Bridge HybridEP EP 16 overlap row) | "
                    "26.00 (-35.0) | 26.67 (-33.3) | -5.0 |")
    got["x"]["hybridep + overlap"] = None  # a release without HybridEP: DeepEP and the zoo
    line = ds.split_table(got, PAIRS, rows=("x",))[2]
    assert "27.00 (deepep)" in line and "28.69 (-28.3)" in line and "17.00 (-57.5)" in line


@pytest.mark.slow
def test_the_tuned_qwen3_235b_h100_rows_stay_fast_at_their_twins_price():
    _, got = ds.cells_table(ds.HOPPER_ROWS[:2])
    pairs = ds.ab_pairs()
    for row_id in ds.HOPPER_ROWS[:2]:
        meas = float(ds.row_of(row_id)["measured_iteration_s"])
        g = got[row_id]
        assert abs(ds.err(g["recipe cells (errata)"], meas)) < 10.0
        assert ds.err(g["ep_overlap tuned"], meas) < -25.0
        line = ds.split_table(got, pairs, rows=(row_id,))[2]
        at_twin = float(line.split("|")[5].split("(")[1].rstrip(") "))
        assert at_twin < -15.0  # the configuration, not the overlap's price
