"""The periodic steady-state shortcut (trainsim.steady_state) against the full simulation."""

from __future__ import annotations

import math
import random

import pytest
from helpers import random_config

import trainsim.steady_state as steady
from trainsim import run_config_from_dict, simulate
from trainsim.engine import Task, run
from trainsim.engine.periodic import period_s
from trainsim.errors import ConfigError
from trainsim.pricing import Pricer

N_CONFIGS = 220


def _configs(n: int):
    rng = random.Random(21)
    out = []
    while len(out) < n:
        try:
            out.append(run_config_from_dict(random_config(rng)))
        except ConfigError:
            continue
    return out


def test_steady_state_agrees_with_the_full_simulation(monkeypatch):
    """Over 220 random configs the extrapolated steady state and the full simulation agree to
    1e-9 on the iteration time and every breakdown entry, and the shortcut is proven on most
    of them (not a test of the fallback alone)."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)  # take the shortcut on small runs too
    proven = 0
    for cfg in _configs(N_CONFIGS):
        full = simulate(cfg, keep_timeline=True)  # a timeline asked for: every micro-batch
        if steady.steady_summary(cfg, Pricer(cfg)) is not None:
            proven += 1
        fast = simulate(cfg)
        assert fast.iteration_time_s == pytest.approx(full.iteration_time_s, rel=1e-9, abs=0)
        for key, value in full.breakdown.items():
            assert fast.breakdown[key] == pytest.approx(value, rel=1e-9,
                                                        abs=1e-9 * full.iteration_time_s), key
        assert fast.exposed_comm == pytest.approx(full.exposed_comm, rel=1e-9,
                                                  abs=1e-9 * full.iteration_time_s)
        assert fast.critical_stage == full.critical_stage
    assert proven >= 0.8 * N_CONFIGS


def test_steady_state_cost_does_not_grow_with_microbatches():
    """Eight times the micro-batches of a 1F1B pipeline cost the shortcut the same two
    truncated runs, and the iteration grows by exactly seven times the added periods."""
    def cfg(m: int):
        return run_config_from_dict({
            "model": {"name": "tiny", "hidden_size": 1024, "num_layers": 8,
                      "num_attention_heads": 16, "vocab_size": 32000},
            "parallel": {"tp": 1, "pp": 8},
            "training": {"global_batch_size": m, "micro_batch_size": 1, "seq_length": 2048},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
    built = []
    real = steady.build_graph

    def counting(*args, **kw):
        g = real(*args, **kw)
        built.append(len(g.tasks))
        return g

    steady.build_graph = counting
    try:
        a, b = simulate(cfg(512)), simulate(cfg(4096))
    finally:
        steady.build_graph = real
    assert len(built) == 4 and built[:2] == built[2:]
    full = simulate(cfg(4096), keep_timeline=True)
    assert b.iteration_time_s == pytest.approx(full.iteration_time_s, rel=1e-9)
    assert b.iteration_time_s > 7 * a.iteration_time_s


def test_a_drifting_pattern_is_not_taken_for_a_period():
    """Run B whose late tasks are not one constant shift after A's is refused."""
    def chain(durations):
        tasks = [Task((0, "compute"), d, [i - 1] if i else []) for i, d in enumerate(durations)]
        return run(tasks)
    a = chain([1.0, 1.0, 1.0])
    b = chain([1.0, 1.0, 1.0, 1.0])  # one task inserted after the first
    assert period_s(a, b, [0, 0, 1, 2], [False, True, True, True]) == 1.0
    drift = chain([1.0, 1.0, 1.5, 1.0])
    assert period_s(a, drift, [0, 0, 1, 2], [False, True, True, True]) is None
    assert period_s(a, b, [0, 0, 1, 1], [False, True, True, True]) is None  # A's last not covered
    assert not math.isnan(a.makespan_s)
