"""Run A of the steady-state shortcut without task objects, where nothing contends.

Where no task of the truncated run slows a stream (no data-parallel or expert-parallel peers,
so no gradient reductions, parameter gathers or split last backward; blocking sends, folded
into their passes; untied embeddings; no output-layer weight gradient deferred), the whole run is Megatron's passes, one per schedule
position of each stage, and each stage's optimizer step after its last pass. Every task then
starts at the latest end of its stream's previous task and its dependencies (the event loop's
uncontended pass, ``engine.loop``), and the run is a max-plus recurrence on a grid of
``pp`` stages x ``2 m vpp`` positions: a forward waits on the previous virtual stage's forward
of its micro-batch, a backward on the next virtual stage's backward and its own forward.

The grid's structure depends on ``(pp, vpp, m, torch warm-up)`` alone and is built once per
process (like the schedules it is read from): each pass's dependencies and a *level* (the
longest chain of dependencies before it). Passes of one level wait only on lower levels, so a
run is one numpy step per level (~900 for PP64 vpp 2 against 49k tasks), and each time is the
same ``max`` of the same floats plus the same duration as the event loop's: bit-identical.
:func:`engine.periodic.period_in_run_s`'s checks are then array comparisons, and the summary
reads the same numbers as :func:`steady_state._one_run` would; where the period is not proven
here, the caller builds the task graph and tries again as before.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from trainsim.catalog.framework_rules import sends_overlap
from trainsim.config import RunConfig
from trainsim.engine import Task, Timeline
from trainsim.pricing import Priced, Pricer
from trainsim.simulator import LayerSource, _TaskGraph
from trainsim.workload.pipe_engine import deepspeed_lockstep
from trainsim.workload.schedule import microbatch_group, pass_labels, schedule, torch_warmup


@dataclass(frozen=True)
class Grid:
    """The passes of one schedule, flat index ``stage * length + position``."""

    length: int
    is_b: np.ndarray
    """Per pass: a backward (else a forward)."""
    mb: np.ndarray
    chunk: np.ndarray
    v: np.ndarray
    """Virtual stage: chunk * pp + stage."""
    up: np.ndarray
    """The pass it waits on on another stage (previous virtual stage's forward, next one's
    backward), -1 if none."""
    own: np.ndarray
    """A backward's own forward, -1 for a forward."""
    perm: np.ndarray
    """Passes by level, then index."""
    inv: np.ndarray
    """Position of each pass in ``perm``."""
    waits: tuple[np.ndarray, np.ndarray, np.ndarray]
    """In ``perm`` order, the positions in ``perm`` of each pass's stream predecessor, ``up``
    and ``own`` (``len(perm)`` where none: a slot that holds 0.0)."""
    spans: tuple[tuple[int, int], ...]
    """``perm`` slices of one level each."""


@functools.lru_cache(maxsize=16)
def grid(pp: int, vpp: int, m: int, torch_warm: bool, group: int | None = None) -> Grid:
    """The grid of Megatron's schedule (``workload.schedule.schedule``) for ``m`` micro-batches
    (``group``: the interleaved order's micro-batch group size)."""
    orders = [schedule(s, pp, vpp, m, torch_warmup=torch_warm, group=group) for s in range(pp)]
    length = len(orders[0])
    n, nv = pp * length, pp * vpp
    flat = [p for order in orders for p in order]
    is_b = np.fromiter((p[0] == "B" for p in flat), bool, n)
    mb = np.fromiter((p[1] for p in flat), np.int64, n)
    chunk = np.fromiter((p[2] for p in flat), np.int64, n)
    v = chunk * pp + np.repeat(np.arange(pp), length)
    key = mb * nv + v
    index = np.arange(n)
    fpos, bpos = np.full(m * nv + 1, -1), np.full(m * nv + 1, -1)
    fpos[key[~is_b]], bpos[key[is_b]] = index[~is_b], index[is_b]
    up = np.where(is_b, np.where(v < nv - 1, bpos[key + 1], -1),
                  np.where(v > 0, fpos[np.maximum(key - 1, 0)], -1))
    own = np.where(is_b, fpos[key], -1)
    prev = np.where(index % length > 0, index - 1, -1)
    # levels, in the graph builder's order (each stage as far as its dependencies allow)
    up_l, own_l = up.tolist(), own.tolist()
    level = [-1] * n
    cursor, left = [0] * pp, n
    while left:
        moved = False
        for s in range(pp):
            base, k = s * length, cursor[s]
            while k < length:
                i = base + k
                lv = level[i - 1] + 1 if k else 0
                for d in (up_l[i], own_l[i]):
                    if d >= 0:
                        if level[d] < 0:
                            break
                        lv = max(lv, level[d] + 1)
                else:
                    level[i] = lv
                    k += 1
                    continue
                break
            moved |= k != cursor[s]
            left -= k - cursor[s]
            cursor[s] = k
        if not moved:  # pragma: no cover - schedules are deadlock-free by construction
            raise RuntimeError("pipeline schedule has a cycle")
    lev = np.array(level)
    perm = np.argsort(lev, kind="stable")
    inv = np.empty(n, np.int64)
    inv[perm] = index

    def slots(dep: np.ndarray) -> np.ndarray:
        d = dep[perm]
        return np.where(d >= 0, inv[np.maximum(d, 0)], n)

    bounds = np.concatenate(([0], np.cumsum(np.bincount(lev)))).tolist()
    waits = (slots(prev), slots(up), slots(own))
    for a in (is_b, mb, chunk, v, up, own, perm, inv, *waits):
        a.flags.writeable = False  # shared by every run of this schedule in the process
    return Grid(length, is_b, mb, chunk, v, up, own, perm, inv, waits,
                tuple(itertools.pairwise(bounds)))


def _duration(priced: Priced | float) -> float:
    return priced.duration_s if isinstance(priced, Priced) else priced


class _Tasks(Sequence):
    """The run's tasks, each made when asked for (the summary reads one stage's)."""

    def __init__(self, g: Grid, specs: tuple, tail: list[Task]) -> None:
        self.g, self.specs, self.tail = g, specs, tail
        self.n = len(g.perm)
        self.made: dict[int, Task] = {}

    def __len__(self) -> int:
        return self.n + len(self.tail)

    def __getitem__(self, i):  # type: ignore[override]
        i = operator.index(i)  # one task at a time: a slice is refused (TypeError)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        if i >= self.n:
            return self.tail[i - self.n]
        t = self.made.get(i)
        if t is None:
            g, (fwd, first, bwd, m) = self.g, self.specs
            v, mb, chunk = int(g.v[i]), int(g.mb[i]), int(g.chunk[i])
            up, own = int(g.up[i]), int(g.own[i])
            if g.is_b[i]:
                spec, deps, label = bwd[v], [up, own] if up >= 0 else [own], \
                    pass_labels("B", chunk, m)[mb]
            else:
                spec = first.get(v, fwd[v]) if mb == 0 else fwd[v]
                deps, label = [up] if up >= 0 else [], pass_labels("F", chunk, m)[mb]
            t = self.made[i] = Task(spec[0], spec[1], deps, label, spec[2], spec[3], spec[5])
        return t


@dataclass
class Run:
    """Run A as :func:`steady_state._one_run` reads it."""

    timeline: Timeline
    ends: list[int]
    end: np.ndarray
    """Per pass, its end (flat index)."""
    duration: np.ndarray
    """Per pass, its duration, ``pp`` x ``length``."""
    grid: Grid
    busy: list[float]
    """Per stage, the work on its compute stream, summed in task order."""


def uncontended_run(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None,
                    m: int) -> Run | None:
    """Run A of ``m`` micro-batches on the grid, or None where a task of it would slow a
    stream or is not a plain pass (then the task graph is built)."""
    p = cfg.parallel
    if p.optimizer_post_validation or sends_overlap(cfg) or (
            cfg.model.tied_embeddings and p.pp > 1) or \
            deepspeed_lockstep(cfg):  # the embedding all-reduce; transfers as tasks
        return None
    tg = _TaskGraph(cfg, pricer, layer_source, m)
    if tg.fsdp or tg.deferral:  # a deferred output-layer wgrad: other backwards and a drain
        return None
    _, fwd, first, bwd, slow_bwd = tg.pass_specs()  # gathers, if any, are in tg.tasks
    specs = [*fwd, *bwd, *first.values()]
    if tg.tasks or tg.lone or tg.first_bwd or any(slow_bwd) or any(sp[4] is not None or sp[5] is not None
                                                   for sp in specs):
        return None  # gathers, gradient reductions, unpaired passes, separate sends, contention
    pp, vpp = p.pp, p.vpp
    g = grid(pp, vpp, m, torch_warmup(cfg), microbatch_group(cfg))
    n, length = len(g.perm), g.length
    dur_f = np.array([sp[1] for sp in fwd])
    dur = np.where(g.is_b, np.array([sp[1] for sp in bwd])[g.v], dur_f[g.v])
    for v, sp in first.items():
        dur[(g.v == v) & (g.mb == 0) & ~g.is_b] = sp[1]
    dp = dur[g.perm]
    end_p = np.zeros(n + 1)
    start_p = np.empty(n)
    prev, up, own = g.waits
    for lo, hi in g.spans:
        t = np.maximum(end_p[prev[lo:hi]], end_p[up[lo:hi]])
        np.maximum(t, end_p[own[lo:hi]], out=t)
        start_p[lo:hi] = t
        end_p[lo:hi] = t + dp[lo:hi]
    start, end = start_p[g.inv], end_p[:n][g.inv]
    # each stage's step after its last pass (its stream's previous task and its dependency)
    tail: list[Task] = []
    tail_start: list[float] = []
    tail_end: list[float] = []
    ends: list[int] = []
    queues: dict[tuple[int, str], list[int]] = {}
    durations = dur.reshape(pp, length)
    busy = np.add.accumulate(durations, axis=1)[:, -1].tolist()
    for s in range(pp):
        stream, last = (s, "compute"), s * length + length - 1
        queues[stream] = list(range(s * length, s * length + length))
        t, b, dep = float(end[last]), busy[s], last
        for priced, label, cat in tg.step_tasks(s):
            d = _duration(priced)
            tail.append(Task(stream, d, [dep], label, priced.summary if isinstance(
                priced, Priced) else ((cat, priced),), priced if isinstance(priced, Priced)
                else None, None))
            dep = n + len(tail) - 1
            queues[stream].append(dep)
            tail_start.append(t)
            t += d
            b += d
            tail_end.append(t)
        ends.append(dep)
        busy[s] = b
    tasks = _Tasks(g, (fwd, first, bwd, m), tail)
    tl = Timeline(tasks, start.tolist() + tail_start, end.tolist() + tail_end,  # type: ignore[arg-type]
                  queues)
    return Run(tl, ends, end, durations, g, busy)


def period_on_grid(run: Run, warm: list[int], cut: int, shift: int, q: int, m: int,
                   rel_tol: float) -> float | None:
    """:func:`engine.periodic.period_in_run_s` with :func:`steady_state._one_run`'s twins on
    the grid: the prefix is every stage's positions before ``cut - shift``, the period those
    up to ``cut``, the tail the rest and the steps; a prefix pass's twin is the pass ``shift``
    positions later on its stage where that is the same pass ``q`` micro-batches later."""
    g, end, dur = run.grid, run.end, run.duration.ravel()
    length, c1, c2 = g.length, cut - shift, cut
    pp = len(warm)
    if not 1 <= c1 < c2 <= length or not all(w <= c1 and c2 <= length - w for w in warm):
        return None
    pos = np.tile(np.arange(length), pp)
    part = np.where(pos < c1, 0, np.where(pos < c2, 1, 2))
    # the period is plain pairs: no first forward or last backward (other tasks in a longer run)
    ends_in = ((~g.is_b & (g.mb == 0)) | (g.is_b & (g.mb == m - 1))) & (part == 1)
    if ends_in.any():
        return None
    later = np.minimum(np.arange(len(pos)) + shift, len(pos) - 1)
    twin = (part == 0) & (part[later] == 1) & (g.is_b[later] == g.is_b) & (
        g.mb[later] == g.mb + q) & (g.chunk[later] == g.chunk) & (dur[later] == dur)
    last_prefix = np.arange(pp) * length + c1 - 1
    if not twin[last_prefix].all():  # each stage's state at the cut: its last prefix pass
        return None
    period = float(end[last_prefix[0] + shift] - end[last_prefix[0]])
    tol = rel_tol * max(run.timeline.end_s[e] for e in run.ends)
    moves = twin & (np.abs(end[later] - end - period) <= tol)
    if not moves[last_prefix].all() or not period > 0:
        return None
    stage = np.repeat(np.arange(pp), length)
    for dep in (g.up, g.own):
        has = dep >= 0
        d = np.where(has, dep, 0)
        other = has & (stage[d] != stage)
        still = has & (part[d] == 0) & other & ~moves[d]  # a prefix input that does not move
        if (has & (part == 1) & ((part[d] == 2) | still)).any():  # the period's inputs
            return None
        if (has & (part == 2) & still).any():  # the tail's, whose counterpart is unknown
            return None
        if (has & (part == 0) & (part[d] == 2)).any():  # the prefix waits on the tail
            return None
    return period


__all__ = ["Grid", "Run", "grid", "period_on_grid", "uncontended_run"]
