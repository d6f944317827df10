"""Megatron-core's shared-expert overlap (``moe_shared_expert_overlap``; core_v0.14.0-core_v0.16.0
moe/shared_experts.py ``SharedExpertMLP`` driven by token_dispatcher.py
``MoEAlltoAllTokenDispatcher``): the shared experts run on a side stream, fc1 and the activation
beside the dispatch all-to-all, fc2 beside the combine, and their backward beside the
exchanges' own, and their TP collectives on the side stream beside the permutations.
Megatron-Bridge's DeepSeek (and GLM, Kimi, Nemotron-H) providers set it; a run states it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import moe_layer_cfg, moe_layer_ops

from trainsim.errors import ConfigError
from trainsim.pricing import COMPUTE, Pricer
from trainsim.workload.moe_block import SHARED_EXPERT_PREFIX, shared_expert_overlap
from trainsim.workload.ops import Comm, Gemm

SHARED = 2048


def _cfg(dispatcher="alltoall", framework="megatron-bridge", version="26.04", **parallel):
    cfg = moe_layer_cfg(dispatcher, ep=16, framework=framework, version=version, **parallel)
    return replace(cfg, model=replace(cfg.model, moe_shared_expert_intermediate_size=SHARED))


def _a2a(ops, name):
    return next(op for op in ops if isinstance(op, Comm) and op.name == name)


def test_megatron_core_refuses_what_it_refuses():
    """transformer_config.py raises for another dispatcher, with the EP overlap, and with a
    recompute of the shared experts."""
    for bad in ({"moe_token_dispatcher_type": "deepep"},
                {"moe_overlap_ep_comm": True},
                {"recompute": "selective", "recompute_modules": ("shared_experts",)}):
        with pytest.raises(ConfigError, match="moe_shared_expert_overlap"):
            moe_layer_cfg(bad.pop("moe_token_dispatcher_type", "alltoall"),
                          moe_shared_expert_overlap=True, **bad)


def test_off_unless_the_run_states_it():
    """Megatron-core's default is off (core_v0.16.0 transformer_config.py L550) and no framework
    profile turns it on: Megatron-Bridge's DeepSeek, GLM, Kimi and Nemotron-H providers set it,
    which a framework default cannot know (keying it by model family is not a mechanism), and
    its flex dispatcher clears it. Stated, it applies; a model without shared experts has
    nothing to hide."""
    assert not shared_expert_overlap(_cfg())
    assert not shared_expert_overlap(_cfg(framework="megatron-core", version="0.16"))
    assert not shared_expert_overlap(_cfg(moe_shared_expert_overlap=False))
    assert shared_expert_overlap(_cfg(moe_shared_expert_overlap=True))
    assert shared_expert_overlap(_cfg(framework="megatron-core", version="0.16",
                                      moe_shared_expert_overlap=True))
    plain = moe_layer_cfg("alltoall", ep=16, framework="megatron-bridge", version="26.04",
                          moe_shared_expert_overlap=True)
    assert not shared_expert_overlap(plain)


def test_shared_experts_sit_beside_the_exchanges():
    """Forward, in Megatron-core's issue order: the dispatch (beside the next two compute ops),
    then fc1 and the activation on the side stream; the combine, then fc2. Backward: each
    exchange's conjugate issued before the shared ops' backward it runs beside. Without the
    overlap the block is unchanged: the shared experts after the combine, every exchange
    blocking."""
    fwd, bwd = moe_layer_ops(_cfg(moe_shared_expert_overlap=True))
    names = [op.name for op in fwd]
    c = names.index("moe.combine_all_to_all")
    assert names[names.index("moe.dispatch_probs_all_to_all") + 1:][:2] == \
        [f"{SHARED_EXPERT_PREFIX}fc1", f"{SHARED_EXPERT_PREFIX}act"]
    assert names[c + 1] == f"{SHARED_EXPERT_PREFIX}fc2"
    assert _a2a(fwd, "moe.dispatch_all_to_all").beside_next == 2
    assert _a2a(fwd, "moe.combine_all_to_all").beside_next == 1
    bnames = [op.name for op in bwd]
    cb = bnames.index("moe.combine_all_to_all.bwd")
    assert bnames[cb + 1:cb + 3] == ["shared_fc2.dgrad", "shared_fc2.wgrad"]
    assert _a2a(bwd, "moe.combine_all_to_all.bwd").beside_next == 2
    db = bnames.index("moe.dispatch_all_to_all.bwd")
    assert bnames[db + 1:db + 4] == ["shared_act.bwd", "shared_fc1.dgrad", "shared_fc1.wgrad"]
    assert _a2a(bwd, "moe.dispatch_all_to_all.bwd").beside_next == 3
    # the same ops and bytes either way
    off_f, off_b = moe_layer_ops(_cfg(moe_shared_expert_overlap=False))
    for a, b in ((fwd, off_f), (bwd, off_b)):
        assert sorted((o.name, getattr(o, "bytes", 0)) for o in a) == \
            sorted((o.name, getattr(o, "bytes", 0)) for o in b)
    assert [o.name for o in off_f][-3:] == ["shared_fc1", "shared_act", "shared_fc2"]
    assert not any(isinstance(o, Comm) and o.beside_next for o in off_f + off_b)


def test_an_exchange_beside_the_next_ops_hides_behind_their_sum():
    """Hand calculation: an all-to-all of t seconds, then compute A and B issued beside it:
    exposed max(0, t - (A + B)) plus (A + B)'s slowdown by the exchange's SMs while it runs;
    A and B keep their time. With ``beside_next`` 1, only A covers it."""
    pricer = Pricer(_cfg(moe_shared_expert_overlap=True))
    a, b = Gemm("shared_fc1", 4096, 4096, 1024), Gemm("shared_fc2", 4096, 1024, 2048)
    comm = Comm("moe.dispatch_all_to_all", "all_to_all", 64e6, "ep", beside_next=2)
    ta, tb, tc = (pricer.compute.time(a), pricer.compute.time(b), pricer.comm_time(comm))
    share = pricer.sm_share["ep"]
    for n, beside in ((2, ta + tb), (1, ta)):
        segs = pricer.price([replace(comm, beside_next=n), a, b]).segments
        assert segs[0][1] == pytest.approx(max(0.0, tc - beside) + min(tc, beside) * share)
        assert [s[1] for s in segs[1:]] == pytest.approx([ta, tb])
        assert segs[1][0] == COMPUTE


def test_the_overlap_shortens_the_layer_by_at_most_the_shared_experts():
    """Whole block, forward and backward, the host out of the way (CUDA graphs): never slower,
    and the gain at most the shared experts' compute that covers the exchanges. (Where the host
    binds, launches, not exchanges, set the time, and the overlap may move it either way by
    the order the host issues them in.)"""
    def graphed(cfg):
        return replace(cfg, training=replace(cfg.training, cuda_graphs=True))

    on, off = graphed(_cfg(moe_shared_expert_overlap=True)), graphed(_cfg())
    f_on, b_on = moe_layer_ops(on)
    f_off, b_off = moe_layer_ops(off)
    p = Pricer(on)
    for x, y in ((f_on, f_off), (b_on, b_off)):
        t_on, t_off = p.price(x).duration_s, p.price(y).duration_s
        shared_s = sum(p.compute.time(o) for o in y
                       if not isinstance(o, Comm) and o.name.startswith(SHARED_EXPERT_PREFIX))
        assert t_off - shared_s - 1e-12 <= t_on < t_off


def test_the_tp_collectives_run_on_the_side_stream_beside_the_permutations():
    """Under TP with SP, Megatron-core issues the shared experts' all-gather (pre_forward_comm)
    on the side stream before the permutation, and their reduce-scatter (post_forward_comm)
    right after fc2, before the unpermutation (core_v0.16.0 token_dispatcher.py L625-626,
    L828-830): each beside the main stream's permutation, never blocking it; in the backward
    their conjugates come first (set_tensor_grad_fn_sequence_sr), beside the permutations'
    backward. Without the overlap the all-gather enters fc1 after the combine, as before."""
    tp = {"tensor_model_parallel_size": 2, "sequence_parallel": True}
    fwd, bwd = moe_layer_ops(_cfg(gpus=32, moe_shared_expert_overlap=True, **tp))
    names = [op.name for op in fwd]
    ag = f"{SHARED_EXPERT_PREFIX}expert.all_gather"
    rs = f"{SHARED_EXPERT_PREFIX}expert.reduce_scatter"
    assert names.index(ag) + 1 == names.index("permute")
    assert _a2a(fwd, ag).beside_next == 1  # the fused permute
    assert names.index(f"{SHARED_EXPERT_PREFIX}fc2") + 1 == names.index(rs)
    assert names.index(rs) + 1 == names.index("unpermute")
    assert _a2a(fwd, rs).beside_next == 1
    bnames = [op.name for op in bwd]
    assert bnames[bnames.index(f"{rs}.bwd") + 1] == "unpermute.bwd"
    assert bnames[bnames.index(f"{ag}.bwd") + 1] == "permute.bwd"
    assert _a2a(bwd, f"{ag}.bwd").kind == "reduce_scatter"
    assert _a2a(bwd, f"{rs}.bwd").kind == "all_gather"
    assert f"{ag}.bwd_regather" not in bnames  # fc1 keeps the gathered input it was given
    off = [op.name for op in moe_layer_ops(_cfg(gpus=32, **tp))[0]]
    assert off.index(ag) + 1 == off.index(f"{SHARED_EXPERT_PREFIX}fc1")


def test_a_zero_bubble_i_pass_prices_an_exchange_beside_only_the_ops_it_keeps():
    """Under a split backward the W pass takes the weight gradients: in the I pass the combine's
    backward runs beside shared_fc2.dgrad alone and the dispatch's beside shared_act.bwd and
    shared_fc1.dgrad, not beside the next ops, which wait for the exchange (hand
    calculation, ``Pricer.hidden_behind``)."""
    from trainsim.pipeline import HalfPricer

    cfg = _cfg(moe_shared_expert_overlap=True)
    _, bwd = moe_layer_ops(cfg)
    pricer = Pricer(cfg)
    by_name = {o.name: o for o in bwd}
    segs = {n: t for _, t, n in HalfPricer(pricer, False).price(bwd).segments}
    for comm, beside in (("moe.combine_all_to_all.bwd", ["shared_fc2.dgrad"]),
                         ("moe.dispatch_all_to_all.bwd", ["shared_act.bwd", "shared_fc1.dgrad"])):
        t = pricer.comm_time(by_name[comm])
        cover = sum(pricer.compute.time(by_name[n]) for n in beside)
        assert segs[comm] == pytest.approx(pricer.hidden_behind(t, cover, "ep"))
    w = {n for _, _, n in HalfPricer(pricer, True).price(bwd).segments}
    assert {"shared_fc2.wgrad", "shared_fc1.wgrad"} <= w
