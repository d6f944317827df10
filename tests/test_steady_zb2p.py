"""ZB-2p's periodic steady state: its order search settled into a period
(``zb_settle.settle``) and the shortcut on the searched orders, against the full search and
the full simulation."""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction

import pytest
from helpers import assert_same_simulation, pipelined_configs, shortcut_methods

import trainsim.steady_state as steady
from trainsim import simulate
from trainsim.workload import zb_search, zb_settle

N_CONFIGS = 200
DEFAULT_CONFIGS = 1  # the default suite's share of them (the slow test runs all)


def _shapes(n: int, seed: int):
    """Random searches: 2-8 stages, pass times of 0.5-3 ms and a send of up to 0.3 ms in whole
    microseconds, a W share of memory drawn as a fraction."""
    rng = random.Random(seed)
    for _ in range(n):
        pp = rng.choice([2, 3, 4, 6, 8])
        cost = tuple(rng.randint(500, 3000) for _ in range(3))
        yield pp, cost, rng.randint(1, 300), Fraction(rng.randint(20, 40), rng.randint(41, 60))


def test_a_settled_search_is_the_shorter_one_with_rounds_inserted():
    """Where a variant's search settles (state after a round repeats after the next, in
    integers), its span at any longer count is the extrapolated one, and its orders for m + 1
    micro-batches are those for m with one round inserted at one position of every stage,
    every later micro-batch one on (what the shortcut's cut assumes)."""
    settled = 0
    for pp, cost, comm, wf in _shapes(3, 1):
        for variant in zb_search.VARIANTS[::3]:
            s = zb_settle.settle(pp, cost, comm, 2.0 * pp, wf, variant, 16 * pp + 16)
            if s is None:
                continue
            settled += 1
            for m in (s.from_m, s.from_m + 5):
                a, span = zb_search.build_order(pp, m, cost, comm, 2.0 * pp, wf, variant)
                assert span == s.span_from + (m - s.from_m) * s.period
                b, _ = zb_search.build_order(pp, m + 1, cost, comm, 2.0 * pp, wf, variant)
                assert steady.insertion_cut(a, b, 1, [set()] * pp) is not None
    assert settled >= 6


def test_the_chosen_variant_is_the_full_searchs():
    """``choose`` (spans extrapolated where settled) keeps the variant the full search keeps."""
    rng = random.Random(3)
    for pp, cost, comm, wf in _shapes(3, 2):
        m = rng.randint(10 * pp, 20 * pp)
        built = [zb_search.build_order(pp, m, cost, comm, 2.0 * pp, wf, v)[1]
                 for v in zb_search.VARIANTS]
        variant, *_ = zb_search.choose(pp, m, cost, comm, 2.0 * pp, wf)
        assert variant == zb_search.VARIANTS[built.index(min(built))]


def _configs(n: int):
    """Random ZB-2p configs (``helpers.pipelined_configs``), 40 pp + 8 to 80 pp micro-batches (its
    search settles after ~8-20 pp: shorter iterations are simulated in full)."""
    return pipelined_configs(n, "zb_2p", lambda pp: (40 * pp + 8, 80 * pp))


def _agree(monkeypatch, n_configs: int) -> Counter:
    monkeypatch.setattr(steady, "MIN_TASKS", 0)  # take the shortcut on small runs too
    return shortcut_methods(_configs(n_configs))


def test_zb2p_steady_state_agrees_with_the_full_simulation(monkeypatch):
    """On the first random ZB-2p config the extrapolated steady state and the full
    simulation agree to 1e-9 on the iteration time and every breakdown entry."""
    methods = _agree(monkeypatch, DEFAULT_CONFIGS)
    assert methods["steady-state"] == 1, methods


@pytest.mark.slow
def test_zb2p_steady_state_agrees_with_the_full_simulation_on_all_configs(monkeypatch):
    """The same over all 200 random configs, the shortcut taken on most (189 since settle59,
    which proves zb_2p's period on run B alone, 178 of them; 185 since settle58,
    which starts the replay where the orders have a cut on every rank and goes on past it; 178
    since zbpeak57,
    which tries a late settler past its replayed transient up to the longest run the iteration
    affords: 156 since settle56, which proves searches whose state repeats after several
    rounds: 144 since ss51, which tries the least length a late-settling search allows, 120
    before)."""
    methods = _agree(monkeypatch, N_CONFIGS)
    assert methods["steady-state"] >= 0.94 * N_CONFIGS, methods


def test_a_late_settling_search_is_tried_from_where_it_settles():
    """The llama3-70b example's zb_2p search settles late (from 143 micro-batches at pp 4):
    the shortcut's truncated runs start there or past the timeline's transient replayed from
    there (145: ``steady_zb2p.past_transient``), not at the next rung of the ladder of lengths
    (159, which 300 micro-batches cannot afford), and agree with the full simulation."""
    from trainsim import load_run_config
    from trainsim.pricing import Pricer
    from trainsim.simulator import build_graph
    from trainsim.steady_zb2p import past_transient

    cfg = load_run_config("examples/llama3-70b-h100-64.yaml", (
        "parallel.pipeline_schedule=zb_2p", "parallel.vpp=1", "training.global_batch_size=600"))
    settled = build_graph(cfg, Pricer(cfg), None, 8 * cfg.parallel.pp).settled_from
    assert 8 * cfg.parallel.pp < settled and 2 * (settled + 1) <= cfg.num_microbatches
    first = past_transient(cfg, Pricer(cfg), None, settled, cfg.num_microbatches // 2 - 1, 1)
    assert first is None or settled < first < 159
    first = first or settled
    fast = simulate(cfg)
    assert fast.simulation["reason"].startswith(  # B alone (settle59; A against B before)
        f"period proven on the loop's state repeating in a truncated run of {first + 1:,} "
        "micro-batches")
    assert_same_simulation(fast, simulate(cfg, keep_timeline=True))
