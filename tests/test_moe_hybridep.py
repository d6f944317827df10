"""Megatron-core's flex dispatcher with the HybridEP backend (core >= 0.16, _HybridEPManager)
permutes inside its exchange kernels, deduplicates tokens per NVLink domain like DeepEP, and
sends the dispatch in 16 bits even where fp8 dispatch is asked for."""

from __future__ import annotations

from trainsim.catalog import gpu
from trainsim.catalog.frameworks import framework_profile
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.workload.layers import backward_of
from trainsim.workload.moe_block import moe_block, moe_wire_copies
from trainsim.workload.shard import shard_of


def _cfg(dispatcher: str, fp8: bool = False) -> RunConfig:
    model = ModelConfig(name="m", hidden_size=1024, num_layers=1, num_attention_heads=8,
                        ffn_hidden_size=512, activation="swiglu", num_experts=16,
                        moe_router_topk=4, moe_ffn_hidden_size=512)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=16, gpus_per_node=8)
    training = TrainingConfig(global_batch_size=16, micro_batch_size=1, seq_length=1024)
    parallel = ParallelConfig(expert_model_parallel_size=16, moe_dispatch_fp8=fp8,
                              moe_token_dispatcher_type=dispatcher)
    return RunConfig(model=model, parallel=parallel, training=training, cluster=cluster)


def _ops(cfg: RunConfig) -> list:
    sh = shard_of(cfg)
    ops: list = []
    moe_block(ops, cfg, sh)
    return ops + backward_of(ops, sh)


def test_hybridep_runs_no_local_permute_either_way():
    names = [op.name for op in _ops(_cfg("hybridep"))]
    assert "moe.dispatch_all_to_all" in names and "moe.combine_all_to_all" in names
    assert not [n for n in names if "permute" in n]


def test_hybridep_sends_one_copy_per_domain_like_deepep():
    assert moe_wire_copies(_cfg("hybridep")) == moe_wire_copies(_cfg("deepep")) < 4


def test_hybridep_dispatch_stays_16_bit_where_deepep_sends_fp8():
    def dispatch_bytes(cfg):
        return next(op.bytes for op in _ops(cfg) if op.name == "moe.dispatch_all_to_all")
    assert dispatch_bytes(_cfg("hybridep", fp8=True)) == dispatch_bytes(_cfg("hybridep"))
    assert dispatch_bytes(_cfg("deepep", fp8=True)) * 2 == dispatch_bytes(_cfg("deepep"))


def test_bridge_offers_hybridep_from_25_11():
    assert framework_profile("megatron-bridge", "25.09").supports("hybridep") is False
    assert framework_profile("megatron-bridge", "25.11").supports("hybridep") is True


def test_hybridep_all_gathers_the_routing_map_once_per_forward():
    """HybridEP's metadata preprocessing all-gathers every rank's boolean routing map (tokens x
    experts bytes) over the EP group before the forward dispatch; the combine and the backward
    reuse the handle, and the other dispatchers never send it."""
    cfg = _cfg("hybridep")
    gathers = [op for op in _ops(cfg) if "routing_map" in op.name]
    tokens = shard_of(cfg).norm_tokens
    assert [(op.kind, op.group, op.bytes) for op in gathers] == \
        [("all_gather", "ep", 16 * tokens * 16)]
    for other in ("deepep", "alltoall"):
        assert not [op for op in _ops(_cfg(other)) if "routing_map" in op.name]
