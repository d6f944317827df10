"""The one-run proof by the loop's state repeating (trainsim.engine.periodic.period_of_state_s)
on small contended task graphs.

Each graph is a warm-up and copies of a period (the tasks of one copy wait on the copy before)
and a tail. The proof sees the run with three copies (copy 1 is the prefix's last period,
copy 2 the period) and either gives the period ``P`` by which the run with ``K`` more copies is
this one, the tail ``K P`` later, or refuses it; a refused graph is one whose extrapolation
differs from the longer run's timeline.
"""

from __future__ import annotations

import pytest

from trainsim.engine import Task, run
from trainsim.engine.periodic import FIXED, period_of_state_s

K = 4  # copies added in the longer run


def _graph(period, tail, copies: int) -> tuple[list[Task], list[int]]:
    """``period``: (stream, duration, deps on the copy before, deps in this copy, slows);
    ``tail``: (stream, duration, deps on the last copy). A warm-up task on stream z (FIXED)
    starts everything. Returns the tasks and each one's copy (-1 warm-up, ``copies`` tail)."""
    tasks, copy = [Task((0, "z"), 0.25)], [-1]
    first = []
    for c in range(copies):
        first.append(len(tasks))
        for stream, d, before, this, slows in period:
            deps = [first[c - 1] + j for j in before] if c else [0]
            tasks.append(Task((0, stream), d, deps + [first[c] + j for j in this],
                              slows=((0, slows[0]), slows[1]) if slows else None))
            copy.append(c)
    for stream, d, deps in tail:
        tasks.append(Task((0, stream), d, [first[-1] + j for j in deps]))
        copy.append(copies)
    return tasks, copy


def _prove(period, tail) -> tuple[float | None, float]:
    """The proof on the run with three copies, and the largest difference between the run with
    ``K`` more copies and the extrapolation with ``P`` (the proof's, else the last copy's shift
    from the one before: what a proof without the check would take)."""
    tasks, copy = _graph(period, tail, 3)
    tl = run(tasks)
    n_per = len(period)
    part = bytes(0 if c < 2 else 1 if c == 2 else 2 for c in copy)
    bounds = {}
    for stream, queue in tl.queues.items():
        ps = [part[i] for i in queue]
        bounds[stream] = (ps.count(0), ps.count(0) + ps.count(1))
    later = [FIXED if c < 0 else i + n_per if c < 2 else -1 for i, c in enumerate(copy)]
    proven = period_of_state_s(tl, part, bounds, later.__getitem__)
    last = 1 + 2 * n_per
    p = proven if proven is not None else tl.end_s[last] - tl.end_s[last - n_per]
    longer = run(_graph(period, tail, 3 + K)[0])
    err = 0.0
    for i, c in enumerate(copy):  # before the period the same; the period and tail K P later
        j = i if c < 2 else i + K * n_per
        err = max(err, abs(longer.end_s[j] - tl.end_s[i] - (K * p if c >= 2 else 0.0)))
    return proven, err


def test_a_contended_locked_period_is_proven_and_extrapolates_exactly():
    """A send on y slows x's compute while both run, each copy waiting on the copy before:
    the state (x slowed half-way through its task) repeats, so the run proves the period and
    the longer run is the extrapolation."""
    period = [("x", 1.0, [0], [], None), ("y", 0.4, [0], [], ("x", 0.5))]
    proven, err = _prove(period, [("x", 1.0, [0, 1])])
    assert proven == pytest.approx(1.2, rel=1e-12)  # 0.4 at half rate, 0.8 at full
    assert err < 1e-12


def test_contention_that_drifts_is_refused():
    """y runs on its own chain at 1.3 per copy and slows x (1.0 per copy): the overlap, and
    so x's slowdown, changes from copy to copy; the ends seen are not a period."""
    period = [("x", 1.0, [0], [], None), ("y", 1.3, [1], [], ("x", 0.5))]
    proven, err = _prove(period, [("x", 1.0, [0, 1])])
    assert proven is None and err > 1e-3


def test_a_running_task_started_under_another_slowdown_is_refused():
    """x's copy 1 starts while a long prefix task on w still slows x (until 3.1), the period's
    copy does not: the proof compares the running tasks' starts and what slowed them (one
    sufficient form of their work left), which differ, so it refuses (conservatively: from 3.1
    on the run is periodic, and a longer truncated run proves it)."""
    tasks_period = [("x", 1.0, [0], [], None)]
    tasks, copy = _graph(tasks_period, [("x", 1.0, [0])], 3)
    tasks.insert(1, Task((0, "w"), 3.1, [0], slows=((0, "x"), 0.5)))
    for t in tasks[2:]:
        t.deps = [d + 1 if d >= 1 else d for d in t.deps]
    copy.insert(1, -1)
    tl = run(tasks)
    part = bytes(0 if c < 2 else 1 if c == 2 else 2 for c in copy)
    bounds = {(0, "x"): (2, 3), (0, "w"): (1, 1), (0, "z"): (1, 1)}
    later = [FIXED if c < 0 else i + 1 if c < 2 else -1 for i, c in enumerate(copy)]
    assert period_of_state_s(tl, part, bounds, later.__getitem__) is None


def _share_graph(copies: int, s_prefix: float, s_period: float
                 ) -> tuple[list[Task], list[int]]:
    """Streams z, x, y: each copy y's first task slows x by a share and ends while x still runs;
    the prefix's copies (0 and 1) slow it by ``s_prefix``, the period's by ``s_period``."""
    tasks, copy = [Task((0, "w"), 0.25)], [-1]
    first: list[int] = []
    for c in range(copies):
        share = s_prefix if c < 2 else s_period
        first.append(len(tasks))
        prev = first[c - 1] + 2 if c else 0
        tasks += [Task((0, "z"), 0.7, [prev]), Task((0, "x"), 1.0, [] if c else [0]),
                  Task((0, "x"), 0.5, []),
                  Task((0, "y"), 0.4, [prev], slows=((0, "x"), share)), Task((0, "y"), 1.0, [])]
        copy += [c] * 5
    tasks.append(Task((0, "x"), 1.0, [first[-1]]))
    copy.append(copies)
    return tasks, copy


@pytest.mark.parametrize("s_prefix", [0.5, 0.2])
def test_an_ended_slower_with_another_share_is_refused(s_prefix):
    # the running task's work left depends on the share of a slower that has already ended:
    # copies slowing it by 0.5 are not the period's (0.2), whatever their times say
    tasks, copy = _share_graph(3, s_prefix, 0.2)
    tl = run(tasks)
    part = bytes(0 if c < 2 else 1 if c == 2 else 2 for c in copy)
    bounds = {}
    for s, q in tl.queues.items():
        ps = [part[i] for i in q]
        bounds[s] = (ps.count(0), ps.count(0) + ps.count(1))
    later = [FIXED if c < 0 else i + 5 if c < 2 else -1 for i, c in enumerate(copy)]
    period = period_of_state_s(tl, part, bounds, later.__getitem__)
    if s_prefix != 0.2:
        assert period is None
        return
    assert period is not None  # equal shares: proven, and the extrapolation is exact
    longer, _ = _share_graph(3 + K, 0.2, 0.2)
    assert max(run(longer).end_s) == pytest.approx(max(tl.end_s) + K * period, rel=1e-12)
