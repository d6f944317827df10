"""The affine orbit (``steady_affine``): DualPipe at pp 2 with overlapped sends, whose deviation
shrinks by one factor a period, proven on three truncated runs; the ladder ended where such a
deviation shrinks too slowly for its runs (``steady_decay``); zb_2p's settling point read
before any graph. Against the full simulation, 1e-9 on the iteration and every breakdown
entry."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from helpers import assert_same_simulation, pp2_dualpipe_configs

import trainsim.steady_affine as affine
import trainsim.steady_state as steady
from trainsim import simulate
from trainsim.engine import Task, Timeline, run
from trainsim.pricing import Pricer
from trainsim.simulator import build_graph
from trainsim.steady_decay import one_mode, too_slow

N_CONFIGS = 200
SLOW_SENDS = (1, 2, 6, 23, 27)
"""Of :func:`_pp2_configs` (40, seed 51, ss51's sample): the five whose overlapped sends keep the
ranks' relative phase settling by ``1 - s`` a period (benchmarks/ss51_dualpipe_pp2.py)."""


def _factor(reason: str) -> float:
    """The factor a period a shortcut's reason states."""
    return float(re.search(r"by a factor of ([0-9.e-]+)", reason).group(1))


def _with_microbatches(cfg, m: int):
    """``cfg`` with ``m`` micro-batches a replica."""
    per = cfg.training.global_batch_size // cfg.num_microbatches
    return dataclasses.replace(cfg, training=dataclasses.replace(cfg.training,
                                                                 global_batch_size=m * per))


def test_the_slowly_settling_sends_are_proven_as_an_affine_orbit(monkeypatch):
    """At 400 micro-batches the five pp-2 DualPipe configs whose two ranks' phase settles by
    ``1 - s`` a period (~260 periods to the proofs' tolerance) are proven on three truncated
    runs, their deviation shrinking by ``(1 - s)^2`` every two periods, and agree with the full
    simulation (ss51: the full simulation, after a ladder of runs up to 2,054 micro-batches
    at 8,192)."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    cfgs = pp2_dualpipe_configs(40)
    for i in SLOW_SENDS:
        cfg = _with_microbatches(cfgs[i], 400)
        assert cfg.parallel.overlap_p2p_comm
        fast = simulate(cfg)
        assert fast.simulation["reason"].startswith("an affine orbit"), fast.simulation
        share = Pricer(cfg).sm_share["pp"]
        assert _factor(fast.simulation["reason"]) == pytest.approx((1 - share) ** 2, rel=1e-5)
        assert_same_simulation(fast, simulate(cfg, keep_timeline=True))


def test_at_their_own_lengths_they_are_proven_or_the_ladder_ends_early(monkeypatch):
    """At their own 50-74 micro-batches the same five are proven as affine orbits on runs of
    up to 22 micro-batches, or (config 27, 50 micro-batches: none affordable that proves) fall
    back to the full simulation after two attempts, whose runs of 6, 8 and 10 micro-batches
    show one mode scaled by ``-(1 - s)`` a period, not after the whole ladder up to 22; both
    agree with the full simulation."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    cfgs = pp2_dualpipe_configs(40)
    ways = []
    for i in SLOW_SENDS:
        fast = simulate(cfgs[i])
        reason = fast.simulation["reason"]
        if fast.simulation["method"] == "full":
            assert reason.startswith("period not proven on truncated runs of up to 10 "), reason
            share = Pricer(cfgs[i]).sm_share["pp"]
            assert _factor(reason) == pytest.approx(1 - share, rel=1e-4)
        else:
            assert reason.startswith("an affine orbit"), reason
        ways.append(fast.simulation["method"])
        assert_same_simulation(fast, simulate(cfgs[i], keep_timeline=True))
    assert ways == ["steady-state"] * 4 + ["full"], ways


def _affine_runs(cfg):
    found = steady.affine_plan(cfg, 6)
    assert found is not None
    m_a, big = found[:2]
    graphs = [build_graph(cfg, Pricer(cfg), None, m_a + i * big) for i in range(3)]
    return graphs, [run(g.tasks) for g in graphs], found


def test_the_affine_proof_refuses_what_it_cannot_prove(monkeypatch):
    """On the three runs of config 23 at 400 micro-batches: proven as they are; refused where
    one time of C is off by 1e-12 of the makespan (not one mode), where the factor is over
    ``MAX_RATIO``, and where the window holds one period before the tail (no period left that
    the state maps to)."""
    cfg = _with_microbatches(pp2_dualpipe_configs(40)[23], 400)
    graphs, timelines, (m_a, big, cut, lo, shift) = _affine_runs(cfg)
    k = (cfg.num_microbatches - m_a) // big
    proven = affine.affine_summary(cfg, graphs, timelines, cut, lo, shift, k)
    assert proven is not None and 0.9 < proven[1] < 1
    tc = timelines[2]
    moved = Timeline(tc.tasks, list(tc.start_s), list(tc.end_s), tc.queues)
    last = tc.queues[(0, "compute")][-3]
    moved.end_s[last] += 1e-12 * tc.makespan_s
    assert affine.affine_summary(cfg, graphs, [*timelines[:2], moved], cut, lo, shift,
                                 k) is None
    monkeypatch.setattr(affine, "MAX_RATIO", proven[1] - 1e-3)
    assert affine.affine_summary(cfg, graphs, timelines, cut, lo, shift, k) is None
    monkeypatch.undo()
    assert affine.affine_summary(cfg, graphs, timelines, cut, cut - shift, shift,
                                 k) is None


def test_the_order_check_sees_an_input_that_stops_binding():
    """``_same_order``: a task whose latest input changes between A's times and the limit's
    (another input ending after it started) is refused; the same with the order kept passes;
    two streams that never meet may change order."""
    tasks = [Task((0, "compute"), 1.0), Task((1, "compute"), 1.0),
             Task((0, "compute"), 1.0, deps=[1]), Task((2, "compute"), 1.0)]
    tl = Timeline(tasks, [0.0, 0.0, 1.0, 0.5], [1.0, 1.0, 2.0, 1.5],
                  {(0, "compute"): [0, 2], (1, "compute"): [1], (2, "compute"): [3]})
    a_w = np.arange(4)
    window = np.ones(4, dtype=bool)
    t0 = np.asarray(tl.start_s + tl.end_s)
    assert affine._same_order(tl, a_w, window, t0, t0 + 0.0, 1e-12)
    late = t0.copy()
    late[4 + 1] = 1.5  # task 1 now ends after task 2 starts
    assert not affine._same_order(tl, a_w, window, t0, late, 1e-12)
    apart = t0.copy()
    apart[3], apart[4 + 3] = 3.0, 4.0  # task 3 moves past everything: compared with nothing
    assert affine._same_order(tl, a_w, window, t0, apart, 1e-12)


def _triple(d1: list[float], d2: list[float]):
    """Runs A, B, C of a task a stream, all from the cut on, B's times ``d1`` after A's, C's
    ``d2`` after B's, each task matched with the same index."""
    n = len(d1)
    tasks = [Task((s, "compute"), 1.0) for s in range(n)]
    queues = {(s, "compute"): [s] for s in range(n)}
    tls = []
    for shift in ([0.0] * n, d1, [x + y for x, y in zip(d1, d2)]):
        start = [1.0 + s for s in shift]
        tls.append(Timeline(tasks, start, [s + 1.0 for s in start], queues))
    pair = (list(range(n)), [True] * n)
    return tuple(tls), (pair, pair)


def test_one_mode_is_a_deviation_scaled_by_one_factor_below_1():
    """``one_mode``: changes of B to C that are 0.98 times A to B's (up to a common period) are
    one mode; the same change (a lag kept, factor 1) or changes not in proportion are not."""
    found = one_mode(*_triple([0.5, 0.5 + 1e-3, 0.5 + 2e-3], [0.5, 0.5 + 0.98e-3, 0.5 + 1.96e-3]))
    assert found is not None and found[0] == pytest.approx(0.98)
    assert one_mode(*_triple([0.5, 0.5 + 1e-3, 0.5 + 2e-3], [0.5, 0.5 + 1e-3, 0.5 + 2e-3])) is None
    assert one_mode(*_triple([0.5, 0.5 + 1e-3, 0.5 + 2e-3], [0.5, 0.5 + 0.98e-3, 0.5])) is None


def test_too_slow_compares_the_periods_needed_with_those_left():
    """A spread of 1e-3 of a 1 s makespan shrinking by 0.98 a period reaches 2e-11 after ~876
    periods: too slow for 400 periods left (twice over: a margin), not for 500."""
    assert too_slow(0.98, 1e-3, 1.0, 400)
    assert not too_slow(0.98, 1e-3, 1.0, 500)
    assert not too_slow(0.5, 1e-3, 1.0, 20)


def test_zb_2p_settling_point_is_read_without_a_graph(monkeypatch):
    """``_settled_from`` (the priced passes alone) says what the first graph's search says, and
    the example's late-settling iteration builds no graph shorter than where it settles."""
    from trainsim import load_run_config

    cfg = load_run_config("examples/llama3-70b-h100-64.yaml", (
        "parallel.pipeline_schedule=zb_2p", "parallel.vpp=1", "training.global_batch_size=600"))
    pricer = Pricer(cfg)
    settled, rounds = steady._settled_from(cfg, pricer, None)
    graph = build_graph(cfg, pricer, None, 8 * cfg.parallel.pp)
    assert (settled, rounds) == (graph.settled_from, graph.settled_rounds) == (settled, 1)
    built: list[int] = []
    real = steady.build_graph

    def counting(c, p, s, m):
        built.append(m)
        return real(c, p, s, m)

    monkeypatch.setattr(steady, "build_graph", counting)
    assert simulate(cfg).simulation["method"] == "steady-state"
    assert built and min(built) >= settled, built  # 145: past its replayed transient (zbpeak57)


@pytest.mark.slow
def test_pp2_dualpipe_agrees_with_the_full_simulation_on_all_configs(monkeypatch):
    """200 random pp-2 DualPipe configs (seed 52), 32 to 600 micro-batches, all with overlapped
    sends: the shortcut (an affine orbit where one mode of deviation settles slowly) and the
    full simulation agree to 1e-9."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    methods: dict[str, int] = {}
    for cfg in pp2_dualpipe_configs(N_CONFIGS, 52, (32, 600)):
        cfg = dataclasses.replace(cfg, parallel=dataclasses.replace(cfg.parallel,
                                                                    overlap_p2p_comm=True))
        fast = simulate(cfg)
        key = fast.simulation["reason"].split(" (")[0][:16]
        methods[key] = methods.get(key, 0) + 1
        assert_same_simulation(fast, simulate(cfg, keep_timeline=True))
    assert methods.get("an affine orbit", 0) >= 10, methods
