"""When the periodic shortcut's longer truncated runs cannot prove a period: a deviation that
contention damps geometrically, too slowly for any affordable run.

:mod:`trainsim.steady_state` tries truncated runs of growing length (its ladder, ``attempts``):
a transient that outlasts the short runs settles in a longer one. Where tasks slow each other
(an overlapped send holding SMs of its stage's compute stream), the loop's state can instead
approach its periodic orbit only geometrically: DualPipe at pp 2 with overlapped sends
(RESULTS.md, ss51) moves the two ranks' relative phase by a factor ``-(1 - s)`` a period (``s``
the send's SM share, 2/132 on an H100), so the state comes within the proofs' tolerance
(``engine.periodic.REL_TOL`` of the makespan) only after ~500-700 periods, and every rung of
the ladder below that is simulated for nothing (1.4-7x the full simulation's cost at 50-74
micro-batches). :mod:`trainsim.steady_affine` proves such an orbit where its three runs are
affordable; below that, :func:`too_slow` ends the ladder.

Two consecutive failed attempts of the ladder are runs of ``m``, ``m + q`` and ``m + 2 q``
micro-batches (A, B, C: the second attempt's A is the first's B), each matched with the one
before from its cut on (``steady_affine.counterparts``). Where every matched time's change from
B to C is one factor ``r`` times its change from A to B, up to one common shift (the period;
within :data:`ONE_MODE`), the deviation is one mode that the next period scales by ``r`` (the argument of
``steady_affine``: one affine map, a deviation along one of its eigenvectors), so after ``n``
more periods it is ``|r|^n`` times C's; where that stays over the proofs' tolerance up to the
longest run the ladder has left, no rung can prove the period. Only a cost decision: giving up
simulates every micro-batch, the reference the shortcut is held to. A deviation that is not
one mode (a transient that ends, which the next rungs prove) is not judged.
"""

from __future__ import annotations

import math

import numpy as np

from trainsim.engine import Timeline
from trainsim.engine.periodic import REL_TOL

ONE_MODE = 1e-3
"""How far, as a fraction of A-to-B's spread, any time's change from B to C may be from the
ratio times its change from A to B for the deviation to count as one mode here (a cost
decision, not a proof: the short runs the ladder starts with still carry the warm-up's other
modes, DualPipe pp 2's at ~3e-4 of the spread at 6, 8 and 10 micro-batches)."""


def one_mode(timelines: tuple[Timeline, Timeline, Timeline], pairs: tuple[tuple, tuple]
             ) -> tuple[float, float] | None:
    """Where A, B, C (``timelines``; ``pairs``: B's counterparts in A and C's in B, with their
    from-the-cut-on flags) show one mode of deviation scaled by one factor ``r`` a period,
    ``|r|`` below 1 by more than that measure's tolerance (a deviation that keeps its size,
    ``r`` ~ 1, is a lag that a transient's end can remove at once), module docstring: ``r``
    and C's spread (``|r|`` times B's); else None."""
    ta, tb, tc = timelines
    (j_ab, late_ab), (j_bc, late_bc) = ((np.asarray(j), np.asarray(late, dtype=bool))
                                        for j, late in pairs)
    c_w = np.flatnonzero(late_bc)
    if not len(c_w):
        return None
    b_w = j_bc[c_w]
    if not late_ab[b_w].all():
        return None
    a_w = j_ab[b_w]
    t = [np.concatenate((np.asarray(tl.start_s)[w], np.asarray(tl.end_s)[w]))
         for tl, w in ((ta, a_w), (tb, b_w), (tc, c_w))]
    d1, d2 = t[1] - t[0], t[2] - t[1]
    lo, hi = int(np.argmin(d1)), int(np.argmax(d1))
    spread = d1[hi] - d1[lo]
    if not spread > REL_TOL * tc.makespan_s:
        return None
    ratio = (d2[hi] - d2[lo]) / spread
    if not 0 < abs(ratio) < 1 - 2 * ONE_MODE or not np.all(
            np.abs(d2 - d2[lo] - ratio * (d1 - d1[lo])) <= ONE_MODE * spread):
        return None  # not one mode scaled by one factor: a transient that may end
    return float(ratio), float(abs(ratio) * spread)


def too_slow(ratio: float, spread: float, makespan_s: float, periods_left: int) -> bool:
    """Whether a deviation of one mode (:func:`one_mode`: its factor a period and its spread
    now), scaled by ``|ratio|`` a period, stays over twice the proofs' tolerance for
    ``periods_left`` periods more (a margin), the tolerance taken at ``makespan_s`` (the
    longest run's, or more)."""
    needed = 2 * REL_TOL * makespan_s  # two deviations of opposite sign at the tolerance
    if spread <= needed:
        return False
    return math.log(needed / spread) / math.log(abs(ratio)) > 2 * periods_left


def spaced_evenly(tl: Timeline, tags: list[int], cut_at: list[int], shift: int) -> bool:
    """Whether run B's last period before its cut and the one from it are one common shift
    apart, within four times the proofs' tolerance: what ``engine.periodic.period_s`` needs of
    B alone (B's tasks before the cut within the tolerance of A's, and those from it within it
    of A's one period on, are the two periods' tasks ``shift`` positions apart, matched in
    order, the k-th of a position with the k-th of the one a period on). Where it fails, the
    timeline is still in its transient at the cut and A need not be run; True where it cannot
    be told (a position with other tasks in the two periods)."""
    start, end = np.asarray(tl.start_s), np.asarray(tl.end_s)
    early: list[int] = []
    late: list[int] = []
    for stream, queue in tl.queues.items():
        c = cut_at[stream[0]]
        by: dict[int, list[int]] = {}
        for i in queue:
            if c - shift <= tags[i] < c + shift:
                by.setdefault(tags[i], []).append(i)
        for t in range(c - shift, c):
            one, other = by.get(t, []), by.get(t + shift, [])
            if len(one) != len(other):
                return True
            early += one
            late += other
    if not early:
        return True
    shifts = np.concatenate((start[late] - start[early], end[late] - end[early]))
    return bool(shifts.max() - shifts.min() <= 4 * REL_TOL * tl.makespan_s)


__all__ = ["ONE_MODE", "one_mode", "spaced_evenly", "too_slow"]
