"""torchtitan's FSDP2 under pipelining (issue 17, profile line ``fsdp_pp_unsharded``): every
block fully_shard'ed with reshard_after_forward=False when PP is on (parallelize_llama.py
apply_fsdp @ 9dec370a), and torch.distributed.pipelining's stage no-sync keeps the units
gathered and their gradients unreduced until each chunk's last backward: one gather per chunk
and step, before its first forward, and one reduce-scatter per chunk and step."""

from __future__ import annotations

import pytest

import trainsim.workload.sharding as sharding_mod
from tests.helpers import mirror_source
from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import profile_supports
from trainsim.pricing import DP, Pricer
from trainsim.simulator import build_graph


def _cfg(vpp: int = 1):
    return run_config_from_dict({
        "model": {"preset": "llama3-8b", "num_layers": 8},
        "parallel": {"tp": 1, "pp": 2, "vpp": vpp, "zero_stage": 3,
                     "data_parallel_impl": "fsdp2", "recompute": "full"},
        "training": {"global_batch_size": 16, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16", "framework": "torchtitan", "framework_version": "2024-12"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8},
    })


def _without(monkeypatch) -> None:
    """The profile as if its ``fsdp_pp_unsharded`` line were removed."""
    def supports(cfg, name):
        return False if name == "fsdp_pp_unsharded" else profile_supports(cfg, name)
    monkeypatch.setattr(sharding_mod, "profile_supports", supports)


def _graph(vpp: int = 1):
    c = _cfg(vpp)
    return build_graph(c, Pricer(c))


def _gather_s(task) -> float:
    return sum(d for cat, d, name in getattr(task.detail, "segments", ())
               if cat == DP and name == "FSDP unit all-gathers")


@pytest.mark.parametrize("vpp", [1, 2])
def test_one_reduce_scatter_per_chunk_and_step(monkeypatch, vpp):
    graph = _graph(vpp)
    reduces = [t for t in graph.tasks if "ZeRO-3 grad reduce-scatter" in t.label]
    assert len(reduces) == graph.pp * vpp  # dense model: one group per stage
    assert all(t.label.endswith(f"mb{graph.m - 1}") for t in reduces)
    _without(monkeypatch)
    graph = _graph(vpp)
    reduces = [t for t in graph.tasks if "ZeRO-3 grad reduce-scatter" in t.label]
    assert len({t.label.split(" mb")[1].split()[0] for t in reduces}) == graph.m


def test_gathers_only_before_each_chunks_first_forward(monkeypatch):
    graph = _graph(2)
    waits = [(t.label, _gather_s(t)) for t in graph.tasks if t.stream[1] == "compute"]
    gathered = [label for label, s in waits if s > 0]
    assert len(gathered) == graph.pp * graph.vpp  # one forward per virtual stage
    assert all(label.startswith("F") for label in gathered)
    _without(monkeypatch)
    graph = _graph(2)
    waits = [t for t in graph.tasks if t.stream[1] == "compute" and _gather_s(t) > 0]
    passes = graph.pp * graph.vpp * graph.m
    assert len(waits) == passes and all(t.label.startswith("F") for t in waits)  # forwards
    # and every backward, its blocks' gathers as tasks on the sharding group's stream
    regathered = {(t.stream[0], t.label.split(" part")[0]) for t in graph.tasks
                  if t.label.startswith("FSDP all-gather")}
    assert len(regathered) == passes


@pytest.mark.parametrize("rev", ["40f79d79", "9dec370a"])
def test_the_source_keeps_blocks_gathered_under_pp(rev):
    text = mirror_source("pytorch+torchtitan", rev, "torchtitan/parallelisms/parallelize_llama.py")
    assert "reshard_after_forward = False" in text
    assert "reshard_after_forward=not pp_enabled" in text


def _accumulation_s(graph) -> float:
    return sum(d for _, (_, bwd) in graph.gathered.items() for _, d, name in bwd.segments
               if name == "fsdp_unsharded_grad_accumulation")


def test_every_backward_accumulates_the_unsharded_gradients(monkeypatch):
    """No-sync keeps the gradients unsharded: each backward casts (the first) or adds (the
    others) them into FSDP2's fp32 accumulator (reduce_dtype fp32)."""
    from trainsim.workload.grad_accumulation import fsdp2_unsharded_grad_accumulation
    c = _cfg()
    layers = c.virtual_stage_layers()[0]
    op, = fsdp2_unsharded_grad_accumulation(c, layers, True, False)
    m = c.num_microbatches
    h, kv, ffn = 4096, 1024, 14336  # llama3-8b, TP 1: the stage's unsharded gradients
    block = h * (2 * h + 2 * kv) + 3 * h * ffn + 2 * h
    assert op.bytes * m / (6.0 + 10.0 * (m - 1)) == pytest.approx(
        len(layers) * block + 128256 * h, rel=1e-3)
    assert op.kernels > len(layers)  # one per tensor
    assert _accumulation_s(_graph()) > 0
    _without(monkeypatch)
    assert _accumulation_s(_graph()) == 0


def test_a_profile_with_both_fsdp_pp_lines_is_refused(tmp_path):
    """``fsdp_pp_unsharded`` and ``fsdp_pp_sync_every_microbatch`` describe opposite no-sync
    behaviours (``workload.sharding.fsdp_pp_mode``): the loader names the clash."""
    from trainsim.catalog import frameworks
    from trainsim.errors import CatalogError
    text = (frameworks._DIR / "torchtitan.yaml").read_text()
    line = "      fsdp_pp_unsharded: true\n"
    assert line in text
    path = tmp_path / "torchtitan.yaml"
    path.write_text(text.replace(line, line + "      fsdp_pp_sync_every_microbatch: true\n", 1))
    with pytest.raises(CatalogError, match="exclude each other"):
        frameworks._read(path)
    path.write_text(text)
    assert frameworks._read(path).name == "torchtitan"


def test_unpaired_warm_up_forwards_gather_only_once():
    """Under combined 1F1B (an MoE run with the expert exchange overlapped) the warm-up
    forwards run without a partner: only each chunk's first one gathers its units."""
    c = run_config_from_dict({
        "model": {"preset": "qwen3-30b-a3b", "num_layers": 8},
        "parallel": {"tp": 1, "pp": 2, "vpp": 2, "ep": 4, "zero_stage": 3,
                     "data_parallel_impl": "fsdp2", "recompute": "none",
                     "moe_overlap_ep_comm": True},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16", "framework": "torchtitan", "framework_version": "2024-12"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8},
    })
    graph = build_graph(c, Pricer(c))
    assert graph.lone and graph.gather_once
    gathered = [t.label for t in graph.tasks if t.stream[1] == "compute" and _gather_s(t) > 0]
    assert len(gathered) == graph.pp * graph.vpp
    assert all(label.startswith("F mb0 ") for label in gathered)
