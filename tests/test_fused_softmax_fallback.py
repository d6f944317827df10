"""Megatron's fused scale-mask-softmax and when Megatron-DeepSpeed fell back to PyTorch's."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict
from trainsim.compute.roofline import LAUNCH_S, RooflineModel, scalar_load_bw
from trainsim.workload.elementwise import strided_share
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
    return [op for op in ops if op.name.startswith("softmax_torch_fallback")], ops


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
    """32 more bytes a score forward (cast 6, scale 8, masked fill 8, softmax 8, cast 6, less
    the fused kernel's 4) in 4 more kernels; backward 42 more (cast 6, softmax 12, the fill's
    clone 8 and fill 8, scale 8, cast 6, less 6) in 5 more, from the profile before the
    2022-03-06 fused-kernel sync; none at mb 4, TP 4, after the sync, or in a framework
    without the bug."""
    c = cfg(mb=2)
    found, ops = _fallback(c)
    scores = 2 * 8 * 2048 * 2048
    assert len(found) == 2 and sum(op.bytes for op in found) == pytest.approx(32 * scores)
    assert sum(op.kernels for op in found) == 4
    back = [op for op in backward_of(ops, shard_of(c))
            if op.name.startswith("softmax_torch_fallback") and op.name.endswith(".bwd")]
    assert len(back) == 2 and sum(op.bytes for op in back) == pytest.approx(42 * scores)
    assert sum(op.kernels for op in back) == 5
    assert _fallback(cfg(mb=4))[0] == []
    assert _fallback(cfg(mb=2, tp=4))[0] == []
    assert _fallback(cfg(mb=2, version="2022-03"))[0] == []
    assert _fallback(cfg(mb=2, framework="megatron-lm", version=None))[0] == []


def test_the_fill_over_the_broadcast_mask_runs_pytorchs_non_vectorized_path():
    """masked_fill_ over the [1, 1, s, s] mask expanded to the scores (and its backward's
    in-place fill after the gradient's clone): 8 fp32 bytes a score each way, all at the
    scalar-load rate; the fallback's other kernels stay vectorized."""
    c = cfg(mb=2)
    found, ops = _fallback(c)
    fill = [op for op in found if op.name == "softmax_torch_fallback.masked_fill"]
    rest = [op for op in found if op.name == "softmax_torch_fallback"]
    scores = 2 * 8 * 2048 * 2048
    assert len(fill) == 1 and fill[0].bytes == pytest.approx(8 * scores) and fill[0].kernels == 1
    assert strided_share(fill[0]) == 1.0 and strided_share(rest[0]) == 0.0
    back = [op for op in backward_of(ops, shard_of(c))
            if op.name == "softmax_torch_fallback.masked_fill.bwd"]
    assert len(back) == 1 and back[0].bytes == pytest.approx(8 * scores)
    assert back[0].kernels == 1 and strided_share(back[0]) == 1.0
    # priced by hand: bytes at the scalar-load rate, plus one launch
    gpu = c.cluster.gpu
    want = 8 * scores / scalar_load_bw(gpu) + LAUNCH_S
    assert RooflineModel(gpu).time(fill[0]) == pytest.approx(want)
