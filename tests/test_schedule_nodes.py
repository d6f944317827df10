"""Megatron-core's combined 1F1B runs each schedule node's backward as an autograd engine call
of its own (pipeline_parallel/utils.py ScheduleNode.default_backward_func): the calls sit at the
start of each node's backward, 5 nodes per MoE layer up to core 0.15, 4 from core 0.16, 2 per
dense layer; each costs ``ENGINE_CALL_S`` of host time (pytorch/pytorch#157407)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import moe_layer_cfg

from trainsim.compute import host
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Elementwise
from trainsim.workload.schedule_nodes import SCHEDULE_NODES
from trainsim.workload.shard import shard_of


def test_engine_call_is_the_measured_backward_less_its_four_kernels():
    """0.13607 ms per backward of a one-matmul graph, less two GEMMs and two AccumulateGrad
    adds issued from C++ (8.13 us each): 103.5 us."""
    assert host.ENGINE_CALL_S == pytest.approx(136.07e-6 - 4 * 8.13e-6, rel=1e-3)
    call = Elementwise("x", bytes=0.0, kernels=0, engine_calls=2)
    assert host.launches(call) == 0
    assert host.loop_host_s(call) == pytest.approx(2 * host.ENGINE_CALL_S)


def _backward_names(cfg, moe=True):
    sh = shard_of(cfg)
    return [op.name for op in backward_of(layer_forward(cfg, sh, moe=moe), sh)]


@pytest.mark.parametrize(("framework", "version", "nodes"), [
    ("megatron-bridge", "25.11", 5), ("megatron-bridge", "26.04", 4),
    ("megatron-core", "0.15", 5), ("megatron-core", "0.16", 4)])
def test_each_node_backward_opens_with_its_engine_call(framework, version, nodes):
    """With the overlap: a call before the combine node's backward, the MLP's (after the
    combine exchange), the dispatch's (before its exchange), post_attn's (before the permute,
    core <= 0.15) and the attention's (after the pre-MLP norm; from core 0.16 the attention
    node holds post_attn: before the permute); none without the overlap."""
    cfg = moe_layer_cfg("alltoall", ep=8, framework=framework, version=version, gpus=8,
                        moe_overlap_ep_comm=True)
    names = _backward_names(cfg)
    calls = [i for i, n in enumerate(names) if n == SCHEDULE_NODES + ".bwd"]
    assert len(calls) == nodes
    assert calls[0] == 0
    assert names[calls[1] - 1] == "moe.combine_all_to_all.bwd"
    assert names[calls[2] + 1].startswith("moe.dispatch")
    if nodes == 5:  # post_attn's call before the permute, the attention's after the norm
        assert names[calls[3] + 1] == "permute.bwd"
        assert names[calls[-1] - 1] == "mlp_norm.bwd"
    else:  # post_attn is part of the attention node
        assert names[calls[-1] + 1] == "permute.bwd"
    plain = replace(cfg, parallel=replace(cfg.parallel, moe_overlap_ep_comm=False))
    assert SCHEDULE_NODES + ".bwd" not in _backward_names(plain)
    dense = _backward_names(cfg, moe=False)
    assert dense.count(SCHEDULE_NODES + ".bwd") == 2


def test_no_calls_where_the_profile_does_not_say():
    """A run naming no framework (or one whose profile records no node count) adds nothing."""
    cfg = moe_layer_cfg("alltoall", ep=8, gpus=8, moe_overlap_ep_comm=True)
    assert SCHEDULE_NODES + ".bwd" not in _backward_names(cfg)


def test_node_pass_is_its_stream_context_and_event_wait_and_record():
    """A node's stream context: current_stream() 4.4 us (pytorch#78066) and a device-context
    switch 3.8 us (pytorch#91045); its event wait and record: a binding and a launch each."""
    assert host.STREAM_CONTEXT_S == pytest.approx(8.2e-6)
    assert host.NODE_PASS_S == pytest.approx(8.2e-6 + 2 * (1.0e-6 + 3e-6))


@pytest.mark.parametrize(("framework", "version"), [("megatron-bridge", "25.11"),
                                                     ("megatron-core", "0.16")])
def test_each_node_pass_costs_the_host_forward_and_backward(framework, version):
    """Every node's forward pays its pass and its input's detach; its backward its pass and
    its engine call: host time of the layer's node ops, no kernel."""
    cfg = moe_layer_cfg("alltoall", ep=8, framework=framework, version=version, gpus=8,
                        moe_overlap_ep_comm=True)
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=True)
    nodes = [op for op in fwd if op.name == SCHEDULE_NODES]
    back = [op for op in backward_of(fwd, sh) if op.name == SCHEDULE_NODES + ".bwd"]
    assert len(nodes) == len(back) in (4, 5)
    assert all(host.launches(op) == 0 for op in nodes + back)
    assert [host.loop_host_s(op) for op in nodes] == pytest.approx(
        [host.NODE_PASS_S + host.PY_VIEW_S] * len(nodes))
    assert [host.loop_host_s(op) for op in back] == pytest.approx(
        [host.NODE_PASS_S + host.ENGINE_CALL_S] * len(back))
