"""Megatron-core's all-to-all dispatcher (core >= 0.13, routing probabilities applied inside the
expert) sends the permuted probabilities by an all-to-all of their own after the tokens'
(MoEAlltoAllTokenDispatcher.token_dispatch); their gradient comes back the same way. The flex
dispatchers carry the probabilities inside their token exchange."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import moe_layer_cfg, moe_layer_ops

from trainsim.config import RunConfig

PROBS = "moe.dispatch_probs_all_to_all"


def _cfg(dispatcher: str = "alltoall", ep: int = 16,
         framework: str | None = "megatron-bridge") -> RunConfig:
    return moe_layer_cfg(dispatcher, ep, framework, "25.11" if framework else None)


def test_alltoall_sends_one_fp32_probability_per_token_copy_after_the_tokens():
    cfg = _cfg()
    fwd, bwd = moe_layer_ops(replace(cfg, parallel=replace(cfg.parallel, moe_router_dtype="fp32")))
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
    assert PROBS not in [op.name for op in moe_layer_ops(cfg)[0]]



def test_the_probabilities_travel_in_the_router_dtype_16_bit_unless_a_profile_sets_fp32():
    """Megatron-core's moe_router_dtype defaults to None (the probabilities stay 16-bit);
    Megatron-Bridge's MoE providers set fp32 (its profile's default); fp64 moves 8 bytes."""
    from trainsim.catalog.defaults import apply_framework

    def ratio(dtype):
        cfg = _cfg()
        fwd = moe_layer_ops(replace(cfg, parallel=replace(cfg.parallel, moe_router_dtype=dtype)))[0]
        names = [op.name for op in fwd]
        tokens = fwd[names.index("moe.dispatch_all_to_all")]
        return fwd[names.index(PROBS)].bytes / (tokens.bytes / (1024 * 2))

    assert (ratio(None), ratio("fp32"), ratio("fp64")) == pytest.approx((2, 4, 8))
    filled = {}
    for name, version in (("megatron-bridge", "25.11"), ("megatron-core", "0.13")):
        parallel: dict = {}
        apply_framework(parallel, {"framework": name, "framework_version": version})
        filled[name] = parallel.get("moe_router_dtype")
    assert filled == {"megatron-bridge": "fp32", "megatron-core": None}
