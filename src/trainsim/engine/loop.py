"""The event loop: tasks run in submission order on their stream (like CUDA streams) once every
task they depend on has finished. A heap of (time, sequence) finish events drives it; the
sequence number breaks ties, so the same input always gives the same timeline.

The engine knows nothing about transformers: a task is a duration on a stream, with
dependencies and an opaque label. A task may also ``slow`` another stream while it runs (a
collective holding SMs that the compute stream then lacks): that stream's running task advances
at 1 - (sum of the shares held) of its rate, and its finish time is moved accordingly.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from trainsim.errors import TrainsimError

MIN_RATE = 0.05
"""Floor on a slowed stream's rate, so that shares adding past 1 cannot stall it."""


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
    slows: tuple[tuple[int, str], float] | None = None
    """(stream, share): while this task runs, tasks on ``stream`` progress at 1 - share of
    their rate (shares of concurrent tasks add up)."""


@dataclass
class Timeline:
    tasks: list[Task]
    start_s: list[float]
    end_s: list[float]

    @property
    def makespan_s(self) -> float:
        return max(self.end_s, default=0.0)

    def stretch_s(self, i: int) -> float:
        """How much longer task ``i`` ran than its duration, slowed by other streams' tasks."""
        return max(0.0, self.end_s[i] - self.start_s[i] - self.tasks[i].duration_s)


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
    events: list[tuple[float, int, int]] = []  # (finish time, task, version)
    push, pop = heapq.heappush, heapq.heappop
    # contention: per stream, the share of it other running tasks hold, and for its running
    # task the work left at the last rate change
    slows = [(stream_ids.get(t.slows[0]), t.slows[1]) if t.slows else None for t in tasks]
    held = [0.0] * len(queues)
    left = [0.0] * n
    since = [0.0] * n
    version = [0] * n

    def rate(sid: int) -> float:
        return max(1.0 - held[sid], MIN_RATE)

    def try_start(sid: int, now: float) -> None:
        q = queues[sid]
        k = head[sid]
        if busy[sid] or k >= len(q):
            return
        i = q[k]
        if waiting[i]:
            return
        busy[sid] = True
        start[i] = since[i] = now
        left[i] = duration[i]
        end[i] = e = now + (duration[i] / rate(sid) if held[sid] else duration[i])
        push(events, (e, i, 0))
        if slows[i] is not None:
            hold(slows[i], now, 1.0)

    def hold(target: tuple[int | None, float], now: float, sign: float) -> None:
        tsid, share = target
        if tsid is None:
            return
        running = queues[tsid][head[tsid]] if busy[tsid] else None
        if running is not None:  # the work it did since the last change, at the old rate
            left[running] -= (now - since[running]) * rate(tsid)
        held[tsid] = max(0.0, held[tsid] + sign * share)
        if held[tsid] < 1e-12:
            held[tsid] = 0.0
        if running is not None:
            since[running] = now
            end[running] = e = now + max(left[running], 0.0) / rate(tsid)
            version[running] += 1
            push(events, (e, running, version[running]))

    for sid in range(len(queues)):
        try_start(sid, 0.0)
    finished = [False] * n
    done = 0
    while events:
        now, i, ver = pop(events)
        if ver != version[i]:
            continue  # rescheduled by a change of contention
        finished[i] = True
        done += 1
        sid = stream_of[i]
        busy[sid] = False
        head[sid] += 1
        if slows[i] is not None:
            hold(slows[i], now, -1.0)
        for j in dependents[i]:
            waiting[j] -= 1
            if not waiting[j]:
                try_start(stream_of[j], now)
        try_start(sid, now)
    if done != n:
        stuck = finished.index(False)
        raise TrainsimError(f"deadlock: {n - done} tasks never ran (first: {tasks[stuck].label})")
    return Timeline(tasks, start, end)
