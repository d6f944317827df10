"""Megatron-core's all-to-all dispatcher (core >= 0.13, routing probabilities applied inside the
expert) sends the permuted probabilities by an all-to-all of their own after the tokens'
(MoEAlltoAllTokenDispatcher.token_dispatch); their gradient comes back the same way. The flex
dispatchers carry the probabilities inside their token exchange."""

from __future__ import annotations

import pytest

from trainsim.catalog import gpu
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.workload.layers import _moe_block, backward_of, shard_of

PROBS = "moe.dispatch_probs_all_to_all"


def _cfg(dispatcher: str = "alltoall", ep: int = 16,
         framework: str | None = "megatron-bridge") -> RunConfig:
    model = ModelConfig(name="m", hidden_size=1024, num_layers=1, num_attention_heads=8,
                        ffn_hidden_size=512, activation="swiglu", num_experts=64,
                        moe_router_topk=8, moe_ffn_hidden_size=512)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=16, gpus_per_node=8)
    training = TrainingConfig(global_batch_size=16, micro_batch_size=1, seq_length=1024,
                              framework=framework, framework_version="25.11")
    parallel = ParallelConfig(expert_model_parallel_size=ep, moe_token_dispatcher_type=dispatcher)
    return RunConfig(model=model, parallel=parallel, training=training, cluster=cluster)


def _ops(cfg: RunConfig) -> tuple[list, list]:
    sh = shard_of(cfg)
    fwd: list = []
    _moe_block(fwd, cfg, sh)
    return fwd, backward_of(fwd, sh)


def test_alltoall_sends_one_fp32_probability_per_token_copy_after_the_tokens():
    fwd, bwd = _ops(_cfg())
    names = [op.name for op in fwd]
    tokens = fwd[names.index("moe.dispatch_all_to_all")]
    probs = fwd[names.index(PROBS)]
    assert names.index("moe.dispatch_all_to_all") < names.index(PROBS) < \
        names.index("expert_fc1")
    assert probs.kind == "all_to_all" and probs.group == "ep"
    # the tokens travel in 16 bits (h = 1024 elements), the probabilities in fp32
    assert probs.bytes == pytest.approx(tokens.bytes / (1024 * 2) * 4)
    assert [op.name for op in bwd].count(f"{PROBS}.bwd") == 1  # the gradient comes back


@pytest.mark.parametrize("cfg", [_cfg("deepep"), _cfg("hybridep"), _cfg("allgather"),
                                 _cfg(ep=1), _cfg(framework=None)])
def test_no_probability_exchange_where_the_tokens_carry_them_or_nothing_moves(cfg):
    assert PROBS not in [op.name for op in _ops(cfg)[0]]
