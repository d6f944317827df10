"""ALiBi in Megatron-DeepSpeed: the scores' baddbmm starts from a copy of the broadcast bias."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict
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
    return [op for op in ops if op.name == "alibi_bias"], ops


def test_unfused_alibi_copies_the_bias_into_the_scores():
    """4 bytes per score (the copy's write, the GEMM's read of it), no backward work; a fused
    kernel applies the bias inside it, and a model without ALiBi has no copy."""
    c = cfg()
    assert c.model.position_embedding == "alibi"
    found, ops = _alibi(c)
    heads = c.model.num_attention_heads // 8
    assert len(found) == 1 and found[0].bytes == pytest.approx(4 * heads * 2048 * 2048)
    back = [op for op in backward_of(ops, shard_of(c)) if op.name == "alibi_bias.bwd"]
    assert all(op.bytes == 0 and op.kernels == 0 for op in back)
    assert _alibi(cfg(attention="flash2"))[0] == []
    assert _alibi(cfg(preset="gpt3-175b"))[0] == []
