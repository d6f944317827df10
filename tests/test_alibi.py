"""ALiBi in Megatron-DeepSpeed: the scores' baddbmm starts from a copy of the broadcast bias."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict
from trainsim.compute.roofline import (
    HBM_EFFICIENCY,
    LAUNCH_S,
    RooflineModel,
    scalar_load_bw,
)
from trainsim.workload.elementwise import strided_share
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of


def cfg(preset="bloom-181b", attention="unfused"):
    return run_config_from_dict({
        "model": {"preset": preset, "num_layers": 8},
        "parallel": {"tp": 8, "pp": 1},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "fp16", "attention": attention},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})


def _alibi(c):
    ops = layer_forward(c, shard_of(c), moe=False)
    return [op for op in ops if op.name.startswith("alibi_bias")], ops


def test_unfused_alibi_copies_the_bias_into_the_scores():
    """4 bytes per score (the copy's write, the GEMM's read of it), no backward work; a fused
    kernel applies the bias inside it, and a model without ALiBi has no copy."""
    c = cfg()
    assert c.model.position_embedding == "alibi"
    found, ops = _alibi(c)
    heads = c.model.num_attention_heads // 8
    assert len(found) == 2
    assert sum(op.bytes for op in found) == pytest.approx(4 * heads * 2048 * 2048)
    back = [op for op in backward_of(ops, shard_of(c)) if op.name.startswith("alibi_bias")]
    assert all(op.bytes == 0 and op.kernels == 0 for op in back)
    assert _alibi(cfg(attention="flash2"))[0] == []
    assert _alibi(cfg(preset="gpt3-175b"))[0] == []


def test_the_copy_of_the_broadcast_bias_runs_pytorchs_non_vectorized_path():
    """The copy's source is the [b*np, 1, sk] bias expanded over the queries: not a memcpy but
    PyTorch's non-vectorized copy kernel, its 2-byte write a score at the scalar-load rate; the
    GEMM's read of it for beta is inside cuBLAS's kernel (no launch, the vectorized rate)."""
    c = cfg()
    found, _ = _alibi(c)
    copy = next(op for op in found if op.name == "alibi_bias")
    read = next(op for op in found if op.name == "alibi_bias.beta_read")
    scores = c.model.num_attention_heads // 8 * 2048 * 2048
    assert copy.bytes == pytest.approx(2 * scores) and copy.kernels == 1
    assert strided_share(copy) == 1.0 and strided_share(read) == 0.0 and read.kernels == 0
    gpu = c.cluster.gpu
    model = RooflineModel(gpu)
    assert model.time(copy) == pytest.approx(
        2 * scores / scalar_load_bw(gpu) + LAUNCH_S)
    assert model.time(read) == pytest.approx(2 * scores / (gpu.hbm_bw_Bps * HBM_EFFICIENCY))
