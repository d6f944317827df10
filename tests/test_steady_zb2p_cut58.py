"""zbpeak57's zb_2p late settlers that settle58 proves: six whose orders had no insertion cut on
every rank at the length where the search settles (the last rank's inserted rounds a period or
two before the first rank's earliest), so neither the replay nor the shortcut ever had one
(``steady_zb2p.MAX_CUT_STEPS``); and #37, whose engine transient outlasts the replayed one
by a period (the ladder now goes on from the replay's length). Each within 1e-9 of the full
simulation."""

from __future__ import annotations

import pytest
from helpers import assert_same_simulation, pipelined_configs

import trainsim.steady_state as steady
from trainsim import simulate, steady_zb2p
from trainsim.pricing import Pricer
from trainsim.steady_zb2p import past_transient

NO_CUT = (96, 17, 67, 78, 138, 181)  # test_steady_zb2p.py's random configs, by index


def _configs(ids) -> list:
    configs = pipelined_configs(max(ids) + 1, "zb_2p", lambda pp: (40 * pp + 8, 80 * pp))
    return [configs[i] for i in ids]


@pytest.mark.parametrize("ids", [NO_CUT[:2], pytest.param(NO_CUT, marks=pytest.mark.slow)])
def test_a_cut_a_period_or_two_past_the_settled_length_proves_them(monkeypatch, ids):
    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    for cfg in _configs(ids):
        fast = simulate(cfg)
        assert fast.simulation["method"] == "steady-state", fast.simulation
        assert_same_simulation(fast, simulate(cfg, keep_timeline=True))
        with monkeypatch.context() as patch:  # only the settled length's orders: no cut
            patch.setattr(steady_zb2p, "MAX_CUT_STEPS", 1)
            assert simulate(cfg).simulation["method"] == "full"


@pytest.mark.slow
def test_the_ladder_goes_on_past_the_replayed_transient(monkeypatch):
    """#37 (pp 8, 341 micro-batches): the replay asks 146; the engine's transient, with the
    gradient reduction and contention, lasts a period longer, and 147 proves (settle59: that
    attempt's B alone, ``test_steady_zb2p_state59.py``; before, A of 146 against B was refused
    and the next attempt, 147 against 148, proved)."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    (cfg,) = _configs([37])
    pricer = Pricer(cfg)
    settles, _ = steady._settled_from(cfg, pricer, None)
    assert past_transient(cfg, pricer, None, settles, None, 1) == 146
    fast = simulate(cfg)
    assert "state repeating in a truncated run of 147 micro-batches" in fast.simulation["reason"]
    assert_same_simulation(fast, simulate(cfg, keep_timeline=True))
