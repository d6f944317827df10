"""The flow backend's run-time flow-step count weighs an all-to-all's flows as the up-front
check does (``limits.FLOW_A2A_STEP_WEIGHT``; a2a46's lead 3: ``network/flow.py`` counted them
unweighted, so flows given to ``FlowNetwork.run`` -- or as background -- ran 3x past the count
the limit means)."""

from __future__ import annotations

import pytest

from trainsim.collectives.flows import Flow, FlowSchedule, direct_all_to_all, ring_all_reduce
from trainsim.limits import FLOW_A2A_STEP_WEIGHT, FLOW_SETUP_STEPS, WorkLimitError
from trainsim.network.flow import FlowNetwork, step_weight
from trainsim.network.topology import rail_fat_tree

N = 16
A2A = direct_all_to_all(list(range(N)), 2**20, 8)
FLOWS = N * (N - 1)
UNWEIGHTED = (FLOW_SETUP_STEPS + 1) * FLOWS  # set-up plus one step of each flow


def _net() -> FlowNetwork:
    return FlowNetwork(rail_fat_tree(N // 8, 8))


def test_an_all_to_all_pattern_is_weighted_and_others_are_not():
    assert step_weight(A2A) == FLOW_A2A_STEP_WEIGHT
    # the same pattern given as a plain list of flows, in another order
    assert step_weight(FlowSchedule(tuple(reversed(A2A.flows)))) == FLOW_A2A_STEP_WEIGHT
    assert step_weight(ring_all_reduce(list(range(N)), 2**20, 2, 8)) == 1
    assert step_weight(FlowSchedule(A2A.flows[:-1])) == 1  # one pair short
    assert step_weight(FlowSchedule(A2A.flows, repeat=2)) == 1
    two_steps = tuple(Flow(f.src, f.dst, f.bytes, i % 2) for i, f in enumerate(A2A.flows))
    assert step_weight(FlowSchedule(two_steps)) == 1


@pytest.mark.parametrize("as_background", [False, True])
def test_flows_run_directly_stop_at_the_weighted_count(monkeypatch, as_background):
    cap = 2 * UNWEIGHTED  # under the weighted count (3x), over the unweighted one
    assert UNWEIGHTED < cap < FLOW_A2A_STEP_WEIGHT * UNWEIGHTED
    monkeypatch.setenv("TRAINSIM_MAX_FLOWS", str(cap))
    net = _net()
    small = FlowSchedule((Flow(0, 8, 2**20),))
    with pytest.raises(WorkLimitError, match="TRAINSIM_MAX_FLOWS"):
        if as_background:
            net.run(small, background=A2A)
        else:
            net.run(A2A)
    monkeypatch.setenv("TRAINSIM_MAX_FLOWS", str(FLOW_A2A_STEP_WEIGHT * UNWEIGHTED + 50))
    assert net.run(A2A).makespan_s > 0  # the weighted count itself fits


def test_a_ring_counts_as_before(monkeypatch):
    ring = ring_all_reduce(list(range(N)), 2**20, 2, 8)
    monkeypatch.setenv("TRAINSIM_MAX_FLOWS", str(3 * UNWEIGHTED))
    assert _net().run(ring).makespan_s > 0


def test_a_collective_with_an_all_to_all_background_stops_at_the_weighted_count(monkeypatch):
    """``collective_time`` checks its own collective up front; its background is counted as it
    runs, weighted too."""
    monkeypatch.setenv("TRAINSIM_MAX_FLOWS", str(2 * UNWEIGHTED))
    net = _net()
    assert net.collective_time("send_recv", 2**20, [0, 8]) > 0
    with pytest.raises(WorkLimitError, match="TRAINSIM_MAX_FLOWS"):
        net.collective_time("send_recv", 2**20, [0, 8], background=A2A)
