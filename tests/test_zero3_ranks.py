"""benchmarks/zero3_ranks.py (issue 17 item 2 diagnostics): the six Table 2 ZeRO-3 points it
builds carry the paper's own figures, and its split of what changes with the rank count adds up."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "zero3_ranks.py")

# Narayanan et al. 2021, Table 2, last column: days to train on 300 billion tokens, ZeRO-3 rows
DAYS = {("174.6B", 384): 90, ("174.6B", 768): 74, ("174.6B", 1536): 74,
        ("529.6B", 640): 169, ("529.6B", 1120): 137, ("529.6B", 2240): 140}


def test_each_points_step_gives_the_papers_days_to_train():
    rows = SCRIPT.table2_rows()
    assert len(rows) == 6
    for row in rows:
        tokens = int(row["global_batch_size"]) * int(row["seq_length"])
        days = 300e9 / tokens * float(row["measured_iteration_s"]) / 86400
        # the table prints whole days from rates given to two or three figures
        assert days == pytest.approx(DAYS[(SCRIPT.model_of(row), int(row["num_gpus"]))],
                                     abs=1.0)


def test_each_file_rows_rate_is_the_one_its_note_gives():
    path = SCRIPT.BUNDLED_DIR / "training_public.csv"
    rows = [r for r in csv.DictReader(path.open()) if r["id"].startswith(SCRIPT.PREFIX)]
    assert len(rows) == 4
    for row in rows:
        tflops = SCRIPT.TFLOPS[(SCRIPT.model_of(row), int(row["num_gpus"]))]
        assert row["note"].startswith(f"published {tflops:.0f} TFLOP/s/GPU")


def _fake(model: str, ranks: int, measured: float, predicted: float, pure: float):
    return SCRIPT.Point(model, ranks, 1, measured, 0.1, predicted, pure, 0.0, 0.0, 1e12, 0.0)


def test_pairs_stay_within_a_model_and_the_gap_line_fits_three_points():
    pts = [_fake("a", 100, 10.0, 9.0, 5.0), _fake("a", 200, 9.0, 7.0, 3.0),
           _fake("a", 400, 9.5, 6.5, 1.5), _fake("b", 300, 50.0, 40.0, 30.0)]
    got = SCRIPT.pairs(pts)
    assert [(a.ranks, b.ranks) for a, b in got] == [(100, 200), (200, 400)]
    # growth of the time beyond compute over the pairs sums to last less first
    grown = sum(b.beyond_measured - a.beyond_measured for a, b in got)
    assert grown == pytest.approx(pts[2].beyond_measured - pts[0].beyond_measured)
    a, b = SCRIPT.gap_line(pts[:3])["a"]
    # gaps 1, 2, 3 at 0.1, 0.2, 0.4 thousand ranks: a + b x N by least squares
    # (hand solution of the normal equations: a = 0.5, b = 45 / 7)
    assert a == pytest.approx(0.5)
    assert b == pytest.approx(45 / 7)


@pytest.mark.slow
def test_the_split_of_a_row_adds_up_to_its_prediction():
    row = next(r for r in SCRIPT.table2_rows() if r["id"].endswith("529.6B-640"))
    p = SCRIPT.point(row)
    assert p.measured == pytest.approx(255.532)
    assert 0 < p.pure < p.predicted
    assert 0 < p.host < p.predicted - p.pure
    assert 0 < p.wire < p.predicted - p.pure
    # a layer: QKV 2.52, dense 0.84, fc1 and fc2 3.36 GB, gathered twice, three of them again
    # after the recompute (all but fc2), all four all-reduced (twice their bytes on a ring)
    layer = [2.516e9, 0.839e9, 3.355e9, 3.355e9]
    again = layer[:3]
    assert p.moved == pytest.approx(105 * (4 * sum(layer) + sum(again)), rel=0.01)
    assert p.moved_big == pytest.approx(105 * (4 * (sum(layer) - layer[1])
                                               + again[0] + again[2]), rel=0.01)
