"""zb2p62 (issue 21 item 2): zb_2p's searches that settle past the last of ``zb_search.choose``'s
doubling probes are watched on the iteration's own search (``zb_settle.settle_at``), and a
search settling past what A and B afford is proven on B alone from there
(``steady_zb2p.settled_alone``): 8 of tests/test_steady_zb2p.py's 200 random configs that
were simulated in full (zbproof61's 11) take the shortcut, within 1e-9 of the full
simulation."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from helpers import assert_same_simulation
from test_steady_zb2p import _configs, _shapes

import trainsim.steady_state as steady
from trainsim import simulate
from trainsim.pricing import Pricer
from trainsim.steady_orders import insertion_cut
from trainsim.steady_zb2p import settled_alone
from trainsim.workload import zb_search, zb_settle

# the search inputs (pp, F / I / W and send in whole microseconds, W share) of #28 and #27
# (``benchmarks/zbproof61_zb_drift.search_inputs``): their kept variant's state first repeats
# after rounds 279 and 324, past the last doubling probe (144 and 288 at pp 8)
LATE = {28: (8, 369, (735, 735, 197), 33, Fraction(16, 97)),
        27: (8, 574, (931, 1041, 317), 66, Fraction(16, 97))}


@pytest.mark.parametrize("i", sorted(LATE))
def test_a_search_settling_past_the_last_probe_is_known_to_settle(i):
    """``choose`` watches the search of ``m`` itself where no shorter probe settled: #28's and
    #27's kept variants settle from 290 and 335 micro-batches (main: None, their last probes
    stopping below ``m``). What that claims holds: the span for ``m`` is the one for ``from_m``
    plus whole periods, the searches for ``from_m`` and for a length between it and ``m`` and one
    micro-batch more are one another with a round inserted (where each rank inserts it from the
    first: ``steady_zb2p.MAX_CUT_STEPS``); the variant is the one whose full search is shortest."""
    pp, m, cost, comm, wf = LATE[i]
    variant, from_m, rounds = zb_search.choose(pp, m, cost, comm, 2.0 * pp, wf)
    assert (from_m, rounds) == {28: (290, 1), 27: (335, 1)}[i]
    spans = [zb_search.build_order(pp, m, cost, comm, 2.0 * pp, wf, v)[1]
             for v in zb_search.VARIANTS]
    assert variant == zb_search.VARIANTS[spans.index(min(spans))]
    span_a = zb_search.build_order(pp, from_m, cost, comm, 2.0 * pp, wf, variant)[1]
    span_b = zb_search.build_order(pp, from_m + 1, cost, comm, 2.0 * pp, wf, variant)[1]
    assert min(spans) == span_a + (m - from_m) * (span_b - span_a)
    mid = (from_m + m) // 2
    a, span_mid = zb_search.build_order(pp, mid, cost, comm, 2.0 * pp, wf, variant)
    b, _ = zb_search.build_order(pp, mid + 1, cost, comm, 2.0 * pp, wf, variant)
    assert span_mid == span_a + (mid - from_m) * (span_b - span_a)
    assert insertion_cut(a, b, 1, [set()] * pp) is not None


def test_settle_at_is_settle_on_the_whole_search():
    """``settle_at`` finds what ``settle`` finds on a probe of the same count, and its span is
    the search's own."""
    rng, found = random.Random(62), 0
    for pp, cost, comm, wf in _shapes(4, 62):
        m = rng.randint(10 * pp, 30 * pp)
        for variant in zb_search.VARIANTS[::3]:
            from_m, rounds, span = zb_settle.settle_at(pp, cost, comm, 2.0 * pp, wf, variant, m)
            assert span == zb_search.build_order(pp, m, cost, comm, 2.0 * pp, wf, variant)[1]
            s = zb_settle.settle(pp, cost, comm, 2.0 * pp, wf, variant, m)
            assert (from_m, rounds) == ((s.from_m, s.rounds) if s else (None, 1))
            found += s is not None
    assert found >= 4


def test_a_search_settling_past_half_the_iteration_is_proven_on_b_alone(monkeypatch):
    """#75 (pp 4, 210 micro-batches): its search settles from 108, so A and B from there (218)
    are past the budget (main: simulated in full); B alone from the first length past the
    replayed transient (111 micro-batches) proves it, within 1e-9 of the full simulation."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    cfg = _configs(76)[75]
    fast = simulate(cfg)
    assert fast.simulation["reason"].startswith(
        "period proven on the loop's state repeating in a truncated run of 111 micro-batches")
    assert_same_simulation(fast, simulate(cfg, keep_timeline=True))


def test_b_alone_is_a_period_short_of_the_iteration_at_least():
    """No B alone where it would not be at least a period shorter than the iteration."""
    cfg = _configs(76)[75]
    m = cfg.num_microbatches
    assert settled_alone(cfg, Pricer(cfg), None, m - 1, 1) is None
    assert settled_alone(cfg, Pricer(cfg), None, 0, 1) is None
    plan = settled_alone(cfg, Pricer(cfg), None, 108, 1)
    assert plan is not None and plan.alone and 108 <= plan.m_a and plan.m_a + 2 <= m


@pytest.mark.slow
def test_zbproof61s_eleven_but_three_are_proven(monkeypatch):
    """Of zbproof61's 11 configs simulated in full, all but #9, #55 and #149 (searches whose W
    backlogs drift until past the iteration) take the shortcut, within 1e-9 (main: none)."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    configs = _configs(200)
    for i in (3, 9, 22, 27, 28, 41, 55, 75, 122, 149, 194):
        fast = simulate(configs[i])
        assert (fast.simulation["method"] == "steady-state") == (i not in (9, 55, 149)), i
        assert_same_simulation(fast, simulate(configs[i], keep_timeline=True))
