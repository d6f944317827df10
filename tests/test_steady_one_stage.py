"""ss49: the periodic steady-state shortcut on one-stage pipelines (PP1) at dp > 1.

With one stage there is no warm-up, and the cut used to fall at run A's last (forward,
backward) pair, whose backward is the last micro-batch's: where the gradients are in more than
one bucket, that backward is split and the first bucket's reduction runs beside (slows) its
rest, so A's last pair never matched B's and no proof held (edge48: every PP1 candidate of
``plan --seq 1`` simulated its truncated runs for nothing, then in full). The cut is now one
pair before it (``steady_state.plan``)."""

from __future__ import annotations

import random

import pytest
from helpers import assert_same_simulation, counted_graphs, random_config

import trainsim.steady_state as steady
from trainsim import run_config_from_dict, simulate
from trainsim.errors import ConfigError

N_CONFIGS = 100
DEFAULT_CONFIGS = 20


def _configs(n: int) -> list:
    """Random one-stage configs (``helpers.random_config``, seed 5 as in edge48's count),
    dp 1-4 with the others' switches as drawn."""
    rng = random.Random(5)
    out = []
    while len(out) < n:
        raw = random_config(rng)
        if raw["parallel"]["pp"] != 1:
            continue
        try:
            out.append(run_config_from_dict(raw))
        except ConfigError:
            continue
    return out


def _split_last_backward(cfg) -> bool:
    """Whether the last backward is split by bucket (its second part beside a reduction)."""
    from trainsim.pricing import Pricer
    from trainsim.simulator import build_graph

    g = build_graph(cfg, Pricer(cfg), None, 3)
    return any(t.label.startswith("B last") and t.label.endswith("part1") for t in g.tasks)


def _agree(monkeypatch, n: int) -> None:
    monkeypatch.setattr(steady, "MIN_TASKS", 0)  # take the shortcut on small runs too
    proven = split = 0
    for cfg in _configs(n):
        assert steady.plan(cfg)[0].m_a == 3  # one pair each side of the period
        full = simulate(cfg, keep_timeline=True)
        fast = simulate(cfg)
        proven += fast.simulation["method"] == "steady-state"
        split += _split_last_backward(cfg)
        assert_same_simulation(fast, full)
    assert proven == n  # before: 46 of 60 (none of the 14 whose last backward is split)
    assert split >= 0.3 * n  # the case that never proved is drawn


def test_one_stage_steady_state_agrees_and_is_proven(monkeypatch):
    """The first 20 random one-stage configs: every one proven, within 1e-9 of the full
    simulation."""
    _agree(monkeypatch, DEFAULT_CONFIGS)


@pytest.mark.slow
def test_one_stage_steady_state_agrees_and_is_proven_on_all_configs(monkeypatch):
    """The same over 100."""
    _agree(monkeypatch, N_CONFIGS)


def _seq1(m: int):
    """``plan llama3-8b --seq 1``'s TP1 PP1 DP8 mb8 candidate with ``m`` micro-batches."""
    return run_config_from_dict({
        "model": "llama3-8b",
        "parallel": {"tp": 1, "pp": 1, "distributed_optimizer": True,
                     "overlap_grad_reduce": True, "overlap_param_gather": True},
        "training": {"global_batch_size": 64 * m, "micro_batch_size": 8, "seq_length": 1},
        "cluster": {"node": "dgx-h100", "num_gpus": 8}})


def test_one_stage_cost_does_not_grow_with_microbatches():
    """The seq-1 candidate at 4,096 and 65,536 micro-batches builds the same one truncated
    run (4 micro-batches: the loop's state repeats in it), agrees with the full simulation at
    4,096, and grows by exactly the added periods."""
    with counted_graphs() as built:
        a, b = simulate(_seq1(4096)), simulate(_seq1(65536))
    assert len(built) == 2 and built[0] == built[1]
    assert a.simulation["method"] == b.simulation["method"] == "steady-state"
    assert b.simulation["reason"].startswith("period proven on the loop's state repeating in "
                                             "a truncated run of 4 micro-batches")
    assert _split_last_backward(_seq1(4096))  # llama3-8b's gradients: many buckets
    full = simulate(_seq1(4096), keep_timeline=True)
    assert_same_simulation(a, full)
    period = (b.iteration_time_s - a.iteration_time_s) / (65536 - 4096)
    assert period > 0 and a.iteration_time_s > 4000 * period
