"""The period proofs (trainsim.engine.periodic) on an unstable contended orbit: task x runs
back to back, task y on its own fixed clock slows x by half while it runs, so x's end moves by
``1 / (1 - 0.5)`` of any shift in its start and a deviation of 1e-13 doubles every period. The
state one period apart repeats within the proofs' tolerance, but extrapolating 40 periods is
off by 0.5 s: the proofs must refuse it (or extrapolate it exactly). A stable contended graph
(the same tasks with x's copies chained to y's) is still proven."""

from __future__ import annotations

import pytest
from helpers import state_proof

from trainsim.engine import Task, run
from trainsim.engine.periodic import period_s

K = 40  # periods added in the longer run
PER = 4  # tasks per copy


def _unstable(copies: int, eps: float = 1e-13) -> tuple[list[Task], list[int]]:
    """Warm-up w (0.5 + eps) delays y's first task; x (1.0) back to back after the z of the
    copy before; y (1.2, slowing x by 0.5, then 0.8) on a 2.0 s clock of its own."""
    tasks, copy = [Task((0, "w"), 0.5 + eps)], [-1]
    for c in range(copies):
        b = len(tasks)
        tasks.append(Task((0, "x"), 1.0, [b - 3] if c else []))
        tasks.append(Task((0, "z"), 0.5, [b]))
        tasks.append(Task((0, "y"), 1.2, [] if c else [0], slows=((0, "x"), 0.5)))
        tasks.append(Task((0, "y"), 0.8, []))
        copy += [c] * PER
    tasks.append(Task((0, "x"), 1.0, [len(tasks) - 3]))
    copy.append(copies)
    return tasks, copy


def _state_error(build) -> float | None:
    """How far the state proof's extrapolation of ``K`` more periods is from the longer run's
    makespan (None: refused); the prefix is copies 0 and 1, the period copy 2."""
    tasks, copy = build(3)
    tl = run(tasks)
    period = state_proof(tl, copy, PER)
    if period is None:
        return None
    return abs(max(run(build(3 + K)[0]).end_s) - (max(tl.end_s) + K * period))


def _shift_error(build) -> float:
    """How far extrapolating ``K`` periods by the last copy's shift (what a proof that let the
    deviation through would take) is from the longer run's makespan."""
    tasks, _ = build(3)
    tl = run(tasks)
    x = 1 + 2 * PER  # copy 2's x
    shift = tl.end_s[x] - tl.end_s[x - PER]
    return abs(max(run(build(3 + K)[0]).end_s) - (max(tl.end_s) + K * shift))


def test_the_fixtures_are_unstable_and_stable():
    assert _shift_error(_unstable) > 0.1  # the module's 0.5 s
    assert _shift_error(_stable) < 1e-9


def test_the_state_proof_refuses_an_orbit_that_doubles_a_deviation_each_period():
    error = _state_error(_unstable)
    assert error is None or error < 1e-9, error


def test_the_two_run_proof_refuses_an_orbit_that_doubles_a_deviation_each_period():
    (ta_tasks, _), (tb_tasks, cb) = _unstable(3), _unstable(4)
    ta, tb = run(ta_tasks), run(tb_tasks)
    # B's copy 2 is the inserted period: before it, each task is A's; from it on, A's one
    # copy earlier (the tail included)
    counterpart = [i if c < 2 else i - PER for i, c in enumerate(cb)]
    period = period_s(ta, tb, counterpart, [c >= 2 for c in cb])
    if period is not None:
        full = max(run(_unstable(4 + K)[0]).end_s)
        assert abs(full - (max(tb.end_s) + K * period)) < 1e-9


def _stable(copies: int) -> tuple[list[Task], list[int]]:
    """The same tasks, y's first task of each copy waiting on x's: locked, nothing drifts."""
    tasks, copy = [Task((0, "w"), 0.5)], [-1]
    for c in range(copies):
        b = len(tasks)
        tasks.append(Task((0, "x"), 1.0, [b - 3] if c else []))
        tasks.append(Task((0, "z"), 0.5, [b]))
        tasks.append(Task((0, "y"), 1.2, [b - 4] if c else [0], slows=((0, "x"), 0.5)))
        tasks.append(Task((0, "y"), 0.8, []))
        copy += [c] * PER
    tasks.append(Task((0, "x"), 1.0, [len(tasks) - 3]))
    copy.append(copies)
    return tasks, copy


def test_a_stable_contended_orbit_is_still_proven():
    error = _state_error(_stable)
    assert error is not None and error < 1e-9
    (ta_tasks, _), (tb_tasks, cb) = _stable(3), _stable(4)
    counterpart = [i if c < 2 else i - PER for i, c in enumerate(cb)]
    assert period_s(run(ta_tasks), run(tb_tasks), counterpart, [c >= 2 for c in cb]) == \
        pytest.approx(2.0)
