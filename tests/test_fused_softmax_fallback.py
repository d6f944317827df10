"""Megatron's fused scale-mask-softmax and when Megatron-DeepSpeed fell back to PyTorch's."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of
from trainsim.workload.softmax import batches_per_block, fused_softmax_runs


def cfg(mb=1, tp=8, version="2022-02", framework="megatron-deepspeed"):
    return run_config_from_dict({
        "model": {"preset": "bloom-181b", "num_layers": 8, "num_attention_heads": 64},
        "parallel": {"tp": tp, "pp": 1},
        "training": {"global_batch_size": 8 * mb, "micro_batch_size": mb, "seq_length": 2048,
                     "dtype": "fp16", "attention": "unfused", "framework": framework,
                     "framework_version": version},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})


def _fallback(c):
    ops = layer_forward(c, shard_of(c), moe=False)
    return [op for op in ops if op.name == "softmax_torch_fallback"], ops


def test_batches_per_block_follows_the_kernels_warp_layout():
    """128 threads a block, a warp of min(next_pow2(key), 32) threads a row, 2 rows a warp up
    to 128 keys (scaled_masked_softmax.h)."""
    assert batches_per_block(2048) == 4
    assert batches_per_block(8) == 32
    assert batches_per_block(14) == 16
    assert batches_per_block(64) == 8


def test_swapped_arguments_make_the_rows_per_block_follow_the_heads():
    """With 8 heads per rank a block takes 32 rows: micro-batches 1, 2 and 6 miss the kernel
    only when the arguments are swapped; the sequence decides otherwise."""
    assert [b for b in (1, 2, 4, 6, 8) if not fused_softmax_runs(b, 8, 2048, 2048, True)] \
        == [1, 2, 6]
    assert all(fused_softmax_runs(b, 8, 2048, 2048, False) for b in (1, 2, 4, 6, 8))
    assert all(fused_softmax_runs(b, 16, 2048, 2048, True) for b in (1, 2, 4))
    assert not fused_softmax_runs(4, 8, 4096, 4096, True)  # 16 < sq <= 2048 before 2022-03
    assert fused_softmax_runs(4, 8, 4096, 4096, False)  # sk <= 4096 after


def test_megatron_deepspeed_2022_02_runs_the_fp32_torch_softmax_at_tp8_mb2():
    """32 more bytes a score forward and 34 backward, 4 more kernels each way, from the
    profile before the 2022-03-06 fused-kernel sync; none at mb 4, TP 4, after the sync, or
    in a framework without the bug."""
    c = cfg(mb=2)
    found, ops = _fallback(c)
    scores = 2 * 8 * 2048 * 2048
    assert len(found) == 1 and found[0].bytes == pytest.approx(32 * scores)
    assert found[0].kernels == 4
    back = [op for op in backward_of(ops, shard_of(c)) if op.name == "softmax_torch_fallback.bwd"]
    assert len(back) == 1 and back[0].bytes == pytest.approx(34 * scores)
    assert _fallback(cfg(mb=4))[0] == []
    assert _fallback(cfg(mb=2, tp=4))[0] == []
    assert _fallback(cfg(mb=2, version="2022-03"))[0] == []
    assert _fallback(cfg(mb=2, framework="megatron-lm", version=None))[0] == []
