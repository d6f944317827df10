"""benchmarks/bloom_gap.py (issue 17 item 2 diagnostics): the least-squares split, the uniform
share the acceptance figure needs, and the hand counts against a count done here from the
BLOOM row's shape (h 14336, 12 layers and the tied 250,680 x h matrix on the last of 6 stages,
TP 8, DP 8, A100 80GB)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import row_config

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "bloom_gap.py")


def test_split_recovers_a_flat_and_a_per_step_part():
    work = [100.0, 400.0, 900.0, 1600.0]
    a, c = SCRIPT.split([2.0 + 3e-3 * w for w in work], work)
    assert a == pytest.approx(2.0) and c == pytest.approx(3e-3)


def test_needed_share_by_hand():
    """Every row 10 % fast: MAPE 10 %; 8 % needs 0.9 (1 + x) >= 0.92, x >= 2.22 %."""
    x = SCRIPT.needed_share([100.0, 200.0], [90.0, 180.0])
    assert x == pytest.approx(0.02 / 0.9, abs=2e-4)
    assert SCRIPT.needed_share([100.0], [95.0]) == 0.0


def test_hand_counts_on_the_pp6_sweep_rows_last_stage():
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == "bloom-sweep-181B-tp8-pp6-dp8-mb1")
    cfg = row_config(row)
    got = SCRIPT.hand_counts(cfg, 5)
    # Megatron-DeepSpeed pads the 250,680-token vocabulary to 128 x TP 8: 250,880 (BLOOM's own
    # config.json vocab_size; workload.vocab)
    h, v = 14336, 250880
    # the last stage's rank: its layers, the final LayerNorm's weight and bias (ln_f, whole
    # on every TP rank: torcheager61) and its slice of the tied matrix
    params = (12 * (12 * h * h + 13 * h) + v * h) / 8 + 2 * h
    part = params / 8  # its ZeRO-1 partition over DP 8
    tensors = 12 * 12 + 2 + 1  # 12 tensors a layer, ln_f's two and the tied matrix
    hbm = 2.039e12 * 0.85
    host = 30e-6 * (tensors / 8 + 1)
    assert got["overflow check"] == pytest.approx(10 * part / hbm + host, rel=1e-6)
    assert got["grad norm .double()"] == pytest.approx(18 * part / hbm + host, rel=1e-6)
    # the last stage sends one partitioned gradient a micro-batch (a middle stage two sends)
    assert got["to_meta syncs"] == pytest.approx(256 * 30e-6)
    # all of it a fraction of a percent of the ~1 s a row needs (RESULTS.md, 28th session)
    assert sum(got.values()) < 0.05
