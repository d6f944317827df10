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
from helpers import state_proof

from trainsim.engine import Task, run
from trainsim.engine.periodic import FIXED, period_of_state_s

K = 4  # copies added in the longer run


def _graph(period, tail, copies: int, prefix=None) -> tuple[list[Task], list[int]]:
    """``period``: (stream, duration, deps on the copy before, deps in this copy, slows);
    ``tail``: (stream, duration, deps on the last copy); ``prefix``: the same for the prefix's
    copies (0 and 1; default ``period``), the same tasks otherwise parametrised. A warm-up task
    on stream z (FIXED) starts everything. Returns the tasks and each one's copy (-1 warm-up,
    ``copies`` tail)."""
    tasks, copy = [Task((0, "z"), 0.25)], [-1]
    first = []
    for c in range(copies):
        first.append(len(tasks))
        for stream, d, before, this, slows in (prefix or period) if c < 2 else period:
            deps = [first[c - 1] + j for j in before] if c else [0]
            tasks.append(Task((0, stream), d, deps + [first[c] + j for j in this],
                              slows=((0, slows[0]), slows[1]) if slows else None))
            copy.append(c)
    for stream, d, deps in tail:
        tasks.append(Task((0, stream), d, [first[-1] + j for j in deps]))
        copy.append(copies)
    return tasks, copy


def _prove(period, tail, prefix=None) -> tuple[float | None, float]:
    """The proof on the run with three copies, and the largest difference between the run with
    ``K`` more copies and the extrapolation with ``P`` (the proof's, else the last copy's shift
    from the one before: what a proof without the check would take)."""
    tasks, copy = _graph(period, tail, 3, prefix)
    tl = run(tasks)
    n_per = len(period)
    proven = state_proof(tl, copy, n_per)
    last = 1 + 2 * n_per
    p = proven if proven is not None else tl.end_s[last] - tl.end_s[last - n_per]
    longer = run(_graph(period, tail, 3 + K, prefix)[0])
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


def test_a_stream_without_a_period_ending_a_task_between_the_instants_is_refused():
    """A long prefix task on w (no period) slows x until 3.35 and ends between ``T1`` (3.3)
    and ``T2`` (4.3): w has not ended as many tasks at both instants, which the frontier check
    of a stream without a period refuses (conservatively: from 3.35 on the run is periodic,
    and a longer truncated run proves it). x's copy 1, started under w's slowdown, would also
    fail the running-task comparison, but that check is not reached here: see
    test_independent_chains_are_refused_by_the_running_tasks_starts for one that is."""
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
    period = state_proof(tl, copy, 5)
    if s_prefix != 0.2:
        assert period is None
        # without the share compared, the proof takes z's shift (1.7; 1.58 from copy 3 on)
        longer, _ = _share_graph(3 + K, s_prefix, 0.2)
        shift = tl.end_s[11] - tl.end_s[6]
        assert abs(max(run(longer).end_s) - max(tl.end_s) - K * shift) > 0.1
        return
    assert period is not None  # equal shares: proven, and the extrapolation is exact
    longer, _ = _share_graph(3 + K, 0.2, 0.2)
    assert max(run(longer).end_s) == pytest.approx(max(tl.end_s) + K * period, rel=1e-12)


# Each graph below is refused by one check alone (removing it from period_of_state_s makes the
# proof accept the shift of the last copy, which the longer run contradicts: ``err``).


def test_independent_chains_are_refused_by_the_running_tasks_starts():
    """Uncontended: y's copies chain at 1.0 each, x's (2.0) run back to back on their own.
    The proof's ``P`` (y's, 1.0) leaves x's frontier one task on at ``T2`` as at ``T1`` (x_1
    runs at ``T2``, x_0 at ``T1``), but x_1 started 2.0 after x_0, not ``P``: the running
    tasks' starts alone tell that x is not in step."""
    period = [("y", 1.0, [0], [], None), ("x", 2.0, [], [], None)]
    proven, err = _prove(period, [("y", 1.0, [0])])
    assert proven is None and err > 1.0  # P = 1.0 would put x's copies 4.0 early


def test_a_running_task_slowed_by_more_tasks_than_its_counterpart_is_refused():
    """w ticks at 2.0; y (2.0) follows w's copy, x (0.5) follows y and slows y by 0.2. y's
    copy 0 ran alone, copy 1 started 2.0 later (in step) but was slowed by x's copy 0: the same
    start, not the same work left (y drifts 0.1 a copy). Only the count of slowers differs."""
    period = [("w", 2.0, [], [], None), ("y", 2.0, [], [0], None),
              ("x", 0.5, [], [1], ("y", 0.2))]
    proven, err = _prove(period, [("w", 1.0, [0])])
    assert proven is None and err > 0.1


def test_a_running_task_whose_ended_slower_ended_out_of_step_is_refused():
    """w (2.0, after y's first task) and x (1.5) slow each other. At ``T1`` (5.14) x_1 runs,
    slowed by w_0 (ended at 3.875) and w_1; at ``T2`` (8.14, ``P`` = 3.0 later) x_2 runs, slowed
    by w_1 (ended at 7.03) and w_2. w_1 started ``P`` after w_0 but ended 3.16 after it (x
    slowed it longer), so x_2 was slowed for longer than x_1: only those ends differ."""
    period = [("y", 1.5, [], [], None), ("w", 2.0, [], [0], ("x", 0.5)),
              ("y", 1.5, [3], [], None), ("x", 1.5, [2], [], ("w", 0.2))]
    proven, err = _prove(period, [("y", 1.0, [0])])
    assert proven is None and err > 0.01


def test_a_prefix_task_ahead_with_another_duration_is_refused():
    """x (0.3) and w (after x) alternate; w's prefix copies take 1.0, the period's 2.0. At
    ``T1`` w_1 (1.0) is ahead of w's frontier, at ``T2`` w_2 (2.0): the same state, not the
    same graph ahead. The shift seen (1.3) is the prefix's, the period's is 2.3."""
    period = [("x", 0.3, [1], [], None), ("w", 2.0, [], [0], None)]
    prefix = [("x", 0.3, [1], [], None), ("w", 1.0, [], [0], None)]
    proven, err = _prove(period, [("x", 1.0, [0])], prefix)
    assert proven is None and err > 1.0


def test_a_prefix_task_ahead_that_slows_otherwise_is_refused():
    """x runs back to back, y (after x's copy) overlaps x's next copy; the prefix's y slows x
    by 0.5, the period's does not. x_2 is slowed by y_1 (shift 1.5), later copies are not
    (1.0): the tasks ahead at ``T1`` and ``T2`` differ only in what they slow."""
    period = [("x", 1.0, [0], [], None), ("y", 1.0, [1], [0], None)]
    prefix = [("x", 1.0, [0], [], None), ("y", 1.0, [1], [0], ("x", 0.5))]
    proven, err = _prove(period, [("x", 1.0, [0])], prefix)
    assert proven is None and err > 1.0


def test_a_prefix_task_ahead_waiting_on_another_task_is_refused():
    """x (1.0) -> y (1.0) -> next x, w (2.0) after x on its own; the prefix's y also waits on
    w. At ``T1`` y_1 waits on x_1 and w_1, at ``T2`` y_2 on x_2 alone: the dependencies not
    ended differ (shift 4.0 in the prefix, 2.0 from the period on)."""
    period = [("x", 1.0, [2], [], None), ("w", 2.0, [], [0], None), ("y", 1.0, [], [0], None)]
    prefix = [("x", 1.0, [2], [], None), ("w", 2.0, [], [0], None),
              ("y", 1.0, [], [0, 1], None)]
    proven, err = _prove(period, [("x", 1.0, [0])], prefix)
    assert proven is None and err > 1.0


def test_a_running_task_whose_ended_slower_started_out_of_step_is_refused():
    """x runs back to back, its first task slowing w's own chain by 0.5; that task takes 1.0
    in the prefix, 0.5 in the period. At ``T1`` (4.625) w_1 runs, slowed by x_1's first task
    (3.25 to 4.25, ended); at ``T2`` (``P`` = 2.5 later) w_2 runs, slowed by x_2's (6.25 to
    6.75). Starts of w and ends of the slowers are in step; the slowers' starts are not (3.0
    apart), so w_2 was slowed for half as long: only those starts differ."""
    period = [("x", 0.5, [], [], ("w", 0.5)), ("w", 2.0, [], [], None), ("x", 2.0, [], [], None)]
    prefix = [("x", 1.0, [], [], ("w", 0.5)), ("w", 2.0, [], [], None), ("x", 2.0, [], [], None)]
    proven, err = _prove(period, [("x", 1.0, [0])], prefix)
    assert proven is None and err > 0.1


# No test refuses by moves()'s "(end[d] < t1) == (end[j] < t2)" alone: with a ``later`` that
# maps a stream's prefix task to a task of the same stream and no two to the same one (the test
# builders' i + n_per; steady_state's twin, the same pass at micro-batch + q), it follows from
# the frontier check. On d's stream (it has a period: j is in it) tasks end in queue order, so
# "ended by T" is a queue prefix; with f1 = f2 - L and later(queue[p]) == queue[p + L] for p in
# [f1, i1): if d is not ended at T1 it is such a queue[p], so j = queue[p + L] is not ended at
# T2; if d ended at T1 but j = queue[i1 + m] had not at T2, then queue[i1 + m - L] (in
# [f1, i1)) also has later j, so ``later`` maps two tasks to j.
