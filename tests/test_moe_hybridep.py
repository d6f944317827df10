"""Megatron-core's flex dispatcher with the HybridEP backend (core >= 0.16, _HybridEPManager)
permutes with HybridEP's own kernels around its exchange, deduplicates tokens per NVLink domain
like DeepEP, and sends the dispatch in 16 bits even where fp8 dispatch is asked for."""

from __future__ import annotations

from dataclasses import replace

from helpers import moe_layer_cfg, moe_layer_ops

from trainsim.catalog.frameworks import framework_profile
from trainsim.config import RunConfig
from trainsim.workload.moe_block import moe_wire_copies
from trainsim.workload.moe_dispatch import destination_ranks
from trainsim.workload.shard import shard_of


def _cfg(dispatcher: str, fp8: bool = False) -> RunConfig:
    return moe_layer_cfg(dispatcher, ep=16, experts=16, topk=4, gpus=16, moe_dispatch_fp8=fp8)


def _ops(cfg: RunConfig) -> list:
    fwd, bwd = moe_layer_ops(cfg)
    return fwd + bwd


def test_hybridep_permutes_after_its_dispatch_kernel_with_one_kernel_each_way():
    """Megatron-core calls ``dispatch_with_permute`` without fusing the permute (core_v0.16-
    v0.17.1; ``moe_permute_fusion_into_hybridep`` defaults off): HybridEP's own permute kernel
    reads each received token once per destination rank from its buffer and writes a row per
    local expert, after the exchange; the unpermute runs before the combine. No TE permute
    runs before the exchange (the all-to-all dispatcher's place)."""
    cfg = _cfg("hybridep")
    ops = _ops(cfg)
    names = [op.name for op in ops]
    assert names.index("moe.dispatch_all_to_all") < names.index("permute") \
        < names.index("unpermute") < names.index("moe.combine_all_to_all")
    assert "permute.bwd" in names and "unpermute.bwd" in names
    perm = next(op for op in ops if op.name == "permute")
    tokens = shard_of(cfg).norm_tokens
    recv = tokens * destination_ranks(cfg)
    assert perm.kernels == 1 and perm.bytes == (recv + tokens * 4) * 1024 * 2
    te = next(op for op in _ops(_cfg("deepep")) if op.name == "permute")
    assert te.kernels > perm.kernels


def test_hybridep_stages_its_tokens_only_across_nvlink_domains_and_waits_when_dropless():
    """Across domains ``Executor::dispatch_preprocess`` copies the tokens and fp32 probs into the
    registered buffer; the metadata preprocessing reads the gathered routing map (ranks x tokens
    x experts bytes) and writes the local-expert map (bool) and the int32 sparse-to-dense and
    dense-to-expert maps (one local expert here); its host wait is there only when the number of
    permuted tokens is unknown (dropless)."""
    def names(cfg):
        return [op.name for op in _ops(cfg)]
    assert "hybridep_stage_in" in names(_cfg("hybridep"))
    cfg = _cfg("hybridep")
    one = replace(cfg, cluster=replace(cfg.cluster, gpus_per_node=16))
    assert "hybridep_stage_in" not in names(one)
    meta = next(op for op in _ops(cfg) if op.name == "moe_tokens_to_host")
    # the preprocessing kernel and pad_tokens_per_expert (hybrid-ep 17cfb81-94a9f8f executor.cu)
    assert meta.kernels == 2
    assert meta.host_sync and meta.bytes == 16 * shard_of(cfg).norm_tokens * (16 + 1 + 4 + 4)
    capped = replace(cfg, model=replace(cfg.model, moe_capacity_factor=1.0))
    assert next(op for op in _ops(capped) if op.name == "moe_tokens_to_host").host_sync
    padded = replace(cfg, model=replace(capped.model, moe_pad_expert_input_to_capacity=True))
    assert not next(op for op in _ops(padded) if op.name == "moe_tokens_to_host").host_sync


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


def test_hybridep_restages_the_gradient_at_the_combines_backward_not_the_dispatchs():
    """Across domains the combine's backward dispatches the gradient through the staging copy
    (tokens only): it runs just before that exchange (``moe.combine_all_to_all.bwd``), and the
    dispatch's backward (a combine) stages nothing."""
    ops = _ops(_cfg("hybridep"))
    names = [op.name for op in ops]
    grad = names.index("hybridep_stage_in_grad.bwd")
    assert names[grad + 1] == "moe.combine_all_to_all.bwd"
    assert ops[grad].bytes == 2 * shard_of(_cfg("hybridep")).norm_tokens * 1024 * 2
    fwd = ops[names.index("hybridep_stage_in_grad")]
    assert (fwd.bytes, fwd.kernels) == (0, 0)
    back = ops[names.index("hybridep_stage_in.bwd")]
    assert (back.bytes, back.kernels) == (0, 0)
