"""ZB-2p searches that settle into a period of several rounds (settle56): a state after a round
that repeats only after two, three, four or eight rounds (``zb_settle.settle``), and the
periodic shortcut on their orders with that period (``steady_state._zb2p_tries``), against
the full search and the full simulation, and its cost against the micro-batch count."""

from __future__ import annotations

import dataclasses
import random
from fractions import Fraction

import pytest
from helpers import assert_same_simulation, pipelined_configs

import trainsim.steady_state as steady
from trainsim import simulate
from trainsim.pricing import Pricer
from trainsim.workload import zb_search, zb_settle


def _shapes(n: int, seed: int):
    """Random searches shaped as trainsim's priced passes feed them: 2, 4 or 8 stages, F of
    0.3-2 ms, I 0.8-2.5 F, W 0.2-0.4 F and a send of 20-120 us, in whole microseconds, a W share
    of memory near ``zb_w_fraction``'s (the random configs' 16/57)."""
    rng = random.Random(seed)
    for _ in range(n):
        f = rng.randint(300, 2000)
        yield (rng.choice([2, 4, 8]), (f, int(f * rng.uniform(0.8, 2.5)),
                                       int(f * rng.uniform(0.2, 0.4))),
               rng.randint(20, 120), Fraction(rng.randint(14, 18), rng.randint(50, 60)))


def _several_rounds(n: int, seed: int) -> list[tuple]:
    """Every variant's search among ``_shapes(n, seed)`` that settles into a period of more
    than one round at a probe of 32 pp + 32 micro-batches, with its ``Settled``."""
    out = []
    for pp, cost, comm, wf in _shapes(n, seed):
        for variant in zb_search.VARIANTS:
            s = zb_settle.settle(pp, cost, comm, 2.0 * pp, wf, variant, 32 * pp + 32)
            if s is not None and s.rounds > 1:
                out.append((pp, cost, comm, wf, variant, s))
    return out


def test_a_search_settled_into_several_rounds_is_the_shorter_one_with_periods_inserted():
    """Where a variant's state repeats only after several rounds, its span at every longer count
    is the extrapolated one (``settled_span``, each count's residue of the period), and its
    orders for m + rounds micro-batches are those for m with one period inserted at one
    position of every stage, every later micro-batch ``rounds`` on."""
    found = _several_rounds(30, 5)
    assert {s.rounds for *_, s in found} >= {2, 4, 8}, found
    for pp, cost, comm, wf, variant, s in found:
        for m in range(s.from_m, s.from_m + 2 * s.rounds + 1):
            a, span = zb_search.build_order(pp, m, cost, comm, 2.0 * pp, wf, variant)
            assert zb_search.settled_span(s, m, pp, cost, comm, 2.0 * pp, wf, variant)[0] == span
        a, _ = zb_search.build_order(pp, s.from_m, cost, comm, 2.0 * pp, wf, variant)
        b, _ = zb_search.build_order(pp, s.from_m + s.rounds, cost, comm, 2.0 * pp, wf,
                                     variant)
        assert steady.insertion_cut(a, b, s.rounds, [set()] * pp) is not None


@pytest.mark.parametrize("n", [10, pytest.param(30, marks=pytest.mark.slow)])
def test_the_chosen_variant_is_the_full_searchs_where_periods_are_of_several_rounds(n):
    """``choose`` (spans extrapolated from periods of one or several rounds) keeps the variant
    the full search keeps, at counts of either residue of a period of two rounds."""
    several = 0
    for pp, cost, comm, wf in _shapes(n, 5):
        for m in (40 * pp + 3, 40 * pp + 4):
            built = [zb_search.build_order(pp, m, cost, comm, 2.0 * pp, wf, v)[1]
                     for v in zb_search.VARIANTS]
            variant, from_m, rounds = zb_search.choose(pp, m, cost, comm, 2.0 * pp, wf)
            assert variant == zb_search.VARIANTS[built.index(min(built))]
            several += rounds > 1
            assert from_m is not None or rounds == 1
    assert several >= 2


def _at(cfg, m: int):
    per = cfg.training.global_batch_size // cfg.num_microbatches
    return dataclasses.replace(cfg, training=dataclasses.replace(
        cfg.training, global_batch_size=m * per))


def _several_rounds_configs(n: int, max_pp: int = 8) -> list:
    """The random ZB-2p configs of test_steady_zb2p.py (the first ``n``) whose search settles
    into a period of more than one round (none proven before settle56: a period of one round
    was all ``settle`` looked for)."""
    out = []
    for cfg in pipelined_configs(n, "zb_2p", lambda pp: (40 * pp + 8, 80 * pp)):
        if cfg.parallel.pp <= max_pp and steady._settled_from(cfg, Pricer(cfg), None)[1] > 1:
            out.append(cfg)
    return out


def _built(monkeypatch) -> list[tuple[int, int]]:
    """(micro-batches, tasks) of every graph the shortcut builds from here on."""
    built: list[tuple[int, int]] = []
    real = steady.build_graph

    def counting(c, p, s, m):
        graph = real(c, p, s, m)
        built.append((m, len(graph.tasks)))
        return graph

    monkeypatch.setattr(steady, "build_graph", counting)
    return built


def test_a_search_of_several_rounds_is_proven_exactly_and_flat_in_micro_batches(monkeypatch):
    """The first such random config at pp <= 4 (its search a period of two rounds): proven at
    its own length and at 1,024 and 4,096 micro-batches, within 1e-9 of the full simulation,
    on the same truncated runs at both long lengths (the tasks it simulates do not grow with
    the iteration; main simulated every micro-batch)."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    cfg = _several_rounds_configs(24, max_pp=4)[0]
    built = _built(monkeypatch)
    seen = []
    for m in (cfg.num_microbatches, 1024, 4096):
        c = _at(cfg, m)
        built.clear()
        fast = simulate(c)
        assert fast.simulation["method"] == "steady-state", fast.simulation
        seen.append(list(built))
        assert_same_simulation(fast, simulate(c, keep_timeline=True))
    assert seen[1] == seen[2]
    per_microbatch = seen[2][0][1] / seen[2][0][0]
    assert sum(t for _, t in seen[2]) < 4096 * per_microbatch / 8


@pytest.mark.slow
def test_searches_of_several_rounds_are_proven_exactly_at_length(monkeypatch):
    """All such configs among the 200 (13, pp 2-8): within 1e-9 of the full simulation at 1,024
    and 4,096 micro-batches, the steady state taken at 4,096 by at least 12 and on the same runs
    wherever it is taken at both."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    configs = _several_rounds_configs(200)
    assert len(configs) >= 12
    built = _built(monkeypatch)
    proven = 0
    for cfg in configs:
        runs = {}
        for m in (1024, 4096):
            c = _at(cfg, m)
            built.clear()
            fast = simulate(c)
            if fast.simulation["method"] == "steady-state":
                runs[m] = list(built)
            assert_same_simulation(fast, simulate(c, keep_timeline=True))
        proven += 4096 in runs
        if len(runs) == 2:
            assert runs[1024] == runs[4096]
    assert proven >= 12


@pytest.mark.parametrize("n", [12, pytest.param(40, marks=pytest.mark.slow)])
def test_late_settlers_transients_are_replayed_and_their_short_runs_skipped(monkeypatch, n):
    """Those of the first ``n`` random configs at pp <= 4 with a period of one round whose replayed
    transient (``steady_zb2p.past_transient``) moves their first truncated run at 1,024
    micro-batches: each shortcut within 1e-9 of the full simulation with the replay and without
    it (the ladder of lengths, main's way), the replay's graphs fewer tasks in all (one
    config's a few more: its spare periods; the first 40's 23: 24,898 tasks against 46,588)."""
    from trainsim import steady_zb2p

    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    chosen = []
    for cfg in pipelined_configs(n, "zb_2p", lambda pp: (40 * pp + 8, 80 * pp)):
        c = _at(cfg, 1024)
        pricer = Pricer(c)
        settles, rounds = steady._settled_from(c, pricer, None)
        if c.parallel.pp > 4 or rounds > 1:
            continue
        tries = steady._zb2p_tries(c, steady.attempts(c), settles, rounds)[1]
        if len(tries) > 1 and steady_zb2p.past_transient(
                c, pricer, None, tries[0].m_a, tries[-1].m_a, tries[0].q) is not None:
            chosen.append(c)
    assert len(chosen) >= n // 6
    built = _built(monkeypatch)
    tasks = {}
    for replay in (True, False):
        if not replay:
            monkeypatch.setattr(steady, "past_transient", lambda *a: None)
        built.clear()
        for c in chosen:
            fast = simulate(c)
            assert fast.simulation["method"] == "steady-state", fast.simulation
            assert_same_simulation(fast, simulate(c, keep_timeline=True))
        tasks[replay] = sum(t for _, t in built)
    assert tasks[True] < tasks[False], (len(chosen), tasks)
