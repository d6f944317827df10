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
the check fails and the caller simulates in full.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable
from operator import attrgetter

import numpy as np

from trainsim.engine.loop import Timeline

REL_TOL = 1e-11
"""Largest difference, relative to B's makespan, between a task's time and its counterpart's
(shifted) that still counts as equal: the same times reached by another chain of additions
differ in their last bits (~1e-14 of the makespan); a state that truly drifts differs by far
more, and extrapolating k periods multiplies what is accepted here by at most k."""


def period_s(a: Timeline, b: Timeline, counterpart: list[int], after: list[bool],
             rel_tol: float = REL_TOL) -> float | None:
    """The period ``P`` by which B's tasks from the cut on follow their counterparts in A
    (``counterpart[i]``: index in A of B's task ``i``, -1 if none; ``after[i]``: whether it is
    from the cut on), or None when B is not A with one period inserted."""
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
    return period if covered.all() else None


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


__all__ = ["FIXED", "REL_TOL", "period_in_run_s", "period_s"]
