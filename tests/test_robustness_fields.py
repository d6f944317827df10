"""The fourth input sweep (benchmarks/fuzz_fields.py, 2026-11-25 robust4): one regression test
per failure class it found, and a short seeded run of its fast surfaces."""

from __future__ import annotations

import heapq
import importlib.util
import time
from pathlib import Path

import pytest
from helpers import cli, one_error_line

from trainsim.catalog import gpu
from trainsim.compute.attention import causal_forward_tail
from trainsim.config import ClusterConfig
from trainsim.errors import TrainsimError
from trainsim.limits import FLOW_FABRIC_STEPS_PER_GPU, fabric_steps, flow_steps
from trainsim.network.flow import FlowNetwork
from trainsim.validate.collectives import predict_collective_row

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "fuzz_fields.py"


def _loop_tail(heads: int, blocks: int, sms: int) -> float:
    """causal_forward_tail's dispatch simulated SM by SM (its docstring's model)."""
    total = heads * blocks * (blocks + 1) / 2.0
    free = [0] * sms
    for _ in range(heads):
        for work in range(1, blocks + 1):
            heapq.heapreplace(free, free[0] + work)
    return max(free) / (total / sms)


@pytest.mark.parametrize("heads, blocks, sms", [(1, 1, 1), (2, 31, 8), (8, 32, 132),
                                                 (4, 32, 132), (8, 32, 256), (33, 64, 2048)])
def test_causal_tail_with_an_sm_per_block_is_the_loop(heads, blocks, sms):
    assert causal_forward_tail(heads, blocks, sms) == _loop_tail(heads, blocks, sms)


def test_a_gpu_with_a_billion_sms_does_not_hang():
    # was a list of 1e9 SMs per attention shape (minutes, gigabytes): fuzz_fields hardware
    t0 = time.perf_counter()
    assert causal_forward_tail(8, 32, 10**9) == 32 / (8 * 32 * 33 / 2 / 10**9)
    assert time.perf_counter() - t0 < 1.0


def test_an_sm_per_block_beyond_the_exact_limit_is_still_exact():
    # review finding: past CAUSAL_TAIL_EXACT_BLOCKS blocks the mean-based approximation ran
    # even when every block had an SM of its own (70,000 one-block heads: 1.5 for an exact 1)
    assert causal_forward_tail(70_000, 1, 70_000) == 1.0
    heads, blocks = 64, 2048  # 131,072 blocks > 65,536
    sms = heads * blocks
    assert causal_forward_tail(heads, blocks, sms) == blocks / (heads * blocks * (blocks + 1)
                                                                / 2.0 / sms)


def test_a_one_gpu_collective_row_is_refused_in_one_line():
    # was ZeroDivisionError (internal error): busbw factor 0 over a time of 0
    row = {"id": "r", "gpu": "h100-sxm-80gb", "num_gpus": "1", "gpus_per_node": "8",
           "nic_gbps_per_gpu": "400", "collective": "all_reduce", "message_bytes": "1048576",
           "algorithm": "ring", "measured_busbw_GBps": "100"}
    res = predict_collective_row(row)
    assert res.error == "num_gpus=1: a collective's bus bandwidth needs at least 2 GPUs"
    assert predict_collective_row({**row, "num_gpus": "2"}).error is None


def test_flow_fabric_is_charged_before_it_is_built():
    assert fabric_steps(65_536) == FLOW_FABRIC_STEPS_PER_GPU * 65_536
    big = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=1_000_000, gpus_per_node=8,
                        nic_bw_Bps=50e9, network_backend="flow")
    t0 = time.perf_counter()
    with pytest.raises(TrainsimError, match="fabric of 1,000,000 GPUs"):
        FlowNetwork.from_cluster(big)
    assert time.perf_counter() - t0 < 1.0
    # a small fabric's collective is checked with its fabric: still far under the limit
    small = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=16, gpus_per_node=8,
                          nic_bw_Bps=50e9, network_backend="flow")
    assert FlowNetwork.from_cluster(small).collective_time("all_reduce", 1e6, range(16)) > 0


@pytest.mark.parametrize("gpus", ["1000000", "100000"])
def test_flow_collective_of_a_huge_cluster_is_refused_at_once(gpus):
    # was minutes building the fat-tree (1e6: > 2 min) before the collective's own check
    t0 = time.perf_counter()
    r = cli("collective", "--gpus", gpus, "--backend", "flow", "--sizes", "8:8")
    line = one_error_line(r)
    assert "flow-steps of one all_reduce" in line and "--max-flows" in line
    assert time.perf_counter() - t0 < 5.0
    # the estimate the line quotes counts the fabric (1e6: 3.0e8 flow-steps + 4.0e8 fabric)
    if gpus == "1000000":
        assert flow_steps(10**6, 8) + fabric_steps(10**6) == 704_000_000
        assert "about 704,000,000" in line


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("fuzz_fields", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_short_seeded_sweep_finds_nothing():
    out = _fuzz_module().run(seed=1, n=12, only={"joint", "columns"})
    assert not out["failures"], dict(out["failures"])
    assert sum(out["counts"]["joint"].values()) == 12
    assert out["counts"]["joint"]["clean"] > 0  # the impossible pairs are refused
