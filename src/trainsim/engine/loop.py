"""The event loop: tasks run in submission order on their stream (like CUDA streams) once every
task they depend on has finished. A heap of (time, sequence) finish events drives it; the
sequence number breaks ties, so the same input always gives the same timeline.

The engine knows nothing about transformers: a task is a duration on a stream, with
dependencies and an opaque label.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from trainsim.errors import TrainsimError


@dataclass(slots=True)
class Task:
    stream: tuple[int, str]
    """(rank, stream name): tasks on one stream run one at a time, in submission order."""
    duration_s: float
    deps: list[int] = field(default_factory=list)
    label: str = ""
    segments: tuple[tuple[str, float], ...] = ()
    """Optional split of the duration into categories (compute, tp_comm, ...), for reports."""


@dataclass
class Timeline:
    tasks: list[Task]
    start_s: list[float]
    end_s: list[float]

    @property
    def makespan_s(self) -> float:
        return max(self.end_s, default=0.0)


def run(tasks: list[Task]) -> Timeline:
    """Simulate ``tasks`` (ids are list indices; deps must point to existing tasks)."""
    n = len(tasks)
    waiting = [0] * n
    dependents: list[list[int]] = [[] for _ in range(n)]
    queues: dict[tuple[int, str], list[int]] = {}
    for i, t in enumerate(tasks):
        waiting[i] = len(t.deps)
        for d in t.deps:
            if not 0 <= d < n or d == i:
                raise TrainsimError(f"task {i} ({t.label}) depends on invalid task {d}")
            dependents[d].append(i)
        queues.setdefault(t.stream, []).append(i)
    head = {s: 0 for s in queues}
    busy = {s: False for s in queues}
    start = [0.0] * n
    end = [0.0] * n
    events: list[tuple[float, int]] = []

    def try_start(stream: tuple[int, str], now: float) -> None:
        q = queues[stream]
        k = head[stream]
        if busy[stream] or k >= len(q):
            return
        i = q[k]
        if waiting[i]:
            return
        busy[stream] = True
        start[i] = now
        end[i] = now + tasks[i].duration_s
        heapq.heappush(events, (end[i], i))

    for s in queues:
        try_start(s, 0.0)
    finished = [False] * n
    done = 0
    while events:
        now, i = heapq.heappop(events)
        finished[i] = True
        done += 1
        s = tasks[i].stream
        busy[s] = False
        head[s] += 1
        for j in dependents[i]:
            waiting[j] -= 1
            if not waiting[j]:
                try_start(tasks[j].stream, now)
        try_start(s, now)
    if done != n:
        stuck = finished.index(False)
        raise TrainsimError(f"deadlock: {n - done} tasks never ran (first: {tasks[stuck].label})")
    return Timeline(tasks, start, end)
