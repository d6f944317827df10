"""The busiest expert-parallel rank when the router draws random scores (workload.moe_balance):
Megatron-core's forced balance (``RandomSTE``: ``logits.clone().normal_()``, then the top-k)
sends each token to a uniformly random k-subset of the experts, so the ranks' loads scatter
around the mean and every all-to-all waits for the busiest one. Checked against closed forms,
a hand calculation and a seeded Monte Carlo draw of the same sampling."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from helpers import moe_layer_cfg, moe_layer_ops

from trainsim.workload.moe_balance import (
    busiest_rank_load,
    expected_max_normal,
    sampled_imbalance,
)


def _op(ops, name):
    return next(op for op in ops if op.name == name)


def test_expected_maximum_of_normals_matches_closed_forms():
    """E[max] of 2 and of 3 standard normals: 1/sqrt(pi) and 3/(2 sqrt(pi)); one has none."""
    assert expected_max_normal(1) == 0.0
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-9)
    assert expected_max_normal(3) == pytest.approx(3 / (2 * math.sqrt(math.pi)), rel=1e-9)


def test_busiest_rank_by_hand():
    """8 experts, top 2, 2 ranks of 4, 100 tokens: a token sends 2 x 1/2 = 1 copy to a rank
    on average, variance 2 (1/2)(1/2)(8-2)/(8-1) = 3/7; relative sd sqrt(100 x 3/7) / 100;
    two loads summing to 200 (correlation -1): x sqrt(2) x E[max of 2] = 1/sqrt(pi)."""
    rel_sd = math.sqrt(100 * 3 / 7) / 100
    expected = 1 + rel_sd * math.sqrt(2) / math.sqrt(math.pi)
    assert busiest_rank_load(8, 2, 2, 100) == pytest.approx(expected, rel=1e-9)
    assert busiest_rank_load(8, 2, 1, 100) == 1.0  # one rank: nothing to wait for
    assert busiest_rank_load(8, 8, 4, 100) == 1.0  # every token on every expert


def test_busiest_rank_matches_a_monte_carlo_draw_of_the_sampling():
    """Random normal scores per token and expert, top 4 of 32 experts on 8 ranks of 4, 1,024
    tokens: the mean busiest load over the mean, over 150 seeded draws (standard error about
    0.0017), within 0.5 % of the formula (its normal approximation of the per-rank
    hypergeometric sums)."""
    rng = np.random.default_rng(7)
    experts, k, ranks, tokens, draws = 32, 4, 8, 1024, 150
    ratios = []
    for _ in range(draws):
        scores = rng.standard_normal((tokens, experts))
        top = np.argpartition(scores, -k, axis=1)[:, -k:]
        load = np.bincount((top // (experts // ranks)).ravel(), minlength=ranks)
        ratios.append(load.max() / load.mean())
    predicted = busiest_rank_load(experts, k, ranks, tokens)
    assert predicted > 1.05  # a real effect at this size (about 6 %)
    assert float(np.mean(ratios)) == pytest.approx(predicted, abs=0.005)


def test_only_random_score_routers_of_forced_balance_runs():
    """Bridge's perf recipes from 25.11 force the balance; 25.09, Megatron-core and runs
    without a framework do not; a capacity factor (token dropping) turns it off; group-
    a single EP rank is left at the mean."""
    bridge = moe_layer_cfg("alltoall", 16, "megatron-bridge", "26.04")
    assert sampled_imbalance(bridge, 1024) == pytest.approx(
        busiest_rank_load(64, 8, 16, 16 * 1024), rel=1e-12)
    assert sampled_imbalance(bridge, 1024) > 1.0
    for framework, version in (("megatron-bridge", "25.09"), ("megatron-core", None),
                               (None, None)):
        assert sampled_imbalance(moe_layer_cfg("alltoall", 16, framework, version), 1024) == 1.0
    dropping = replace(bridge, model=replace(bridge.model, moe_capacity_factor=1.0))
    for cfg in (dropping, moe_layer_cfg("alltoall", 1, "megatron-bridge", "26.04")):
        assert sampled_imbalance(cfg, 1024) == 1.0


def _group_limited_loads(rng, experts, k, groups, chosen, ranks, tokens, draws):
    """Busiest/mean rank load of ``draws`` draws of Megatron-core's ``group_limited_topk`` on
    random normal scores: groups ranked by the sum of their top ``k / chosen`` scores, the top
    ``chosen`` groups kept, the top k experts inside them."""
    scores = rng.standard_normal((draws, tokens, groups, experts // groups))
    group_score = np.sort(scores, axis=-1)[..., -(k // chosen):].sum(-1)
    kept = np.argsort(group_score, axis=-1)[..., -chosen:]
    mask = np.zeros(group_score.shape, bool)
    np.put_along_axis(mask, kept, True, axis=-1)
    masked = np.where(mask[..., None], scores, -np.inf).reshape(draws, tokens, experts)
    top = np.argpartition(masked, -k, axis=-1)[..., -k:]
    rank = top.reshape(draws, -1) // (experts // ranks)
    loads = np.stack([np.bincount(r, minlength=ranks) for r in rank])
    return loads.max(1) / loads.mean(1)


def test_group_limited_routing_takes_the_uniform_formula_which_errs_low():
    """Group-limited routing is priced with the uniform formula, not the mean: 200 seeded draws
    of the group-limited sampling (32 experts, top 4, 8 ranks of 4, 256 tokens) put the busiest
    rank above it, since the ranks of a chosen group rise together; the formula still holds
    about 70 % of the excess where a group is one rank (8 groups, 2 chosen) and about 90 %
    where it is two (4 groups, 2 chosen), while the mean (1.0) holds none of it."""
    bridge = moe_layer_cfg("alltoall", 16, "megatron-bridge", "26.04")
    grouped = replace(bridge, model=replace(bridge.model, moe_router_group_topk=2))
    assert sampled_imbalance(grouped, 1024) == sampled_imbalance(bridge, 1024) > 1.0
    formula = busiest_rank_load(32, 4, 8, 256)
    rng = np.random.default_rng(11)
    for groups, held in ((8, (0.6, 1.0)), (4, (0.8, 1.0))):
        ratios = _group_limited_loads(rng, 32, 4, groups, 2, 8, 256, 200)
        sampled, error = float(ratios.mean()), float(ratios.std() / math.sqrt(len(ratios)))
        assert error < 0.05 * (sampled - 1)
        assert held[0] < (formula - 1) / (sampled - 1) < held[1]


def test_alltoall_exchanges_and_expert_rows_carry_the_busiest_load():
    """The NCCL all-to-all's dispatch, probabilities and combine, and the experts' GEMM rows,
    scale by the busiest rank's load; the flex dispatchers' exchanges do not (their node-level
    loads are not derived), their expert rows do."""
    bridge = moe_layer_cfg("alltoall", 16, "megatron-bridge", "26.04")
    plain = moe_layer_cfg("alltoall", 16, "megatron-bridge", "25.09")  # no forced balance
    f = sampled_imbalance(bridge, 1024)
    fwd, _ = moe_layer_ops(bridge)
    base, _ = moe_layer_ops(plain)
    for name in ("moe.dispatch_all_to_all", "moe.combine_all_to_all"):
        assert _op(fwd, name).bytes == pytest.approx(_op(base, name).bytes * f, rel=1e-12)
    # 1,024 tokens x top 8 copies, 4 local experts: rows per expert
    assert _op(fwd, "expert_fc1").m == math.ceil(math.ceil(1024 * 8 * f) / 4)
    assert _op(base, "expert_fc1").m == 1024 * 8 // 4
    flex = moe_layer_cfg("deepep", 16, "megatron-bridge", "26.04")
    flex_plain = moe_layer_cfg("deepep", 16, "megatron-bridge", "25.09")
    a, b = moe_layer_ops(flex)[0], moe_layer_ops(flex_plain)[0]
    assert _op(a, "moe.dispatch_all_to_all").bytes == _op(b, "moe.dispatch_all_to_all").bytes
    assert _op(a, "expert_fc1").m > _op(b, "expert_fc1").m


def test_under_expert_tp_the_exchange_counts_its_ep_group_and_the_rows_every_etp_rank():
    """Megatron-core's alltoall dispatcher exchanges within the EP group, then all-gathers over
    the expert-TP group (core_v0.16.0 token_dispatcher.py L666-671, L691-701): with ETP 2 one
    all-to-all carries the copies of ep x t tokens (relative spread sqrt(2) times the rows'),
    the experts' rows those of ep x etp x t; without ETP the two agree."""
    cfg = moe_layer_cfg("alltoall", 8, "megatron-bridge", "26.04", expert_tensor_parallel_size=2)
    rows = sampled_imbalance(cfg, 1024)
    wire = sampled_imbalance(cfg, 1024, exchange=True)
    assert rows == pytest.approx(busiest_rank_load(64, 8, 8, 8 * 2 * 1024), rel=1e-12)
    assert wire == pytest.approx(busiest_rank_load(64, 8, 8, 8 * 1024), rel=1e-12)
    assert wire - 1 == pytest.approx((rows - 1) * math.sqrt(2), rel=1e-9)
    plain = moe_layer_cfg("alltoall", 16, "megatron-bridge", "26.04")
    assert sampled_imbalance(plain, 1024, exchange=True) == sampled_imbalance(plain, 1024)
    base = moe_layer_cfg("alltoall", 8, "megatron-bridge", "25.09", expert_tensor_parallel_size=2)
    fwd, _ = moe_layer_ops(cfg)
    ref, _ = moe_layer_ops(base)  # no forced balance
    assert _op(fwd, "moe.dispatch_all_to_all").bytes == pytest.approx(
        _op(ref, "moe.dispatch_all_to_all").bytes * wire, rel=1e-12)
