"""Megatron-core's all-to-all dispatcher all-gathers the tokens per expert over the expert
tensor-and-model parallel group before its token exchange (MoEAlltoAllTokenDispatcher.preprocess,
gather_from_sequence_parallel_region(..., group=self.tp_ep_group)); the counts carry no gradient.
The flex dispatchers (DeepEP, HybridEP) exchange counts inside their own kernels."""

from __future__ import annotations

from trainsim.catalog import gpu
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.workload.layers import _moe_block, backward_of, shard_of

NAME = "moe.tokens_per_expert_all_gather"


def _cfg(dispatcher: str, ep: int) -> RunConfig:
    model = ModelConfig(name="m", hidden_size=1024, num_layers=1, num_attention_heads=8,
                        ffn_hidden_size=512, activation="swiglu", num_experts=64,
                        moe_router_topk=8, moe_ffn_hidden_size=512)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=16, gpus_per_node=8)
    training = TrainingConfig(global_batch_size=16, micro_batch_size=1, seq_length=1024)
    parallel = ParallelConfig(expert_model_parallel_size=ep, moe_token_dispatcher_type=dispatcher)
    return RunConfig(model=model, parallel=parallel, training=training, cluster=cluster)


def _ops(cfg: RunConfig) -> tuple[list, list]:
    sh = shard_of(cfg)
    fwd: list = []
    _moe_block(fwd, cfg, sh)
    return fwd, backward_of(fwd, sh)


def test_alltoall_gathers_the_counts_before_the_host_waits_and_not_in_backward():
    fwd, bwd = _ops(_cfg("alltoall", 16))
    names = [op.name for op in fwd]
    gather = next(op for op in fwd if op.name == NAME)
    assert gather.kind == "all_gather" and gather.group == "ep" and gather.bytes == 16 * 64 * 8
    assert names.index(NAME) < names.index("moe_tokens_to_host") < \
        names.index("moe.dispatch_all_to_all")
    assert not [op for op in bwd if op.name.startswith(NAME)]


def test_no_gather_for_flex_dispatchers_or_a_single_rank():
    for cfg in (_cfg("deepep", 16), _cfg("hybridep", 16), _cfg("alltoall", 1)):
        assert NAME not in [op.name for op in _ops(cfg)[0]]
