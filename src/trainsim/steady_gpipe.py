"""GPipe's periodic steady state, proven on two truncated runs as two phases with paces of their
own per stream.

GPipe (Huang et al. 2019; torch ``ScheduleGPipe``, ``workload.pipeline_schedules.gpipe``) runs
every forward, then every backward, both in micro-batch order. One micro-batch more inserts a
forward at the end of every rank's forward phase and a backward in its backward phase: two
places, which the one cut of :mod:`trainsim.steady_state` does not describe. And nothing paces a
stage back: a stage fed faster than it runs keeps its own pace, so the forward phase's streams
do not share one period (stage s runs at the pace of the slowest stage up to it, the backward
phase likewise from the last stage down), and neither proof of ``engine.periodic`` that assumes
one period ``P`` for every stream holds.

The proof here (:func:`gpipe_proven`): run A has ``m_a`` micro-batches, B one more. The
*forward phase* (the passes before each rank's first backward, and what is placed before any
pass) ends at ``T0``, the last stage's last forward, before any task of the *backward phase*
starts, in A and in B. Then the backward phase depends on the forward phase only through
``T0``: what it waits on there has ended by ``T0``. Each phase is A's with one period inserted
(the forward phase at its last forward, the backward phase one backward before its last, whose
backward the graph builder gives the gradient reduction), and :func:`engine.periodic.slopes_s`
proves each task's slope (per period inserted) on it: the forward phase's from time 0, the
backward phase's from ``T0``. A forward task moving faster than ``T0`` would overtake it:
refused. So G_k (``k`` periods more than A) runs its forward phase as A's with ``k`` periods,
``T0`` ``k`` forward slopes later, and its backward phase as A's with ``k`` periods after
that: every task time, so every sum the result is made of, is linear in ``k``; the caller
extrapolates B's less A's as for the one-cut proof.

Contention (a task that slows another stream: a data-parallel collective, an overlapped send)
breaks the max-plus step of that proof; it is accepted where it cannot move: slowing tasks
placed before the passes that end before the first pass of the stream they slow starts, and
slowing tasks of the backward phase's tail (past the inserted periods: the gradient reduction
after the last backward) that overlap only tail tasks of its own slope and keep their order
with the rest of that stream (a task before it moving no faster, one after it no slower).
Contention inside the periods (overlapped sends: each send on a stage's pipeline stream slows
that stage's next pass, every period) is proven where the slowing and the slowed streams of a
phase keep one pace and every task is slowed in every longer run as its representative in B
is (:class:`_Rigid`). Anything else is refused: simulated in full.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from trainsim.config import RunConfig
from trainsim.engine import Timeline
from trainsim.engine.periodic import GROWTH_TOL, REL_TOL, slopes_s
from trainsim.optimizer_tasks import AFTER, BEFORE
from trainsim.summary import Summary, critical_stage, stage_sums, totals


def _b_to_a(tag: int, m_a: int) -> tuple[int, bool, bool]:
    """For a task of B (``m_a + 1`` micro-batches) at schedule position ``tag``: its
    counterpart's position in A, whether it is from its phase's cut on, whether it is of the
    forward phase. B's order is F0..F(m_a), B0..B(m_a); A's is F0..F(m_a - 1), B0..B(m_a - 1).
    The forward period is A's last forward (position m_a - 1), the backward period A's
    B(m_a - 2) (position 2 m_a - 2): the last backward, which the builder gives the gradient
    reduction, stays in the tail."""
    if tag == BEFORE:
        return tag, False, True
    if tag == AFTER:
        return tag, True, False
    if tag < m_a:
        return tag, False, True
    if tag == m_a:
        return m_a - 1, True, True
    if tag < 2 * m_a:
        return tag - 1, False, False
    return tag - 2, True, False


def _matching(ta: Timeline, tb: Timeline, tags_a: list[int], tags_b: list[int], m_a: int
              ) -> tuple[list[int], list[bool], np.ndarray] | None:
    """Per task of B, its counterpart in A, whether it is from its phase's cut on, and the mask
    of B's forward-phase tasks; None where B's tasks are not A's with the two periods inserted.
    On each stream the k-th task of B at a position is matched with the k-th of A at the
    counterpart position."""
    if ta.queues.keys() != tb.queues.keys():
        return None
    n = len(tb.tasks)
    counterpart, after, forward = [-1] * n, [False] * n, np.zeros(n, dtype=bool)
    covered = np.zeros(len(ta.tasks), dtype=bool)
    for stream, queue_b in tb.queues.items():
        at: dict[int, list[int]] = defaultdict(list)
        for i in ta.queues[stream]:
            at[tags_a[i]].append(i)
        seen: dict[tuple[int, bool], int] = defaultdict(int)
        for i in queue_b:
            tag, late, fwd = _b_to_a(tags_b[i], m_a)
            k = seen[tag, late]
            seen[tag, late] += 1
            if k >= len(at.get(tag, ())):
                return None
            counterpart[i], after[i], forward[i] = at[tag][k], late, fwd
            covered[at[tag][k]] = True
        if any(seen[tag, late] != len(at[tag]) for tag, late in seen):
            return None  # a counterpart position with more tasks in A
    return (counterpart, after, forward) if covered.all() else None


def gpipe_proven(ta: Timeline, tb: Timeline, tags_a: list[int], tags_b: list[int], m_a: int,
                 rel_tol: float = REL_TOL) -> bool:
    """Whether GPipe's run of ``m_a + 1`` micro-batches (B) is the one of ``m_a`` (A) with a
    forward and a backward period inserted such that every longer run is A's with as many more
    (the module's proof): B's tasks against A's, counterparts matched by schedule position."""
    found = _matching(ta, tb, tags_a, tags_b, m_a)
    if found is None:
        return False
    counterpart, after, forward = found
    if any(t.slows != ta.tasks[i].slows for t, i in zip(tb.tasks, counterpart)):
        return False  # a task slowing other than its counterpart does
    tol = rel_tol * tb.makespan_s
    fixed = np.asarray(tags_b) == BEFORE
    t0 = forward_phase_ends(ta, tb, np.asarray(counterpart)[forward], forward)
    if t0 is None:
        return False
    slope_t0 = t0[1] - t0[0]
    sf = slopes_s(ta, tb, counterpart, after, forward, fixed, (0.0, 0.0), rel_tol)
    if sf is None or not slope_t0 > tol or sf[forward].max() > slope_t0 + tol:
        return False  # a forward task overtaking the end of the forward phase
    sb = slopes_s(ta, tb, counterpart, after, ~forward, fixed, (t0[0], t0[1]), rel_tol)
    if sb is None:
        return False
    slope = np.where(forward, sf, slope_t0 + sb)  # per period, from time 0
    if slope.min() < -tol:
        return False
    local = np.where(forward, sf, sb)  # per period, from its phase's start
    dev = _deviations(ta, tb, counterpart, after, forward, local, (t0[0], t0[1]))
    return _contention_holds(tb, counterpart, after, forward, slope, tol,
                             _Rigid(tb, counterpart, after, forward, local, dev, tol,
                                    GROWTH_TOL * tb.makespan_s))


def _contention_holds(tb: Timeline, counterpart: list[int], after: list[bool],
                      forward: np.ndarray, slope: np.ndarray, tol: float, rigid: _Rigid
                      ) -> bool:
    """Whether every task that slows a stream does so the same way in every longer run: before
    the passes, ended before the first pass of the stream it slows moves; or in the backward
    phase's tail, overlapping only tail tasks of its own slope, the rest of that stream in the
    same order with it in every longer run (see the module docstring); or, where neither holds,
    as :class:`_Rigid` proves it (the slowed and slowing streams of a stage at one pace)."""
    tasks, start, end = tb.tasks, tb.start_s, tb.end_s
    late = np.asarray(after, dtype=bool)
    j = np.asarray(counterpart)
    copies = set(j[late].tolist()) & set(j[~late].tolist())
    tail = late & ~forward & ~np.isin(j, list(copies))
    moving = late | np.isin(j, list(copies)) | ~forward  # the prefix is the rest
    for y in (i for i, t in enumerate(tasks) if t.slows is not None):
        if not rigid.holds(y) and not _holds_at_ends(y, tb, tail, moving, slope, tol, start,
                                                     end):
            return False
    return True


def _holds_at_ends(y: int, tb: Timeline, tail: np.ndarray, moving: np.ndarray,
                   slope: np.ndarray, tol: float, start: list[float], end: list[float]) -> bool:
    """:func:`_contention_holds` for slowing task ``y`` before the passes or in the tail."""
    queue = tb.queues.get(tb.tasks[y].slows[0], [])
    if not (tail[y] or not moving[y]):
        return False  # slowing inside the periods (every period contends)
    if not moving[y]:
        first = next((x for x in queue if moving[x]), None)
        return first is None or end[y] <= start[first]
    before_tail = [x for x in queue if not tail[x]]
    for x in before_tail[-1:] + [x for x in queue if tail[x]]:
        if end[x] <= start[y]:
            ok = slope[x] <= slope[y] + tol
        elif start[x] >= end[y]:
            ok = slope[x] >= slope[y] - tol
        else:
            ok = tail[x] and abs(slope[x] - slope[y]) <= tol
        if not ok:
            return False
    return True


PREFIX, COPY0, COPY1, TAIL = range(4)


def _deviations(ta: Timeline, tb: Timeline, counterpart: list[int], after: list[bool],
                forward: np.ndarray, local: np.ndarray, t0: tuple[float, float]) -> np.ndarray:
    """Per task of B, how far its start or end (the larger) is from its counterpart's in A
    moved as the proof moves it (its phase's origin, and from the cut on its slope)."""
    j = np.asarray(counterpart)
    shift = np.where(forward, 0.0, t0[1] - t0[0]) + np.where(after, local, 0.0)
    return np.maximum(
        np.abs(np.asarray(tb.start_s) - np.asarray(ta.start_s)[j] - shift),
        np.abs(np.asarray(tb.end_s) - np.asarray(ta.end_s)[j] - shift))


class _Rigid:
    """Contention inside the periods, proven where the slowing and the slowed tasks of a phase
    keep one pace (GPipe's overlapped sends: a send on a stage's pipeline stream slows its next
    pass on the compute stream, every period).

    In G_k (A with ``k`` periods inserted) a task of B's phase is one of: the *prefix* (as in
    A, its phase's origin moved), *copy* ``c`` of A's period (c = 0..k, copy 0 A's own: B's
    tasks before the cut that some later one's counterpart is; copy 1 is B's from the cut on),
    the *tail* (B's other tasks from the cut on, ``k - 1`` slopes after B's). The slope proof
    (``engine.periodic.slopes_s``) holds where each task of G_k is slowed as its
    representative in B is (a copy's: copy 1's, which ran as copy 0 in A; the prefix and tail
    theirs). With every copy and tail task of a slowing and a slowed stream at one slope
    ``sigma``, the offset of two tasks depends only on which copies they are, ``d`` apart: at
    d = 0 and -1 (the slower one copy earlier) B shows them (copy 1 against copy 1 and copy
    0); a slower one copy later (d = +1) must start after the slowed task ends (else copies
    1..k-1 would be slowed by the next copy, which B's copy 1 has not), two copies earlier
    (d = -2) end before it starts, farther apart copies farther still. A tail slower starts
    after copy 1 (every copy) ends; a copy slower ends before the tail task it slows starts
    when two or more copies earlier; a prefix slower ends before copy 1 and the tail start,
    and a copy or tail slower of a prefix task starts after it ends (all later copies later).
    Then every task of G_k is slowed at the same offsets by slowers of the same shares as its
    representative, and by induction over the loop's events runs as it does.

    Contention can widen a deviation every period (``engine.periodic.GROWTH_TOL``): the
    slowers and slowed tasks that overlap must sit where the proof moves them within that
    floor, not :data:`REL_TOL`, and their slopes agree within it."""

    def __init__(self, tb: Timeline, counterpart: list[int], after: list[bool],
                 forward: np.ndarray, local: np.ndarray, dev: np.ndarray, tol: float,
                 floor: float) -> None:
        j = np.asarray(counterpart)
        late = np.asarray(after, dtype=bool)
        copy = np.isin(j, list(set(j[late].tolist()) & set(j[~late].tolist())))
        self.kind = np.where(copy, np.where(late, COPY1, COPY0), np.where(late, TAIL, PREFIX))
        self.start, self.end = np.asarray(tb.start_s), np.asarray(tb.end_s)
        back = np.where(self.kind == COPY1, local, 0.0)  # a copy's times as copy 0
        self.base = (self.start - back, self.end - back)
        self.tb, self.forward, self.local, self.dev = tb, forward, local, dev
        self.slowed: dict[tuple[tuple[int, str], bool], np.ndarray] = {}
        self.tol, self.floor = tol, floor

    def holds(self, y: int) -> bool:
        """Whether slowing task ``y`` slows every task of G_k as B shows it (class docstring)."""
        kind, start, end, tol = self.kind, self.start, self.end, self.tol
        key = (self.tb.tasks[y].slows[0], bool(self.forward[y]))
        xs = self.slowed.get(key)
        if xs is None:  # the slowed stream's tasks of y's phase
            queue = np.asarray(self.tb.queues.get(key[0], []), dtype=np.int64)
            xs = self.slowed[key] = queue[self.forward[queue] == key[1]]
        if not len(xs):
            return True
        kx, ky = kind[xs], kind[y]
        moving_x = kx != PREFIX
        if ky == PREFIX:  # before every copy 1 and tail task, which only move later
            return bool(np.all((end[y] <= start[xs] + tol) | ~((kx == COPY1) | (kx == TAIL)))
                        and np.all(self.local[xs][moving_x] >= -tol))
        sigma = self.local[y]
        if not sigma > tol or (ky != COPY0 and not np.all(
                end[xs][~moving_x] <= start[y] + tol)):
            return False  # a prefix task a later copy or the tail would reach
        xs, kx = xs[moving_x], kx[moving_x]
        if not np.all(np.abs(self.local[xs] - sigma) <= self.floor):
            return False  # not one pace
        bs, be = self.base
        copy_x = kx != TAIL
        if ky == TAIL:  # after copy 1's tasks (every copy's)
            ok = np.where(copy_x, start[y] >= be[xs] + sigma - tol, True)
        else:  # one copy later after, two earlier before, two or more before the tail
            ok = np.where(copy_x,
                          (bs[y] + sigma >= be[xs] - tol) & (be[y] <= bs[xs] + 2 * sigma + tol),
                          be[y] <= start[xs] + sigma + tol)
        if not ok.all():
            return False
        overlap = (start[y] < end[xs] - tol) & (end[y] > start[xs] + tol)
        return bool(np.all(self.dev[xs][overlap] <= self.floor) and
                    (not overlap.any() or self.dev[y] <= self.floor))


def two_run_summary(cfg: RunConfig, ga, ta: Timeline, gb, tb: Timeline, k: int) -> Summary:
    """The iteration's summary from A and B where every longer run is B with ``k`` periods
    more, each moving every time and sum by B's less A's."""
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


__all__ = ["gpipe_proven", "two_run_summary"]


def forward_phase_ends(ta: Timeline, tb: Timeline, fwd_in_a: np.ndarray, forward: np.ndarray,
                       times: tuple[np.ndarray, ...] | None = None
                       ) -> tuple[float, float] | None:
    """When the forward phase ends in run A and run B (the last forward task's end), or None
    where a run has no forward or no backward task or a backward task starts before that end.
    ``fwd_in_a``: A's indices of B's forward tasks' counterparts; ``forward``: B's forward mask;
    ``times``: A's starts and ends and B's, as arrays, where the caller has them."""
    fwd_a = np.zeros(len(ta.tasks), dtype=bool)
    fwd_a[fwd_in_a] = True
    times = times or tuple(np.asarray(x) for x in (ta.start_s, ta.end_s, tb.start_s, tb.end_s))
    t0 = []
    for (start, end), fwd in ((times[:2], fwd_a), (times[2:], forward)):
        if fwd.all() or not fwd.any():
            return None
        t0.append(float(end[fwd].max()))
        if not t0[-1] <= float(start[~fwd].min()):
            return None  # a backward task starts before the forward phase has ended
    return t0[0], t0[1]
