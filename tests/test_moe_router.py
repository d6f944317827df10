"""The MoE router and permutation launches that depend on the framework's versions, counted by
hand from the sources (workload.moe_router, workload.moe_dispatch.permute_extra_kernels):

* Megatron-core's RandomSTE (``logits.clone().normal_()``): two forward kernels, none backward,
  in Megatron-Bridge's performance recipes from 25.11 (moe_router_force_load_balancing);
* RouterGatingLinearFunction's backward in fp32: four casts (weight and input up, both
  gradients down);
* Transformer Engine >= 2.6's permutation: a third row-id pass in every permute and a
  chunk-sort map for the all-to-all dispatcher's permute (4 -> 6 kernels) and a map for its
  unpermute (3 -> 4);
* the chunk sort and unsort by local expert only in the all-to-all dispatcher (Megatron-core
  token_dispatcher.py ``MoEAlltoAllTokenDispatcher``, ``sort_chunks_by_idxs``)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import moe_layer_cfg, moe_layer_ops

from trainsim.compute import host


def _op(ops, name):
    return next(op for op in ops if op.name == name)


def _names(ops):
    return [op.name for op in ops]


def test_bridge_recipes_draw_random_logits_forward_only():
    fwd, bwd = moe_layer_ops(moe_layer_cfg("alltoall", 16, "megatron-bridge", "26.04"))
    random = _op(fwd, "router_random_logits")
    assert random.kernels == 2
    # 1024 tokens x 64 experts of 16-bit logits: copied (read + write) and overwritten
    assert random.bytes == 3 * 1024 * 64 * 2
    names = _names(fwd)
    assert names.index("router") < names.index("router_random_logits") < \
        names.index("router_topk_softmax")
    assert host.launches(_op(bwd, "router_random_logits.bwd")) == 0


def test_no_random_logits_before_bridge_25_11_nor_in_megatron_core():
    for framework, version in (("megatron-bridge", "25.09"), ("megatron-core", None),
                               (None, None)):
        fwd, _ = moe_layer_ops(moe_layer_cfg("alltoall", 16, framework, version))
        assert "router_random_logits" not in _names(fwd)


def test_token_dropping_runs_do_not_force_the_balance():
    """Megatron-Bridge v0.2.0 scripts/performance/utils/helpers.py: ``use_tokendrop`` sets
    moe_router_force_load_balancing = False (a capacity factor drops tokens)."""
    cfg = moe_layer_cfg("alltoall", 16, "megatron-bridge", "26.04")
    dropping = replace(cfg, model=replace(cfg.model, moe_capacity_factor=1.0))
    fwd, _ = moe_layer_ops(dropping)
    assert "router_random_logits" not in _names(fwd)


def test_fp32_router_casts_four_tensors_in_its_backward():
    cfg = moe_layer_cfg("alltoall", 16)
    fwd16, bwd16 = moe_layer_ops(cfg)
    assert "router_fp32_casts" not in _names(fwd16)
    cfg = replace(cfg, parallel=replace(cfg.parallel, moe_router_dtype="fp32"))
    fwd, bwd = moe_layer_ops(cfg)
    assert host.launches(_op(fwd, "router_fp32_casts")) == 0
    casts = _op(bwd, "router_fp32_casts.bwd")
    assert casts.kernels == 4
    # input (1024 x 1024) and weight (64 x 1024), each 2 bytes in + 4 out, then their fp32
    # gradients 4 in + 2 out
    assert casts.bytes == 2 * (1024 + 64) * 1024 * 6
    # after the gating GEMM's gradients, as the backward runs them
    names = _names(bwd)
    assert names.index("router.wgrad") < names.index("router_fp32_casts.bwd")
    extra = sum(host.launches(op) for op in bwd) - sum(host.launches(op) for op in bwd16)
    assert extra == 4


def test_te_2_6_permutation_adds_a_row_id_pass_and_chunk_sort_maps():
    core = moe_layer_ops(moe_layer_cfg("alltoall", 16, "megatron-core", None))[0]
    bridge, bridge_bwd = moe_layer_ops(moe_layer_cfg("alltoall", 16, "megatron-bridge", "25.09"))
    assert (_op(core, "permute").kernels, _op(core, "unpermute").kernels) == (4, 3)
    assert (_op(bridge, "permute").kernels, _op(bridge, "unpermute").kernels) == (6, 4)
    assert (_op(bridge_bwd, "permute.bwd").kernels, _op(bridge_bwd, "unpermute.bwd").kernels) \
        == (3, 2)


def test_no_chunk_sort_without_several_local_experts_or_for_deepep():
    # 64 experts over 64 ranks: one local expert, no chunk sort
    single = moe_layer_ops(moe_layer_cfg("alltoall", 64, "megatron-bridge", "26.04", gpus=64))[0]
    assert _op(single, "permute").kernels == 4
    deepep = moe_layer_ops(moe_layer_cfg("deepep", 16, "megatron-bridge", "26.04"))[0]
    assert _op(deepep, "permute").kernels == 4  # three row-id passes and the permute
    assert _op(deepep, "unpermute").kernels == 2


@pytest.mark.parametrize("dispatcher", ["allgather", "deepep"])
def test_only_the_alltoall_dispatcher_sorts_chunks(dispatcher):
    """Transformer Engine 2.5 (Megatron-core): ``moe_permute_with_probs`` is 3 kernels (two
    row-id passes, the permute), backward 2; the unpermute 2, backward 1. The all-to-all
    dispatcher adds its chunk sort and unsort (one kernel each way); the all-gather and DeepEP
    dispatchers permute without one."""
    alltoall, alltoall_bwd = moe_layer_ops(moe_layer_cfg("alltoall", 16, "megatron-core", None))
    other, other_bwd = moe_layer_ops(moe_layer_cfg(dispatcher, 16, "megatron-core", None))
    assert (_op(alltoall, "permute").kernels, _op(alltoall, "unpermute").kernels) == (4, 3)
    assert (_op(other, "permute").kernels, _op(other, "unpermute").kernels) == (3, 2)
    assert (_op(alltoall_bwd, "permute.bwd").kernels,
            _op(alltoall_bwd, "unpermute.bwd").kernels) == (3, 2)
    assert (_op(other_bwd, "permute.bwd").kernels, _op(other_bwd, "unpermute.bwd").kernels) \
        == (2, 1)


def test_token_dropping_sorts_chunks_by_copies():
    """``drop_and_pad``: the all-to-all dispatcher transposes the padded chunks with copies
    (tokens and probabilities after the exchange, tokens before the combine), no TE map."""
    cfg = moe_layer_cfg("alltoall", 16, "megatron-bridge", "26.04")
    fwd, bwd = moe_layer_ops(replace(cfg, model=replace(
        cfg.model, moe_capacity_factor=1.0, moe_pad_expert_input_to_capacity=True)))
    assert (_op(fwd, "permute").kernels, _op(fwd, "unpermute").kernels) == (6, 3)
    assert (_op(bwd, "permute.bwd").kernels, _op(bwd, "unpermute.bwd").kernels) == (4, 2)
