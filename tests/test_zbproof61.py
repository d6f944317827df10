"""zbproof61 (issue 21 item 2): the last random looped BFS config proven (its ladder ends at the
longest run the budget affords), and ``steady_bfs``'s proof as arrays (the same matches,
decisions and slopes as settle60's per-task loops, which PP64 vpp 2 spent 0.07 of its 0.12 CPU s
in)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from helpers import assert_same_simulation, counted_graphs
from test_steady_bfs import _configs

import trainsim.steady_state as steady
from trainsim import run_config_from_dict, simulate
from trainsim.engine import run
from trainsim.optimizer_tasks import BEFORE
from trainsim.pricing import Pricer
from trainsim.simulator import build_graph
from trainsim.steady_bfs import (
    COPY0,
    COPY1,
    PLAIN,
    _b_to_a,
    _b_to_a_arrays,
    _edges,
    _inputs_bind,
    _matching,
    _paces,
    _slopes,
    bfs_proven,
    least_length,
)
from trainsim.steady_gpipe import forward_phase_ends


def test_the_last_random_config_is_proven_past_its_forward_catch_up(monkeypatch):
    """tests/test_steady_bfs.py's config #6 (pp 8, vpp 1, dp 4, ZeRO 2, overlapped sends, 51
    micro-batches): every stage after the first runs its first forward 83 us longer than the
    rest and is fed at stage 0's slower pace, so it catches up 35 us a micro-batch, stage 6 at
    micro-batch 15, and its send-overlap offset settles a few periods later: no run up to 18 is
    the iteration's with periods taken out; the doubling ladder's next rung (34) is past the
    budget. The ladder now ends at the longest run it affords (24), proven there and within
    1e-9 of the full simulation (settle60: rungs 3, 4, 6, 10, 18, simulated in full)."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    cfg = _configs(7)[6]
    assert (cfg.parallel.pp, cfg.parallel.vpp, cfg.num_microbatches) == (8, 1, 51)
    assert [t.m_a for t in steady.attempts(cfg)] == [3, 4, 6, 10, 24]
    fast = simulate(cfg)
    assert fast.simulation["method"] == "steady-state"
    assert "truncated runs of 24 and 25" in fast.simulation["reason"]
    assert_same_simulation(fast, simulate(cfg, keep_timeline=True))
    # the catch-up itself: A of 18 is still in it, 19 is past it
    pricer = Pricer(cfg)
    runs = {m: (g, run(g.tasks)) for m in (18, 19, 20)
            for g in [build_graph(cfg, pricer, None, m)]}
    for m_a, proven in ((18, False), (19, True)):
        (ga, ta), (gb, tb) = runs[m_a], runs[m_a + 1]
        assert bfs_proven(ta, tb, ga.tags, gb.tags, m_a, 1) is proven


def test_a_two_phase_ladder_ends_at_the_longest_run_it_affords(monkeypatch):
    """Over the 200 random looped BFS configs' ladders: every B at most half the iteration, all
    runs at most twice it, and where the doubling stops (2 rungs or more) one period longer
    than the last rung would break a limit; a Megatron 1F1B ladder still ends at its doubling."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    ended = 0
    for cfg in _configs(200):
        tries = steady.attempts(cfg)
        m = cfg.num_microbatches
        assert all(2 * (t.m_a + t.q) <= m for t in tries)
        assert steady._runs_cost(tries) <= 2 * m
        assert [t.m_a for t in tries] == sorted({t.m_a for t in tries})
        if len(tries) >= 2:
            last = tries[-1]
            longer = steady.Plan(last.m_a + last.q, last.q, last.cut + last.unit, last.unit)
            assert (2 * (longer.m_a + longer.q) > m
                    or steady._runs_cost(tries[:-1] + [longer]) > 2 * m)
            ended += tries[-1].m_a - tries[-2].m_a not in (1, 2, 4, 8, 16, 32, 64)
    assert ended >= 100  # most ladders end off the doubling (settle60: none)
    one_f_one_b = run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": 8, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "parallel": {"pp": 8},
        "training": {"global_batch_size": 120, "seq_length": 256},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                    "compute_db": None}})
    first = steady.plan(one_f_one_b)[0]
    doubling = [first.m_a + e for e in (0, 1, 3, 7, 15, 31) if 2 * (first.m_a + e + 1) <= 120]
    got = [t.m_a for t in steady._ladder(one_f_one_b, first)]
    assert got == doubling[:len(got)] and len(got) >= 3


def _matching_loop(ta, tb, tags_a, tags_b, m_a, vpp):
    """settle60's ``_matching``: each stream's tasks of B in order, the k-th at a position and
    class against the k-th of A at the counterpart position."""
    if ta.queues.keys() != tb.queues.keys():
        return None
    n = len(tb.tasks)
    counterpart = np.full(n, -1, dtype=np.int64)
    cls, forward = np.zeros(n, dtype=np.int8), np.zeros(n, dtype=bool)
    covered = np.zeros(len(ta.tasks), dtype=bool)
    for stream, queue_b in tb.queues.items():
        at: dict[int, list[int]] = defaultdict(list)
        for i in ta.queues[stream]:
            at[tags_a[i]].append(i)
        seen: dict[tuple[int, bool], int] = defaultdict(int)
        copies: set[int] = set()
        for i in queue_b:
            tag, kind, fwd = _b_to_a(tags_b[i], m_a, vpp)
            k = seen[tag, kind == COPY1]
            seen[tag, kind == COPY1] += 1
            if k >= len(at.get(tag, ())):
                return None
            counterpart[i], cls[i], forward[i] = at[tag][k], kind, fwd
            covered[at[tag][k]] = True
            if kind != PLAIN:
                copies.add(tag)
        if any(count != len(at[tag]) for (tag, _), count in seen.items()):
            return None
        if any(seen[tag, True] != seen[tag, False] for tag in copies):
            return None
    return (counterpart, cls, forward) if covered.all() else None


def _slopes_loop(b, j, cls, member, fixed, sigma, tau, sb, eb, tol):
    """settle60's per-task check of ``_slopes`` (after sigma and tau): whether it proves."""
    tasks, n = b.tasks, len(b.tasks)
    copy0 = {int(j[i]): int(i) for i in np.flatnonzero(member & (cls == COPY0))}
    ones = np.flatnonzero(member & (cls == COPY1))
    prev = np.full(n, -1, dtype=np.int64)
    for queue in b.queues.values():
        prev[queue[1:]] = queue[:-1]
    shared = {int(i): set(tasks[copy0[int(j[i])]].deps) for i in ones}
    for x in np.flatnonzero(member):
        ins = tasks[x].deps + ([int(prev[x])] if prev[x] >= 0 else [])
        own = (sigma[x], sigma[x] + (tau[x] if cls[x] == COPY1 else 0.0))
        binding = not ins and abs(own[0]) <= tol and abs(own[1]) <= tol
        for d in ins:
            if not member[d]:
                coef, ed = (0.0, 0.0), min(eb[d], 0.0)
            else:
                if cls[x] == COPY1:
                    if cls[d] == PLAIN and not fixed[d] and d not in shared.get(int(x), ()):
                        return False
                    coef = (sigma[d], sigma[d] + tau[d]) if cls[d] != PLAIN else \
                        (sigma[d], sigma[d])
                else:
                    if cls[d] == COPY0 and cls[x] == PLAIN or cls[d] == COPY1 and cls[x] == COPY0:
                        return False
                    s = sigma[d] + (tau[d] if cls[d] == COPY1 else 0.0)
                    coef = (s, s)
                ed = eb[d]
            if coef[0] > own[0] + tol or coef[1] > own[1] + tol:
                return False
            binding |= ed >= sb[x] - tol and coef[0] >= own[0] - tol and coef[1] >= own[1] - tol
        if not binding:
            return False
    return True


@pytest.mark.parametrize("index", range(8))
def test_the_array_proof_decides_as_the_loops_did(index):
    """On random configs at A = least length, one more and 10: the array matching equals the
    per-stream loop's, the arrays' positions ``_b_to_a``'s, and in each phase the array check
    of the inputs proves exactly where the per-task loop does (both outcomes seen over the
    eight configs: tests/test_zbproof61.py's slow twin runs all 200)."""
    assert _decisions(_configs(8)[index])


@pytest.mark.slow
def test_the_array_proof_decides_as_the_loops_did_on_all_configs():
    seen = set()
    for cfg in _configs(200):
        seen |= _decisions(cfg)
    assert seen == {True, False}


def _decisions(cfg) -> set[bool]:
    """:func:`test_the_array_proof_decides_as_the_loops_did` for one config: the outcomes."""
    pp, vpp = cfg.parallel.pp, cfg.parallel.vpp
    pricer = Pricer(cfg)
    decided: set[bool] = set()
    for m_a in sorted({least_length(pp, vpp), least_length(pp, vpp) + 1, 10}):
        ga, gb = build_graph(cfg, pricer, None, m_a), build_graph(cfg, pricer, None, m_a + 1)
        ta, tb = run(ga.tasks), run(gb.tasks)
        loop = _matching_loop(ta, tb, ga.tags, gb.tags, m_a, vpp)
        arrays = _matching(ta, tb, ga.tags, gb.tags, m_a, vpp)
        assert all(np.array_equal(x, y) for x, y in zip(loop, arrays))
        got_tags, got_cls, got_fwd = _b_to_a_arrays(gb.tags, m_a, vpp)
        assert [(int(t), int(c), bool(f)) for t, c, f in zip(got_tags, got_cls, got_fwd)] == \
            [_b_to_a(t, m_a, vpp) for t in gb.tags]
        j, cls, forward = arrays
        fixed = np.asarray(gb.tags) == BEFORE
        t0 = forward_phase_ends(ta, tb, j[forward], forward)
        tol = 1e-11 * tb.makespan_s
        edges = _edges(ta, tb, j)
        for member, origin in ((forward, (0.0, 0.0)), (~forward, t0)):
            paces = _paces(ta, tb, j, cls, member, origin, tol, edges)
            if paces is None:
                continue
            sigma, tau, twin = paces
            sb, eb = edges.times[2] - origin[1], edges.times[3] - origin[1]
            proven = _inputs_bind(cls, member, fixed, sigma, tau, twin, sb, eb, tol, edges)
            assert proven == _slopes_loop(tb, j, cls, member, fixed, sigma, tau, sb, eb, tol)
            assert (_slopes(ta, tb, j, cls, member, fixed, origin, tol, edges) is None) == \
                (not proven)
            decided.add(proven)
    return decided


def test_pp64_vpp2_builds_two_graphs_of_66_and_67_at_any_length():
    """PP64 vpp 2 (issue 21 item 2's case): 2,048 and 16,384 micro-batches build the same two
    graphs (A = pp + 2: below it a chunk's first forward waits on the loop back), proven."""
    def cfg(m: int):
        return run_config_from_dict({
            "model": {"hidden_size": 256, "num_layers": 128, "num_attention_heads": 4,
                      "vocab_size": 1024},
            "parallel": {"pp": 64, "vpp": 2, "pipeline_schedule": "LoopedBFS"},
            "training": {"global_batch_size": m, "seq_length": 256, "framework": "torchtitan"},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8,
                        "compute_db": None}})
    built = []
    for m in (2_048, 16_384):
        with counted_graphs() as graphs:
            result = simulate(cfg(m))
        assert result.simulation["method"] == "steady-state"
        assert "66 and 67 micro-batches" in result.simulation["reason"]
        built.append(graphs)
    assert built[0] == built[1] and len(built[0]) == 2
