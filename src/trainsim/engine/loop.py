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
    detail: object = None
    """Opaque payload for reports (the caller's ordered op-level segments)."""


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
    stream_of = [0] * n
    stream_ids: dict[tuple[int, str], int] = {}
    queues: list[list[int]] = []
    for i, t in enumerate(tasks):
        if not t.duration_s >= 0:
            raise TrainsimError(f"task {i} ({t.label}) has a negative or NaN duration {t.duration_s}")
        deps = t.deps
        waiting[i] = len(deps)
        for d in deps:
            if not 0 <= d < n or d == i:
                raise TrainsimError(f"task {i} ({t.label}) depends on invalid task {d}")
            dependents[d].append(i)
        sid = stream_ids.get(t.stream)
        if sid is None:
            sid = stream_ids[t.stream] = len(queues)
            queues.append([])
        stream_of[i] = sid
        queues[sid].append(i)
    head = [0] * len(queues)
    busy = [False] * len(queues)
    start = [0.0] * n
    end = [0.0] * n
    duration = [t.duration_s for t in tasks]
    events: list[tuple[float, int]] = []
    push, pop = heapq.heappush, heapq.heappop

    def try_start(sid: int, now: float) -> None:
        q = queues[sid]
        k = head[sid]
        if busy[sid] or k >= len(q):
            return
        i = q[k]
        if waiting[i]:
            return
        busy[sid] = True
        start[i] = now
        end[i] = e = now + duration[i]
        push(events, (e, i))

    for sid in range(len(queues)):
        try_start(sid, 0.0)
    finished = [False] * n
    done = 0
    while events:
        now, i = pop(events)
        finished[i] = True
        done += 1
        sid = stream_of[i]
        busy[sid] = False
        head[sid] += 1
        for j in dependents[i]:
            waiting[j] -= 1
            if not waiting[j]:
                try_start(stream_of[j], now)
        try_start(sid, now)
    if done != n:
        stuck = finished.index(False)
        raise TrainsimError(f"deadlock: {n - done} tasks never ran (first: {tasks[stuck].label})")
    return Timeline(tasks, start, end)
