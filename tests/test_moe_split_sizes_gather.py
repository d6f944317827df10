"""Megatron-core's all-to-all dispatcher all-gathers the tokens per expert over the expert
tensor-and-model parallel group before its token exchange (MoEAlltoAllTokenDispatcher.preprocess,
gather_from_sequence_parallel_region(..., group=self.tp_ep_group)); the counts carry no gradient.
The flex dispatchers (DeepEP, HybridEP) exchange counts inside their own kernels."""

from __future__ import annotations

from helpers import moe_layer_cfg, moe_layer_ops

NAME = "moe.tokens_per_expert_all_gather"


def test_alltoall_gathers_the_counts_before_the_host_waits_and_not_in_backward():
    fwd, bwd = moe_layer_ops(moe_layer_cfg("alltoall", 16))
    names = [op.name for op in fwd]
    gather = next(op for op in fwd if op.name == NAME)
    assert gather.kind == "all_gather" and gather.group == "ep" and gather.bytes == 16 * 64 * 8
    assert names.index(NAME) < names.index("moe_tokens_to_host") < \
        names.index("moe.dispatch_all_to_all")
    assert not [op for op in bwd if op.name.startswith(NAME)]


def test_no_gather_for_flex_dispatchers_or_a_single_rank():
    for dispatcher, ep in (("deepep", 16), ("hybridep", 16), ("alltoall", 1)):
        cfg = moe_layer_cfg(dispatcher, ep)
        assert NAME not in [op.name for op in moe_layer_ops(cfg)[0]]


def _padded(cfg):
    from dataclasses import replace
    model = replace(cfg.model, moe_capacity_factor=1.0, moe_pad_expert_input_to_capacity=True)
    return replace(cfg, model=model)


def test_padding_to_capacity_returns_before_the_gather_one_kernel_no_host_wait():
    """Megatron-core 0.9-0.17's ``drop_and_pad`` branch returns from ``preprocess`` before the
    counts' all-gather and the device-to-host copies: one kernel (the count, or the fill), no
    backward."""
    fwd, bwd = moe_layer_ops(_padded(moe_layer_cfg("alltoall", 16)))
    names = [op.name for op in fwd]
    assert NAME not in names and "moe_tokens_to_host" not in names
    counts = next(op for op in fwd if op.name == "moe_capacity_counts")
    assert counts.kernels == 1 and not counts.host_sync
    assert names.index("moe_capacity_counts") < names.index("moe.dispatch_all_to_all")
    assert NAME not in {op.name.removesuffix(".bwd") for op in bwd}
    assert all(op.kernels == 0 and op.bytes == 0 for op in bwd
               if op.name.startswith("moe_capacity_counts"))


def test_dropping_without_padding_still_gathers_and_dropless_has_no_capacity_op():
    from dataclasses import replace
    cfg = moe_layer_cfg("alltoall", 16)
    dropping = replace(cfg, model=replace(cfg.model, moe_capacity_factor=1.0))
    assert NAME in [op.name for op in moe_layer_ops(dropping)[0]]
    assert "moe_capacity_counts" not in [op.name for op in moe_layer_ops(cfg)[0]]
