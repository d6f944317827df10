"""A check file added by zeropp29 (2026-11-26): the DeepSpeed ZeRO++ blog's ZeRO-3 baseline bars for
the 18B model on 384 V100, 1 to 8 InfiniBand links of 100 Gb/s per 16-GPU node
(microsoft/DeepSpeed blogs/zeropp figures 6-8). benchmarks/zeropp_rows.py writes
benchmarks/training_zeropp.csv; its --check re-reads the figures' blobs, the blog text and the
tutorial from the mirror (the generic checks and the error bound: tests/test_training_files.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script, training_rows

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_zeropp.csv"
SCRIPT = ROOT / "benchmarks" / "zeropp_rows.py"
GEN = load_script(SCRIPT)


def test_file_is_the_blog_bars():
    rows = training_rows(FILE)
    assert len(rows) == len(GEN.BARS_18B)
    for r, (fig, _, links, tokens, tf) in zip(rows, GEN.BARS_18B):
        assert r["framework"] == "deepspeed" and r["zero_stage"] == "3"
        assert f"figure {fig}" in r["source"] and f"published {tf} TFLOPs" in r["note"]
        # the stated network: links x 100 Gb/s shared by the node's 16 GPUs
        assert float(r["nic_gbps_per_gpu"]) * int(r["gpus_per_node"]) == links * 100
        b, s = int(r["global_batch_size"]), int(r["seq_length"])
        assert b == int(r["num_gpus"]) * int(r["micro_batch_size"]) and b * s == 384 * tokens
        # the step is Megatron-DeepSpeed's count over the published rate
        h, n, v = int(r["hidden_size"]), int(r["num_layers"]), int(r["vocab_size"])
        flops = 96 * b * s * n * h * h * (1 + s / (6 * h) + v / (16 * n * h))
        assert flops / (float(r["measured_iteration_s"]) * 384e12) == pytest.approx(tf, rel=1e-4)


def test_count_gives_the_tutorial_log_rate():
    """The tutorial's ZeRO-3 log (64 x 512 tokens, 64 GPUs, 9.9559 s) printed 7.65 TFLOPs."""
    assert GEN.megatron_ds_flops(64) / (9.9559 * 64e12) == pytest.approx(7.65, abs=0.005)


def test_gap_diagnostic_counts_the_partitioned_gemm_weights():
    """benchmarks/zeropp_gap.py spreads the gap over the fetches: the four GEMM weights of a
    block are over the 1e5-element persistence threshold at h 6144, the norms and biases not."""
    gap = load_script(ROOT / "benchmarks" / "zeropp_gap.py")
    assert gap.fetched_weights_per_layer(6144) == 4
    assert gap.fetched_weights_per_layer(256) == 3  # the 256 x 256 projection stays gathered


def test_serialised_launches_what_if_by_hand():
    """zeropp_gap.py whatif: every launch's host cost added to the GPU time (the host never
    ahead), against compute.host.exposed_s, which hides launches behind queued kernels."""
    from trainsim.compute import host
    from trainsim.workload.ops import Elementwise

    gap = load_script(ROOT / "benchmarks" / "zeropp_gap.py")
    ops = [Elementwise("a", 0.0, kernels=3), Elementwise("b", 0.0, kernels=2)]
    busy = [1e-3, 1e-3]
    assert gap.serial_launches_s(ops, busy, 30e-6) == pytest.approx(5 * 30e-6)
    assert host.exposed_s(ops, busy, 30e-6) == 0.0  # GPU-bound: the host runs ahead
    assert gap.serial_launches_s(ops, busy, 0.0) == 0.0  # CUDA graphs


def test_what_if_fetch_counts_and_rows():
    """The ZeRO-3 rows the what-if reads and their fetches per step (four partitioned GEMM
    weights x layers x forward, recompute, backward; one micro-batch each)."""
    gap = load_script(ROOT / "benchmarks" / "zeropp_gap.py")
    rows = gap.zero3_rows()
    ids = {r["id"]: r for _, r in rows}
    assert sum(s == "training_zeropp" for s, _ in rows) == 6
    assert gap.fetches(ids["zeropp-blog-18b-zero3-384gpu-ib4-2ktok"]) == 480
    assert gap.fetches(ids["dsazure-175b-s512-256gpu-mbs32"]) == 96 * 4 * 3


def test_serialised_launches_do_not_close_the_zeropp_gap():
    """2026-11-26 (z3sync29): with every host launch at HOST_S_PER_KERNEL serialised with the
    GPU, the 4-link 2K row moves by under 0.1 s against a 2.8 s gap (RESULTS.md)."""
    from trainsim.compute import host
    from trainsim.validate.training import predict_training_row

    gap = load_script(ROOT / "benchmarks" / "zeropp_gap.py")
    row = next(r for _, r in gap.zero3_rows() if r["id"].endswith("ib4-2ktok"))
    a = predict_training_row(row)
    orig = host.exposed_s
    host.exposed_s = gap.serial_launches_s
    try:
        b = predict_training_row(row)
    finally:
        host.exposed_s = orig
    assert 0.0 < b.predicted - a.predicted < 0.1
    assert a.measured - a.predicted > 2.5


def test_per_weight_split_keeps_each_units_total():
    """zeropp_gap.py's one-weight-ahead what-if spreads each unit over its four GEMM weights
    (3:1:4:4 h^2) and restores the walk afterwards."""
    from trainsim import sharded_passes

    gap = load_script(ROOT / "benchmarks" / "zeropp_gap.py")
    assert gap.split_units([12.0, 24.0], (3, 1, 4, 4)) == [3.0, 1.0, 4.0, 4.0, 6.0, 2.0, 8.0, 8.0]
    assert gap.split_units(None, (3, 1, 4, 4)) is None
    walk = sharded_passes.prefetch_exposed_s
    row = next(r for _, r in gap.zero3_rows() if r["id"].endswith("ib1-2ktok"))
    assert gap.per_weight_prediction(row).predicted > 0
    assert sharded_passes.prefetch_exposed_s is walk
