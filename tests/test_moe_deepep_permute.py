"""Megatron-core's flex dispatcher with the DeepEP backend still sorts the tokens it receives
by local expert (a permute after the dispatch, an unpermute before the combine)."""

from __future__ import annotations

import pytest

from trainsim.catalog import gpu
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.workload.layers import backward_of
from trainsim.workload.moe_block import moe_block
from trainsim.workload.shard import shard_of


def _names(dispatcher: str) -> list[str]:
    model = ModelConfig(name="m", hidden_size=1024, num_layers=1, num_attention_heads=8,
                        ffn_hidden_size=512, activation="swiglu", num_experts=16,
                        moe_router_topk=2, moe_ffn_hidden_size=512)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=16, gpus_per_node=8)
    training = TrainingConfig(global_batch_size=16, micro_batch_size=1, seq_length=1024)
    parallel = ParallelConfig(expert_model_parallel_size=16,
                              moe_token_dispatcher_type=dispatcher)
    cfg = RunConfig(model=model, parallel=parallel, training=training, cluster=cluster)
    sh = shard_of(cfg)
    ops: list = []
    moe_block(ops, cfg, sh)
    return [op.name for op in ops + backward_of(ops, sh)]


def test_deepep_permutes_the_received_tokens_between_dispatch_and_experts():
    names = _names("deepep")
    assert names.index("moe.dispatch_all_to_all") < names.index("permute") < \
        names.index("expert_fc1")
    assert names.index("expert_fc2") < names.index("unpermute") < \
        names.index("moe.combine_all_to_all")
    assert "permute.bwd" in names and "unpermute.bwd" in names


@pytest.mark.parametrize("dispatcher", ["alltoall", "deepep"])
def test_every_dispatcher_permutes_once_each_way(dispatcher):
    names = _names(dispatcher)
    assert names.count("permute") == 1 and names.count("unpermute") == 1


def test_alltoall_permutes_before_sending():
    names = _names("alltoall")
    assert names.index("permute") < names.index("moe.dispatch_all_to_all")
    assert names.index("moe.combine_all_to_all") < names.index("unpermute")
