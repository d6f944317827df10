"""NeMo Automodel's FSDP2 under pipelining at 89e3a9fd (issue 17): fully_shard on the inner
decoder, never on the stage's module, so torch.distributed.pipelining's no-sync is skipped and
every micro-batch's backward reduce-scatters, reshards and waits for its reductions; units are
not resharded after the forward (no gather again before the backward); the non-expert units
reduce in fp32, the experts in bf16 (profile lines ``fsdp_pp_sync_every_microbatch``,
``fsdp_moe_reduce_fp32``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import trainsim.workload.sharding as sharding_mod
from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import framework_profile, profile_supports
from trainsim.memory.state import model_state
from trainsim.pricing import DP, Pricer
from trainsim.simulator import build_graph

LINES = ("fsdp_pp_sync_every_microbatch", "fsdp_moe_reduce_fp32")


def _cfg(pp: int = 2):
    return run_config_from_dict({
        "model": {"preset": "qwen3-30b-a3b", "num_layers": 8},
        "parallel": {"tp": 1, "pp": pp, "ep": 4, "zero_stage": 3, "data_parallel_impl": "fsdp2",
                     "recompute": "full"},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16", "framework": "automodel", "framework_version": "0.1"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8},
    })


def _without(monkeypatch, feature: str) -> None:
    """The profile as if its ``feature`` line were removed."""
    def supports(cfg, name):
        return False if name == feature else profile_supports(cfg, name)
    monkeypatch.setattr(sharding_mod, "profile_supports", supports)


@pytest.mark.parametrize("line", LINES)
def test_the_profile_carries_each_line(line):
    profile = framework_profile("automodel", "0.1")
    assert profile.features[line] is True
    assert not profile.supports("fsdp_pp_unsharded")  # gradients are not kept unsharded


def _backward_gathers(c) -> float:
    graph = build_graph(c, Pricer(c))
    return sum(d for v, (_, bwd) in graph.gathered.items()
               for cat, d, _ in bwd.segments if cat == DP)


def test_no_gather_again_before_the_backward_under_pipelining(monkeypatch):
    """reshard_after_forward=not pp_enabled: the blocks stay gathered from the forward to the
    backward, so the backward waits on no all-gather (the forward's still counts one per
    micro-batch: every backward reshards)."""
    assert _backward_gathers(_cfg()) == 0.0
    _without(monkeypatch, "fsdp_pp_sync_every_microbatch")
    assert _backward_gathers(_cfg()) > 0.0


def _finalize_waits(c) -> list:
    graph = build_graph(c, Pricer(c))
    return [t for t in graph.tasks if t.label.startswith("FSDP finalize_backward")], graph


def test_every_backward_but_the_last_ends_waiting_for_its_reductions(monkeypatch):
    waits, graph = _finalize_waits(_cfg())
    per_stage = graph.m - 1  # one per virtual stage's backward of every micro-batch but the last
    assert len(waits) == graph.pp * graph.vpp * per_stage
    for t in waits:  # on the compute stream, after reduce-scatters of its own pass
        assert t.stream[1] == "compute"
        assert any("reduce-scatter" in graph.tasks[d].label for d in t.deps)
    _without(monkeypatch, "fsdp_pp_sync_every_microbatch")
    assert _finalize_waits(_cfg())[0] == []


def _reduce_s(c, group: str) -> float:
    graph = build_graph(c, Pricer(c))
    return sum(t.duration_s for t in graph.tasks if f"reduce-scatter {group} " in t.label)


def test_non_expert_gradients_reduce_in_fp32_and_experts_in_bf16(monkeypatch):
    dense, experts = _reduce_s(_cfg(), "dp_cp"), _reduce_s(_cfg(), "edp")
    _without(monkeypatch, "fsdp_moe_reduce_fp32")
    assert dense > 1.5 * _reduce_s(_cfg(), "dp_cp")  # twice the bytes, plus latency
    assert experts == pytest.approx(_reduce_s(_cfg(), "edp"))


def test_memory_keeps_the_stage_gathered_but_only_gradient_shards(monkeypatch):
    c = _cfg()
    synced = model_state(c, 0)
    _without(monkeypatch, "fsdp_pp_sync_every_microbatch")
    plain = model_state(c, 0)  # ZeRO-3: one unit gathered at a time
    assert synced.gradients == pytest.approx(plain.gradients)
    assert synced.weights > plain.weights


def _source(rev: str, path: str) -> str | None:
    repo = Path("/work/.mirror/NVIDIA-NeMo+Automodel/repo")
    if not repo.exists():
        return None
    out = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"],
                         check=False, capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


@pytest.mark.parametrize("rev,path,needles", [
    ("89e3a9fd", "nemo_automodel/components/moe/parallelizer.py",
     ("reshard_after_forward=not pp_enabled", "fully_shard_default(_model)",
      "reduce_dtype=torch.float32", "shard_placement_fn=lambda _: Shard(1)")),
    ("89e3a9fd", "nemo_automodel/components/distributed/pipelining/functional.py",
     ("stages[i].submod = m",)),
    ("2c236e081", "nemo_automodel/components/moe/fsdp_mixin.py",
     ("set_requires_gradient_sync", "def patched_backward_maybe_with_nosync")),
])
def test_the_lines_are_the_ones_in_its_source(rev, path, needles):
    """Where the Automodel mirror is at hand, the code each line cites is read (skipped
    without the mirror)."""
    text = _source(rev, path)
    if text is None:
        pytest.skip("no NeMo Automodel mirror")
    for needle in needles:
        assert needle in text, needle


def test_the_task_estimate_counts_every_split_backward():
    """Every backward is split per layer and reduce-scattered (not only the last micro-batch's):
    the work limit's estimate (``limits.simulation_tasks``) is not below the tasks built."""
    from trainsim.limits import simulation_tasks
    c = run_config_from_dict({
        "model": {"preset": "qwen3-30b-a3b", "num_layers": 48},
        "parallel": {"tp": 1, "pp": 2, "ep": 4, "zero_stage": 3, "data_parallel_impl": "fsdp2",
                     "recompute": "full"},
        "training": {"global_batch_size": 32, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16", "framework": "automodel", "framework_version": "0.1"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8},
    })
    built = len(build_graph(c, Pricer(c)).tasks)
    assert built > 10 * c.num_microbatches * c.parallel.pp  # split backwards
    assert built <= simulation_tasks(c) < 1.5 * built
