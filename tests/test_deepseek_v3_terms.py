"""benchmarks/deepseek_v3_terms.py: the terms priced beside DeepSeek-V3's steady iteration
(batch ramp, goodput, the reported figure's precision), against hand calculations from the
report's figures (arXiv:2412.19437 §1, §4.2) and Megatron's ramp rule."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
try:
    import deepseek_v3_terms as terms
finally:
    sys.path.remove(str(BENCH))


def test_megatron_ramp_is_a_staircase_of_equal_samples():
    """RampupBatchsizeNumMicroBatches: (15360 - 3072) / 128 = 96 steps, each 1/96 of the ramp's
    469e9 / 4096 samples, batches 3072, 3200, ..., 15232."""
    steps = terms.ramp_steps(3072, 15360, 128, 469e9 / 4096)
    assert len(steps) == 96
    assert steps[0][0] == 3072 and steps[-1][0] == 15232
    assert all(n == pytest.approx(469e9 / 4096 / 96) for _, n in steps)
    with pytest.raises(ValueError):
        terms.ramp_steps(3072, 15360, 100, 1.0)  # 12288 / 100 is not whole


def test_ramp_costs_only_the_fixed_part_of_an_iteration():
    """t(b) = c b costs nothing extra at any batch; t(b) = a + c b costs a per iteration, the
    staircase's sum close to the continuous ramp's a S (ln(B/b0)/(B - b0) - 1/B): with a = 2 s,
    S = 469e9/4096, that is 2 x 114.5e6 x (ln 5 / 12288 - 1/15360) = 15.09e3 s."""
    steps = terms.ramp_steps(3072, 15360, 128, 469e9 / 4096)
    assert terms.ramp_extra_s(lambda b: 1e-3 * b, steps, 15360) == pytest.approx(0, abs=1e-6)
    closed = terms.harmonic_ramp_samples_s(2.0, 3072, 15360, 469e9 / 4096)
    assert closed == pytest.approx(2 * 469e9 / 4096 * (math.log(5) / 12288 - 1 / 15360))
    assert closed == pytest.approx(15.09e3, rel=2e-3)
    stair = terms.ramp_extra_s(lambda b: 2.0 + 1e-3 * b, steps, 15360)
    assert stair > closed  # a left sum of the decreasing 1/b
    assert stair == pytest.approx(closed, rel=0.03)  # half a step of 128 on 3072: ~2 %


def test_affine_fit_recovers_a_line():
    a, c, resid = terms.affine_fit([4096, 9216, 15360], [2 + 1e-3 * b for b in (4096, 9216, 15360)])
    assert (a, c) == (pytest.approx(2.0), pytest.approx(1e-3))
    assert resid < 1e-9


def test_the_reported_figure_is_a_two_figure_rate():
    """180K GPU-hours per trillion tokens x 14.8T = 2.664M; 175K-185K gives 2.590M-2.738M; on
    2,048 GPUs with 15,360 x 4,096 tokens per iteration that is 19.91 s an iteration."""
    p = terms.reported_precision(14.8e12)
    assert (p["gpu_hours_low"], p["gpu_hours_high"]) == (pytest.approx(2.590e6),
                                                         pytest.approx(2.738e6))
    assert terms.REPORTED_RATE_PER_T * 14.8 == pytest.approx(2.664e6)
    it = terms.implied_iteration_s(2.664e6, 2048, 14.8e12, 15360 * 4096)
    assert it == pytest.approx(2.664e6 * 3600 / 2048 / (14.8e12 / (15360 * 4096)))
    assert it == pytest.approx(19.91, abs=0.01)


def test_goodput_term_is_the_monte_carlo_stretch_of_the_run():
    """The goodput term is gpu_hours x (expected / failure-free days - 1), positive and below
    the run's lost time bound (ETTR over 0.9, Llama 3's reported floor, at 1/8 of its GPUs)."""
    import trainsim

    cfg = trainsim.load_run_config(Path(BENCH.parent, "examples", "deepseek-v3-h800.yaml"), [])
    g = terms.goodput_terms(cfg, 17.8, 2.4e6, profiles=("llama3-405b-16k-h100",), trials=50)
    row = g["llama3-405b-16k-h100"]
    assert 0.9 < row["effective_training_time_ratio"] < 1
    assert row["gpu_hours"] == pytest.approx(
        2.4e6 * (1 / row["effective_training_time_ratio"] - 1), rel=2e-3)  # mean of ratios


@pytest.mark.slow
def test_deepseek_v3_accounting_runs():
    """The whole accounting block of benchmarks/deepseek_v3.py (about 6 s): the ramp's fit is
    affine to 0.1 % and the total is the steady estimate plus its two labelled terms."""
    sys.path.insert(0, str(BENCH))
    try:
        import deepseek_v3 as d
    finally:
        sys.path.remove(str(BENCH))
    import trainsim

    sets = d.SETTINGS["dualpipe"]
    cfg = trainsim.load_run_config(d.CONFIG, sets)
    r = trainsim.simulate(cfg)
    acc = d.accounting(cfg, r, sets)
    assert acc["batch_ramp"]["fit_max_residual"] < 1e-3
    good = acc["goodput"]["by_profile"][acc["goodput"]["profile_used"]]["gpu_hours"]
    assert acc["total_gpu_hours"] == pytest.approx(
        acc["steady_gpu_hours"] + acc["batch_ramp"]["gpu_hours"] + good)
