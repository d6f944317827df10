"""When a task graph could be re-timed by one max-plus pass (each task starts at the latest end of
its stream's previous task and of its dependencies, and runs for its duration) instead of the
event loop: where no task that slows a stream runs at any moment a task of that stream runs,
but where one ends as the other starts and the later one depends on the earlier
(``benchmarks/speed54_retime.py``'s condition, which it counts 0 of the 22B search's
281 graphs meeting). Then the loop's timeline is that pass's to the bit; where a holder
overlaps, contention moves finishes and the pass is wrong."""

from __future__ import annotations

import random

from trainsim.engine.loop import Task, _run


def _max_plus(tasks: list[Task]) -> tuple[list[float], list[float]]:
    free: dict = {}
    start, end = [0.0] * len(tasks), [0.0] * len(tasks)
    for i, t in enumerate(tasks):
        s = free.get(t.stream, 0.0)
        for d in t.deps:
            s = max(s, end[d])
        start[i] = s
        free[t.stream] = end[i] = s + t.duration_s
    return start, end


def _contention_free(tasks: list[Task], start: list[float], end: list[float]) -> bool:
    """No task of a slowed stream runs while a holder of it runs: each ends before the holder
    starts (or at its start, as its dependency: its end is handled first) or starts after
    the holder ends (or at its end, as its dependent: the share is given back first)."""
    streams = {t.stream for t in tasks}
    for h, t in enumerate(tasks):
        if t.slows is None or t.slows[0] not in streams:
            continue
        for j, u in enumerate(tasks):
            if u.stream != t.slows[0] or j == h:
                continue
            if not (end[j] < start[h] or start[j] > end[h]
                    or end[j] == start[h] and j in t.deps
                    or start[j] == end[h] and h in u.deps):
                return False
    return True


def _graph(rng: random.Random) -> list[Task]:
    """One rank's compute stream and a few communication streams that slow it, each waiting
    on a pass (a reduction after it) or a pass waiting on them (a gather before it)."""
    tasks: list[Task] = []
    for _ in range(rng.randint(4, 30)):
        i = len(tasks)
        if rng.random() < 0.6 or not i:
            deps = [rng.randrange(i)] if i and rng.random() < 0.3 else []
            if i and tasks[-1].slows is not None and rng.random() < 0.8:
                deps = [i - 1]  # a pass waiting on the gather before it
            tasks.append(Task((0, "compute"), rng.choice((0.5, 1.0, rng.expovariate(1.0))),
                              deps, f"t{i}"))
        else:
            stream = (0, rng.choice(("dp", "pp", "dp2")))
            share = rng.choice((0.1, 0.2, 0.99, 1.3))
            tasks.append(Task(stream, rng.expovariate(4.0), [rng.randrange(i)], f"t{i}",
                              slows=((0, "compute"), share)))
    return tasks


def test_the_loop_is_one_max_plus_pass_where_no_holder_meets_its_stream():
    rng = random.Random(54)
    free = contended = differs = 0
    while free < 200 or contended < 200:
        tasks = _graph(rng)
        start, end = _max_plus(tasks)
        tl = _run(tasks, prefix=False)
        if _contention_free(tasks, start, end):
            free += 1
            assert tl.start_s == start and tl.end_s == end
        else:
            contended += 1
            differs += tl.end_s != end
    assert differs > contended // 4  # the condition is not vacuous: overlaps move finishes


def test_an_end_at_a_holders_start_counts_as_met_unless_the_holder_waits_for_it():
    """0.3 + 0.35 - 0.3 < 0.35 in floats: a holder that starts as a task of its stream ends,
    released by another task (earlier in task order, so its end is handled first), books that
    task's remaining 5.6e-17 s at half rate and moves its end; where the holder waits for the
    task too, the end is handled first and stays where the pass puts it."""
    s, d = 0.3, 0.35
    assert (s + d) - s < d

    def tasks(holder_deps: list[int]) -> list[Task]:
        return [Task((0, "y"), s + d, [], "x"), Task((0, "compute"), s, [], "a"),
                Task((0, "compute"), d, [], "j"),
                Task((0, "dp"), 1.0, holder_deps, "h", slows=((0, "compute"), 0.5))]

    for deps, free in (([0], False), ([0, 2], True)):
        graph = tasks(deps)
        start, end = _max_plus(graph)
        assert _contention_free(graph, start, end) is free
        assert (_run(graph, prefix=False).end_s == end) is free
