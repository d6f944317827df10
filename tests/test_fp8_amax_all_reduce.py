"""Megatron-core's distributed optimizer under fp8_param_gather all-reduces one fp32 amax per
fp8 weight over the data-parallel group after every step (core_v0.9.0 distrib_optimizer.py
L1805-L1812; TE release_v2.8 cast_master_weights_to_fp8, tensor/utils.py L250-L279)."""

from __future__ import annotations

import pytest

from trainsim import optimizer_tasks, run_config_from_dict, simulate
from trainsim.pricing import Pricer
from trainsim.workload.fp8_gather import amax_all_reduce_bytes
from trainsim.workload.ops import Comm


def cfg(framework="megatron-core", version="0.14", dtype="fp8", gather=True, gpus=16, tp=2,
        recipe="current", model=None, **parallel):
    training = {"global_batch_size": gpus // tp, "micro_batch_size": 1, "seq_length": 2048,
                "dtype": dtype, "framework": framework, "framework_version": version}
    if dtype == "fp8":
        training |= {"fp8_recipe": recipe, "fp8_param_gather": gather}
    return run_config_from_dict({
        "model": model or {"preset": "llama3-8b", "num_layers": 4},
        "parallel": {"tp": tp, "pp": 1, "distributed_optimizer": True,
                     "overlap_grad_reduce": True, "overlap_param_gather": True, **parallel},
        "training": training,
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": gpus, "gpus_per_node": 8}})


def _amax_tasks(c):
    tl = simulate(c, keep_timeline=True).timeline
    return [(t, tl.start_s[i], tl.end_s[i]) for i, t in enumerate(tl.tasks)
            if t.label.startswith("fp8 amax all-reduce")]


def test_bytes_are_one_fp32_amax_per_fp8_weight():
    """Hand count: a dense layer has four fp8 weights (QKV, output projection, fc1, fc2), so
    4 layers send 16 amaxes of 4 B over the data-parallel group and none over the expert one."""
    assert amax_all_reduce_bytes(cfg(), 4) == (64.0, 0.0)
    assert amax_all_reduce_bytes(cfg(recipe="delayed"), 32) == (512.0, 0.0)


def test_moe_layers_count_attention_and_each_local_expert():
    """An MoE layer without shared experts: QKV and output projection (2) over the data-parallel
    group; fc1 and fc2 of each of its num_experts / ep local experts over the expert one."""
    moe = {"preset": "mixtral-8x7b", "num_layers": 4}
    c = cfg(model=moe, gpus=16, tp=2, ep=2, sequence_parallel=True)
    assert amax_all_reduce_bytes(c, 4) == (4 * 2 * 4.0, 4 * 2 * (8 / 2) * 4.0)


def test_no_fp8_weights_no_amaxes():
    """bf16 runs, fp8 runs that gather 16-bit weights and blockwise scaling (an amax per block,
    not priced) send nothing."""
    assert amax_all_reduce_bytes(cfg(dtype="bf16"), 4) == (0.0, 0.0)
    assert amax_all_reduce_bytes(cfg(gather=False), 4) == (0.0, 0.0)
    assert amax_all_reduce_bytes(cfg(recipe="blockwise"), 4) == (0.0, 0.0)


def test_the_step_waits_for_the_all_reduce_then_zeroes_the_buffer(monkeypatch):
    """One all-reduce after the optimizer step, priced as NCCL's all_reduce of 64 B over the
    data-parallel group (dp 8 with tp 2 on 16 GPUs), and the iteration grows by exactly it."""
    c = cfg()
    (task, start, end), = _amax_tasks(c)
    want = Pricer(c).comm_time(Comm("a", "all_reduce", 64.0, "dp_cp"))
    assert task.duration_s == pytest.approx(want)
    r = simulate(c, keep_timeline=True)
    tl = r.timeline
    step = next(i for i, t in enumerate(tl.tasks) if t.label == "optimizer step")
    zero = next(i for i, t in enumerate(tl.tasks) if t.label == "zero_grad_buffer")
    assert start == pytest.approx(tl.end_s[step]) and tl.start_s[zero] == pytest.approx(end)
    monkeypatch.setattr(optimizer_tasks, "amax_all_reduce_bytes", lambda c, n: (0.0, 0.0))
    before = simulate(c).iteration_time_s  # the same run without it
    assert r.iteration_time_s - before == pytest.approx(want, rel=1e-6)


def test_which_frameworks_and_runs_pay_it():
    """Megatron-core from 0.9 (fp8_param_gather's amax reduction), Megatron-Bridge, MLPerf's
    NeMo from round 5.0 (Megatron-core's DDP); not Megatron-core 0.8, not one data-parallel
    rank, not without the distributed optimizer."""
    assert len(_amax_tasks(cfg(version="0.9"))) == 1
    assert len(_amax_tasks(cfg("megatron-bridge", "25.11"))) == 1
    assert len(_amax_tasks(cfg("mlperf-nemo", "5.1"))) == 1
    assert _amax_tasks(cfg(version="0.8")) == []
    assert _amax_tasks(cfg(gpus=2)) == []
    assert _amax_tasks(cfg(distributed_optimizer=False)) == []
