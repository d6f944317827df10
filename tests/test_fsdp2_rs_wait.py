"""FSDP2 keeps one reduce-scatter in flight (issue 17): each unit's post_backward makes the
compute stream wait on the previous unit's reduce-scatter event before its own copy-in
(torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py; torch >= pytorch/pytorch#129721,
2024-06-27), so a unit's backward starts only after the reduce-scatter two units before it
(profile line ``fsdp2_reduce_scatter_wait``)."""

from __future__ import annotations

import inspect

import pytest

import trainsim.simulator as simulator_mod
from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import framework_profile, profile_supports
from trainsim.pricing import Pricer
from trainsim.simulator import build_graph, simulate

LINE = "fsdp2_reduce_scatter_wait"


def _cfg(framework: str = "torchtitan", version: str = "2024-12"):
    return run_config_from_dict({
        "model": {"preset": "llama3-8b", "num_layers": 6},
        "parallel": {"tp": 1, "pp": 1, "zero_stage": 3, "data_parallel_impl": "fsdp2"},
        "training": {"global_batch_size": 16, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16", "framework": framework, "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8},
    })


def _without(monkeypatch) -> None:
    """The profiles as if their ``fsdp2_reduce_scatter_wait`` line were removed."""
    def supports(cfg, name):
        return False if name == LINE else profile_supports(cfg, name)
    monkeypatch.setattr(simulator_mod, "profile_supports", supports)


@pytest.mark.parametrize("framework,version,has", [
    ("torchtitan", "2024-12", True), ("torchtitan", "2025-06", True),
    ("automodel", "0.1", True), ("torchtitan", "2024-04", False)])
def test_the_profiles_carry_the_line_from_the_torch_that_has_the_wait(framework, version, has):
    assert bool(framework_profile(framework, version).supports(LINE)) is has


def _parts(graph):
    """The last backward's compute parts, in order, with the reduce-scatters after each."""
    parts, reduces = [], []
    for i, t in enumerate(graph.tasks):
        if t.stream[1] == "compute" and t.label.startswith("B last c0 part"):
            parts.append(i)
            reduces.append([])
        elif "ZeRO-3 grad reduce-scatter" in t.label and t.label.endswith(
                f"part{len(parts) - 1}") and parts:
            reduces[-1].append(i)
    return parts, reduces


def test_a_units_backward_waits_for_the_reduce_scatter_two_units_before(monkeypatch):
    c = _cfg()
    parts, reduces = _parts(build_graph(c, Pricer(c)))
    assert len(parts) >= 4 and all(reduces)
    graph = build_graph(c, Pricer(c))
    for k in range(2, len(parts)):
        assert set(reduces[k - 2]) <= set(graph.tasks[parts[k]].deps)
        assert not set(reduces[k - 1]) & set(graph.tasks[parts[k]].deps)  # it overlaps that one
    _without(monkeypatch)
    graph = build_graph(c, Pricer(c))
    parts, reduces = _parts(graph)
    for k in range(2, len(parts)):
        assert not set(reduces[k - 2]) & set(graph.tasks[parts[k]].deps)


def test_the_wait_never_makes_the_step_faster(monkeypatch):
    c = _cfg()
    waited = simulate(c).iteration_time_s
    _without(monkeypatch)
    assert waited >= simulate(c).iteration_time_s - 1e-12


def test_the_installed_torch_has_the_wait():
    """Where torch is installed, its FSDP2 post_backward waits on a reduce-scatter event."""
    try:
        from torch.distributed.fsdp._fully_shard import _fsdp_param_group as group
    except ImportError:
        pytest.skip("no torch with FSDP2")
    text = inspect.getsource(group.FSDPParamGroup.post_backward)
    assert "reduce_scatter_state" in text and "wait_event" in text
