"""Megatron-core's distributed optimizer under fp8_param_gather all-reduces one fp32 amax per
fp8 weight (per 128 x 128 block under blockwise scaling) over the data-parallel group after
every step (core_v0.9.0 distrib_optimizer.py ``_update_fp8_scale_inv_and_amax`` L1773-L1812;
TE release_v2.8 cast_master_weights_to_fp8, tensor/utils.py L250-L279, L335-L409)."""

from __future__ import annotations

import pytest

from trainsim import optimizer_tasks, run_config_from_dict, simulate
from trainsim.pricing import Pricer
from trainsim.workload.fp8_gather import amax_all_reduce_bytes, amax_blocks
from trainsim.workload.ops import Comm


def cfg(framework="megatron-core", version="0.14", dtype="fp8", gather=True, gpus=16, tp=2,
        recipe="current", model=None, gpu="h100-sxm-80gb", **parallel):
    training = {"global_batch_size": gpus // tp, "micro_batch_size": 1, "seq_length": 2048,
                "dtype": dtype, "framework": framework, "framework_version": version}
    if dtype == "fp8":
        training |= {"fp8_recipe": recipe, "fp8_param_gather": gather}
    return run_config_from_dict({
        "model": model or {"preset": "llama3-8b", "num_layers": 4},
        "parallel": {"tp": tp, "pp": 1, "distributed_optimizer": True,
                     "overlap_grad_reduce": True, "overlap_param_gather": True} | parallel,
        "training": training,
        "cluster": {"gpu": gpu, "num_gpus": gpus, "gpus_per_node": 8}})


def _amax_tasks(c):
    tl = simulate(c, keep_timeline=True).timeline
    return [(t, tl.start_s[i], tl.end_s[i]) for i, t in enumerate(tl.tasks)
            if t.label.startswith("fp8 amax all-reduce")]


def test_bytes_are_one_fp32_amax_per_fp8_weight():
    """Hand count: a dense layer has four fp8 weights (QKV, output projection, fc1, fc2), so
    4 layers send 16 amaxes of 4 B over the data-parallel group and none over the expert one."""
    assert amax_all_reduce_bytes(cfg(), range(4)) == (64.0, 0.0)
    assert amax_all_reduce_bytes(cfg(recipe="delayed"), range(32)) == (512.0, 0.0)


def test_moe_layers_count_attention_and_each_local_expert():
    """An MoE layer without shared experts: QKV and output projection (2) over the data-parallel
    group; fc1 and fc2 of each of its num_experts / ep local experts over the expert one."""
    moe = {"preset": "mixtral-8x7b", "num_layers": 4}
    c = cfg(model=moe, gpus=16, tp=2, ep=2, sequence_parallel=True)
    assert amax_all_reduce_bytes(c, range(4)) == (4 * 2 * 4.0, 4 * 2 * (8 / 2) * 4.0)


def test_no_fp8_weights_no_amaxes():
    """bf16 runs, fp8 runs that gather 16-bit weights and MXFP8 (TE v2.8's
    cast_master_weights_to_fp8 does not support it) send nothing."""
    assert amax_all_reduce_bytes(cfg(dtype="bf16"), range(4)) == (0.0, 0.0)
    assert amax_all_reduce_bytes(cfg(gather=False), range(4)) == (0.0, 0.0)
    assert amax_all_reduce_bytes(cfg(recipe="mxfp8", gpu="b200"), range(4)) == (0.0, 0.0)


def test_blockwise_sends_every_block_amax():
    """TE v2.8 ``_cast_master_weights_to_fp8_blockwise_scaling`` packs each weight's rowwise
    scale shape, ceil(rows/128) x ceil(cols/128) with the inner side padded to a multiple of 4
    (``get_scale_shape``), and all-reduces the buffer once. Hand count, llama3-8b at tp 2
    (h 4096, 32 heads and 8 KV heads of 128, ffn 14336): QKV 3072 x 4096 = 24 x 32, output
    projection 4096 x 2048 = 32 x 16, fc1 14336 x 4096 = 112 x 32, fc2 4096 x 7168 = 32 x 56."""
    per_layer = 24 * 32 + 32 * 16 + 112 * 32 + 32 * 56
    assert amax_all_reduce_bytes(cfg(recipe="blockwise"), range(4)) == (4 * per_layer * 4.0, 0.0)
    assert amax_blocks(128, 512) == 4 and amax_blocks(129, 512) == 8
    assert amax_blocks(100, 300) == 1 * 4  # 3 column blocks padded to 4
    assert amax_blocks(4096, 640) == 32 * 8  # 5 column blocks padded to 8
    (task, _, _), = _amax_tasks(cfg(recipe="blockwise"))
    c = cfg(recipe="blockwise")
    want = Pricer(c).comm_time(Comm("a", "all_reduce", 4 * per_layer * 4.0, "dp_cp"))
    assert task.duration_s == pytest.approx(want)


def test_cp_reduces_over_data_parallel_with_context_parallel():
    """With CP the dense optimizer's group is ``get_data_parallel_group(with_context_parallel=
    True)`` (core_v0.9.0 optimizer/__init__.py L402): dp 4 x cp 2 = 8 ranks on 16 GPUs at tp 2,
    not the 4 of plain dp."""
    c = cfg(gpus=16, tp=2, cp=2)
    (task, _, _), = _amax_tasks(c)
    pricer = Pricer(c)
    over = {g: pricer.comm_time(Comm("a", "all_reduce", 64.0, g)) for g in ("dp_cp", "dp")}
    assert over["dp_cp"] != pytest.approx(over["dp"])  # the test tells the groups apart
    assert task.duration_s == pytest.approx(over["dp_cp"])


def test_expert_amaxes_go_over_the_expert_data_parallel_group():
    """The expert optimizer's group is the expert-data-parallel one (core_v0.9.0
    optimizer/__init__.py L431, ``get_data_modulo_expert_parallel_group``). Mixtral (8 experts)
    on 32 GPUs at tp 2, ep 4: dp_cp 16, edp 32 / (4 x 1) = 8; 4 layers send 4 x 2 attention
    amaxes over dp_cp, then 4 x 2 x 8 / 4 expert amaxes over edp."""
    moe = {"preset": "mixtral-8x7b", "num_layers": 4}
    c = cfg(model=moe, gpus=32, tp=2, ep=4, sequence_parallel=True)
    tasks = [t for t, _, _ in _amax_tasks(c)]
    assert [t.label for t in tasks] == ["fp8 amax all-reduce dp_cp", "fp8 amax all-reduce edp"]
    pricer = Pricer(c)
    dense, experts = 4 * 2 * 4.0, 4 * 2 * (8 / 4) * 4.0
    edp = pricer.comm_time(Comm("a", "all_reduce", experts, "edp"))
    assert edp != pytest.approx(pricer.comm_time(Comm("a", "all_reduce", experts, "dp_cp")))
    assert tasks[0].duration_s == pytest.approx(
        pricer.comm_time(Comm("a", "all_reduce", dense, "dp_cp")))
    assert tasks[1].duration_s == pytest.approx(edp)


def test_a_stage_counts_its_own_moe_layers():
    """Each layer counts by its own kind: with two dense first layers on pipeline stage 0 of 2,
    stage 0 holds no expert (one all-reduce, 2 x 4 dense amaxes); stage 1's two MoE layers
    send 2 x 2 attention amaxes and 2 x 2 x 8 / 2 expert amaxes."""
    moe = {"preset": "mixtral-8x7b", "num_layers": 4, "moe_first_dense_layers": 2}
    c = cfg(model=moe, gpus=32, tp=2, pp=2, ep=2, sequence_parallel=True)
    assert amax_all_reduce_bytes(c, range(2)) == (2 * 4 * 4.0, 0.0)
    assert amax_all_reduce_bytes(c, range(2, 4)) == (2 * 2 * 4.0, 2 * 2 * 4 * 4.0)
    by_stage: dict[int, list[str]] = {}
    for task, _, _ in _amax_tasks(c):
        by_stage.setdefault(task.stream[0], []).append(task.label)
    assert by_stage == {0: ["fp8 amax all-reduce dp_cp"],
                        1: ["fp8 amax all-reduce dp_cp", "fp8 amax all-reduce edp"]}


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
