"""The schedules' orders as the periodic shortcut reads them: where a run of one period more is
the shorter one with that period inserted (:func:`named_cut`, :func:`insertion_cut`,
:func:`inserted_at`) and the passes the graph builder treats apart (:func:`_end_passes`); used
by :mod:`trainsim.steady_state` and :mod:`trainsim.steady_affine`."""

from __future__ import annotations

import functools

from trainsim.workload.schedule import Overlapped, Pass, schedule

NAMED = ("zb_h1", "zb_h2", "zb_v", "dualpipe_v", "interleaved_zb", "dualpipe")
"""Schedules of ``workload.pipeline_schedules`` whose orders a longer run lengthens by one
period's passes inserted at one position of every rank (:func:`named_cut` checks it on the
orders themselves): ZB-H1/H2 (1F1B's order, W delayed by a fixed count), ZB-V and DualPipeV
(their steady loops take one micro-batch per turn), interleaved ZB (Megatron's interleaved
order, W delayed: a group of ``pp`` micro-batches per period), DualPipe (its steady loop takes
one micro-batch of each direction per turn; compared per direction, :func:`_per_direction`).
``zb_2p`` takes the same cut on its searched orders (the graphs'), where its search has
settled into a period by A (``zb_settle.settle``: the order for ``m`` is A's with rounds
inserted). ``gpipe`` (all forwards, then all backwards: a micro-batch more inserts passes at
two places of every rank's order, and its stages keep paces of their own) has its own proof,
:mod:`trainsim.steady_gpipe`."""
MAX_NAMED_WARMUP = 8
""":func:`named_plan` looks for A's length up to this many micro-batches per pipeline stage
(ZB-H2's warm-up, the longest, is 2pp - 1)."""

def _bump(step: Pass | Overlapped, q: int) -> Pass | Overlapped:
    """``step`` with every micro-batch ``q`` later (the same pass one period on)."""
    if isinstance(step, Overlapped):
        return Overlapped(_bump(step.f, q), _bump(step.b, q))
    return step._replace(microbatch=step.microbatch + q)


def _passes(steps) -> set:
    """The passes of ``steps`` (an overlapped pair's two)."""
    return {p for st in steps for p in (st if isinstance(st, Overlapped) else (st,))}


def _chunks(orders: list) -> int:
    """Model chunks per rank in ``orders``."""
    return 1 + max(p.chunk for order in orders for p in _passes(order))


def _end_passes(m: int, chunks: int, name: str | None = None) -> set:
    """Passes the graph builder gives other tasks (parameter gathers, a split backward, the
    gradient reduction): every chunk's first forward and the last micro-batch's backwards
    (DualPipe's: each direction's, its second from micro-batch m/2 to m - 1,
    ``pipeline.ScheduledPipeline._last_mb``)."""
    if name == "dualpipe":
        firsts, lasts = (0, m // 2), (m // 2 - 1, m - 1)
    else:
        firsts, lasts = (0,) * chunks, (m - 1,) * chunks
    return {Pass(kind, mb, c) for c in range(chunks)
            for kind, mb in (("F", firsts[c]), ("B", lasts[c]), ("I", lasts[c]),
                             ("W", lasts[c]))}


def _per_direction(step: Pass | Overlapped, m: int) -> Pass | Overlapped:
    """DualPipe's ``step`` of a run of ``m`` micro-batches with its second direction's (chunk
    1's, micro-batches m/2 to m - 1) counted from 0, as its first direction's are."""
    if isinstance(step, Overlapped):
        return Overlapped(_per_direction(step.f, m), _per_direction(step.b, m))
    return step._replace(microbatch=step.microbatch - m // 2) if step.chunk else step


def _label_step(name: str | None, q: int) -> int:
    """How much a pass's micro-batch grows one period on within a run: ``q``, or for DualPipe
    (``q`` = 2, one micro-batch a direction) 1."""
    return q // 2 if name == "dualpipe" else q


def _named_q(name: str, pp: int) -> int:
    """Micro-batches per period of a :data:`NAMED` schedule: interleaved ZB's group of ``pp``,
    DualPipe's one of each direction, else one."""
    return pp if name == "interleaved_zb" else 2 if name == "dualpipe" else 1


@functools.lru_cache(maxsize=256)
def named_cut(name: str, pp: int, vpp: int, m_a: int, q: int = 1) -> tuple[int, int] | None:
    """For a schedule of :data:`NAMED`: the latest position ``c``, the same on every rank, at
    which each rank's order for ``m_a + q`` micro-batches (B) is its order for ``m_a`` (A) with
    one period of ``shift`` steps inserted -- B's first ``c`` steps are A's, the rest are A's
    from ``c - shift`` on, every micro-batch ``q`` later -- and A's period before ``c`` holds
    none of the end passes (:func:`_end_passes`); and ``shift``. None where there is none.
    DualPipe's orders are compared per direction (:func:`_per_direction`): its period is one
    micro-batch of each (``q`` = 2), and B's second direction starts one micro-batch later."""
    a = [schedule(s, pp, vpp, m_a, name) for s in range(pp)]
    b = [schedule(s, pp, vpp, m_a + q, name) for s in range(pp)]
    step = _label_step(name, q)
    if name == "dualpipe":
        a_n = [[_per_direction(x, m_a) for x in order] for order in a]
        b_n = [[_per_direction(y, m_a + q) for y in order] for order in b]
    else:
        a_n, b_n = a, b
    return insertion_cut(a_n, b_n, step, [_end_passes(m_a, _chunks(a), name)] * len(a), a)


def insertion_cut(a: list, b: list, step: int, ends: list[set],
                  raw: list | None = None) -> tuple[int, int] | None:
    """:func:`named_cut` on given orders: the latest position ``c``, one for every rank, where
    each rank's order ``b`` is its order ``a`` with ``shift`` steps inserted (``b[:c]`` is
    ``a[:c]``, ``b[c:]`` is ``a[c - shift:]`` with every micro-batch ``step`` later) and
    ``a``'s steps ``c - shift`` to ``c`` (in ``raw``, ``a``'s own labels, where ``a`` is
    relabelled) hold none of that rank's ``ends``; and ``shift``. None where there is none."""
    found = insertion_ranges(a, b, step)
    if found is None:
        return None
    shift, ranges = found
    low, high = max(lo for lo, _ in ranges), min(hi for _, hi in ranges)
    for c in range(high, low - 1, -1):
        if all(e.isdisjoint(_passes(x[c - shift:c])) for x, e in zip(raw or a, ends)):
            return c, shift
    return None


def insertion_ranges(a: list, b: list, step: int
                     ) -> tuple[int, list[tuple[int, int]]] | None:
    """Where each rank's order ``b`` is its order ``a`` with ``shift`` steps inserted
    (:func:`insertion_cut`'s condition, rank by rank): ``shift`` and, per rank, the least and
    the latest such position (none of the rank's where the least is past the latest); None
    where the orders do not differ by one ``shift`` on every rank."""
    shifts = {len(y) - len(x) for x, y in zip(a, b)}
    if len(shifts) != 1 or (shift := shifts.pop()) <= 0:
        return None
    ranges = []
    for x, y in zip(a, b):
        prefix = next((i for i, (u, v) in enumerate(zip(x, y)) if u != v), len(x))
        suffix = next((k for k in range(len(x)) if y[-1 - k] != _bump(x[-1 - k], step)),
                      len(x))
        ranges.append((max(shift, len(y) - suffix), min(len(x), prefix)))
    return shift, ranges


@functools.lru_cache(maxsize=256)
def inserted_at(name: str, pp: int, vpp: int, m_a: int, q: int, c: int) -> bool:
    """Whether every rank's order for ``m_a + q`` micro-batches is its order for ``m_a`` with
    one period inserted at position ``c`` (:func:`named_cut`'s condition at a given ``c``)."""
    a = [schedule(s, pp, vpp, m_a, name) for s in range(pp)]
    b = [schedule(s, pp, vpp, m_a + q, name) for s in range(pp)]
    step, raw = _label_step(name, q), a
    if name == "dualpipe":
        a = [[_per_direction(x, m_a) for x in order] for order in a]
        b = [[_per_direction(y, m_a + q) for y in order] for order in b]
    shifts = {len(y) - len(x) for x, y in zip(a, b)}
    if len(shifts) != 1 or (shift := shifts.pop()) <= 0 or not shift <= c <= min(map(len, a)):
        return False
    ends = _end_passes(m_a, _chunks(raw), name)
    return all(y[:c] == x[:c] and y[c:] == [_bump(v, step) for v in x[c - shift:]]
               and ends.isdisjoint(_passes(r[c - shift:c])) for x, y, r in zip(a, b, raw))


@functools.lru_cache(maxsize=256)
def named_plan(name: str, pp: int, vpp: int, q: int = 1) -> tuple[int, int, int] | None:
    """The shortest A (micro-batches) whose orders :func:`named_cut` finds a cut in, with that
    cut and shift; None where none is found up to :data:`MAX_NAMED_WARMUP` ``pp``."""
    for m_a in range(q, MAX_NAMED_WARMUP * pp + q, q):
        found = named_cut(name, pp, vpp, m_a, q)
        if found is not None:
            return m_a, *found
    return None


__all__ = ["MAX_NAMED_WARMUP", "NAMED", "inserted_at", "insertion_cut", "insertion_ranges", "named_cut",
           "named_plan"]
