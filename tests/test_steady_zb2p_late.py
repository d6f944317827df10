"""zb_2p's late settlers (a slower stage's back pressure reaching the others after the order
search settles, RESULTS.md settle56) at their own lengths: the first truncated run past the
replayed transient, up to the longest run the iteration affords
(``steady_zb2p.longest_run``), not only up to the ladder's last rung; proven by the engine's
runs, within 1e-9 of the full simulation."""

from __future__ import annotations

import pytest
from helpers import assert_same_simulation, pipelined_configs

import trainsim.steady_state as steady
from trainsim import simulate, steady_zb2p
from trainsim.pricing import Pricer
from trainsim.steady_zb2p import longest_run, past_transient


def _beyond_the_ladder(n: int, max_pp: int) -> list:
    """The first ``n`` random ZB-2p configs of test_steady_zb2p.py (pp <= ``max_pp``, a period
    of one round) whose replayed transient ends past the ladder's last rung, where a run of
    the iteration still affords it."""
    out = []
    for cfg in pipelined_configs(n, "zb_2p", lambda pp: (40 * pp + 8, 80 * pp)):
        pricer = Pricer(cfg)
        settles, rounds = steady._settled_from(cfg, pricer, None)
        if cfg.parallel.pp > max_pp or rounds > 1:
            continue
        tries = steady._zb2p_tries(cfg, steady.attempts(cfg), settles, rounds)[1]
        if not tries:
            continue
        first, m = tries[0], cfg.num_microbatches
        m_a = past_transient(cfg, pricer, None, first.m_a, longest_run(m, first.m_a, 1), 1)
        if m_a is not None and m_a > tries[-1].m_a:
            out.append(cfg)
    return out


def test_longest_run_is_the_longest_the_iteration_affords():
    """B (``q`` more) at most half the iteration, in whole steps of ``q`` from the first run."""
    assert longest_run(268, 32, 1) == 133
    assert longest_run(269, 32, 1) == 133
    assert longest_run(270, 33, 2) == 133
    assert longest_run(60, 32, 1) == 32  # none longer: the first run itself


@pytest.mark.parametrize("n, max_pp", [(24, 4), pytest.param(200, 8, marks=pytest.mark.slow)])
def test_late_settlers_are_proven_at_their_own_lengths(monkeypatch, n, max_pp):
    """Those configs (six of the first 24 at pp <= 4; slow: 46 of all 200) are proven past
    their replayed transient (slow: all 46), every one within 1e-9 of the full simulation;
    with runs only up to the ladder's last rung (settle56's way) three of the six fall back to
    the full simulation (slow: 20 of the 46), and the graphs built, truncated and full, hold
    fewer tasks in all (6,962 against 24,230; slow: 124,088 against 338,264). settle59: B
    alone proves most rungs, so the ladder's last rung proves more of them (five of six and
    30 of 57 fell back before; the ladder, counting a reused run once, reaches further, so 11
    of those 57 are no longer past it)."""
    from trainsim import simulator

    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    chosen = _beyond_the_ladder(n, max_pp)
    assert len(chosen) >= (5 if n == 24 else 20)
    built: list[int] = []
    real = simulator.build_graph

    def counting(*a, **k):
        graph = real(*a, **k)
        built.append(len(graph.tasks))
        return graph

    monkeypatch.setattr(steady, "build_graph", counting)
    monkeypatch.setattr(simulator, "build_graph", counting)
    tasks, fallbacks, proven = [0, 0], 0, 0
    for cfg in chosen:
        built.clear()
        fast = simulate(cfg)
        proven += fast.simulation["method"] == "steady-state"
        tasks[0] += sum(built)
        assert_same_simulation(fast, simulate(cfg, keep_timeline=True))
        built.clear()
        with monkeypatch.context() as patch:  # up to the ladder's last rung only
            patch.setattr(steady_zb2p, "longest_run", lambda m, first, q: first)
            fallbacks += simulate(cfg).simulation["method"] == "full"
        tasks[1] += sum(built)
    small = n == 24
    assert proven >= (len(chosen) if small else 0.9 * len(chosen)), (proven, len(chosen))
    assert fallbacks >= 0.4 * len(chosen), (fallbacks, len(chosen))
    assert tasks[0] < (0.5 if small else 0.6) * tasks[1], tasks
