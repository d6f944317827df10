"""A periodic steady state, proven on two runs of the same event loop.

Run A and run B are two task graphs where B is A with one more repetition (a *period*) of a
repeated pattern inserted at a cut, e.g. one more group of micro-batches in a pipeline's steady
phase. Each task of B names its counterpart in A: itself before the cut, the same task one
period earlier from the cut on. If every task of B before the cut runs when its counterpart
does, and every task from the cut on runs exactly ``P`` later than its counterpart, then the
loop's whole state at the cut (what runs, what waits, on every stream) repeats ``P`` later.
The loop is deterministic and unchanged by a shift of time, so inserting ``k`` periods moves
everything after the cut by ``k * P``, and any sum over the tasks grows by ``k`` times B's less
A's: the rest is extrapolated, not simulated. Where the state does not repeat (contention that
drifts, a pattern longer than the period), the check fails and the caller simulates in full.
"""

from __future__ import annotations

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


__all__ = ["REL_TOL", "period_s"]
