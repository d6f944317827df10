"""speed53: ``steady_state``'s plan and ladder of truncated runs are worked out once per config
object (a simulation asked for them three times: its task-limit check, ``attempt``'s plan and
its ladder), and the kept answer is the one ``plan`` gives again."""

from __future__ import annotations

from helpers import random_valid_configs

import trainsim.steady_state as steady
from trainsim import simulate


def _configs(n: int) -> list:
    return random_valid_configs(53, n)


def test_a_simulation_plans_once_and_as_plan_does(monkeypatch):
    """Each random config's simulation calls ``plan`` once (three times before), and its
    ladder is ``attempts`` worked out from ``plan``'s answer afresh, the shortcut on or off
    (``MIN_TASKS`` is read at every call: a changed one plans anew for the same object)."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)  # take the shortcut on small runs too
    calls = []
    plan = steady.plan
    monkeypatch.setattr(steady, "plan", lambda cfg: calls.append(cfg) or plan(cfg))
    planned = 0
    for cfg in _configs(12):
        calls.clear()
        simulate(cfg)
        assert calls == [cfg]
        first, reason = plan(cfg)
        assert steady._planned(cfg) == (first, reason, steady._ladder(cfg, first))
        assert steady.attempts(cfg) == steady._ladder(cfg, first)
        planned += first is not None
        monkeypatch.setattr(steady, "MIN_TASKS", 10**12)
        assert steady.attempts(cfg) == [] and steady._planned(cfg)[0] is None
        monkeypatch.setattr(steady, "MIN_TASKS", 0)
    assert planned >= 6  # the shortcut's plans are among them


def test_attempts_hands_out_a_list_of_its_own():
    """A caller that changes the list ``attempts`` returned leaves the next answer as it was."""
    cfg = next(c for c in _configs(40) if steady.attempts(c))
    first = steady.attempts(cfg)
    kept = list(first)
    first.clear()
    assert steady.attempts(cfg) == kept
