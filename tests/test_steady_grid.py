"""Run A on the grid (trainsim.steady_grid) against the task graph and the event loop."""

from __future__ import annotations

import random

import pytest
from helpers import random_config

import trainsim.steady_state as steady
from trainsim import run_config_from_dict
from trainsim.engine import run
from trainsim.engine.periodic import REL_TOL
from trainsim.errors import ConfigError
from trainsim.pricing import Pricer
from trainsim.simulator import build_graph
from trainsim.steady_grid import period_on_grid, uncontended_run


def _cfg(pp: int, vpp: int | None, m: int, **parallel):
    return run_config_from_dict({
        "model": {"preset": "llama3-8b", "num_layers": pp * (vpp or 1) * 2},
        "parallel": {"tp": 8, "pp": pp, "vpp": vpp, **parallel},
        "training": {"global_batch_size": m, "micro_batch_size": 1, "seq_length": 2048},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8 * pp, "gpus_per_node": 8}})


UNCONTENDED = [_cfg(8, None, 256), _cfg(8, 2, 256), _cfg(4, 3, 128), _cfg(16, 2, 512),
               _cfg(8, 2, 256, distributed_optimizer=True, overlap_param_gather=True),
               _cfg(2, None, 1024, recompute="full")]


def _task_path(cfg):
    """The summary from the task graph (the grid not tried)."""
    real = steady._grid_one_run
    steady._grid_one_run = lambda *a, **k: None
    try:
        return steady.attempt(cfg, Pricer(cfg))
    finally:
        steady._grid_one_run = real


@pytest.mark.parametrize("cfg", UNCONTENDED, ids=lambda c: f"pp{c.parallel.pp}v{c.parallel.vpp}")
def test_the_grid_is_the_event_loop_to_the_bit(cfg):
    """Every pass of run A starts and ends on the grid when the event loop has it start and end
    on the task graph, and the optimizer steps too; the summary from it is the task graph's
    one-run summary, float for float, and it is the way the shortcut went."""
    plan, _ = steady.plan(cfg)
    pricer = Pricer(cfg)
    grid_run = uncontended_run(cfg, pricer, None, plan.m_a)
    assert grid_run is not None
    graph = build_graph(cfg, pricer, None, plan.m_a)
    tl = run(graph.tasks)
    mine = grid_run.timeline
    assert tl.queues.keys() == mine.queues.keys()
    at = {}  # task graph index -> grid index, stream by stream in order
    for stream, queue in tl.queues.items():
        assert len(queue) == len(mine.queues[stream])
        at.update(zip(queue, mine.queues[stream]))
    assert len(at) == len(graph.tasks) == len(mine.tasks)
    for i, task in enumerate(graph.tasks):
        j = at[i]
        assert (tl.start_s[i], tl.end_s[i]) == (mine.start_s[j], mine.end_s[j])
        t = mine.tasks[j]
        assert (t.stream, t.duration_s, [at[d] for d in task.deps], t.label, t.segments,
                t.detail, t.slows) == (task.stream, task.duration_s, t.deps, task.label,
                                       task.segments, task.detail, task.slows)
    assert [at[e] for e in graph.ends] == grid_run.ends
    fast = steady.attempt(cfg, Pricer(cfg))
    slow = _task_path(cfg)
    assert fast[0] is not None and fast[0] == slow[0]
    assert fast[1] == slow[1] and "a truncated run of" in fast[1]


def test_contended_runs_are_left_to_the_task_graph():
    """Data-parallel peers (gradient reductions), overlapped sends and a tied embedding's
    all-reduce contend: no grid run."""
    for cfg in (_cfg(8, 2, 256, overlap_p2p_comm=True),
                run_config_from_dict({
                    "model": {"preset": "llama3-8b", "num_layers": 16},
                    "parallel": {"tp": 4, "pp": 8},
                    "training": {"global_batch_size": 512, "micro_batch_size": 1,
                                 "seq_length": 2048},
                    "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})):
        assert uncontended_run(cfg, Pricer(cfg), None, steady.plan(cfg)[0].m_a) is None


def test_random_uncontended_configs_agree_with_the_task_graph(monkeypatch):
    """Over random configurations (MoE, recompute, torch's interleaved warm-up count, ...) the
    grid's summary, where it applies, is the task graph's, float for float."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    rng, checked = random.Random(5), 0
    while checked < 12:
        raw = random_config(rng)
        raw["parallel"].update(overlap_p2p_comm=False, cp=1)
        raw["model"]["tied_embeddings"] = False
        raw["cluster"]["num_gpus"] = raw["parallel"]["tp"] * raw["parallel"]["pp"]
        raw["cluster"]["gpus_per_node"] = min(8, raw["cluster"]["num_gpus"])
        raw["training"]["seq_length"] = 1024
        raw["parallel"].pop("ep", None)
        try:
            cfg = run_config_from_dict(raw)
        except ConfigError:
            continue
        plan, _ = steady.plan(cfg)
        if plan is None or uncontended_run(cfg, Pricer(cfg), None, plan.m_a) is None:
            continue
        fast, slow = steady.attempt(cfg, Pricer(cfg)), _task_path(cfg)
        assert fast == slow
        checked += 1


@pytest.mark.parametrize("cfg", [_cfg(4, 2, 128), _cfg(4, None, 256)],
                         ids=["pp4v2", "pp4v1"])
def test_the_grid_proof_refuses_what_the_task_graph_proof_refuses(cfg):
    """At every cut, and with a pass of run A made to end a little later (more than the
    tolerance) or earlier on either side of the shortcut's cut, the grid's proof and the task
    graph's (``engine.periodic``) accept or refuse alike, and each refuses some."""
    plan, _ = steady.plan(cfg)
    pricer = Pricer(cfg)
    graph = build_graph(cfg, pricer, None, plan.m_a)
    orders = [steady.schedule(s, cfg.parallel.pp, cfg.parallel.vpp, plan.m_a)
              for s in range(cfg.parallel.pp)]
    warm = [steady._warmup(order) for order in orders]
    cut, shift = warm[0] + 2 * plan.cut, 2 * plan.unit
    tl, grid_run = run(graph.tasks), uncontended_run(cfg, pricer, None, plan.m_a)
    answers = set()
    for at in range(shift, len(orders[0]) + 1):
        task = steady._one_run(cfg, graph, tl, orders, warm, at, shift, plan.q)
        on_grid = period_on_grid(grid_run, warm, at, shift, plan.q, plan.m_a,
                                        REL_TOL)
        assert (task is None) == (on_grid is None), at
        answers.add(on_grid is None)
    assert answers == {True, False}
    refused = 0
    for k in range(cut - 2 * shift, len(orders[0])):
        for s in range(cfg.parallel.pp):
            for delta in (1e-6, -1e-6):
                tl = run(graph.tasks)
                i = next(i for i, t in enumerate(graph.tasks)
                         if t.stream == (s, "compute") and graph.tags[i] == k)
                tl.end_s[i] += delta
                grid_run = uncontended_run(cfg, pricer, None, plan.m_a)
                j = s * grid_run.grid.length + k
                grid_run.end[j] += delta
                grid_run.timeline.end_s[j] += delta
                task = steady._one_run(cfg, graph, tl, orders, warm, cut, shift, plan.q)
                on_grid = period_on_grid(grid_run, warm, cut, shift, plan.q, plan.m_a,
                                                REL_TOL)
                assert (task is None) == (on_grid is None), (s, k, delta)
                refused += on_grid is None
    assert refused > 0


def test_grid_tasks_read_negative_indices_from_the_end():
    from trainsim.steady_grid import _Tasks

    class _G:
        perm = (0, 1)

    tail = ["opt0", "opt1"]  # stand-ins: only the tail is read below
    tasks = _Tasks(_G(), (None, None, None, 0), tail)  # type: ignore[arg-type]
    assert len(tasks) == 4
    assert tasks[-1] == "opt1" and tasks[-2] == "opt0" and tasks[3] == "opt1"
    with pytest.raises(IndexError):
        tasks[4]
    with pytest.raises(IndexError):
        tasks[-5]
    with pytest.raises(TypeError):
        tasks[0:2]
