"""Megatron-core's TEGroupedMLP adds the experts' fc2 bias one expert at a time in Python."""

from __future__ import annotations

import pytest

from trainsim.catalog import gpu
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.workload.elementwise import (
    EXPERT_BIAS_BYTES,
    EXPERT_BIAS_KERNELS,
    expert_bias_bytes,
    expert_fc2_bias,
)
from trainsim.workload.layers import backward_of
from trainsim.workload.moe_block import moe_block
from trainsim.workload.moe_dispatch import expert_prob_bytes
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


def _cfg(router_dtype: str | None = None, dispatcher: str = "alltoall") -> RunConfig:
    model = ModelConfig(name="m", hidden_size=H, num_layers=1, num_attention_heads=8,
                        ffn_hidden_size=512, activation="swiglu", num_experts=EXPERTS,
                        moe_router_topk=2, moe_ffn_hidden_size=512, add_bias_linear=True)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=1, gpus_per_node=1)
    training = TrainingConfig(global_batch_size=1, micro_batch_size=1, seq_length=1024,
                              framework="megatron-bridge", framework_version="26.04")
    parallel = ParallelConfig(moe_router_dtype=router_dtype,  # type: ignore[arg-type]
                              moe_token_dispatcher_type=dispatcher)  # type: ignore[arg-type]
    return RunConfig(model=model, parallel=parallel, training=training, cluster=cluster)


@pytest.mark.parametrize(("router", "dispatcher", "expected"), [
    (None, "alltoall", ACT), ("fp32", "alltoall", 4), ("fp64", "alltoall", 8),
    (None, "deepep", 4), (None, "hybridep", 4), ("fp64", "deepep", 8),
    ("fp64", "hybridep", 4)])  # HybridEP's fp32 probabilities reach the experts as they came
def test_probabilities_reach_the_experts_in_the_router_dtype_or_fp32_after_flex(
        router, dispatcher, expected):
    """The all-to-all dispatcher permutes the router's probabilities as they are; DeepEP and
    HybridEP cast them to fp32 ("only supports float32 probs", token_dispatcher.py); only
    DeepEP's manager casts an fp64 router's back (L1318-1319), HybridEP's hands on fp32."""
    assert expert_prob_bytes(_cfg(router), dispatcher) == expected


def test_fp32_probabilities_promote_the_bias_loop():
    """With fp32 probabilities ``b * p`` and ``t + b * p`` are fp32, the concatenation moves
    fp32 and ``.to(bf16)`` casts it back (forward 4 + 10 + 8 + 6 = 28 bytes an element, one
    more kernel); backward the cast's gradient up (6), each expert's gradient of ``t`` and of
    its bias cast back (6, two kernels an expert), the products and sums (12 + 12) and the
    16-bit concatenation of the split's gradient (4): 40 bytes."""
    rows, local = 100, EXPERTS
    op = expert_fc2_bias(rows, H, local, prob_bytes=4)
    elements = rows * local * H
    assert op.bytes == pytest.approx(elements * 28)
    assert op.bwd_bytes == pytest.approx(elements * 40)
    assert op.kernels == EXPERT_BIAS_KERNELS[0] * local + 2
    assert op.bwd_kernels == (EXPERT_BIAS_KERNELS[1] + 2) * local + 2
    same = expert_fc2_bias(rows, H, local)  # 16-bit probabilities: nothing promoted
    assert (same.bytes, same.bwd_bytes) == (elements * EXPERT_BIAS_BYTES[0],
                                            elements * EXPERT_BIAS_BYTES[1])
    assert expert_bias_bytes(ACT).extra_kernels == 0
    wide = expert_bias_bytes(4)  # fp32: 6 p + 2 a, 8 p + 4 a, one cast kernel each way
    assert (wide.fwd_bytes, wide.bwd_bytes, wide.extra_kernels) == (28, 40, 1)
    assert wide.bwd_kernels_per_expert == EXPERT_BIAS_KERNELS[1] + 2


def test_an_fp32_router_prices_the_promoted_loop_in_the_layer():
    """The MoE block passes the probabilities' width to the loop: an fp32 router (the
    Bridge DeepSeek/Qwen providers' setting) costs 28 bytes an element, a 16-bit one 12."""
    for router, fwd in ((None, EXPERT_BIAS_BYTES[0]), ("fp32", 28)):
        cfg = _cfg(router)
        sh = shard_of(cfg)
        ops: list = []
        moe_block(ops, cfg, sh)
        fc2 = next(op for op in ops if op.name == "expert_fc2")
        assert _bias(ops, "expert_fc2_bias").bytes == pytest.approx(fc2.m * fc2.batch * H * fwd)
