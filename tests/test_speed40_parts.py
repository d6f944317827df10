"""benchmarks/speed40_parts.py: its wrappers count a part's CPU once where it recurses and put
the originals back; its replay of recorded graphs gives the loop's own timelines, through this
tree's loop and a second tree's loaded beside it, and its digest tells one ulp apart."""

from __future__ import annotations

import math
import sys
import time
import types
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.engine.loop import Task, Timeline, _run

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def script():
    return load_script(ROOT / "benchmarks" / "speed40_parts.py")


def _graph() -> list[Task]:
    """Two ranks' compute and a collective that slows rank 0's compute while it runs."""
    return [Task((0, "compute"), 1.0, [], "f0"),
            Task((1, "compute"), 1.5, [], "f1"),
            Task((0, "dp"), 2.0, [0], "rs", slows=((0, "compute"), 0.5)),
            Task((0, "compute"), 1.0, [0], "b0"),
            Task((1, "compute"), 0.5, [1, 3], "b1")]


def test_timed_counts_a_recursive_part_once_and_restores_it(script, monkeypatch):
    mod = types.ModuleType("speed40_toy")

    def work(n: int) -> int:
        t = time.process_time()
        while time.process_time() - t < 0.002:  # CPU, not sleep: process_time counts it
            pass
        return n if n == 0 else mod.work(n - 1)

    mod.work = work
    monkeypatch.setitem(sys.modules, "speed40_toy", mod)
    with script.timed((("speed40_toy", "work", "toy"),)) as out:
        assert mod.work is not work
        mod.work(3)  # four levels deep, one outer call
        mod.work(0)
    assert mod.work is work
    seconds, calls = out["work"]
    assert calls == 2
    assert 0.010 <= seconds < 0.5  # 5 x 2 ms spent inside, counted once, not 4 + 3 + 2 + 1


def test_replay_gives_the_loops_timelines_through_both_trees(script):
    tasks = _graph()
    direct = _run(tasks, True)
    assert direct.end_s[3] > 2.0  # rank 0's backward was slowed: the replay has contention
    graphs = [([(t.stream, t.duration_s, list(t.deps), t.slows) for t in tasks], True),
              ([(t.stream, t.duration_s, list(t.deps), t.slows) for t in tasks], False)]
    other = script.loop_of(str(ROOT / "src"))._run
    got = script.replay(graphs, {"here": _run, "other": other}, reps=2)
    want = script.digest([direct, _run(_graph(), False)])
    assert got["here"][1] == got["other"][1] == want
    assert all(sec >= 0 for sec, _ in got.values())


def test_digest_tells_one_ulp_apart(script):
    tl = _run(_graph(), True)
    moved = Timeline(tl.tasks, list(tl.start_s), list(tl.end_s), dict(tl.queues))
    moved.end_s[-1] = math.nextafter(moved.end_s[-1], math.inf)
    assert script.digest([tl]) != script.digest([moved])
    assert script.digest([tl]) == script.digest([_run(_graph(), True)])
