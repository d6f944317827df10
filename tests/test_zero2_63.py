"""zero2_63: DeepSpeed's ZeRO-2 reduces every micro-batch's gradients in its backward, not at the
accumulation boundary alone (microsoft/DeepSpeed v0.5.10 deepspeed/runtime/engine.py
L1643-1653, v0.14.0 L1916-1930 ``allreduce_gradients``; v0.14.0 deepspeed/runtime/zero/
stage_1_and_2.py L1410-1412 ``reduce_ready_partitions_and_remove_grads``), and so does
Fast-LLM's stage 2 (ServiceNow/Fast-LLM@5eeef37d fast_llm/engine/multi_stage/config.py
L171-176: two gradient buffers); ZeRO-1 reduces once, at the boundary (profile
``zero2_reduce_every_microbatch``, ``workload.sharding.zero2_reduces_every_microbatch``)."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict
from trainsim.catalog.frameworks import framework_profile
from trainsim.pricing import Pricer
from trainsim.simulator import build_graph
from trainsim.workload.sharding import reduces_every_microbatch
from trainsim.workload.wgrad_fusion import unfused_grad_accumulation


def _cfg(stage=2, gbs=64, framework="deepspeed", version="0.14.0", overlap=True, gpus=16,
         mbs=2):
    return run_config_from_dict({
        "model": "llama2-7b",
        "parallel": {"tp": 1, "pp": 1, "zero_stage": stage, "data_parallel_impl": "deepspeed",
                     "overlap_grad_reduce": overlap},
        "training": {"global_batch_size": gbs, "micro_batch_size": mbs, "seq_length": 2048,
                     "dtype": "bf16", "attention": "flash2", "framework": framework,
                     "framework_version": version},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": gpus, "gpus_per_node": 8,
                    "nic_gbit_s_per_gpu": 100}})


def _reduce_scatters(cfg) -> dict[str, float]:
    """Bytes of each data-parallel gradient reduce-scatter task, by label."""
    graph = build_graph(cfg, Pricer(cfg), None)
    out = {}
    for i, task in enumerate(graph.tasks):
        if task.label.startswith("grad reduce_scatter"):
            out[task.label] = sum(c.bytes * n for c, n in graph.collectives[i]
                                  if c.kind == "reduce_scatter")
    return out


def _by_microbatch(labels) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for label in labels:
        out.setdefault(label.split()[3], []).append(label)
    return out


def test_profiles_say_it():
    for name, version in (("deepspeed", "0.14.0"), ("deepspeed", "0.5.10"),
                          ("fast-llm", "2024-12-10")):
        assert framework_profile(name, version).features["zero2_reduce_every_microbatch"] is True


def test_zero2_reduces_each_microbatch_zero1_once():
    """m = 4 micro-batches a rank: ZeRO-2 issues one backward's buckets after each of the four
    backwards, the same bytes each time (the whole gradient, every micro-batch); ZeRO-1 one set
    after the last backward only."""
    two, one = _cfg(2, gbs=128), _cfg(1, gbs=128)
    m = two.num_microbatches
    assert m == 4
    rs2, rs1 = _reduce_scatters(two), _reduce_scatters(one)
    groups = _by_microbatch(rs2)
    assert sorted(groups) == sorted(["last", *(f"mb{i}" for i in range(m - 1))])
    per_mb = {k: sum(rs2[x] for x in v) for k, v in groups.items()}
    assert len({len(v) for v in groups.values()}) == 1 and len(groups["last"]) > 1
    assert max(per_mb.values()) == pytest.approx(min(per_mb.values()), rel=1e-9)
    assert sum(rs2.values()) == pytest.approx(m * per_mb["last"], rel=1e-9)
    # ZeRO-1: one backward's worth, once
    assert not any(" mb" in x for x in rs1)
    assert sum(rs1.values()) == pytest.approx(per_mb["last"], rel=1e-9)
    assert reduces_every_microbatch(two, False) and not reduces_every_microbatch(one, False)


def test_no_peers_or_no_microbatch_accumulation():
    """One data-parallel rank: nothing to reduce; one micro-batch: one set either way."""
    assert not reduces_every_microbatch(_cfg(2, gpus=1, gbs=8), False)
    single = _reduce_scatters(_cfg(2, gbs=32))
    assert set(_by_microbatch(single)) == {"last"}


def test_the_optimizer_gradient_path_is_unchanged():
    """DeepSpeed's stage 2 has no Megatron-LLaMA copy-in path (``"optimizer"``) and no grad
    bucket copy task: only the reductions move."""
    cfg = _cfg(2)
    assert unfused_grad_accumulation(cfg) != "optimizer"
    labels = [t.label for t in build_graph(cfg, Pricer(cfg), None).tasks]
    assert not any(x.startswith("grad bucket copy") for x in labels)


def test_fast_llm_stage_2_runs_it_stage_1_does_not():
    """Fast-LLM at zero_stage 2 runs on the deepspeed engine (profile ``zero_stage_engines``)
    and reduces every micro-batch; its default stage 1 (Megatron's buffers) once a step."""
    def cfg(stage):
        return run_config_from_dict({
            "model": "llama2-7b", "parallel": {"tp": 1, "pp": 1, "zero_stage": stage},
            "training": {"global_batch_size": 128, "micro_batch_size": 2, "seq_length": 2048,
                         "dtype": "bf16", "attention": "flash2", "framework": "fast-llm",
                         "framework_version": "2024-12-10"},
            "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8,
                        "nic_gbit_s_per_gpu": 100}})
    two, one = cfg(2), cfg(1)
    assert two.parallel.data_parallel_impl == "deepspeed"
    assert reduces_every_microbatch(two, False) and not reduces_every_microbatch(one, False)
    assert len(_by_microbatch(_reduce_scatters(two))) == two.num_microbatches == 4
