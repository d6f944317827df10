"""torchtitan's shared experts beside its combine (profile ``moe_shared_combine_overlap``,
``workload.moe_titan.shared_beside_combine``): from 476a965f9 (#1741, 2025-09-23) to 963c20cba
(#3386, 2026-05-20) ``MoE.forward`` issues the combine's async all-to-all, runs the shared
experts, then reads the exchanged rows; autograd runs the shared experts' backward before the
exchange's, so the backward hides nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import moe_layer_cfg, moe_layer_ops

from trainsim.pricing import Pricer
from trainsim.workload.moe_block import SHARED_EXPERT_PREFIX, titan_style
from trainsim.workload.ops import Comm

SHARED = 2048


def _cfg(version: str, ep: int = 16, **parallel):
    cfg = moe_layer_cfg("alltoall", ep=ep, framework="torchtitan", version=version, **parallel)
    return replace(cfg, model=replace(cfg.model, moe_shared_expert_intermediate_size=SHARED),
                   training=replace(cfg.training, cuda_graphs=True))  # the host out of the way


def _combine(ops: list) -> Comm:
    return next(op for op in ops if isinstance(op, Comm) and op.name == "moe.combine_all_to_all")


def test_on_from_october_2025_to_may_2026():
    """476a965f9 is dated 2025-09-23 (a September run, mostly before it, has none); 963c20cba
    2026-05-20 (a May run, mostly before it, keeps it)."""
    for version, on in (("2025-09", False), ("2025-10", True), ("2025-12", True),
                        ("2026-05", True), ("2026-06", False), ("2026-08", False)):
        assert titan_style(_cfg(version))
        assert (_combine(moe_layer_ops(_cfg(version))[0]).beside_next > 0) is on, version


def test_forward_runs_the_shared_block_between_the_combine_and_its_first_use():
    """Forward: the combine, then the whole shared block, then the fp32 score product and the
    scatter_add that read the exchanged rows; the combine beside the shared experts' compute."""
    fwd, _ = moe_layer_ops(_cfg("2025-10"))
    names = [op.name for op in fwd]
    c = names.index("moe.combine_all_to_all")
    assert names[c + 1:] == [f"{SHARED_EXPERT_PREFIX}fc1", f"{SHARED_EXPERT_PREFIX}act",
                             f"{SHARED_EXPERT_PREFIX}fc2", "expert_score_fp32", "unpermute"]
    assert _combine(fwd).beside_next == 3
    assert not _combine(fwd).beside_in_backward
    before, _ = moe_layer_ops(_cfg("2025-09"))  # before #1741: combine, its ops, then the shared
    b = [op.name for op in before]
    assert b.index("unpermute") < b.index(f"{SHARED_EXPERT_PREFIX}fc1")
    assert _combine(before).beside_next == 0


def test_backward_issues_the_exchange_after_the_shared_experts_backward():
    """Autograd order: the combine's gradient all-to-all after the shared experts' backward,
    beside nothing (Megatron-core's side stream would issue it before them and hide it)."""
    _, bwd = moe_layer_ops(_cfg("2025-10"))
    names = [op.name for op in bwd]
    cb = names.index("moe.combine_all_to_all.bwd")
    assert names[cb - 2:cb] == ["shared_fc1.dgrad", "shared_fc1.wgrad"]
    assert bwd[cb].beside_next == 0


def test_the_forward_gains_at_most_the_shared_compute_and_the_backward_nothing():
    """Priced (CUDA graphs: launches do not set the time): the forward shorter than without
    the overlap by no more than the shared experts' compute, the backward to the second the
    same as without it."""
    on = _cfg("2025-10")
    f_on, b_on = moe_layer_ops(on)
    f_off, b_off = moe_layer_ops(_cfg("2025-09"))
    p = Pricer(on)
    shared_s = sum(p.compute.time(o) for o in f_on
                   if not isinstance(o, Comm) and o.name.startswith(SHARED_EXPERT_PREFIX))
    t_on, t_off = p.price(f_on).duration_s, p.price(f_off).duration_s
    assert t_off - shared_s - 1e-12 <= t_on < t_off - 0.5 * min(
        shared_s, p.comm_time(_combine(f_on)))
    assert p.price(b_on).duration_s == pytest.approx(p.price(b_off).duration_s, rel=1e-12)


def test_one_ep_rank_has_nothing_to_hide_and_megatrons_flag_does_not_apply():
    """EP 1: no exchange, the order of 2025-09. A run stating Megatron-core's
    ``moe_shared_expert_overlap`` gets torchtitan's structure (no side stream), not
    Megatron-core's split of the shared experts around the exchanges."""
    fwd, _ = moe_layer_ops(_cfg("2025-10", ep=1))
    assert not any(isinstance(op, Comm) for op in fwd)
    stated, _ = moe_layer_ops(_cfg("2025-10", moe_shared_expert_overlap=True))
    plain, _ = moe_layer_ops(_cfg("2025-10"))
    assert [op.name for op in stated] == [op.name for op in plain]
    assert _combine(stated) == _combine(plain)
    dispatch = next(op for op in stated if op.name == "moe.dispatch_all_to_all")
    assert dispatch.beside_next == 0


def test_deepep_combine_hides_them_from_february_to_july_2026():
    """e215f4f32 (2026-02-05) starts DeepEP's combine asynchronously before the shared experts;
    4a93ee4e4 (2026-08-11) syncs it inside ``combine``. From 963c20cba only without a TP split
    of the tokens (``sp_size == 1``). HybridEP's combine is synchronous."""
    def deepep(version, **parallel):
        cfg = moe_layer_cfg("deepep", ep=16, framework="torchtitan", version=version,
                            **parallel)
        return replace(cfg, model=replace(cfg.model, moe_shared_expert_intermediate_size=SHARED))

    for version, on in (("2026-01", False), ("2026-02", True), ("2026-06", True),
                        ("2026-07", True), ("2026-08", False)):
        fwd, bwd = moe_layer_ops(deepep(version))
        c = _combine(fwd)
        assert (c.beside_next == 3) is on, version
        assert not c.beside_in_backward or not on
        if on:
            names = [op.name for op in fwd]
            assert names[names.index(c.name) + 1] == f"{SHARED_EXPERT_PREFIX}fc1"
            cb = [op.name for op in bwd].index("moe.combine_all_to_all.bwd")
            assert bwd[cb].beside_next == 0
    split = deepep("2026-06", tensor_model_parallel_size=2, sequence_parallel=True)
    assert _combine(moe_layer_ops(split)[0]).beside_next == 0
    hybrid = replace(deepep("2026-06"), parallel=replace(deepep("2026-06").parallel,
                                                        moe_token_dispatcher_type="hybridep"))
    assert _combine(moe_layer_ops(hybrid)[0]).beside_next == 0
