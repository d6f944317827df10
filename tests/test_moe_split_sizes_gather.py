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
