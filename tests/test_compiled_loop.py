"""benchmarks/compiled_loop.py: the C loop of the experiment gives the Python event loop's
timelines bit for bit (random graphs whose tasks slow other streams, out-of-order dependencies,
zero durations, shares past the rate floor), so its timing compares the same work."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.engine.loop import Task, _run

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="no C compiler")


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    mod = load_script(ROOT / "benchmarks" / "compiled_loop.py")
    return mod, mod.build(str(tmp_path_factory.mktemp("loop")))


def _graph(rng: random.Random, n: int) -> list[Task]:
    ranks, tied = rng.randint(1, 3), rng.random() < 0.5
    sides = ("dp", "pp", "ep", "cp")
    tasks: list[Task] = []

    def add(stream: tuple[int, str], deps: list[int]) -> None:
        slows = None
        if stream[1] != "compute" and rng.random() < 0.8:
            slows = ((stream[0], "compute"), rng.choice([0.0005, 0.1, 0.2, 0.3, 0.7, 0.99, 1.3]))
        # half the graphs on a few round durations: tasks ending at the same moment, whose
        # events the loop takes in task order (their shares added in that order)
        duration = 0.0 if rng.random() < 0.05 else \
            rng.choice((0.5, 1.0, 1.5)) if tied else rng.expovariate(1.0)
        tasks.append(Task(stream, duration, deps, f"t{len(tasks)}", slows=slows))

    while len(tasks) < n:
        i, rank = len(tasks), rng.randrange(ranks)
        if i and rng.random() < 0.2:  # a fan: side tasks all waiting on one task, made ready
            # at once (the loop starts them in task order, each adding its share)
            for side in rng.sample(sides, k=rng.randint(2, 4)):
                add((rank, side), [i - 1])
            continue
        stream = (rank, rng.choice(("compute", "compute", *sides)))
        deps = rng.sample(range(i), k=min(i, rng.randint(0, 3))) if i else []
        if i > 2 and rng.random() < 0.05:  # a dependency on a later task (of the first n)
            deps.append(rng.randint(i + 1, n + 4))
        add(stream, deps)
    last = len(tasks)  # (a later task past the graph's end dropped)
    return [Task(t.stream, t.duration_s, [d for d in t.deps if d < last], t.label,
                 slows=t.slows) for t in tasks]


def test_the_c_loop_gives_the_python_loops_timelines_bit_for_bit(lib):
    mod, c = lib
    rng = random.Random(28)
    checked = contended = 0
    while checked < 300:
        tasks = _graph(rng, rng.randint(2, 120))
        try:
            want = _run(tasks, False)
        except Exception:  # noqa: BLE001 - a deadlocked draw (later dependencies): the C loop too
            with pytest.raises(RuntimeError, match="deadlock"):
                mod.run_c(c, tasks)
            continue
        assert mod.run_c(c, tasks) == (want.start_s, want.end_s)
        checked += 1
        contended += any(t.slows is not None for t in tasks)
    assert contended > 200


def test_a_simulated_configs_graph_too(lib):
    from trainsim.catalog import load_run_config
    from trainsim.pricing import Pricer
    from trainsim.simulator import build_graph

    mod, c = lib
    cfg = load_run_config(ROOT / "examples" / "gpt3-175b-a100.yaml")
    tasks = build_graph(cfg, Pricer(cfg)).tasks
    want = _run(tasks, True)
    assert any(t.slows is not None for t in tasks)
    assert mod.run_c(c, tasks) == (want.start_s, want.end_s)
