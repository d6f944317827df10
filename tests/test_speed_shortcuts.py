"""Speed shortcuts that must not change an answer: the tuner's lower bound, the simulation
method a result reports, and the work limit counting what the steady-state shortcut runs."""

from __future__ import annotations

import csv
import random

import pytest
from helpers import random_config

import trainsim.steady_state as steady
from trainsim import run_config_from_dict, simulate
from trainsim.bound import lower_bound_s
from trainsim.errors import ConfigError
from trainsim.limits import WorkLimitError, simulation_tasks
from trainsim.validate import BUNDLED_DIR, row_settings, training


def _tiny(layers: int, batch: int, pp: int | None = None):
    """A 4-head toy model on one H100 node, priced analytically."""
    return run_config_from_dict({
        "model": {"name": "tiny", "hidden_size": 256, "num_layers": layers,
                  "num_attention_heads": 4, "vocab_size": 1024},
        "parallel": {"pp": pp} if pp else {},
        "training": {"global_batch_size": batch, "seq_length": 512},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                    "compute_db": None}})


def _configs(n: int, seed: int = 7):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        raw = random_config(rng)
        if rng.random() < 0.5:  # short runs too: the bound must hold on full simulations
            raw["training"]["global_batch_size"] = raw["training"]["micro_batch_size"] * \
                max(1, raw["cluster"]["num_gpus"] // (raw["parallel"]["tp"] * raw["parallel"]["pp"]
                                                      * raw["parallel"]["cp"])) * \
                (raw["parallel"]["pp"] * rng.randint(1, 3))
        try:
            out.append(run_config_from_dict(raw))
        except ConfigError:
            continue
    return out


def test_the_lower_bound_is_never_above_the_simulated_time():
    """Over 60 random configs (ZeRO 0-3, overlap switches, MoE, interleaving, short and long
    runs) the bound the tuner prunes with is below the simulated iteration, and not vacuous."""
    ratios = []
    for cfg in _configs(60):
        bound, t = lower_bound_s(cfg), simulate(cfg).iteration_time_s
        assert bound <= t, (cfg.parallel, bound, t)
        if bound:
            ratios.append(bound / t)
    assert len(ratios) >= 40 and sum(ratios) / len(ratios) > 0.5


def test_the_bound_counts_the_sends_and_the_optimizer_step():
    """Beyond the passes alone (fill, every pass of a stage, drain), the bound counts the sends
    the simulator places on the compute stream or between stages and the first stage's
    optimizer step after the drain, and still stays below the simulated iteration."""
    from trainsim.bound import SAFETY
    from trainsim.pricing import Pricer
    from trainsim.simulator import _TaskGraph

    for cfg in (_tiny(8, 256, pp=4), _tiny(8, 64, pp=2)):
        graph = _TaskGraph(cfg, Pricer(cfg), None)
        pp, m = cfg.parallel.pp, cfg.num_microbatches
        f, b = ([graph.work[s][k].duration_s for s in range(pp)] for k in (0, 1))
        passes_only = max(sum(f[:s]) + m * (f[s] + b[s]) + sum(b[:s]) for s in range(pp))
        step = graph.optimizer_step(0)
        step = getattr(step, "duration_s", step)
        bound, t = lower_bound_s(cfg), simulate(cfg).iteration_time_s
        assert graph.send.duration_s > 0 and step > 0
        assert SAFETY * (passes_only + step) < bound <= t


def test_the_tuner_with_the_bound_chooses_what_it_chooses_without():
    """The bound only skips settings that could not have been chosen: same choice and the
    same predicted time, with fewer simulations."""
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["id"] in ("megatron21-t1-1.7B",
                                                            "megatron21-t1-18.4B",
                                                            "mlm-weak-1.7b-48")]
    assert len(rows) == 3
    fewer = 0
    for row in rows:
        raw, unknown = row_settings.training_base(row)
        raw["cluster"]["compute_db"] = "auto"
        calls = {True: 0, False: 0}
        out = {}
        for use_bound in (False, True):
            def evaluate(cfg, use_bound=use_bound, calls=calls):
                calls[use_bound] += 1
                return simulate(cfg).iteration_time_s
            cfg, choice = training.tune(raw, unknown, evaluate,
                                        lower_bound_s if use_bound else None)
            out[use_bound] = (choice, simulate(cfg).iteration_time_s)
        assert out[True] == out[False]
        assert calls[True] <= calls[False]
        fewer += calls[True] < calls[False]
    assert fewer  # the bound skipped something (mlm-weak-1.7b-48: a recompute choice)


def test_a_result_says_how_it_was_simulated():
    cfg = _tiny(4, 2048, pp=4)
    fast, full = simulate(cfg), simulate(cfg, keep_timeline=True)
    assert fast.simulation["method"] == "steady-state"
    assert full.simulation == {"method": "full", "reason": "a timeline was asked for"}
    assert fast.to_dict()["simulation"]["method"] == "steady-state"
    assert fast.iteration_time_s == pytest.approx(full.iteration_time_s, rel=1e-9)
    r = simulate(_tiny(4, 16))
    assert r.simulation["method"] == "full" and "short iteration" in r.simulation["reason"]


def test_the_task_limit_counts_what_the_shortcut_simulates(monkeypatch):
    """A long pipeline whose full graph is over the limit runs when the truncated runs are
    under it; asking for its timeline (every micro-batch) is refused."""
    cfg = _tiny(8, 4096, pp=8)
    full, short = simulation_tasks(cfg), steady.simulated_tasks(cfg)
    assert short < full / 10  # the first attempt proves it
    monkeypatch.setenv("TRAINSIM_MAX_TASKS", str(int(full / 2)))
    assert simulate(cfg).simulation["method"] == "steady-state"
    with pytest.raises(WorkLimitError, match="TRAINSIM_MAX_TASKS"):
        simulate(cfg, keep_timeline=True)


def test_a_pricer_shared_with_the_bound_changes_no_result():
    """simulate(cfg, pricer=...) after lower_bound_s(cfg, pricer) reuses the passes the bound
    priced and gives what a fresh simulation gives, to the bit; a pricer of another config
    is refused."""
    from trainsim.pricing import Pricer

    cfgs = _configs(20, seed=11)
    for cfg in cfgs:
        pricer = Pricer(cfg)
        lower_bound_s(cfg, pricer)
        shared, fresh = simulate(cfg, pricer=pricer), simulate(cfg)
        assert shared.to_dict() == fresh.to_dict(), cfg.parallel
    with pytest.raises(ValueError, match="built for that cfg"):
        simulate(cfgs[0], pricer=Pricer(cfgs[1]))


@pytest.mark.parametrize("preset,pp,vpp,kinds", [("deepseek-v3", 4, 1, 2), ("deepseek-v3", 8, 2, 2),
                                                 ("qwen3-235b-a22b", 4, 1, 1),
                                                 ("llama3-8b", 4, 2, 1)])
def test_stage_parameters_by_layer_kind_equal_the_per_layer_sums(preset, pp, vpp, kinds):
    """Stage parameters are counted once per layer kind (dense, routed experts); that must
    equal summing every layer, on models whose first layers are dense."""
    from trainsim.memory.params import _stage_layer_split
    from trainsim.memory.state import _unit_params
    from trainsim.model.counts import layer_expert_params, layer_params

    cfg = run_config_from_dict({
        "model": {"preset": preset},
        "parallel": {"tp": 1, "pp": pp, "vpp": vpp, "pipeline_model_parallel_layout": "balanced"},
        "training": {"global_batch_size": 64, "seq_length": 1024},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8 * pp, "compute_db": None}})
    m, ranges = cfg.model, cfg.virtual_stage_layers()
    seen = set()
    for s in range(pp):
        layers = [i for v in range(s, pp * vpp, pp) for i in ranges[v]]
        experts = sum(layer_expert_params(m, i) for i in layers)
        dense = sum(layer_params(m, i) for i in layers) - experts
        assert _stage_layer_split(cfg, s) == (dense, experts)
        seen |= {m.is_moe_layer(i) for i in layers}
    assert _unit_params(cfg) == max(layer_params(m, i) for i in range(m.num_layers)) / \
        (cfg.parallel.tp * max(1, cfg.parallel.ep))
    assert len(seen) == kinds  # both kinds are exercised where the model has both


def test_a_sharded_run_costs_the_same_whatever_its_micro_batches():
    """Issue 21 item 2: every ZeRO-3 backward is split per layer with its reduce-scatters, so
    the shortcut's threshold counts those tasks (``limits.pass_tasks``), not the passes: a run
    of 64 micro-batches takes the shortcut and simulates no more tasks than one of 1,024, and
    the estimate is not below the tasks a full graph builds."""
    from trainsim.pricing import Pricer
    from trainsim.simulator import build_graph

    def cfg(mb: int):
        return run_config_from_dict({
            "model": {"preset": "llama3-70b"}, "parallel": {"zero_stage": 3},
            "training": {"global_batch_size": 64 * mb, "micro_batch_size": 1,
                         "seq_length": 4096, "framework": "pytorch",
                         "framework_version": "2.4"},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})
    small = cfg(4)
    built = len(build_graph(small, Pricer(small)).tasks)
    assert built <= simulation_tasks(small) < 1.5 * built
    cost = {mb: steady.simulated_tasks(cfg(mb)) for mb in (64, 256, 1024)}
    assert cost[64] == cost[256] == cost[1024] < simulation_tasks(cfg(64)) / 8
    assert simulate(cfg(64)).simulation["method"] == "steady-state"
