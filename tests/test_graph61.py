"""graph61: the looped BFS shortcut's graph build and event loop made cheaper, every time the
same. The order is built once for every rank; ``engine.loop._run`` reads the tasks in one pass
(streams, queues, the uncontended times, the dependency checks) and builds the event loop's
waiting counts and dependents only for the tasks still to start at the cut."""

from __future__ import annotations

import math
import random

import pytest

from trainsim.engine.loop import Task, _cut, _first_pass, run
from trainsim.errors import TrainsimError
from trainsim.workload.pipeline_schedules_bfs import looped_bfs
from trainsim.workload.schedule import Pass

C, D = (0, "compute"), (0, "dp")


def test_the_looped_bfs_order_is_built_once_for_every_rank():
    """Every rank's order is the same passes (only the stages differ), so one tuple of them
    serves all ranks: rank 5's passes are rank 0's objects (main built them per rank)."""
    zero, five = looped_bfs(0, 64, 2, 66), looped_bfs(5, 64, 2, 66)
    assert zero == five and all(a is b for a, b in zip(zero, five))
    assert zero[:2] == [Pass("F", 0, 0), Pass("F", 1, 0)]
    assert zero[-2:] == [Pass("B", 1, 0), Pass("B", 0, 0)]
    zero.append(Pass("F", 9, 9))  # a caller's list is its own
    assert len(looped_bfs(0, 64, 2, 66)) == 2 * 2 * 66


def test_the_first_pass_reads_streams_queues_and_uncontended_times():
    tasks = [Task(C, 1.0), Task(D, 2.0, [0], slows=(C, 0.5)), Task(C, 0.5, [1]),
             Task((1, "compute"), 0.25, [0])]
    ids, queues, stream_of, holders, ordered, start, end = _first_pass(
        tasks, [t.duration_s for t in tasks])
    assert ids == {C: 0, D: 1, (1, "compute"): 2} and queues == [[0, 2], [1], [3]]
    assert stream_of == [0, 1, 0, 2] and holders == [1] and ordered
    assert start == [0.0, 1.0, 3.0, 1.0] and end == [1.0, 3.0, 3.5, 1.25]
    # the holder is task 1 of 4 (not in the first quarter): the cut is its start
    assert _cut(holders, start, 4) == 1.0 and _cut([], start, 4) == math.inf
    assert _cut([0], start, 4) == 0.0  # the first task: contention from the start
    assert not _first_pass([Task(C, 1.0, [1]), Task(C, 1.0)], [1.0, 1.0])[4]  # a later dep


@pytest.mark.parametrize(("tasks", "message"), [
    ([Task(C, 1.0), Task(C, 1.0, [5]), Task(C, -1.0)], "task 1 (t) depends on invalid task 5"),
    ([Task(C, 1.0), Task(C, math.nan, [5])], "task 1 (t) has a negative or NaN duration nan"),
    ([Task(C, -2.0), Task(C, 1.0, [1])], "task 0 (t) has a negative or NaN duration -2.0"),
    ([Task(C, 1.0), Task(C, 1.0, [1])], "task 1 (t) depends on invalid task 1"),
    ([Task(C, 1.0, [-1])], "task 0 (t) depends on invalid task -1"),
])
def test_the_first_invalid_task_in_task_order_is_named(tasks, message):
    """Durations are checked at once, dependencies in the first pass: the error names the
    first invalid task in task order, its duration before its dependencies, as before."""
    for t in tasks:
        t.label = "t"
    with pytest.raises(TrainsimError, match=f"^{message}$".replace("(", r"\(").replace(
            ")", r"\)")):
        run(tasks)


def test_long_graphs_with_late_contention_equal_the_loop_from_the_start():
    """Contention only in the last tenth (a gradient reduction's, as the looped BFS graphs
    have it): the loop taking over at the cut, with dependents of the tasks still to start
    alone, gives the loop from the start's times to the bit."""
    rng = random.Random(61)
    streams = [(r, k) for r in range(4) for k in ("compute", "dp")]
    for _ in range(30):
        n = rng.randint(40, 400)
        tasks = []
        for i in range(n):
            deps = rng.sample(range(max(0, i - 12), i), rng.randint(0, min(i, 3)))
            slows = (rng.choice(streams), rng.choice([0.1, 0.5, 0.99])) \
                if i > 0.9 * n and rng.random() < 0.3 else None
            tasks.append(Task(rng.choice(streams), rng.choice([0.0, 0.5, rng.random()]), deps,
                              f"t{i}", (), None, slows))
        fast, plain = run(tasks), run(tasks, prefix=False)
        assert fast.start_s == plain.start_s and fast.end_s == plain.end_s
        assert fast.queues == plain.queues
