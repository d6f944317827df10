"""The event loop: tasks run in submission order on their stream (like CUDA streams) once every
task they depend on has finished. A heap of (time, task) finish events drives it; the
task's index breaks ties, so the same input always gives the same timeline.

The engine knows nothing about transformers: a task is a duration on a stream, with
dependencies and an opaque label. A task may also ``slow`` another stream while it runs (a
collective holding SMs that the compute stream then lacks): that stream's running task advances
at 1 - (sum of the shares held) of its rate, and its finish time is moved accordingly.
"""

from __future__ import annotations

import bisect
import gc
import heapq
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter

from trainsim.errors import TrainsimError

MIN_RATE = 0.05
"""Floor on a slowed stream's rate, so that shares adding past 1 cannot stall it."""

STRETCH_ULPS = 4
"""A task's stretch (:meth:`Timeline.stretch_s`) at or below this many units in the last place
of its end time is rounding. chakra57, fuzz51's exportrt runs (seeds 7, 11-13, 60 each,
``benchmarks/stretch_noise.py``): tasks no slowing task overlapped "ran longer" by
at most 1.0 unit (~1e-19 s; the Chakra export wrote each as a contention node), and every task
one overlapped by at least 2.4e9 units (~1e-7 s and more)."""


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
    queues: dict[tuple[int, str], list[int]] = field(default_factory=dict)
    """Per stream, its tasks' indices in submission order (what the loop ran them in)."""

    @property
    def makespan_s(self) -> float:
        return max(self.end_s, default=0.0)

    def stretch_s(self, i: int) -> float:
        """How much longer task ``i`` ran than its duration, slowed by other streams' tasks;
        0.0 within ``STRETCH_ULPS`` units in the last place of its end time: the end is a
        double, rounded from ``start + duration`` (and once more per share change while the
        task runs), so a difference that small is that rounding, not time the task was
        slowed."""
        end = self.end_s[i]
        stretch = end - self.start_s[i] - self.tasks[i].duration_s
        return stretch if stretch > STRETCH_ULPS * math.ulp(end) else 0.0


def _first_pass(tasks: list[Task], duration: list[float]
                ) -> tuple[dict[tuple[int, str], int], list[list[int]], list[int], list[int],
                           bool, list[float], list[float]]:
    """One pass over the tasks: the streams (numbered in the order of their first task), each
    stream's tasks in task order, each task's stream, the tasks that slow a stream (in task
    order), whether every dependency is an earlier task, and the start and end of every task
    as if nothing slowed any stream (each task starts at the latest end of its stream's
    previous task and its dependencies). Those times are the event loop's, to the bit, before
    the first start of a task that slows a stream (:func:`_cut`); after it they are only lower
    bounds, and the loop recomputes them; where a dependency is a later task they are none.
    Raises on the first task, in task order, that depends on no task or on itself."""
    n = len(tasks)
    stream_of = [0] * n
    start = [0.0] * n
    end = [0.0] * n
    stream_ids: dict[tuple[int, str], int] = {}
    queues: list[list[int]] = []
    free: list[float] = []  # per stream, the end of its last task so far
    holders: list[int] = []
    ordered = True
    for i, t in enumerate(tasks):
        sid = stream_ids.get(t.stream)
        if sid is None:
            sid = stream_ids[t.stream] = len(queues)
            queues.append([])
            free.append(0.0)
        stream_of[i] = sid
        queues[sid].append(i)
        s = free[sid]
        for dep in t.deps:
            if 0 <= dep < i:
                e = end[dep]
                if e > s:  # noqa: PLR1730 - a comparison is cheaper than a call, per dependency
                    s = e
            elif not 0 <= dep < n or dep == i:
                raise TrainsimError(f"task {i} ({t.label}) depends on invalid task {dep}")
            else:
                ordered = False
        start[i] = s
        free[sid] = end[i] = s + duration[i]
        if t.slows is not None:
            holders.append(i)
    return stream_ids, queues, stream_of, holders, ordered, start, end


def _cut(holders: list[int], start: list[float], n: int) -> float:
    """The first start of a task that slows a stream (``holders``, in task order) in the
    uncontended times ``start`` (inf if none), or 0.0 where the first of them is among the
    first quarter of the ``n`` tasks or one starts at 0: contention starts too early for
    those times to save the loop anything."""
    if holders and 4 * holders[0] < n:
        return 0.0
    return min([start[i] for i in holders], default=math.inf)


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


_FROZEN = [0]
"""How many holders keep the collector's objects frozen (:func:`freeze_collector`, and the
outermost :func:`runs_shared` that freezes its kept graphs): :func:`runs_shared` reads this
instead of ``gc.get_freeze_count()``, which walks every frozen object in CPython 3.11 (~95,000
after a service app's startup freeze: 3-50 ms a call, measured, on every validated row)."""


def freeze_collector() -> None:
    """``gc.freeze()``, held until the matching :func:`thaw_collector`: every object alive now
    out of the collector's scans (the service app's startup objects). Freeze through this, not
    ``gc.freeze`` directly, so that :func:`runs_shared` sees it: a freeze it does not see, it
    freezes over and unfreezes on exit (which objects the collector scans, never a result)."""
    gc.freeze()
    _FROZEN[0] += 1


def thaw_collector() -> None:
    """Release a :func:`freeze_collector`; the last holder's release unfreezes everything."""
    if _FROZEN[0] > 0:
        _FROZEN[0] -= 1
        if not _FROZEN[0]:
            gc.unfreeze()


def collector_to_oldest() -> None:
    """A forked process's start: every object it inherited moved to the collector's oldest
    generation (``gc.freeze`` then ``gc.unfreeze``, no object visited) and nothing left frozen,
    so no holder inherited from the parent either."""
    gc.freeze()
    gc.unfreeze()
    _FROZEN[0] = 0


_SHARED: list[tuple[bool, dict[tuple[int, bool, float], tuple[list[Task], Timeline]], dict, int]] = []
"""Per :func:`runs_shared` entered (innermost last): whether it freezes the collector's objects
(the outermost, where nothing was frozen before), the timelines :func:`run` keeps, what its
callers keep beside them (:func:`shared_store`), and its cap in tasks (:func:`shared_tasks`)."""
SHARED_TASKS = 1_000_000
"""Tasks whose timelines one :func:`runs_shared` keeps at most by default (~335 bytes each
with their times, so ~340 MB; the public validation file's largest row keeps 176,456); its
callers' twin graphs (``trainsim.twin_graphs``) are kept within as many tasks again."""


@contextmanager
def runs_shared(kept: tuple[dict, dict] | None = None, tasks: int | None = None
                ) -> Iterator[tuple[dict, dict]]:
    """Inside it, :func:`run` of tasks equal in every field it reads (stream, duration,
    dependencies, what they slow) to a graph run earlier inside it returns that run's times
    instead of running the loop again: the timeline is a function of those fields alone (the
    loop is deterministic). A tuner whose candidates differ in a setting that leaves the task
    graph as it was (e.g. selective recompute of core attention where FlashAttention's backward
    recomputes the scores anyway) then runs that graph once. The graphs are kept until it
    exits: enter it around one question's simulations, not a whole search.

    The kept graphs are hundreds of thousands of objects that the cyclic garbage collector
    would scan again at every collection after each ``simulate`` (about a tenth of a tuned
    row's time): where nothing was frozen before, each kept graph is frozen out of its scans
    (``gc.freeze``, all objects alive then) and everything is unfrozen on exit, as before
    (what was frozen before is known from :func:`freeze_collector`'s count, in O(1)). The
    collector only finds cycles: nothing is computed differently, and a cycle made meanwhile is
    collected after the exit.

    ``kept``: what an earlier ``runs_shared`` yielded (its kept timelines and its callers'
    store), to go on sharing them (a search worker's batches, one after another); it yields
    its own. ``tasks``: the cap on the tasks it keeps, timelines and its callers' graphs each
    (default ``SHARED_TASKS``; a search's workers share it out, ``search.evaluation``)."""
    kept = kept if kept is not None else ({}, {})
    cap = SHARED_TASKS if tasks is None else tasks
    freezes = not _SHARED and not _FROZEN[0]  # O(1): no gc.get_freeze_count (see _FROZEN)
    _SHARED.append((freezes, *kept, cap))
    if freezes:
        _FROZEN[0] += 1  # held from here; run() freezes each kept graph
    try:
        yield kept
    finally:
        _SHARED.pop()
        if freezes:
            thaw_collector()


def shared_store() -> dict | None:
    """A dict kept as long as the innermost :func:`runs_shared` (None outside one), for what
    its callers build for the graphs it runs (``trainsim.twin_graphs``)."""
    return _SHARED[-1][2] if _SHARED else None


def shared_tasks() -> int:
    """The cap on the tasks the innermost :func:`runs_shared` keeps (0 outside one)."""
    return _SHARED[-1][3] if _SHARED else 0


def _same_graph(a: list[Task], b: list[Task]) -> bool:
    """Whether the loop reads the same of ``a`` as of ``b`` (its labels and payloads aside).
    Compared from the last task back: graphs that :func:`run`'s key cannot tell apart (as
    many tasks, the same sum of durations) differ late where they differ, in the buckets of
    their last backwards and their optimizer steps (the 22B search's 63 such pairs, none
    equal: 69,265 tasks compared front to back). The same test whichever way it runs."""
    return len(a) == len(b) and all(
        x.duration_s == y.duration_s and x.stream == y.stream and x.deps == y.deps
        and x.slows == y.slows for x, y in zip(reversed(a), reversed(b)))


def run(tasks: list[Task], prefix: bool = True) -> Timeline:
    """Simulate ``tasks`` (ids are list indices; deps must point to existing tasks).

    Until the first task that slows another stream starts, every task starts when its stream's
    previous task and its dependencies have ended and runs for its duration, so where every
    task depends only on tasks before it that prefix is computed in one pass (the same
    ``max`` and ``+`` of the same floats as the event loop: bit-identical), and the event loop
    takes over from the state it leaves: what ended before that moment, what runs across it
    (``prefix=False``: the event loop from the start, for tests)."""
    if not _SHARED:
        return _run(tasks, prefix)
    _, kept, _, cap = _SHARED[-1]
    key = (len(tasks), prefix, sum(map(_duration, tasks)))
    hit = kept.get(key)
    if hit is not None and (hit[0] is tasks or _same_graph(hit[0], tasks)):
        tl = hit[1]
        return Timeline(tasks, list(tl.start_s), list(tl.end_s),
                        {stream: list(queue) for stream, queue in tl.queues.items()})
    tl = _run(tasks, prefix)
    # the tasks kept so far, counted as they are kept (summing them at every run grew with
    # the search: ~1.7 % of a search worker's time, profiled)
    store = _SHARED[-1][2]
    so_far = store.get(_KEPT_TASKS)
    if so_far is None:
        so_far = sum(len(t) for t, _ in kept.values())
    if hit is None and so_far + len(tasks) <= cap:
        kept[key] = (tasks, Timeline(tasks, list(tl.start_s), list(tl.end_s),
                                     {stream: list(queue) for stream, queue in tl.queues.items()}))
        store[_KEPT_TASKS] = so_far + len(tasks)
        if _SHARED[0][0]:  # the kept graphs out of the collector's scans (runs_shared)
            gc.freeze()
    return tl


_duration = attrgetter("duration_s")
_KEPT_TASKS = "timeline tasks kept"
"""The key under which :func:`run` counts, in the ``runs_shared``'s store, the tasks of the
timelines it keeps."""


def _invalid(tasks: list[Task]) -> None:
    """Raise on the first task, in task order, with a negative or NaN duration or a
    dependency that is no task or itself (:func:`_run` checks its durations at once, and its
    dependencies in :func:`_first_pass`)."""
    for i, t in enumerate(tasks):
        if not t.duration_s >= 0:
            raise TrainsimError(f"task {i} ({t.label}) has a negative or NaN duration "
                                f"{t.duration_s}")
        for dep in t.deps:
            if not 0 <= dep < len(tasks) or dep == i:
                raise TrainsimError(f"task {i} ({t.label}) depends on invalid task {dep}")


def _run(tasks: list[Task], prefix: bool) -> Timeline:
    n = len(tasks)
    if not n:
        return Timeline(tasks, [], [], {})
    duration = [t.duration_s for t in tasks]
    if not (min(duration) >= 0.0 and not math.isnan(sum(duration))):
        _invalid(tasks)
    stream_ids, queues, stream_of, holders, ordered, start, end = _first_pass(tasks, duration)
    n_streams = len(queues)
    # contention: per stream, the share of it other running tasks hold, and for its running
    # task the work left at the last rate change
    hold_on: list[tuple[int, float] | None] = [None] * n
    for i in holders:
        sl = tasks[i].slows
        tsid = stream_ids.get(sl[0])  # type: ignore[index]
        if tsid is not None:
            hold_on[i] = (tsid, sl[1])  # type: ignore[index]
    head = [0] * n_streams
    size = [len(q) for q in queues]
    running = [-1] * n_streams  # per stream, its running task (-1: idle)
    events: list[tuple[float, int]] = []  # (finish time, task)
    left = [0.0] * n
    # per task, the earliest finish time among its heap entries (inf: none yet; -1: ended)
    queued = [math.inf] * n
    since = [0.0] * n
    done = 0
    cut = _cut([i for i in holders if hold_on[i] is not None], start, n) \
        if prefix and ordered else 0.0
    by_stream = {stream: queues[sid] for stream, sid in stream_ids.items()}
    if cut == math.inf:  # nothing slows any stream: the one pass is the whole timeline
        return Timeline(tasks, start, end, by_stream)
    # per task, its dependencies not yet ended, and per task, the tasks waiting for it (in
    # task order): of the tasks still to start (from the start: all of them)
    waiting = [0] * n
    dependents: list = [()] * n
    if cut:  # the loop's state at the cut: what ended before it is done, what started runs on
        later: list[int] = []
        for sid, queue in enumerate(queues):
            # a stream's tasks end in queue order: those ended before the cut lead its queue
            # (their finish events handled, their dependents never read)
            k = head[sid] = bisect.bisect_left(queue, cut, key=end.__getitem__)
            done += k
            if k < len(queue):
                i = queue[k]
                if start[i] < cut:  # begun before any contention (its dependencies done)
                    running[sid] = i
                    since[i] = start[i]
                    left[i] = duration[i]
                    events.append((end[i], i))
                    queued[i] = end[i]
                    k += 1
                later.extend(queue[k:])
        later.sort()
        for i in later:
            # waits only for its dependencies still to end
            w = 0
            for dep in tasks[i].deps:
                if not end[dep] < cut:
                    w += 1
                    listed = dependents[dep]
                    if listed:
                        listed.append(i)
                    else:
                        dependents[dep] = [i]
            waiting[i] = w
    else:
        for i, t in enumerate(tasks):
            deps = t.deps
            if deps:
                waiting[i] = len(deps)
                for dep in deps:
                    listed = dependents[dep]
                    if listed:
                        listed.append(i)
                    else:
                        dependents[dep] = [i]
    heapq.heapify(events)
    push, pop = heapq.heappush, heapq.heappop
    held = [0.0] * n_streams
    # Where a task slows a stream, from its start to its end, that stream's running task has
    # its work done at the old rate booked and its finish moved: ``shift``, called only for
    # the tasks that hold SMs, with the arithmetic of max(1 - held, MIN_RATE), max(0, held +
    # share) and max(left, 0) inline. A finish moved sooner gets a heap entry at once; one
    # moved later none: the task's earlier entry, when it pops, queues the finish as it is
    # then (``queued``: its earliest entry's time; an entry at any other time is left behind
    # and skipped). So an entry that finishes a task pops at its final finish time, in the
    # (time, task) order the loop always took, and a gather that slows a pass and ends inside
    # it costs one entry more, not two (the 22B search's 281 graphs: 397,036 pushes, not
    # 434,615; the same timelines to the bit: tests/test_loop_reference.py).

    def shift(tsid: int, share: float, now: float) -> None:
        """Stream ``tsid`` loses ``share`` more of its SMs (less where negative) at ``now``:
        its running task's work so far is booked at the old rate and its finish moved."""
        h = held[tsid]
        r = running[tsid]
        if r >= 0:  # the work it did since the last change, at the old rate
            rate = 1.0 - h
            if rate < MIN_RATE:  # noqa: PLR1730 - no call per task
                rate = MIN_RATE
            left[r] -= (now - since[r]) * rate
        h = h + share
        if not h >= 1e-12:  # max(0, h), and a rounding residue is none
            h = 0.0
        held[tsid] = h
        if r >= 0:
            since[r] = now
            lf = left[r]
            if lf < 0.0:  # noqa: PLR1730 - no call per task
                lf = 0.0
            rate = 1.0 - h
            if rate < MIN_RATE:  # noqa: PLR1730 - no call per task
                rate = MIN_RATE
            end[r] = e = now + lf / rate
            if e < queued[r]:  # sooner than its entry: an entry of its own now
                queued[r] = e
                push(events, (e, r))

    def begin(sid: int, i: int, now: float) -> None:
        """Start task ``i``, the ready head of idle stream ``sid``."""
        running[sid] = i
        start[i] = since[i] = now
        d = left[i] = duration[i]
        h = held[sid]
        if h:
            rate = 1.0 - h
            if rate < MIN_RATE:  # noqa: PLR1730 - no call per task
                rate = MIN_RATE
            d = d / rate
        end[i] = e = now + d
        queued[i] = e
        push(events, (e, i))
        target = hold_on[i]
        if target is not None:
            shift(target[0], target[1], now)

    if not cut:
        for sid in range(n_streams):
            if size[sid] and not waiting[queues[sid][0]] and running[sid] < 0:
                begin(sid, queues[sid][0], 0.0)
    # A stream starts its head task as soon as it is idle and the task is ready, so a task
    # made ready here starts only if it is its stream's head and the stream is idle; and a
    # stream whose task ended starts its next one if that is ready.
    while events:
        now, i = pop(events)
        if now != queued[i]:
            continue  # an entry left behind by a sooner one, or its task done
        if now != end[i]:  # its finish moved later meanwhile: its entry is due then
            queued[i] = e = end[i]
            push(events, (e, i))
            continue
        queued[i] = -1.0
        done += 1
        sid = stream_of[i]
        running[sid] = -1
        k = head[sid] = head[sid] + 1
        target = hold_on[i]
        if target is not None:  # the share it held is given back
            shift(target[0], -target[1], now)
        for j in dependents[i]:
            w = waiting[j] = waiting[j] - 1
            if not w:
                sj = stream_of[j]
                if running[sj] < 0 and queues[sj][head[sj]] == j:
                    running[sj] = j  # begin(sj, j, now), inline
                    start[j] = since[j] = now
                    d = left[j] = duration[j]
                    h = held[sj]
                    if h:
                        rate = 1.0 - h
                        if rate < MIN_RATE:  # noqa: PLR1730 - no call per task
                            rate = MIN_RATE
                        d = d / rate
                    end[j] = e = now + d
                    queued[j] = e
                    push(events, (e, j))
                    target = hold_on[j]
                    if target is not None:
                        shift(target[0], target[1], now)
        if k < size[sid] and running[sid] < 0:
            j = queues[sid][k]
            if not waiting[j]:
                running[sid] = j  # begin(sid, j, now), inline
                start[j] = since[j] = now
                d = left[j] = duration[j]
                h = held[sid]
                if h:
                    rate = 1.0 - h
                    if rate < MIN_RATE:  # noqa: PLR1730 - no call per task
                        rate = MIN_RATE
                    d = d / rate
                end[j] = e = now + d
                queued[j] = e
                push(events, (e, j))
                target = hold_on[j]
                if target is not None:
                    shift(target[0], target[1], now)
    if done != n:
        # each stream's queue is in task order: its first unfinished task is at its head
        stuck = min(q[head[sid]] for sid, q in enumerate(queues) if head[sid] < len(q))
        raise TrainsimError(f"deadlock: {n - done} tasks never ran (first: {tasks[stuck].label})")
    return Timeline(tasks, start, end, by_stream)
