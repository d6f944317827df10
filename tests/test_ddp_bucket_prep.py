"""Megatron's DDP runs over each gradient bucket before its collective: the NaN check's norm
with a host wait (Megatron-core >= 0.6, not fp16) and the in-place 1/dp scaling."""

from __future__ import annotations

import pytest

from trainsim import last_backward, run_config_from_dict, simulate
from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute.roofline import HBM_EFFICIENCY
from trainsim.model.counts import total_params
from trainsim.workload import sharding
from trainsim.workload.ops import Elementwise
from trainsim.workload.sharding import ddp_bucket_prep


def cfg(framework="megatron-core", version="0.8", dtype="bf16", gpus=32, tp=8, **parallel):
    return run_config_from_dict({
        "model": {"preset": "gpt3-175b", "num_layers": 4},
        "parallel": {"tp": tp, "pp": 1, "distributed_optimizer": True,
                     "overlap_grad_reduce": True, **parallel},
        "training": {"global_batch_size": gpus // tp, "micro_batch_size": 1,
                     "seq_length": 2048, "dtype": dtype, "framework": framework,
                     "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": gpus, "gpus_per_node": 8}})


def _names(ops):
    return [op.name for op in ops]


def test_megatron_core_checks_then_scales_each_bucket():
    """core_v0.8.0 start_grad_sync: norm of the bucket's fp32 gradients (4 B each), the isnan
    read by the host, then grad_data *= 1/dp (read and write: 8 B each)."""
    c = cfg()
    assert c.training.grad_reduce_in_fp32
    ops = ddp_bucket_prep(c, 1e8)
    assert _names(ops) == ["grad_bucket_norm", "grad_bucket_isnan_to_host", "grad_bucket_scale"]
    assert ops[0].bytes == pytest.approx(4e8) and ops[2].bytes == pytest.approx(8e8)
    assert ops[1].host_sync and not ops[0].host_sync and not ops[2].host_sync


def test_which_frameworks_and_runs_pay_which_pass():
    """fp16 turns the NaN check off (dynamic loss scaling); before core_v0.6 and in Megatron-LM
    before 2023-12 only the scaling runs; one data-parallel rank scales nothing; DeepSpeed's
    engine has neither."""
    assert _names(ddp_bucket_prep(cfg(dtype="fp16"), 1e8)) == ["grad_bucket_scale"]
    assert _names(ddp_bucket_prep(cfg(version="0.5"), 1e8)) == ["grad_bucket_scale"]
    assert _names(ddp_bucket_prep(cfg("megatron-lm", "2023"), 1e8)) == ["grad_bucket_scale"]
    assert len(ddp_bucket_prep(cfg("megatron-lm", "2024-04"), 1e8)) == 3
    assert _names(ddp_bucket_prep(cfg(gpus=8), 1e8)) == ["grad_bucket_norm",
                                                         "grad_bucket_isnan_to_host"]
    ds = cfg("megatron-deepspeed", "2022-02", dtype="fp16", overlap_grad_reduce=False)
    assert ddp_bucket_prep(ds, 1e8) == []


def test_iteration_pays_the_passes_once(monkeypatch):
    """One micro-batch, dp 2 inside one node: the compute stream runs the bucket passes over
    the rank's fp32 gradients once, 12 B per parameter at the HBM rate (hand count), plus a few
    microseconds of launches and host wait per Megatron bucket. The iteration grows by at most
    that: the passes of the buckets the last layer and the embedding make ready run while the
    reductions of the earlier ones are still on the wire (the tied embedding's bucket is ready
    only after the embedding's backward)."""
    from trainsim.workload.ddp_buckets import ddp_buckets

    c = cfg(gpus=8, tp=4)
    a = simulate(c)
    monkeypatch.setattr(last_backward, "ddp_bucket_prep", lambda cfg, params: [])
    b = simulate(c)
    params = total_params(c.model) / c.parallel.tp
    g = catalog_gpu("h100-sxm-80gb")
    hand = 12 * params / (g.hbm_bw_Bps * HBM_EFFICIENCY)
    buckets = ddp_buckets(c, c.virtual_ranges[0], True, True)
    assert buckets == 13  # three per layer (fc2, fc1, attention), the embedding alone

    def busy(r):
        return r.breakdown["compute_s"] + r.breakdown["other_s"]

    assert 0.99 * hand < busy(a) - busy(b) < hand + buckets * 100e-6
    assert 0.5 * hand < a.iteration_time_s - b.iteration_time_s <= busy(a) - busy(b)


def test_distributed_optimizer_zeroes_the_whole_buffer(monkeypatch):
    """zero_grad_buffer writes the rank's whole fp32 gradient buffer (4 B per parameter); the
    step's frame already counts its 1/dp shard, so the step grows by 4 B x (1 - 1/dp) per
    parameter at the HBM rate (hand count)."""
    c = cfg(gpus=8, tp=4)
    monkeypatch.setattr(last_backward, "ddp_bucket_prep", lambda cfg, params: [])
    with_zero = simulate(c).iteration_time_s
    monkeypatch.setattr(sharding, "zeroed_grad_buffer",
                        lambda size: Elementwise("grad_buffer_zero", bytes=0.0, kernels=0))
    without = simulate(c).iteration_time_s
    params = total_params(c.model) / c.parallel.tp
    hand = 4 * params * (1 - 1 / c.dp) / (catalog_gpu("h100-sxm-80gb").hbm_bw_Bps * HBM_EFFICIENCY)
    assert 0.99 * hand < with_zero - without < 1.01 * hand + 10e-6


def test_the_rerun_state_machine_sets_how_often_the_host_waits():
    """From core_v0.10.0 the check is ``rerun_state_machine.validate_result(norm, isnan)``:
    under the default ``--rerun-mode disabled`` it returns before isnan (the norm still runs);
    core_v0.14.0 defaults to ``validate_results`` and checks isnan and isinf, each on the host."""
    waits = {v: _names(ddp_bucket_prep(cfg(version=v), 1e8)).count("grad_bucket_isnan_to_host")
             for v in ("0.8", "0.10", "0.13", "0.14", "0.17")}
    assert waits == {"0.8": 1, "0.10": 0, "0.13": 0, "0.14": 2, "0.17": 2}
    for v in ("0.10", "0.14"):
        assert _names(ddp_bucket_prep(cfg(version=v), 1e8))[0] == "grad_bucket_norm"
