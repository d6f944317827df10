"""benchmarks/bloom_ab.py (issue 17 item 2 diagnostic): BigScience's CUDA_LAUNCH_BLOCKING A/B
split into a cost per pipeline step and a flat part, and trainsim's launch-blocking price per
step against the DP 1 measurement."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "bloom_ab.py")


def test_split_and_bounds_by_hand():
    # t = 5 + 0.5 n through n = 10 and n = 30
    assert SCRIPT.split(10.0, 10, 20.0, 30) == pytest.approx((5.0, 0.5))
    assert SCRIPT.per_step_bounds(12.0, 10, 2.0) == pytest.approx((1.0, 1.2))
    # TP 8 PP 10: 80 GPUs are one pipeline (512 micro-batches + 9), 160 are two
    assert (SCRIPT.steps(80, 512), SCRIPT.steps(160, 512), SCRIPT.steps(160, 2048)) == (521, 265, 1033)


def test_seconds_from_tflops_match_the_host_overhead_test():
    # tests/test_host_overhead.py converts the same 80-GPU pair with the same formula
    b, s, n, h, v = 512, 2048, 80, 14400, 250680
    flops = 96 * b * s * n * h * h * (1 + s / (6 * h) + v / (16 * n * h))
    assert SCRIPT.measured_s(80, 512, False) == pytest.approx(flops / 80 / 97.20e12)
    assert SCRIPT.measured_s(80, 512, True) == pytest.approx(flops / 80 / 91.04e12)


def test_launch_blocking_price_per_step_at_dp1_is_within_a_tenth_of_bigscience():
    """The errata's mechanism in the unit the BLOOM residual is read in (seconds per pipeline
    step): measured 28.8 ms at DP 1 with one flat part for both modes; the model's within 10 %."""
    n = SCRIPT.steps(80, 512)
    measured = (SCRIPT.measured_s(80, 512, True) - SCRIPT.measured_s(80, 512, False)) / n
    model = (SCRIPT.predicted_s(80, 512, True) - SCRIPT.predicted_s(80, 512, False)) / n
    assert model == pytest.approx(measured, rel=0.10)
