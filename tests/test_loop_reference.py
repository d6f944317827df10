"""The event loop (``engine.loop._run``: a heap of finish events with versions, the uncontended
prefix in one pass, the loop's state at the cut) gives the
timelines of a loop without a heap that takes, at every step, the running task with the
earliest end (ties in task order), to the bit: on random graphs shaped like the simulator's
(communication streams slowing their rank's compute stream, fans released at once, ties, zero
durations, shares past the rate floor) and on the task graphs of a search's configurations
(every figure of their evaluations)."""

from __future__ import annotations

import random

import pytest

from trainsim.engine import loop
from trainsim.engine.loop import MIN_RATE, Task, _run


def _reference(tasks: list[Task]) -> tuple[list[float], list[float]]:
    """Start and end of every task by the loop's rules (``engine.loop``'s docstring), with the
    next event found by a scan of the running tasks, not a heap: a stream runs its tasks in
    submission order, each once its dependencies have ended; a running task ``slows`` its
    target stream by its share (the rate ``max(1 - held, MIN_RATE)``, the work done booked at
    every change of it); tasks released by one end start in task order."""
    n = len(tasks)
    ids: dict = {}
    queues: list[list[int]] = []
    for i, t in enumerate(tasks):
        queues.append([]) if t.stream not in ids else None
        sid = ids.setdefault(t.stream, len(queues) - 1)
        queues[sid].append(i)
    of = [ids[t.stream] for t in tasks]
    waiting = [len(t.deps) for t in tasks]
    dependents: list[list[int]] = [[] for _ in range(n)]
    for i, t in enumerate(tasks):
        for d in t.deps:
            dependents[d].append(i)
    head, running, held = [0] * len(queues), [-1] * len(queues), [0.0] * len(queues)
    start, end, left, since = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n

    def rate(h: float) -> float:
        return max(1.0 - h, MIN_RATE)

    def shift(sid: int, share: float, now: float) -> None:
        r = running[sid]
        if r >= 0:
            left[r] -= (now - since[r]) * rate(held[sid])
        h = held[sid] + share
        held[sid] = h if h >= 1e-12 else 0.0
        if r >= 0:
            since[r] = now
            end[r] = now + max(left[r], 0.0) / rate(held[sid])

    def begin(sid: int, i: int, now: float) -> None:
        running[sid] = i
        start[i] = since[i] = now
        left[i] = tasks[i].duration_s
        end[i] = now + (left[i] / rate(held[sid]) if held[sid] else left[i])
        sl = tasks[i].slows
        if sl is not None and sl[0] in ids:
            shift(ids[sl[0]], sl[1], now)

    def try_begin(sid: int, now: float) -> None:
        q = queues[sid]
        if running[sid] < 0 and head[sid] < len(q) and not waiting[q[head[sid]]]:
            begin(sid, q[head[sid]], now)

    for sid in range(len(queues)):
        try_begin(sid, 0.0)
    done = 0
    while True:
        live = [r for r in running if r >= 0]
        if not live:
            break
        i = min(live, key=lambda r: (end[r], r))
        now, sid = end[i], of[i]
        done += 1
        running[sid] = -1
        head[sid] += 1
        sl = tasks[i].slows
        if sl is not None and sl[0] in ids:
            shift(ids[sl[0]], -sl[1], now)
        for j in dependents[i]:
            waiting[j] -= 1
            if not waiting[j] and queues[of[j]][head[of[j]]] == j:
                try_begin(of[j], now)
        try_begin(sid, now)
    assert done == n
    return start, end


def _graph(rng: random.Random, n: int) -> list[Task]:
    """Ranks of a compute stream and communication streams that slow it (a gather waiting on
    the compute before it, a pass waiting on a gather, fans of sends released together)."""
    ranks = rng.randint(1, 3)
    tied = rng.random() < 0.5
    tasks: list[Task] = []
    while len(tasks) < n:
        i, rank = len(tasks), rng.randrange(ranks)
        kind = rng.choice(("compute", "compute", "dp", "pp"))
        deps = sorted(set(rng.sample(range(i), k=min(i, rng.randint(0, 2))))) if i else []
        fan = 1 if kind == "compute" or rng.random() < 0.7 else rng.randint(2, 4)
        for k in range(fan):
            slows = None
            if kind != "compute" and rng.random() < 0.9:
                slows = ((rank, "compute"), rng.choice([0.0005, 0.1, 0.15, 0.2, 0.3, 0.99, 1.3]))
            d = 0.0 if rng.random() < 0.05 else \
                rng.choice((0.25, 0.5, 1.0)) if tied else rng.expovariate(2.0)
            stream = (rank, kind if k == 0 else f"{kind}{k}")
            tasks.append(Task(stream, d, list(deps), f"t{len(tasks)}", slows=slows))
    return tasks


@pytest.mark.parametrize("seed", range(4))
def test_the_loop_gives_the_heapless_reference_to_the_bit(seed):
    rng = random.Random(35 + seed)
    moved = 0
    for _ in range(150):
        tasks = _graph(rng, rng.randint(1, 160))
        start, end = _reference(tasks)
        for prefix in (False, True):
            tl = _run(tasks, prefix)
            assert tl.start_s == start and tl.end_s == end
        moved += any(t.slows for t in tasks) and \
            any(e - s > t.duration_s for s, e, t in zip(start, end, tasks))
    assert moved > 60  # contention did stretch tasks


def test_search_candidates_simulate_as_with_the_reference_loop(monkeypatch):
    """Random configurations of a 16-GPU search space (ZeRO-3 gathers, pipeline sends and
    data-parallel reductions slowing the passes, short and steady-state runs): every figure of
    their evaluations is the same whether the loop or the reference times their task graphs."""
    from helpers import make_base

    from trainsim.search import SearchSpace
    from trainsim.search import evaluation as ev

    base = make_base(gpus=16, batch=64)
    space = SearchSpace(max_micro_batch=2, max_cp=1)
    rng = random.Random(35)
    keys = list(space.memory_keys(base, 16))
    cands = [rng.choice(space.variants(k)) for k in rng.sample(keys, 24)]
    want = [ev.evaluate(c, base).to_dict() for c in cands]
    ran = []

    def reference(tasks, prefix):
        ran.append(len(tasks))
        start, end = _reference(tasks)
        queues: dict = {}
        for i, t in enumerate(tasks):
            queues.setdefault(t.stream, []).append(i)
        return loop.Timeline(tasks, start, end, queues)

    monkeypatch.setattr(loop, "_run", reference)
    assert [ev.evaluate(c, base).to_dict() for c in cands] == want
    assert len(ran) >= len(cands)
