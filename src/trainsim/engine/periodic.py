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
    tol = rel_tol * b.makespan_s
    covered = [False] * len(a.tasks)
    a_start, a_end, b_start, b_end = a.start_s, a.end_s, b.start_s, b.end_s
    a_tasks, b_tasks = a.tasks, b.tasks
    for i, j in enumerate(counterpart):
        if j < 0 or a_tasks[j].duration_s != b_tasks[i].duration_s:
            return None
        shift = period if after[i] else 0.0
        if abs(b_start[i] - a_start[j] - shift) > tol or abs(b_end[i] - a_end[j] - shift) > tol:
            return None
        covered[j] = True
    return period if all(covered) else None


__all__ = ["REL_TOL", "period_s"]
