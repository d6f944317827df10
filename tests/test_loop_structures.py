"""Inside ``engine.runs_shared`` the event loop keeps each topology's setup (streams, queues,
dependents, what each task slows: ``engine.loop._structure``) and re-times a later graph of the
same topology with its own durations: every timeline, and every figure of a simulation, is the
same to the bit as the loop's from scratch; what it keeps is never changed or handed out."""

from __future__ import annotations

import random

import pytest
from test_loop_reference import _graph

from trainsim.engine import loop
from trainsim.engine.loop import Task, _run, run, runs_shared
from trainsim.errors import TrainsimError


def _redrawn(tasks: list[Task], rng: random.Random) -> list[Task]:
    """The same topology with new durations (some zero, some tied)."""
    return [Task(t.stream, rng.choice((0.0, 0.5, rng.expovariate(2.0))), list(t.deps), t.label,
                 slows=t.slows) for t in tasks]


def _counted(monkeypatch) -> list[int]:
    built: list[int] = []
    structure = loop._structure

    def counting(tasks):
        built.append(len(tasks))
        return structure(tasks)

    monkeypatch.setattr(loop, "_structure", counting)
    return built


@pytest.mark.parametrize("seed", range(3))
def test_a_topology_run_again_is_timed_as_from_scratch(seed, monkeypatch):
    rng = random.Random(seed)
    graphs = [_graph(rng, rng.randint(10, 120)) for _ in range(20)]
    variants = [[g] + [_redrawn(g, rng) for _ in range(4)] for g in graphs]
    want = [[(tl.start_s, tl.end_s, tl.queues) for tl in (_run(v, True) for v in vs)]
            for vs in variants]
    built = _counted(monkeypatch)
    with runs_shared() as (_, store):
        got = [[(tl.start_s, tl.end_s, tl.queues) for tl in (run(v) for v in vs)]
               for vs in variants]
        assert len(store[loop._STRUCTURES]) == len(graphs)
    assert got == want
    assert len(built) == len(graphs)  # one setup per topology, four graphs re-timed each


def test_any_change_but_durations_is_a_topology_of_its_own(monkeypatch):
    rng = random.Random(7)
    g = _graph(rng, 60)
    i = next(i for i, t in enumerate(g) if t.slows is not None and t.deps)
    changed = [
        [*g[:i], Task(g[i].stream, g[i].duration_s, g[i].deps[:-1], slows=g[i].slows), *g[i + 1:]],
        [*g[:i], Task((9, "dp"), g[i].duration_s, g[i].deps, slows=g[i].slows), *g[i + 1:]],
        [*g[:i], Task(g[i].stream, g[i].duration_s, g[i].deps,
                      slows=(g[i].slows[0], g[i].slows[1] + 0.25)), *g[i + 1:]],
        [*g[:i], Task(g[i].stream, g[i].duration_s, g[i].deps), *g[i + 1:]]]
    want = [(tl.start_s, tl.end_s, tl.queues) for tl in (_run(t, True) for t in [g, *changed])]
    built = _counted(monkeypatch)
    with runs_shared() as (_, store):
        got = [(tl.start_s, tl.end_s, tl.queues) for tl in map(run, [g, *changed])]
        assert len(store[loop._STRUCTURES]) == 1 + len(changed)
    assert got == want
    assert len(built) == 1 + len(changed)


def test_what_is_kept_is_neither_changed_nor_handed_out():
    rng = random.Random(3)
    g = _graph(rng, 80)
    with runs_shared() as (_, store):
        tl = run(g)
        (kept,) = store[loop._STRUCTURES].values()
        snapshot = repr(kept)
        for queue in tl.queues.values():
            queue.clear()  # the caller's own
        again = run(_redrawn(g, rng))
        assert repr(kept) == snapshot
        assert sum(map(len, again.queues.values())) == len(g)


def test_a_bad_duration_in_a_kept_topology_is_refused_as_from_scratch():
    rng = random.Random(5)
    g = _graph(rng, 40)
    for bad in (-1.0, float("nan")):
        tasks = _redrawn(g, rng)
        tasks[17].duration_s = bad
        with pytest.raises(TrainsimError) as fresh:
            _run(tasks, True)
        with runs_shared():
            run(g)
            with pytest.raises(TrainsimError) as kept:
                run(tasks)
        assert str(kept.value) == str(fresh.value)
        assert "task 17" in str(kept.value)


def test_nothing_is_kept_past_the_cap(monkeypatch):
    rng = random.Random(9)
    g = _graph(rng, 50)
    monkeypatch.setattr(loop, "STRUCTURE_TASKS", 49)
    with runs_shared() as (_, store):
        tl = run(g)
        assert store[loop._STRUCTURES] == {} and store[loop._STRUCTURE_TASKS] == 0
    assert (tl.start_s, tl.end_s) == (_run(g, True).start_s, _run(g, True).end_s)


def test_search_candidates_simulate_as_alone_when_topologies_are_shared(monkeypatch):
    """240 random configurations of two 16-GPU search spaces (dense and MoE; ZeRO-3, pipelines,
    steady states), simulated one after another inside one ``runs_shared`` as a search worker
    does: every figure of every result is the one it has simulated alone, and topologies were
    re-timed (setups fewer than loop runs)."""
    from helpers import make_base

    from trainsim.search import SearchSpace
    from trainsim.simulator import simulate

    rng = random.Random(54)
    cfgs = []
    for model in ("gpt-22b", "mixtral-8x7b"):
        base = make_base(model=model, gpus=16, batch=64)
        space = SearchSpace(max_micro_batch=2, max_cp=2)
        keys = list(space.memory_keys(base, 16))
        cfgs += [rng.choice(space.variants(k)).to_config(base)
                 for k in rng.choices(keys, k=120)]
    want = [simulate(c).to_dict() for c in cfgs]
    built = _counted(monkeypatch)
    runs: list[int] = []
    loop_run = loop._run

    def counting(tasks, prefix):
        runs.append(len(tasks))
        return loop_run(tasks, prefix)

    monkeypatch.setattr(loop, "_run", counting)
    with runs_shared():
        got = [simulate(c).to_dict() for c in cfgs]
    assert got == want
    assert len(built) < len(runs)
