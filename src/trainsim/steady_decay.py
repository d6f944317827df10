"""When the periodic shortcut's longer truncated runs cannot prove a period: a deviation that
contention damps too slowly for any affordable run.

:mod:`trainsim.steady_state` tries truncated runs of growing length (its ladder, ``attempts``):
a transient that outlasts the short runs settles in a longer one. Where tasks slow each other
(an overlapped send holding SMs of its stage's compute stream), the loop's state can instead
approach its periodic orbit only geometrically: DualPipe at pp 2 with overlapped sends
(RESULTS.md, ss51) moves the two ranks' relative phase, a neutral mode of the max-plus loop,
by a factor ``1 - s`` a period (``s`` the send's SM share, 2/132 on an H100), so the state
comes within the proofs' tolerance (``engine.periodic.REL_TOL`` of the makespan) only after
~500-700 periods, and every rung of the ladder below that is simulated for nothing (1.4-7x
the full simulation's cost at 50-74 micro-batches).

:func:`spread_s` measures a failed two-run attempt's deviation: the spread of B's ends less
their counterparts' in A over the tasks from the cut on (0 where B is A with a period
inserted). :func:`hopeless` compares two failed attempts' spreads and gives up on the rest of
the ladder where even a *linear* decline of the spread (the most optimistic reading of two
points for a decay that slows down: a geometric one reaches a given fraction later) would not
reach the tolerance by the longest run left. Only a cost decision: giving up simulates every
micro-batch, which is the reference the shortcut is held to, so no result changes in kind;
a run that a longer rung would have proven is simulated in full instead.
"""

from __future__ import annotations

import numpy as np

from trainsim.engine import Timeline
from trainsim.engine.periodic import REL_TOL


def spread_s(ta: Timeline, tb: Timeline, counterpart: list[int], after: list[bool]) -> float:
    """The latest less the earliest of B's end times less their counterparts' in A, over B's
    tasks from the cut on (``engine.periodic.period_s``'s arguments): 0 where every stream
    is exactly one period later, else how far B is from A with a period inserted."""
    late = np.asarray(after, dtype=bool)
    if not late.any():
        return 0.0
    j = np.asarray(counterpart, dtype=np.int64)[late]
    shift = np.asarray(tb.end_s)[late] - np.asarray(ta.end_s)[j]
    return float(shift.max() - shift.min())


def hopeless(early: tuple[int, float], late: tuple[int, float], longest: int, q: int,
             makespan_s: float, m_late: int) -> bool:
    """Whether no truncated run up to ``longest`` micro-batches can prove the period, judged
    from two failed attempts: ``early`` and ``late`` are (micro-batches of A, spread) with
    the late one longer, ``q`` micro-batches a period, ``makespan_s`` the late attempt's B's
    (``m_late`` micro-batches). The spread's linear decline over the periods between them,
    continued, must bring it within twice the proofs' tolerance (a spread of two deviations
    of opposite sign) by ``longest``'s periods; the tolerance is taken at ``longest``'s
    makespan (scaled by micro-batches from ``makespan_s``: generous, a longer run's makespan
    grows less than in proportion). A spread that did not shrink says nothing of when a
    transient ends (a stage absorbing a backlog can end it at once): not hopeless; nor where
    either spread is 0 or not finite."""
    (m1, s1), (m2, s2) = early, late
    if not (m2 > m1 and 0 < s2 < s1 < np.inf) or not makespan_s > 0:
        return False
    tol = 2 * REL_TOL * makespan_s * max(longest, m_late) / m_late
    if s2 <= tol:
        return False
    per_period = (s1 - s2) / ((m2 - m1) / q)  # the decline per period, continued linearly
    periods_needed = (s2 - tol) / per_period
    return periods_needed > (longest - m2) / q


__all__ = ["hopeless", "spread_s"]
