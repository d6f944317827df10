"""Run A alone proves the steady state's period (:mod:`trainsim.steady_state`): the one-run
proofs on a task graph's timeline (:func:`_one_run`: max-plus, or the loop's state repeating)
and on the uncontended grid (:func:`_grid_one_run`, :mod:`trainsim.steady_grid`), and the
summary of a run with its period repeated (:func:`_one_run_summary`)."""

from __future__ import annotations

from bisect import bisect_left
from operator import attrgetter

import numpy as np

from trainsim.config import RunConfig
from trainsim.engine import Timeline
from trainsim.engine.periodic import FIXED, REL_TOL, period_in_run_s, period_of_state_s
from trainsim.pricing import DP_STREAMS, Pricer
from trainsim.simulator import BEFORE, LayerSource
from trainsim.steady_grid import period_on_grid, uncontended_run
from trainsim.steady_orders import _bump, _chunks, _end_passes, _label_step, _passes
from trainsim.summary import Summary, add_compute, critical_stage, stage_sums, totals

_duration = attrgetter("duration_s")

def _one_run(cfg: RunConfig, graph, tl: Timeline, orders: list, warm: list[int],
             cut: int | list[int], shift: int, q: int, state: bool = False) -> Summary | None:
    """The summary from run A alone, where :func:`engine.periodic.period_in_run_s` proves the
    period on it (``state``: :func:`engine.periodic.period_of_state_s`, which holds where
    tasks slow each other in the period too): with A's period before the cut (schedule
    positions ``cut - shift`` to ``cut``, stage 0's cut, on every stage) ``k + 1`` times,
    ``k = (m - m_a) / q``, A is the iteration. Every end after the cut moves by ``k P``; every
    sum grows by ``k`` times the period's part of it. ``warm``: each stage's warm-up
    forwards; ``cut``: one position for every stage, or each stage's (zb_2p's, where its
    stages run their passes periods apart, :func:`trainsim.steady_zb2p.rank_cuts`)."""
    pp, m_a, tags, tasks = len(orders), graph.m, graph.tags, tl.tasks
    # One schedule position for every stage, stage 0's cut: a pass waits on passes of the
    # neighbouring stages (and, interleaved, of the last stage for the next chunk) at most
    # two positions earlier in theirs, so what comes before it waits on nothing after it
    # (period_in_run_s checks). Between it and one period earlier, every stage runs pairs.
    # The period must be plain pairs on every stage: the graph builder gives the first
    # micro-batch's forwards and the last one's backwards other tasks (parameter gathers, a
    # split backward), which a longer run has at its ends only.
    name = cfg.parallel.pipeline_schedule
    ends, step = _end_passes(m_a, _chunks(orders), name), _label_step(name, q)
    cuts = [cut] * pp if isinstance(cut, int) else cut
    if not all(w <= c - shift and c <= len(order) - w
               and ends.isdisjoint(_passes(order[c - shift:c]))
               for order, w, c in zip(orders, warm, cuts)):
        return None
    part = np.zeros(len(tasks), dtype=np.uint8)
    bounds: dict[tuple[int, str], tuple[int, int]] = {}
    seqs: dict[tuple[int, str], list[int]] = {}
    for stream, queue in tl.queues.items():
        seq = seqs[stream] = list(map(tags.__getitem__, queue))
        if seq != sorted(seq):
            return None  # not placed in schedule order: no positional twin
        c = cuts[stream[0]]
        i1, i2 = bounds[stream] = bisect_left(seq, c - shift), bisect_left(seq, c)
        part[queue[i1:i2]] = 1
        part[queue[i2:]] = 2

    def twin(h: int) -> int:
        """The pass one period after prefix task ``h``: the same pass, micro-batch + q."""
        tag = tags[h]
        if tag == BEFORE:
            return FIXED
        stream = tasks[h].stream
        order, later = orders[stream[0]], tag + shift
        if not 0 <= tag < later < cuts[stream[0]]:
            return -1
        if order[later] != _bump(order[tag], step):
            return -1
        seq, queue = seqs[stream], tl.queues[stream]
        j = bisect_left(seq, tag)
        k = bisect_left(seq, later) + queue.index(h, j) - j
        return queue[k] if k < len(seq) and seq[k] == later else -1

    if state:
        parts = part.tobytes()
        period = period_of_state_s(tl, parts, bounds, lambda h: -1 if parts[h] else twin(h))
    else:
        period = period_in_run_s(tl, part.tobytes(), bounds, twin)
    if period is None:
        return None
    work = []
    for s in range(pp):  # the period's work on each stage's compute stream
        queue = tl.queues.get((s, "compute"), [])
        i1, i2 = bounds.get((s, "compute"), (0, 0))
        work.append(sum(map(_duration, map(tasks.__getitem__, queue[i1:i2]))))
    return _one_run_summary(cfg, tl, graph.ends, totals(cfg, tl, graph.ends), bounds, work,
                            period, (cfg.num_microbatches - m_a) // q)


def _one_run_summary(cfg: RunConfig, tl: Timeline, ends: list[int], tot: tuple,
                     bounds: dict[tuple[int, str], tuple[int, int]], work: list[float],
                     period: float, k: int) -> Summary:
    """Run A's summary with its period ``k + 1`` times: ``tot``, its ``summary.totals``;
    ``bounds``, where each stream's period and tail begin; ``work``, each stage's compute
    work in the period."""
    end_a, origin, busy_a = tot
    end = [e + k * period for e in end_a]
    busy = [b + k * w for b, w in zip(busy_a, work)]
    stage = critical_stage(busy, end)
    sums = stage_sums(tl, ends, origin, [stage])[stage]
    queue = tl.queues.get((stage, "compute"), [])
    i1, i2 = bounds.get((stage, "compute"), (0, 0))
    per = dict.fromkeys(sums, 0.0)
    dp_side = any((stage, kind) in tl.queues for kind in DP_STREAMS)
    add_compute(tl, queue[i1:i2], tl.end_s[queue[i1 - 1]] if i1 else origin[stage], per, dp_side)
    out = {key: value + k * per.get(key, 0.0) for key, value in sums.items()}
    out["_tail"], out["_end"] = sums["_tail"], sums["_end"] + k * period
    return Summary(end, origin, busy, {stage: out})


def _grid_one_run(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None, m_a: int,
                  warm: list[int], cut: int, shift: int, q: int) -> Summary | None:
    """:func:`_one_run` on run A computed without a task graph (:mod:`trainsim.steady_grid`),
    where nothing in it contends; None where that does not apply or proves nothing."""
    grid_run = uncontended_run(cfg, pricer, layer_source, m_a)
    if grid_run is None:
        return None
    period = period_on_grid(grid_run, warm, cut, shift, q, m_a, REL_TOL)
    if period is None:
        return None
    tl = grid_run.timeline
    bounds = {(s, "compute"): (cut - shift, cut) for s in range(len(warm))}
    work = [sum(row[cut - shift:cut].tolist()) for row in grid_run.duration]
    tot = ([tl.end_s[e] for e in grid_run.ends], [0.0] * len(warm), grid_run.busy)
    return _one_run_summary(cfg, tl, grid_run.ends, tot, bounds, work, period,
                            (cfg.num_microbatches - m_a) // q)


__all__ = ["_grid_one_run", "_one_run", "_one_run_summary"]
