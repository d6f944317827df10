"""A periodic steady state, proven on two runs of the same event loop or on one.

Two runs (:func:`period_s`): run A and run B are two task graphs where B is A with one more
repetition (a *period*) of a repeated pattern inserted at a cut, e.g. one more group of
micro-batches in a pipeline's steady phase. Each task of B names its counterpart in A: itself
before the cut, the same task one period earlier from the cut on. If every task of B before the
cut runs when its counterpart does, and every task from the cut on runs exactly ``P`` later than
its counterpart, then the loop's whole state at the cut (what runs, what waits, on every stream)
repeats ``P`` later. The loop is deterministic and unchanged by a shift of time, so inserting
``k`` periods moves everything after the cut by ``k * P``, and any sum over the tasks grows by
``k`` times B's less A's: the rest is extrapolated, not simulated.

One run (:func:`period_in_run_s`): where nothing slows a stream while it runs the period, the
loop's times there are a max-plus recurrence (a task starts at the latest end of its inputs),
so run A alone shows what B would: the ends the period waits on, at A's cut and one period
earlier, are compared instead of simulating B.

Where the state does not repeat (contention that drifts, a pattern longer than the period),
or repeats only within the tolerance on an orbit that contention makes unstable (a deviation
that grows every period, :data:`GROWTH_TOL`), the check fails and the caller simulates in full.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from operator import attrgetter

import numpy as np

from trainsim.engine.loop import Task, Timeline

REL_TOL = 1e-11
"""Largest difference, relative to B's makespan, between a task's time and its counterpart's
(shifted) that still counts as equal: the same times reached by another chain of additions
differ in their last bits (~1e-14 of the makespan); a state that truly drifts differs by far
more. Where nothing slows a stream, the loop is max-plus, which never widens a deviation
between task times, so extrapolating k periods multiplies what is accepted here by at most k;
where tasks slow each other it can widen it (see :data:`GROWTH_TOL`)."""

GROWTH_TOL = 1e-14
"""Where tasks slow each other, a deviation can grow every period: a task that starts before
another that slows it by share ``s`` and ends while that one runs ends ``1 / (1 - s)`` later
for every second it starts later, so one on a fixed clock amplifies any deviation of the other
(at ``s = 0.5`` it doubles each period: 1e-13 accepted by :data:`REL_TOL` is 0.5 s off after
40 periods, tests/test_periodic_growth.py). A tolerance accepts such a deviation; extrapolating
it is not sound. So where tasks slow a stream the proofs also compare the *spread* of the
ends' one-period shifts (the largest less the smallest across the tasks of a copy: a common
shift of time leaves it 0, and it is 0 on an orbit that truly repeats) between two consecutive
copies, and refuse where the later one is wider by more than this fraction of the makespan;
where there is no earlier copy, where it is wider than this. The argument: near a periodic
orbit, one period of the loop maps a small deviation linearly (the loop is piecewise affine in
its start times, and within one piece the same events follow in the same order), so the
spread is multiplied by the same factor every period; a spread that did not widen over one
period has a factor of at most 1 and the ``k`` bound holds. Its limits: a copy still in the
warm-up's transient is wider, which can hide the growth of the next (on the public file every
state proof's earlier copy is far wider than its later one); and growth under this floor is
accepted, a deviation of rounding size that the full simulation's own rounding meets the same
way (a shift that is 1e-15 of the makespan doubling each period; the floor is ~45 ulps, and a
stable contended orbit's spread goes from 1/4 to 1/2 ulp by rounding alone)."""


def _spread(shifts: np.ndarray) -> float:
    """The latest less the earliest of some one-period shifts (0 where there are none)."""
    return float(shifts.max() - shifts.min()) if len(shifts) else 0.0


def _grows(early: float | None, late: float, makespan: float) -> bool:
    """Whether a spread of shifts grew over a period (``early``: a period earlier, None where
    there is none: then ``late`` must be rounding), by :data:`GROWTH_TOL` of the makespan."""
    floor = GROWTH_TOL * makespan
    return late > floor if early is None else late > early + floor


def period_s(a: Timeline, b: Timeline, counterpart: list[int], after: list[bool],
             rel_tol: float = REL_TOL) -> float | None:
    """The period ``P`` by which B's tasks from the cut on follow their counterparts in A
    (``counterpart[i]``: index in A of B's task ``i``, -1 if none; ``after[i]``: whether it is
    from the cut on), or None when B is not A with one period inserted. Where tasks of B slow
    a stream, also None where the spread of B's ends less their counterparts' grows from the
    first copy after the cut to the next (:data:`GROWTH_TOL`)."""
    if len(counterpart) != len(b.tasks) or len(after) != len(b.tasks):
        return None
    period = b.makespan_s - a.makespan_s
    if not period > 0:
        return None
    j = np.asarray(counterpart, dtype=np.int64)
    if len(j) and j.min() < 0:
        return None
    # the same float operations as a loop over the tasks, element by element
    dur_a = np.fromiter((t.duration_s for t in a.tasks), float, len(a.tasks))
    dur_b = np.fromiter((t.duration_s for t in b.tasks), float, len(b.tasks))
    if not np.array_equal(dur_a[j], dur_b):
        return None
    shift = np.where(np.asarray(after, dtype=bool), period, 0.0)
    tol = rel_tol * b.makespan_s
    for times_a, times_b in ((a.start_s, b.start_s), (a.end_s, b.end_s)):
        if not np.all(np.abs(np.asarray(times_b) - np.asarray(times_a)[j] - shift) <= tol):
            return None
    covered = np.zeros(len(a.tasks), dtype=bool)
    covered[j] = True
    if any(t.slows is not None for t in b.tasks) and _tail_grows(a, b, j, after):
        return None
    return period if covered.all() else None


def _tail_grows(a: Timeline, b: Timeline, j: np.ndarray, after: list[bool]) -> bool:
    """Whether the spread of B's ends less their counterparts' grows from the first copy
    after the cut (on each stream, its first ``L`` tasks from the cut on, ``L`` the tasks B
    has more there) to the next (:data:`GROWTH_TOL`): at the cut B is A one period on, up to
    what the tolerance accepts, and a deviation that contention widens grows copy by copy."""
    early: list[int] = []
    late: list[int] = []
    for stream, queue in b.queues.items():
        span = len(queue) - len(a.queues.get(stream, ()))
        tail = [i for i in queue if after[i]]
        if span > 0:
            early += tail[:span]
            late += tail[span:2 * span]
    shift = np.asarray(b.end_s) - np.asarray(a.end_s)[j]
    if not late:
        return False
    return _grows(_spread(shift[early]) if early else None, _spread(shift[late]),
                  b.makespan_s)


FIXED = -2
"""What ``twin`` answers for a task that is the same in every run (placed before any pass)."""


def period_in_run_s(tl: Timeline, part: bytes, bounds: dict[tuple[int, str], tuple[int, int]],
                    twin: Callable[[int], int], rel_tol: float = REL_TOL) -> float | None:
    """The period ``P`` proven on one run, or None.

    The run is a prefix (``part[i] == 0``), one period (1) and a tail (2); ``bounds[stream]``
    says where its queue's period and tail begin; tasks wait only on earlier tasks (as the
    graph builder places them). ``twin(i)``: for a prefix task, its counterpart one period
    later (a task of the period), -1 if none, or FIXED (the same in every run). The same graph
    with ``k`` more periods, G_k, has on each stream the prefix, ``k + 1`` copies of the
    period and the tail, with the same durations; copy ``j`` waits on copy ``j`` where the
    period waits on the period, and on copy ``j - 1``'s ``twin(h)`` where it waits on a prefix
    task ``h`` of another stream (copy 0: on ``h``); the tail waits on copy ``k`` where it waits on the period, on
    copy ``k - 1``'s ``twin(h)`` where on such an ``h``, and on the same task where on a FIXED
    one. The claim: in G_k, copy ``j`` runs ``j P`` after the period here and the tail ``k P``
    after its own time here.

    A task starts at the latest end among its *inputs*: its stream's previous task and its
    dependencies (one on its own stream ended before the previous task: it is never the
    latest). Without contention, that and its duration give its end, so by induction in the
    loop's order the claim holds where every input of copy ``j``'s task ends ``j P`` after its
    counterpart's input here, and every tail task starts when an input that moves by ``k P``
    ends. Checked, each a reason to return None:

    - *slows*: no task slows a stream while that stream runs the period; one of the prefix has
      ended before that stream's period (or tail) starts, one of the tail starts once that
      stream's period has ended (contention is among the prefix's tasks or the tail's alone,
      the same in G_k, and the loop is unchanged by a shift of time);
    - *cut*: on a stream with a period, its last prefix task's twin is its last period task and
      ends ``P`` after it (copy ``j``'s first task waits on copy ``j - 1``'s last as the period's
      on that prefix task, ``P`` earlier); the one ``P``, more than 0, is the same for every
      twin compared;
    - *period inputs*: the period waits on nothing of the tail and, on another stream, only on
      the period or a prefix task whose twin (of the period, the same duration) ends ``P``
      after it (a *moving* prefix task);
    - *tail inputs*: every tail task has an input that moves by ``k P`` (the period, the tail,
      a moving prefix task) ending when it starts, and its other inputs are the same in G_k:
      FIXED tasks, or the previous task of a stream without a period. A tail task with none
      (a root; one that waits on FIXED tasks alone) does not move; one that waits on another
      prefix task is refused, its counterpart in G_k unknown. Only those with such an input
      are checked, or that start their stream's tail with no period before it: the others
      have the previous task of their stream, which moves, and nothing that does not;
    - *prefix inputs*: the prefix waits on nothing of the tail (G_k's prefix is this one).

    This is :func:`period_s`'s conclusion (B is A with a period inserted) without simulating
    B: A's state at the cut and one period earlier are compared instead."""
    tasks, start, end = tl.tasks, tl.start_s, tl.end_s
    n = len(tasks)
    if len(part) != n or not n:
        return None
    streams = tl.queues
    tail_from = min((q[i2] for stream, q in streams.items()
                     for i2 in (bounds.get(stream, (len(q), len(q)))[1],) if i2 < len(q)),
                    default=n)
    # a task slows the stream it names while it runs: those of the prefix must have ended
    # before that stream's period starts, those of the tail start after it has ended
    slows = list(map(attrgetter("slows"), tasks))
    for i in (i for i, sl in enumerate(slows) if sl is not None) if any(slows) else ():
        queue = streams.get(slows[i][0])
        if queue is not None:
            i1, i2 = bounds.get(slows[i][0], (len(queue), len(queue)))
            if part[i] == 1 or (part[i] == 0 and i1 < len(queue) and
                                not end[i] < start[queue[i1]]) or (
                    part[i] == 2 and i2 and not start[i] >= end[queue[i2 - 1]]):
                return None
    tol = rel_tol * max(end)
    period: list[float] = []  # the first twin's shift, which all others must equal
    moved: dict[int, bool] = {}  # prefix task -> whether its twin ends one period later

    def moves(h: int) -> bool:
        ok = moved.get(h)
        if ok is None:
            j = twin(h)
            ok = j >= 0 and part[j] == 1 and tasks[j].duration_s == tasks[h].duration_s
            if ok:
                shift = end[j] - end[h]
                if not period:
                    period.append(shift)
                ok = abs(shift - period[0]) <= tol
            moved[h] = ok
        return ok

    def tail_moves(x: int, k: int, stream: tuple[int, str]) -> bool:
        """Whether tail task ``x`` (``k``-th of its stream) starts when an input that moves
        ends, its others the same in G_k (the stream's previous task of the prefix, FIXED)."""
        latest = -math.inf
        if k and part[streams[stream][k - 1]]:
            latest = end[streams[stream][k - 1]]
        for d in tasks[x].deps:
            if tasks[d].stream != stream:
                if part[d] or moves(d):
                    latest = max(latest, end[d])
                elif twin(d) != FIXED:
                    return False
        return latest >= start[x] - tol

    for stream, queue in streams.items():
        i1, i2 = bounds.get(stream, (len(queue), len(queue)))
        if i1 < i2 and not (i1 and twin(queue[i1 - 1]) == queue[i2 - 1]
                            and moves(queue[i1 - 1])):  # the stream's state at the cut
            return None
        for x in queue[i1:i2]:  # the period: what it waits on must move with it
            for d in tasks[x].deps:
                pd = part[d]
                if pd != 1 and (pd or (tasks[d].stream != stream and not moves(d))):
                    return None
        for k in range(i2, len(queue)):  # the tail: started by what moves
            if k == i2 and not (k and part[queue[k - 1]]):  # its stream has no period
                if not tail_moves(queue[k], k, stream):
                    return None
                continue
            for d in tasks[queue[k]].deps:
                if not part[d] and tasks[d].stream != stream and not moves(d):
                    if not tail_moves(queue[k], k, stream):
                        return None
                    break
        # the prefix waits on nothing of the tail (a task waits only on earlier ones)
        for x in queue[bisect_right(queue, tail_from, 0, i1):i1]:
            if any(part[d] == 2 for d in tasks[x].deps):
                return None
    if not period or not period[0] > 0:
        return None
    return period[0]


def period_of_state_s(tl: Timeline, part: bytes,
                      bounds: dict[tuple[int, str], tuple[int, int]],
                      later: Callable[[int], int],
                      rel_tol: float = REL_TOL) -> float | None:
    """The period ``P`` proven on one run by the loop's *state* repeating, contended or not; or
    None. ``part`` and ``bounds`` as for :func:`period_in_run_s`; ``later(i)``: the task one
    period after task ``i`` (the same pass, micro-batch + q), -1 if none, FIXED if ``i`` is the
    same in every run. The claim is :func:`period_in_run_s`'s: in G_k copy ``j`` of the period
    runs ``j P`` after the period here, the tail ``k P`` after its own time here.

    The loop's state at an instant ``T`` (every event before it handled) is: per stream, how
    many of its tasks have ended (its queue runs in order); per running task, its start and the
    work it has left, which is its duration less its work so far at ``1 - held`` of its rate,
    the shares held on its stream by the tasks that slowed it since it started; the shares
    held now (those of the running tasks); the pending finish events (the running tasks' ends
    at the current rates); per task not started, its dependencies not ended. The loop is
    deterministic and unchanged by a shift of time, so two states equal up to a shift of time
    and of task identities have the same futures wherever the graphs ahead are equal too.

    ``T2`` is before the first moment a stream ends its period or a tail task starts, halfway
    between the last two events before it that are more than the tolerance apart, and
    ``T1 = T2 - P``. Until ``T2``, G_k (the same prefix and
    period; the copies and the tail start only after a period ends) runs as this run. Checked,
    each a reason to return None:

    - *frontier*: on each stream with a period, the first task not ended at ``T2`` is
      ``later`` of the first not ended at ``T1``, ``L`` (its period's length) places on; on
      each stream without one, the same count has ended at both and what is left is tail
      that has not started;
    - *running*: that task has started at ``T2`` exactly when its counterpart had at ``T1``,
      ``P`` later; every task that slowed it since (a slowing task on another stream, which
      ended after it started) is ``later`` of one that slowed its counterpart, started ``P``
      later and, where it has ended, ended ``P`` later, with as many on either side;
    - *graph ahead*: from those frontiers to the period's end, each task has the duration and
      the slowing of the one ``L`` before it, and its dependencies not ended at ``T2`` are
      ``later`` of that one's not ended at ``T1``; the period waits on the period, its
      stream's own earlier tasks (ended before the task can start: they never delay it), or
      prefix tasks whose ``later`` is in the period, or in the prefix and moving itself, and
      ended by ``T2`` where they had by ``T1`` (*moving*: copy ``c`` waits on ``later`` of such
      a task ``c`` times, in the prefix or in a copy, settle59; zb_2p's neighbours run their
      passes periods apart); the tail on what moves (the period, the tail, moving prefix tasks),
      its stream's own tasks, or FIXED tasks ended by ``T1``;
      a stream without a period has its first task left wait on a stream that has one
      (so it does not start before ``T2`` in G_k); the prefix on nothing of the tail (what
      ended or runs at ``T2`` cannot, the rest is ahead of a frontier).

    - *growth*: where tasks slow a stream, the spread of the ends' one-period shifts does not
      grow from the copy before the period's to the last copy before it (:data:`GROWTH_TOL`:
      what the tolerance accepts, contention could widen every period).

    Then G_k from ``T2`` is G_(k-1) from ``T1``, ``P`` later and one period on (by induction
    from G_0, this run): the claim. Times are compared to ``rel_tol`` of the makespan (events
    at the same instant are handled in task order, so sums of shares may differ in their last
    bits)."""
    tasks, start, end = tl.tasks, tl.start_s, tl.end_s
    n = len(tasks)
    if len(part) != n or not n:
        return None
    known: dict[int, int] = {}

    def later_of(i: int) -> int:
        j = known.get(i)
        if j is None:
            j = known[i] = later(i)
        return j

    streams = tl.queues
    spans = {stream: bounds.get(stream, (len(q), len(q))) for stream, q in streams.items()}
    with_period = [stream for stream, (i1, i2) in spans.items() if i1 < i2]
    if not with_period:
        return None
    starts, ends = np.asarray(start), np.asarray(end)
    tol = rel_tol * float(ends.max())
    q0 = streams[with_period[0]]
    i1, i2 = spans[with_period[0]]
    if not i1 or later_of(q0[i1 - 1]) != q0[i2 - 1]:
        return None
    period = end[q0[i2 - 1]] - end[q0[i1 - 1]]
    if not period > 0:
        return None
    t2 = min(end[streams[s][spans[s][1] - 1]] for s in with_period)
    tail = np.frombuffer(part, dtype=np.uint8) == 2
    if tail.any():
        t2 = min(t2, float(starts[tail].min()))
    # the latest gap between events before it that the tolerance keeps apart on both sides
    # (sorted, equal times kept: their gap of 0 is never over 4 * tol, so the gaps found are
    # np.unique's; np.unique imports numpy.ma on first use, ~40 ms of each validate worker)
    times = np.sort(np.concatenate((starts[starts < t2], ends[ends < t2], [t2])))
    gaps = np.flatnonzero(np.diff(times) > 4 * tol)
    if not len(gaps):
        return None
    t2 = float(times[gaps[-1]] + times[gaps[-1] + 1]) / 2
    t1 = t2 - period
    slowing: dict[tuple[int, str], list[int]] = {}  # per stream, the tasks that slow it
    for i, sl in enumerate(map(attrgetter("slows"), tasks)):
        if sl is not None:
            slowing.setdefault(sl[0], []).append(i)

    def near(a: float, b: float) -> bool:
        return abs(a - b - period) <= tol

    def ended(queue: list[int], at: float) -> int:
        return int(np.count_nonzero(ends[queue] < at))

    def slowed(r: int, at: float) -> list[int]:
        """The tasks that slowed ``r`` from its start up to ``at``."""
        return [y for y in slowing.get(tasks[r].stream, ())
                if start[y] < at and end[y] > start[r] + tol]

    def moves(d: int) -> bool:
        """Whether prefix task ``d``'s ``later`` is of the period, or of the prefix and moving
        itself, and ended by ``T2`` where ``d`` had by ``T1`` (a copy waits on the copy
        before's ``later(d)`` where the period waits on ``d``: what it has left to wait on is
        the same). Copy ``c`` of a task waiting on ``d`` waits on ``later`` of ``d`` ``c``
        times: in the prefix while that is, as copy ``c - 1`` on ``later`` ``c - 1`` times."""
        while True:
            j = later_of(d)
            if j < 0 or part[j] == 2 or (end[d] < t1) != (end[j] < t2):
                return False
            if part[j] == 1:
                return True
            d = j

    for stream, queue in streams.items():
        i1, i2 = spans[stream]
        f2, f1 = ended(queue, t2), ended(queue, t1)
        if i1 == i2:  # no period: the same ended, the rest tail not started
            if f1 != f2 or (f2 < len(queue) and not (
                    part[queue[f2]] == 2 and any(
                        part[d] and spans[tasks[d].stream][0] < spans[tasks[d].stream][1]
                        for d in tasks[queue[f2]].deps))):
                return None
            continue
        if f1 != f2 - (i2 - i1) or f1 < 0:
            return None
        r1, r2 = queue[f1], queue[f2]
        if (start[r1] < t1) != (start[r2] < t2) or (start[r2] < t2 and not (
                near(start[r2], start[r1]) and _same_slowing(
                    slowed(r1, t1), slowed(r2, t2), later_of, start, end, t1, near, tasks))):
            return None
        for p in range(f1, i1):  # the graph ahead repeats the one a period earlier
            x, x2 = queue[p], queue[p + i2 - i1]
            if later_of(x) != x2 or tasks[x].duration_s != tasks[x2].duration_s or \
                    tasks[x].slows != tasks[x2].slows:
                return None
            ahead = [later_of(d) for d in tasks[x].deps if not end[d] < t1]
            if min(ahead, default=0) < 0 or sorted(ahead) != sorted(
                    d for d in tasks[x2].deps if not end[d] < t2):
                return None
        for x in queue[i1:i2]:  # the period: its copies wait on what moves with them
            for d in tasks[x].deps:
                pd = part[d]
                if pd == 2 or (not pd and tasks[d].stream != stream and not moves(d)):
                    return None
        for x in queue[i2:]:  # the tail: on what moves, or on what is the same in every run
            for d in tasks[x].deps:
                if not part[d] and tasks[d].stream != stream and not (
                        moves(d) or (later_of(d) == FIXED and end[d] < t1)):
                    return None
    # (a prefix task waiting on the tail: ended or running by T2 it cannot, the tail not
    # started; otherwise it is ahead of a frontier, and no ``later`` is of the tail)
    if slowing and _state_grows(streams, spans, with_period, later_of, ends):
        return None
    return period


def _state_grows(streams: dict[tuple[int, str], list[int]],
                 spans: dict[tuple[int, str], tuple[int, int]],
                 with_period: list[tuple[int, str]], later: Callable[[int], int],
                 ends: np.ndarray) -> bool:
    """Whether the spread of the ends' one-period shifts grows (:data:`GROWTH_TOL`) from the
    copy before the last one before the period (on each stream, ``L`` tasks against those
    ``L`` places on, ``L`` its period's length) to that last one (its ``L`` tasks against the
    period's). A copy is compared where its first and last tasks' ``later`` are ``L`` places
    on (a stream runs its tasks in order, those between them map to those between theirs);
    checking every task's costs ~5 % of a validation run."""
    late: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])  # (tasks, their later)
    early: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])  # the copy before
    for stream in with_period:
        queue = streams[stream]
        i1, i2 = spans[stream]
        span = i2 - i1
        for lo, side in ((i1 - span, late), (i1 - 2 * span, early)):
            if lo >= 0 and all(later(queue[p]) == queue[p + span] for p in (lo, lo + span - 1)):
                side[0].append(np.asarray(queue[lo:lo + span]))
                side[1].append(np.asarray(queue[lo + span:lo + 2 * span]))
    if not late[0]:
        return False
    spread = [_spread(ends[np.concatenate(b)] - ends[np.concatenate(a)]) if a else None
              for a, b in (early, late)]
    return _grows(spread[0], spread[1], float(ends.max()))


def _same_slowing(ys1: list[int], ys2: list[int], later: Callable[[int], int],
                  start: list[float], end: list[float], t1: float,
                  near: Callable[[float, float], bool], tasks: Sequence[Task]) -> bool:
    """Whether the tasks that slowed a running task up to ``T2`` (``ys2``) are ``later`` of
    those that slowed its counterpart up to ``T1`` (``ys1``), each ``P`` later and by the same
    share (the work the running task has left depends on it, an ended slower's included)."""
    if len(ys1) != len(ys2) or sorted(map(later, ys1)) != sorted(ys2):
        return False
    return all(near(start[later(y)], start[y]) and tasks[y].slows == tasks[later(y)].slows
               and (not end[y] < t1 or near(end[later(y)], end[y])) for y in ys1)


def slopes_s(a: Timeline, b: Timeline, counterpart: list[int], after: list[bool],
             member: np.ndarray, fixed: np.ndarray, origin: tuple[float, float] = (0.0, 0.0),
             rel_tol: float = REL_TOL) -> np.ndarray | None:
    """Per task of B, how much later it runs for each period inserted (its *slope*), proven
    where streams keep paces of their own (a stage fed faster than it runs, nothing pacing it
    back: GPipe's phases); or None. Only the tasks of ``member`` (B's, a boolean mask) are
    checked, their times taken from ``origin`` (A's, B's); any other input of theirs is
    counted as ending no later than its origin and moving with it (slope 0). ``counterpart``
    and ``after`` as for :func:`period_s`; ``fixed``: B's tasks that are the same in every run
    (placed before any pass).

    G_k is A with ``k`` periods inserted at the cut: its prefix, copies 0 to ``k`` of A's
    period (the tasks before the cut that are some later task's counterpart), and the tail.
    B is G_1: its tasks before the cut are the prefix and copy 0, from it copy 1 and the tail.
    The claim: copy ``j`` of a task runs ``j`` times its slope after copy 0 (A's period), a
    tail task ``k`` times its slope after A's. A slope is B's time less A's for a task from
    the cut on (its start's and its end's the same), that of its copy-1 twin for copy 0, and
    0 for the prefix. Where no task slows another (the caller checks), a task starts at the
    latest end of its inputs (its stream's previous task, its dependencies), so by induction
    in the loop's order the claim holds where every task from the cut on has the duration of
    its counterpart, no input of a larger slope (it would overtake), and one of its own slope
    ending when it starts in B (the latest then, and for every ``k``); where its inputs in
    G_k are their B counterparts' images (copy 1's input in copy 0 is copy ``j - 1``'s, as
    the builder repeats a period's dependencies): the prefix's (its slope 0) only where FIXED
    alike. The prefix and copy 0 run in B as in A and wait on nothing from the cut on."""
    n = len(b.tasks)
    if len(counterpart) != n or len(after) != n:
        return None
    j = np.asarray(counterpart, dtype=np.int64)
    if len(j) and j[member].min(initial=0) < 0:
        return None
    dur_a = np.fromiter((t.duration_s for t in a.tasks), float, len(a.tasks))
    dur_b = np.fromiter((t.duration_s for t in b.tasks), float, n)
    jm = np.where(member, j, 0)
    if not np.array_equal(dur_a[jm][member], dur_b[member]):
        return None
    late = np.asarray(after, dtype=bool) & member
    tol = rel_tol * b.makespan_s
    shift = {}
    for times_a, times_b in ((a.start_s, b.start_s), (a.end_s, b.end_s)):
        d = np.asarray(times_b) - origin[1] - (np.asarray(times_a)[jm] - origin[0])
        if not np.all(np.abs(d[member & ~late]) <= tol):
            return None  # before the cut, B runs as A
        shift[len(shift)] = d
    if not np.all(np.abs(shift[0][late] - shift[1][late]) <= tol):
        return None
    slope = np.where(late, shift[0], 0.0)
    twin_slope = dict(zip(j[late].tolist(), slope[late].tolist()))
    if len(twin_slope) != int(late.sum()):
        return None  # two tasks from the cut on with one counterpart
    early = member & ~late
    for i in np.flatnonzero(early):
        slope[i] = twin_slope.get(int(j[i]), 0.0)
    start, end, tasks = b.start_s, b.end_s, b.tasks
    prev = np.full(n, -1, dtype=np.int64)
    for queue in b.queues.values():
        prev[queue[1:]] = queue[:-1]
    copy0 = {int(j[i]) for i in np.flatnonzero(early)} & twin_slope.keys()
    for x in np.flatnonzero(member):
        ins = tasks[x].deps + ([int(prev[x])] if prev[x] >= 0 else [])
        if not late[x]:
            if any(late[d] for d in ins):
                return None  # the prefix and copy 0 wait on nothing from the cut on
            continue
        own, binding = slope[x], False
        for d in ins:
            if member[d]:
                sd = slope[d]
                if not late[d] and int(j[d]) not in copy0 and \
                        tasks[d].stream != tasks[x].stream and not fixed[d]:
                    return None  # a prefix input: its image in G_k unknown
                ed = end[d] - origin[1]
            else:
                sd, ed = 0.0, min(end[d] - origin[1], 0.0)
            if sd > own + tol:
                return None
            binding |= ed >= start[x] - origin[1] - tol and sd >= own - tol
        if not binding and not (not ins and abs(own) <= tol):
            return None
    return slope


__all__ = ["FIXED", "GROWTH_TOL", "REL_TOL", "period_in_run_s", "period_of_state_s", "period_s",
           "slopes_s"]
