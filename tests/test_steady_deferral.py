"""The periodic shortcut where some micro-batches defer the output layer's weight gradient
(``wgrad_deferral_limit`` below the micro-batches, ``deferred_wgrad``): past the last deferred
backward the schedule repeats again, so the truncated runs start their period there
(``steady_state._past_deferred``) and agree with the full simulation to 1e-9."""

from __future__ import annotations

import random

import pytest
from helpers import assert_same_simulation

import trainsim.steady_state as steady
from trainsim import run_config_from_dict, simulate
from trainsim.catalog.framework_rules import deferred_microbatches
from trainsim.errors import ConfigError
from trainsim.workload.schedule import schedule

N_CONFIGS = 240
DEFAULT_CONFIGS = 60


def _draw(rng: random.Random) -> dict:
    """A Megatron 1F1B / interleaved pipeline (pp 2-8, vpp 1 or 2) that defers the output
    layer's wgrad: for a limit below the micro-batches (most), at them, or above them."""
    pp, vpp = rng.randint(2, 8), rng.choice([1, 2])
    tp, dp, cp = rng.choice([1, 2, 4]), rng.choice([1, 2]), rng.choice([1, 1, 2])
    micro = pp * rng.randint(16, 32) if vpp > 1 else rng.randint(8 * pp + 16, 12 * pp + 64)
    kind = rng.choices(["below", "at", "above"], [6, 1, 1])[0]
    limit = {"below": rng.randint(1, micro // 3) if rng.random() < 0.8 else
             rng.randint(1, micro - 1), "at": micro, "above": micro + rng.randint(1, 40)}[kind]
    heads = 16
    model = {"name": "tiny", "hidden_size": 64 * heads, "num_layers": pp * vpp * rng.randint(1, 2),
             "num_attention_heads": heads, "num_kv_heads": rng.choice([4, 16]),
             "vocab_size": rng.choice([32000, 50257]), "activation": rng.choice(["gelu", "swiglu"]),
             "tied_embeddings": rng.random() < 0.3}
    parallel = {"tp": tp, "pp": pp, "cp": cp, "vpp": vpp if vpp > 1 else None,
                "sequence_parallel": tp > 1 and rng.random() < 0.7,
                "recompute": rng.choice(["none", "selective", "full"]),
                "zero_stage": rng.choice([0, 1, 2]),
                "distributed_optimizer": rng.random() < 0.5,
                "overlap_grad_reduce": rng.random() < 0.6,
                "overlap_param_gather": rng.random() < 0.5,
                "overlap_p2p_comm": rng.random() < 0.5,
                "tp_comm_overlap": rng.random() < 0.3,
                "defer_embedding_wgrad_compute": True, "wgrad_deferral_limit": limit}
    gpus = tp * pp * cp * dp
    training = {"global_batch_size": micro * dp, "micro_batch_size": 1, "seq_length": 1024 * cp}
    cluster = {"gpu": "h100-sxm-80gb", "num_gpus": gpus, "gpus_per_node": min(8, gpus),
               "compute_db": None}
    return {"model": model, "parallel": parallel, "training": training, "cluster": cluster}


def _configs(n: int) -> list:
    rng, out = random.Random(58), []
    while len(out) < n:
        try:
            out.append(run_config_from_dict(_draw(rng)))
        except ConfigError:
            continue
    return out


def _agree(monkeypatch, n: int) -> None:
    monkeypatch.setattr(steady, "MIN_TASKS", 0)  # take the shortcut on small runs too
    partial = proven = 0
    for cfg in _configs(n):
        m = cfg.num_microbatches
        some = 0 < deferred_microbatches(cfg, m) < m
        fast, full = simulate(cfg), simulate(cfg, keep_timeline=True)
        partial += some
        proven += some and fast.simulation["method"] == "steady-state"
        assert_same_simulation(fast, full)
    # the limit below the micro-batches in most, and most of those take the shortcut
    assert partial >= 0.6 * n and proven >= 0.75 * partial, (partial, proven)


def test_partial_deferral_takes_the_shortcut_exactly(monkeypatch):
    """The first 60 random configs: the shortcut within 1e-9 of the full simulation, and taken
    by most of those that defer some micro-batches but not all."""
    _agree(monkeypatch, DEFAULT_CONFIGS)


@pytest.mark.slow
def test_partial_deferral_takes_the_shortcut_exactly_on_all(monkeypatch):
    """The same over all 240 random configs."""
    _agree(monkeypatch, N_CONFIGS)


def _cfg(limit: int, micro: int, pp: int = 4, vpp: int | None = None, dp: int = 2) -> object:
    par = {"tp": 2, "pp": pp, "sequence_parallel": True, "defer_embedding_wgrad_compute": True,
           "wgrad_deferral_limit": limit, "vpp": vpp}
    return run_config_from_dict({
        "model": {"name": "tiny", "hidden_size": 2048, "num_layers": 8, "num_attention_heads": 16,
                  "vocab_size": 50304, "tied_embeddings": False},
        "parallel": par,
        "training": {"global_batch_size": micro * dp, "micro_batch_size": 1, "seq_length": 2048},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 2 * pp * dp, "gpus_per_node": 8}})


@pytest.mark.parametrize("vpp", [None, 2])
def test_the_period_starts_after_the_last_deferred_backward(vpp):
    """A's period (the last stage's positions before the cut) holds no deferred backward,
    and one period less would: the least such A."""
    cfg = _cfg(40, 320, vpp=vpp)
    plan, _ = steady.plan(cfg)
    pp, v = cfg.parallel.pp, cfg.parallel.vpp

    def period_holds_deferred(m_a: int, cut: int) -> bool:
        order = schedule(pp - 1, pp, v, m_a)
        start = steady._warmup(order) + 2 * (cut - plan.unit)
        return any(kind == "B" and chunk == v - 1 and mb < 40
                   for kind, mb, chunk in order[start:])
    assert plan.m_a > 40 and not period_holds_deferred(plan.m_a, plan.cut)
    assert period_holds_deferred(plan.m_a - plan.q, plan.cut - plan.unit)
    fast = simulate(cfg)
    assert fast.simulation["method"] == "steady-state"
    assert_same_simulation(fast, simulate(cfg, keep_timeline=True))


def test_a_limit_near_the_micro_batches_is_simulated_in_full_and_says_why():
    cfg = _cfg(250, 300)  # the truncated runs would be past 250 micro-batches
    fast = simulate(cfg)
    assert fast.simulation["method"] == "full"
    assert "past the 250 that defer the output layer's weight gradient" in \
        fast.simulation["reason"]


def test_the_uncontended_grid_leaves_a_deferral_to_the_task_graph():
    """One data-parallel rank, untied embeddings: nothing contends, and run A went to the grid
    (``steady_grid``), which has no deferred backward or drain (0.2 % short on main)."""
    for limit in (0, 40):
        cfg = _cfg(limit, 300, dp=1)
        fast = simulate(cfg)
        assert fast.simulation["method"] == "steady-state"
        assert_same_simulation(fast, simulate(cfg, keep_timeline=True))
