"""benchmarks/deepseek_v3_pp.py: where DualPipe's pipeline sends sit beside its pairs."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
try:
    import deepseek_v3_pp as pp
finally:
    sys.path.pop(0)


@pytest.fixture(scope="module")
def base():
    cfg, r = pp.simulate()
    return cfg, r, pp.summary(cfg, r)


def test_middle_rank_waits_for_the_peers_two_sends(base):
    cfg, _, s = base
    from trainsim.pricing import Pricer
    from trainsim.simulator import _TaskGraph
    send_ms = 1e3 * _TaskGraph(cfg, Pricer(cfg), None).send.duration_s
    mid = s[f"rank{cfg.parallel.pp // 2 - 1}"]
    # both receives of a pair come from one neighbour, whose pp stream sends them one by one
    assert 1.8 * send_ms < mid["wait_ms"] < 2.2 * send_ms
    # counting the wait in the pair moves it from the bubble, not the step
    assert mid["1F1B_with_wait_s"] + mid["bubble_less_wait_s"] == pytest.approx(
        mid["1F1B_s"] + mid["bubble_s"])


def test_own_sends_and_two_channels_never_shorten_the_step(base):
    _, _, s = base
    for patch in ("own_sends", "two_channels"):
        _, r = pp.simulate(patch)
        assert r.iteration_time_s >= s["iteration_s"] - 1e-9
    # the patches are undone: the pipeline prices as before
    _, r = pp.simulate()
    assert r.iteration_time_s == s["iteration_s"]
