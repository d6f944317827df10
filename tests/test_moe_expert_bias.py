"""Megatron-core's TEGroupedMLP adds the experts' fc2 bias one expert at a time in Python."""

from __future__ import annotations

import pytest

from trainsim.catalog import gpu
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.workload.elementwise import EXPERT_BIAS_BYTES, EXPERT_BIAS_KERNELS
from trainsim.workload.layers import backward_of
from trainsim.workload.moe_block import moe_block
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import Elementwise
from trainsim.workload.shard import shard_of

EXPERTS, H = 8, 1024


def _ops(bias: bool, grouped: str | None = None) -> list:
    model = ModelConfig(name="m", hidden_size=H, num_layers=1, num_attention_heads=8,
                        ffn_hidden_size=512, activation="swiglu", num_experts=EXPERTS,
                        moe_router_topk=2, moe_ffn_hidden_size=512, add_bias_linear=bias)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=1, gpus_per_node=1)
    training = TrainingConfig(global_batch_size=1, micro_batch_size=1, seq_length=1024,
                              framework="megatron-bridge", framework_version="26.04")
    cfg = RunConfig(model=model, parallel=ParallelConfig(), training=training, cluster=cluster)
    sh = shard_of(cfg)
    ops: list = []
    moe_block(ops, cfg, sh, grouped=grouped)  # type: ignore[arg-type]
    return ops + backward_of(ops, sh)


def _bias(ops: list, name: str) -> Elementwise | None:
    return next((op for op in ops if op.name == name), None)


def test_expert_bias_is_a_per_expert_loop_after_fc2():
    """With biases (gpt-oss), each local expert adds its bias in two kernels and the pieces
    are concatenated; the backward forms two products and two sums per expert."""
    ops = _ops(bias=True)
    fwd, bwd = _bias(ops, "expert_fc2_bias"), _bias(ops, "expert_fc2_bias.bwd")
    assert fwd is not None and bwd is not None
    fc2 = next(op for op in ops if op.name == "expert_fc2")
    assert [op.name for op in ops].index("expert_fc2_bias") == ops.index(fc2) + 1
    elements = fc2.m * fc2.batch * H
    assert fwd.kernels == EXPERT_BIAS_KERNELS[0] * EXPERTS + 1
    assert bwd.kernels == EXPERT_BIAS_KERNELS[1] * EXPERTS + 1
    assert fwd.bytes == pytest.approx(elements * EXPERT_BIAS_BYTES[0])
    assert bwd.bytes == pytest.approx(elements * EXPERT_BIAS_BYTES[1])
    assert EXPERT_BIAS_BYTES == (6 * ACT, 8 * ACT)  # element passes, 16-bit


def test_no_bias_no_loop():
    """Experts without biases (Qwen3, DeepSeek, Mixtral) add nothing after fc2."""
    assert _bias(_ops(bias=False), "expert_fc2_bias") is None


@pytest.mark.parametrize("impl", ["cutlass", "triton", "deepgemm", ""])
def test_only_transformer_engine_grouped_linear_runs_the_loop(impl):
    """The loop is TEGroupedMLP's; other expert implementations are not priced with it."""
    assert _bias(_ops(bias=True, grouped=impl), "expert_fc2_bias") is None
