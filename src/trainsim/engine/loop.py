"""The event loop: tasks run in submission order on their stream (like CUDA streams) once every
task they depend on has finished. A heap of (time, sequence) finish events drives it; the
sequence number breaks ties, so the same input always gives the same timeline.

The engine knows nothing about transformers: a task is a duration on a stream, with
dependencies and an opaque label. A task may also ``slow`` another stream while it runs (a
collective holding SMs that the compute stream then lacks): that stream's running task advances
at 1 - (sum of the shares held) of its rate, and its finish time is moved accordingly.
"""

from __future__ import annotations

import gc
import heapq
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a task graph is built and run: a graph
    is hundreds of thousands of small acyclic objects, and the collections their allocation
    triggers re-scan all of them (about a third of a long simulation's time). Reference
    counting still frees everything; the collector runs again afterwards."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def run(tasks: list[Task]) -> Timeline:
    """Simulate ``tasks`` (ids are list indices; deps must point to existing tasks)."""
    n = len(tasks)
    waiting = [0] * n
    dependents: list[list[int]] = [[] for _ in range(n)]
    stream_of = [0] * n
    duration = [0.0] * n
    stream_ids: dict[tuple[int, str], int] = {}
    queues: list[list[int]] = []
    slows: list[tuple[tuple[int, str], float] | None] = [None] * n
    for i, t in enumerate(tasks):
        d = duration[i] = t.duration_s
        if not d >= 0:
            raise TrainsimError(f"task {i} ({t.label}) has a negative or NaN duration {d}")
        deps = t.deps
        if deps:
            waiting[i] = len(deps)
            for dep in deps:
                if not 0 <= dep < n or dep == i:
                    raise TrainsimError(f"task {i} ({t.label}) depends on invalid task {dep}")
                dependents[dep].append(i)
        sid = stream_ids.get(t.stream)
        if sid is None:
            sid = stream_ids[t.stream] = len(queues)
            queues.append([])
        stream_of[i] = sid
        queues[sid].append(i)
        if t.slows is not None:
            slows[i] = t.slows
    n_streams = len(queues)
    # contention: per stream, the share of it other running tasks hold, and for its running
    # task the work left at the last rate change
    hold_on: list[tuple[int, float] | None] = [None] * n
    for i, sl in enumerate(slows):
        if sl is not None:
            tsid = stream_ids.get(sl[0])
            if tsid is not None:
                hold_on[i] = (tsid, sl[1])
    head = [0] * n_streams
    size = [len(q) for q in queues]
    busy = [False] * n_streams
    start = [0.0] * n
    end = [0.0] * n
    events: list[tuple[float, int, int]] = []  # (finish time, task, version)
    push, pop = heapq.heappush, heapq.heappop
    held = [0.0] * n_streams
    left = [0.0] * n
    since = [0.0] * n
    version = [0] * n

    def hold(tsid: int, share: float, now: float, sign: float) -> None:
        running = queues[tsid][head[tsid]] if busy[tsid] else -1
        if running >= 0:  # the work it did since the last change, at the old rate
            left[running] -= (now - since[running]) * max(1.0 - held[tsid], MIN_RATE)
        h = max(0.0, held[tsid] + sign * share)
        held[tsid] = h = 0.0 if h < 1e-12 else h
        if running >= 0:
            since[running] = now
            end[running] = e = now + max(left[running], 0.0) / max(1.0 - h, MIN_RATE)
            version[running] += 1
            push(events, (e, running, version[running]))

    def begin(sid: int, i: int, now: float) -> None:
        """Start task ``i``, the ready head of idle stream ``sid``."""
        busy[sid] = True
        start[i] = since[i] = now
        d = left[i] = duration[i]
        h = held[sid]
        end[i] = e = now + (d / max(1.0 - h, MIN_RATE) if h else d)
        push(events, (e, i, 0))
        target = hold_on[i]
        if target is not None:
            hold(target[0], target[1], now, 1.0)

    for sid in range(n_streams):
        if size[sid] and not waiting[queues[sid][0]] and not busy[sid]:
            begin(sid, queues[sid][0], 0.0)
    done = 0
    # A stream starts its head task as soon as it is idle and the task is ready, so a task
    # made ready here starts only if it is its stream's head and the stream is idle; and a
    # stream whose task ended starts its next one if that is ready.
    while events:
        now, i, ver = pop(events)
        if ver != version[i]:
            continue  # rescheduled by a change of contention
        done += 1
        sid = stream_of[i]
        busy[sid] = False
        head[sid] += 1
        target = hold_on[i]
        if target is not None:
            hold(target[0], target[1], now, -1.0)
        for j in dependents[i]:
            w = waiting[j] = waiting[j] - 1
            if not w:
                sj = stream_of[j]
                if not busy[sj] and queues[sj][head[sj]] == j:
                    begin(sj, j, now)
        k = head[sid]
        if k < size[sid] and not busy[sid]:
            nxt = queues[sid][k]
            if not waiting[nxt]:
                begin(sid, nxt, now)
    if done != n:
        stuck = next(i for i in range(n) if waiting[i] or
                     head[stream_of[i]] <= queues[stream_of[i]].index(i))
        raise TrainsimError(f"deadlock: {n - done} tasks never ran (first: {tasks[stuck].label})")
    return Timeline(tasks, start, end)
