"""An all-to-all's flow-steps weighed in ring-step units (``limits.FLOW_A2A_STEP_WEIGHT``,
``benchmarks/flow_a2a_cost.py``): fuzz46's lead 3, the 256-GPU all_to_all over the default 31
sizes ran 11.6 CPU s inside the flow-step limit."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from trainsim.cli import main
from trainsim.limits import (
    FLOW_A2A_STEP_WEIGHT,
    FLOW_SETUP_STEPS,
    WorkLimitError,
    check_flows,
    flow_steps,
)


def test_an_all_to_all_counts_its_flows_times_the_weight():
    n = 256  # an all-to-all's n^2 flows, each set up and run once, as a ring's flow counts
    assert FLOW_A2A_STEP_WEIGHT > 1
    assert flow_steps(n, 8, "all_to_all") == pytest.approx(
        FLOW_A2A_STEP_WEIGHT * (FLOW_SETUP_STEPS + 1) * n * n)
    # n^2 send_recv flows are each set up and run once too, counted in ring-step units
    # (unweighted): the all-to-all's same flows count the weight times more
    assert flow_steps(n, 8, "all_to_all") > flow_steps(n * n, 1, "send_recv")
    assert flow_steps(n, 8, "all_to_all") == pytest.approx(
        FLOW_A2A_STEP_WEIGHT * flow_steps(n * n, 1, "send_recv"))


def test_the_256_gpu_all_to_all_table_is_refused_saying_how_many_sizes_fit(monkeypatch):
    monkeypatch.delenv("TRAINSIM_MAX_FLOWS", raising=False)
    check_flows("all_to_all", 256, 8, "direct", 256)  # one size is within the limit
    with pytest.raises(WorkLimitError, match=r"31 sizes of all_to_all.*\(\d+ fit\)"):
        check_flows("all_to_all", 256, 8, "direct", 256, sizes=31)
    t0 = time.process_time()
    result = CliRunner().invoke(main, ["collective", "--backend", "flow", "--op", "all_to_all",
                                       "--gpus", "256"])
    assert time.process_time() - t0 < 0.5
    assert result.exit_code == 2, result.output
    out = result.output.strip()
    assert len(out.splitlines()) == 1
    assert "31 sizes of all_to_all" in out and "fit)" in out
    assert "--max-flows" in out and "TRAINSIM_MAX_FLOWS" in out
