"""The periodic steady state of Megatron's 1F1B and interleaved schedules, extrapolated.

Once warm-up ends, every stage of a 1F1B pipeline repeats the same forward/backward pair, and
an interleaved one the same group of ``pp`` micro-batches through its chunks. A long run is a
short one with more of those periods in the middle. So instead of the configured ``m``
micro-batches, two truncated iterations are simulated with the same event loop and the same
task graph builder: A with ``m_a`` micro-batches (warm-up, a few steady periods, cool-down,
the gradient reduction and the optimizer step) and B with one period more. Every task of B is
matched with its counterpart in A by its stage's schedule position (before the cut: the same
pass; from the cut on: the pass one period earlier) and :func:`engine.periodic.period_s`
checks that B is A with one period inserted: same times before the cut, every stream exactly
one period ``P`` later from it. Then the real iteration is B with ``k = (m - m_b) / q`` more
periods: every end time moves by ``k * P`` and every sum the result is made of (work per
stage, breakdown parts) grows by ``k`` times B's less A's. No closed form: the numbers are the
event loop's, and agree with the full simulation to ~1e-12 (``tests/test_steady_state.py``
checks 1e-9 on random configurations).

Where the period does not repeat within the truncated runs (a longer transient, contention
that drifts) the check fails, longer runs are tried, and else :func:`steady_summary` returns
None and the caller simulates every micro-batch. Small iterations are simulated in full.
"""

from __future__ import annotations

import logging
import math
from bisect import bisect_left
from dataclasses import dataclass

from trainsim.config import RunConfig
from trainsim.engine import Timeline, run
from trainsim.engine.periodic import period_s
from trainsim.limits import limit, simulation_tasks
from trainsim.pricing import Pricer
from trainsim.simulator import AFTER, LayerSource, build_graph
from trainsim.summary import Summary, critical_stage, stage_sums, totals
from trainsim.workload.schedule import schedule, torch_warmup

log = logging.getLogger(__name__)

MIN_TASKS = 2_000
"""Iterations with fewer pipeline passes than this are simulated in full (a few ms): the
shortcut is for the long ones, and small runs keep the full loop's last bits."""
MEGATRON = (None, "1f1b", "interleaved_1f1b")


def _warmup(order: list) -> int:
    """Forward passes of a 1F1B-style order before its first steady pair."""
    first_b = next(i for i, ps in enumerate(order) if ps.kind != "F")
    return first_b - 1


@dataclass(frozen=True)
class Plan:
    """The truncated runs of a shortcut: A with ``m_a`` micro-batches, B with ``m_a + q``."""

    m_a: int
    q: int
    """Micro-batches per period (``pp`` when interleaved, else 1)."""
    cut: int
    """Steady pairs of stage 0 before the cut, in A."""
    unit: int
    """Steady (F, B) pairs per stage per period."""



def plan(cfg: RunConfig) -> tuple[Plan | None, str]:
    """The first pair of truncated runs to try for ``cfg``, or None and why the shortcut does
    not apply (then every micro-batch is simulated)."""
    p = cfg.parallel
    if p.pipeline_schedule not in MEGATRON:
        return None, f"pipeline schedule {p.pipeline_schedule} has no periodic shortcut"
    m, pp, vpp = cfg.num_microbatches, p.pp, p.vpp
    if 2 * m * vpp * pp < MIN_TASKS:
        return None, f"short iteration ({2 * m * vpp * pp:,} passes < {MIN_TASKS:,})"
    q = pp if vpp > 1 else 1  # micro-batches per period (interleaving needs m % pp == 0)
    unit = q * vpp  # steady (F, B) pairs per stage per period
    warm0 = 2 * (pp - 1) + (vpp - 1) * pp if vpp > 1 else pp - 1  # stage 0's, the longest
    # A's shortest length: warm-up, one period, a pair more; longer ones give the transient
    # after warm-up more time. The cut is at stage 0's last steady pair that has a full
    # period before it (the other stages, warming up less, have more steady pairs after it).
    m_a = q * math.ceil((warm0 + unit + 1) / unit)
    if 4 * (m_a + q) > m:  # the two runs would cost half the full one or more
        return None, (f"{m:,} micro-batches: the truncated runs ({m_a:,} and {m_a + q:,}) "
                      "would cost a quarter of the full simulation or more")
    return Plan(m_a, q, m_a * vpp - warm0, unit), ""


def attempts(cfg: RunConfig) -> list[Plan]:
    """The truncated lengths the shortcut tries for ``cfg``, in order (none where it does not
    apply): the shortest first, then 1, 3, 7, ... periods longer (a transient that outlasts the
    short runs, e.g. stages of unequal work filling a pipeline, settles in a longer one), each
    pair of runs costing at most half the full simulation and all of them together at most
    the full simulation (counted in micro-batches simulated)."""
    first, _ = plan(cfg)
    if first is None:
        return []
    m, out, spent, extra = cfg.num_microbatches, [], 0, 0
    while True:
        current = Plan(first.m_a + extra * first.q, first.q, first.cut + extra * first.unit,
                       first.unit)
        cost = 2 * current.m_a + current.q
        if 4 * (current.m_a + current.q) > m or spent + cost > m:
            return out
        out.append(current)
        spent += cost
        extra = 2 * extra + 1


def _tasks(cfg: RunConfig, attempt: Plan) -> float:
    return simulation_tasks(cfg, attempt.m_a) + simulation_tasks(cfg, attempt.m_a + attempt.q)


def simulated_tasks(cfg: RunConfig) -> float:
    """Engine tasks the shortcut simulates for ``cfg`` when its first attempt proves the
    period (later attempts stop at the task limit), or the full iteration's where it does not
    apply (``limits.simulation_tasks``)."""
    tries = attempts(cfg)
    return _tasks(cfg, tries[0]) if tries else simulation_tasks(cfg)


def steady_summary(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None = None
                   ) -> Summary | None:
    """The iteration's :class:`~trainsim.summary.Summary` from two truncated runs, or None
    when the shortcut does not apply or the period is not proven (simulate in full)."""
    return attempt(cfg, pricer, layer_source)[0]


def attempt(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None = None
            ) -> tuple[Summary | None, str]:
    """:func:`steady_summary`, and what was done or why not (``Result.simulation``)."""
    first, reason = plan(cfg)
    if first is None:
        return None, reason
    tries, spent, cap, longest = attempts(cfg), 0.0, limit("TRAINSIM_MAX_TASKS"), 0
    runs: dict[int, tuple] = {}  # a failed attempt's B, which is the next attempt's A
    for current in tries:
        spent += _tasks(cfg, current)
        if spent > cap:
            break  # the full simulation's own check says so
        summary = _extrapolate(cfg, pricer, layer_source, current.m_a, current.q, current.cut,
                               current.unit, runs)
        if summary is not None:
            return summary, (f"period proven on truncated runs of {current.m_a:,} and "
                             f"{current.m_a + current.q:,} micro-batches, the rest extrapolated")
        longest = current.m_a + current.q
    log.debug("steady state not proven for %s; simulating every micro-batch", cfg.model.name)
    if not longest:
        return None, "the truncated runs are over the task limit"
    return None, (f"period not proven on truncated runs of up to {longest:,} micro-batches (a "
                  "transient or contention that does not repeat)")


def _counterparts(ta: Timeline, tb: Timeline, tags_a: list[int], tags_b: list[int],
                  cut_at: list[int], shift: int) -> tuple[list[int], list[bool]] | None:
    """Per task of B, its counterpart in A and whether it is from the cut on (the arguments of
    :func:`period_s`), or None where B's tasks are not A's with one period inserted.

    On each stream, tasks are placed in schedule order, so their tags (positions) never
    decrease: B's tasks before the stage's cut are A's first ones, tag for tag, and B's from the
    cut on are A's from one period before the cut on, their tags one period (``shift``
    positions) apart (the optimizer's, AFTER, the same). Matched stream by stream, in order: the
    k-th task of a tag with the k-th of its counterpart tag."""
    counterpart, after = [-1] * len(tb.tasks), [False] * len(tb.tasks)
    if ta.queues.keys() != tb.queues.keys():
        return None
    for stream, queue_b in tb.queues.items():
        queue_a, c = ta.queues[stream], cut_at[stream[0]]
        seq_a, seq_b = [tags_a[i] for i in queue_a], [tags_b[i] for i in queue_b]
        if sorted(seq_a) != seq_a or sorted(seq_b) != seq_b:
            return None  # not placed in schedule order: no positional match
        early, start = bisect_left(seq_b, c), bisect_left(seq_a, c - shift)
        if (start > early or seq_a[:early] != seq_b[:early]
                or seq_a[start:] != [t if t == AFTER else t - shift for t in seq_b[early:]]):
            return None
        for i, j in zip(queue_b, queue_a[:early] + queue_a[start:]):
            counterpart[i] = j
        for i in queue_b[early:]:
            after[i] = True
    return counterpart, after


def _extrapolate(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None, m_a: int,
                 q: int, cut: int, unit: int, runs: dict[int, tuple] | None = None
                 ) -> Summary | None:
    """``runs``: graphs and timelines by micro-batch count, from an earlier attempt (the
    same cfg and pricer build the same graph and the loop gives the same timeline, so a run
    of that length is not done again); this attempt's B is left there for the next one."""
    p = cfg.parallel
    pp, vpp, m = p.pp, p.vpp, cfg.num_microbatches
    runs = {} if runs is None else runs
    ga, ta = runs.pop(m_a, None) or (build_graph(cfg, pricer, layer_source, m_a), None)
    gb = build_graph(cfg, pricer, layer_source, m_a + q)
    # the cut in each stage's schedule positions: after its warm-up, ``cut`` pairs in
    cut_at = [_warmup(schedule(s, pp, vpp, m_a, torch_warmup=torch_warmup(cfg))) + 2 * cut
              for s in range(pp)]
    ta, tb = ta or run(ga.tasks), run(gb.tasks)
    pairs = _counterparts(ta, tb, ga.tags, gb.tags, cut_at, 2 * unit)
    period = None if pairs is None else period_s(ta, tb, *pairs)
    if period is None:
        runs.clear()
        runs[m_a + q] = (gb, tb)
        return None
    k = (m - m_a - q) // q

    def more(xa: float, xb: float) -> float:
        return xb + k * (xb - xa)

    # the critical stage from the extrapolated totals; only its breakdown parts are needed
    (end_a, origin_a, busy_a), (end_b, origin_b, busy_b) = (totals(cfg, ta, ga.ends),
                                                            totals(cfg, tb, gb.ends))
    end = [more(x, y) for x, y in zip(end_a, end_b)]
    busy = [more(x, y) for x, y in zip(busy_a, busy_b)]
    stage = critical_stage(busy, end)
    sa = stage_sums(ta, ga.ends, origin_a, [stage])[stage]
    sb = stage_sums(tb, gb.ends, origin_b, [stage])[stage]
    sums = {stage: {key: more(sa.get(key, 0.0), sb.get(key, 0.0))
                    for key in dict.fromkeys([*sb, *sa])}}
    return Summary(end, [more(x, y) for x, y in zip(origin_a, origin_b)], busy, sums)


__all__ = ["MIN_TASKS", "Plan", "attempt", "attempts", "plan", "simulated_tasks", "steady_summary"]
