"""GPipe's periodic steady state (``steady_gpipe``: two phases, paces per stream) against the
full simulation."""

from __future__ import annotations

from collections import Counter

import pytest
from helpers import pipelined_configs, shortcut_methods

import trainsim.steady_state as steady

N_CONFIGS = 200
DEFAULT_CONFIGS = 4  # the default suite's share of them (the slow test runs all)


def _configs(n: int):
    """Random GPipe configs (``helpers.pipelined_configs``), 4 pp + 8 to 12 pp + 64 micro-batches."""
    return pipelined_configs(n, "gpipe", lambda pp: (4 * pp + 8, 12 * pp + 64))


def _agree(monkeypatch, n_configs: int) -> Counter:
    monkeypatch.setattr(steady, "MIN_TASKS", 0)  # take the shortcut on small runs too
    return shortcut_methods(_configs(n_configs))


def test_gpipe_steady_state_agrees_with_the_full_simulation(monkeypatch):
    """Over the first 4 random GPipe configs the extrapolated steady state and the full
    simulation agree to 1e-9 on the iteration time and every breakdown entry, and the
    shortcut is taken on most (not a test of the fallback alone)."""
    methods = _agree(monkeypatch, DEFAULT_CONFIGS)
    assert methods["steady-state"] >= DEFAULT_CONFIGS // 2, methods


@pytest.mark.slow
def test_gpipe_steady_state_agrees_with_the_full_simulation_on_all_configs(monkeypatch):
    """The same over all 200 random configs."""
    methods = _agree(monkeypatch, N_CONFIGS)
    assert methods["steady-state"] >= N_CONFIGS // 2, methods
