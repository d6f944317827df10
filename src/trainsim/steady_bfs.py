"""torch's looped BFS schedule's periodic steady state, proven on two truncated runs: two phases,
a period inserted in each chunk's run of passes.

Looped BFS (``workload.pipeline_schedules_bfs``) runs on every rank each chunk's forwards in
micro-batch order, chunk 0 first, then each chunk's backwards from micro-batch ``m - 1`` down
to 0, the last chunk first. One micro-batch more inserts a pass in every one of those ``2 vpp``
runs of a rank's order: not one cut (:mod:`trainsim.steady_state`), nor GPipe's two
(:mod:`trainsim.steady_gpipe`, the model here), but a period per run. And as in GPipe nothing
paces a stage back, so each stream keeps a pace of its own.

Run A has ``m_a`` micro-batches, B one more. In a chunk's forward run the period is A's last
forward (B's ``m_a - 1`` its *copy 0*, B's ``m_a`` its *copy 1*); in a chunk's backward run A's
second-to-last backward (micro-batch 1: the first, ``m - 1``, carries Transformer Engine's
first-backward work and the last, 0, the chunk's gradient reduction, both kept out of the
period). G_k, A with ``k`` periods inserted in every run, holds each task of A once (*plain*)
or, a period's, ``k + 1`` times (copies ``j = 0..k``). The claim: a task's times in G_k are
A's plus ``k sigma`` plus, for copy ``j``, ``j tau``, where ``sigma`` is B's less A's (copy 0's
for a copy) and ``tau`` copy 1's less copy 0's: affine, so every sum the result is made of
(work per stage, gaps between a stream's tasks, breakdown parts) is affine in ``k`` and the
iteration is B with ``m - m_a - 1`` periods more (``steady_gpipe.two_run_summary``).

Proof (:func:`bfs_proven`), by induction over the loop's events of G_k, phase by phase as in
GPipe: the *forward phase* (every forward and what is placed before the passes) ends at
``T0``, the last stage's last forward, before any task of the *backward phase* starts, in A and
in B, and no forward task moves faster than ``T0`` (:func:`_slopes` checks every forward end
against it), so the backward phase depends on the forward one only through ``T0`` and is
proven from it (times taken from ``T0``; a backward task never moving earlier than ``T0``).
Within a phase, where no task slows another, a task starts at the latest end of its inputs;
an input's image in G_k: for a copy ``j >= 1`` (represented by B's copy 1), copy 1's inputs
that are copies 1 are copies ``j`` and copies 0 are copies ``j - 1`` (the builder links a
period's passes to the same micro-batch's on the neighbour, and to the pass before on the
stream), a plain input itself; for a plain task or a copy 0, a copy-1 input is the last copy
``k`` (the pass after a run's copies on the stream, or the neighbour's), other inputs
themselves. Then the task's start is affine in ``(k, j)`` where one input binds in B with the
task's own coefficients and no input has a larger one, over ``k >= 1`` (plain, copy 0) or
``k >= j >= 1`` (copies: both ``sigma`` and ``sigma + tau`` dominated). Inputs of unknown
image (a plain task waiting on a copy 0, a copy on a plain task that is not placed before the
passes and that copy 0 does not wait on too, as a chunk's backwards all wait on the reduction
before them) are refused.

Contention (a task slowing a stream: an overlapped send slowing the next pass, a
data-parallel collective beside the backwards, FSDP's gathers) is proven pair by pair of
*families* (a plain task, or a period's copies ``0..k``) of a slowing task and the stream it
slows (:func:`_contention_holds`): either no instance of one overlaps one of the other in any
G_k (all before or all after, their coefficients ordered), or they move together so that every
instance overlaps exactly what its representative in B overlaps, at the same offsets: two
plain tasks at one ``sigma``; a plain task slowed by a period's copies either before them
(copy 0's ``sigma``, copy 2 past it) or after them (the last copy's pace, copy ``k - 2`` short
of it); a period's copy 0 slowed by a plain task at its ``sigma`` (copy 1 apart, copy 2 past
it); two periods at one ``sigma`` and ``tau`` with copy ``j`` beside the other's ``j`` and
``j - 1`` only (a send slowing the next pass). Then each task of G_k runs beside the same
slowing tasks at the same offsets as its representative, and the induction holds. Anything
else is refused: simulated in full.
"""

from __future__ import annotations

from itertools import chain
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from trainsim.engine import Timeline
from trainsim.engine.periodic import REL_TOL
from trainsim.optimizer_tasks import AFTER, BEFORE
from trainsim.steady_gpipe import forward_phase_ends

PLAIN, COPY0, COPY1 = 0, 1, 2
_duration, _deps, _slows = attrgetter("duration_s"), attrgetter("deps"), attrgetter("slows")


def least_length(pp: int, vpp: int) -> int:
    """A's micro-batches: 3 at least (the backward period apart from the first backward and
    the last); with chunks looping back, ``pp + 2`` (each chunk's forward run longer than the
    pipeline, so its first forward waits on its stream, not on the loop back, from the first
    period on)."""
    return max(pp + 2, 3) if vpp > 1 else 3


def _b_to_a(tag: int, m_a: int, vpp: int) -> tuple[int, int, bool]:
    """For a task of B (``m_a + 1`` micro-batches) at schedule position ``tag``: its
    counterpart's position in A, its class (plain, copy 0, copy 1) and whether it is of the
    forward phase."""
    if tag == BEFORE:
        return tag, PLAIN, True
    if tag == AFTER:
        return tag, PLAIN, False
    m_b = m_a + 1
    if tag < vpp * m_b:  # chunk c's forward of micro-batch mb; the period is A's last forward
        c, mb = divmod(tag, m_b)
        if mb == m_a:
            return c * m_a + m_a - 1, COPY1, True
        return c * m_a + mb, COPY0 if mb == m_a - 1 else PLAIN, True
    run, p = divmod(tag - vpp * m_b, m_b)  # the run's p-th backward; the period A's m_a - 2nd
    base = vpp * m_a + run * m_a
    if p == m_a - 1:
        return base + m_a - 2, COPY1, False
    if p == m_a:
        return base + m_a - 1, PLAIN, False
    return base + p, COPY0 if p == m_a - 2 else PLAIN, False


def _b_to_a_arrays(tags_b: list[int], m_a: int, vpp: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_b_to_a` for every task of B at once: counterpart positions, classes, forward."""
    tags = np.asarray(tags_b, dtype=np.int64)
    m_b = m_a + 1
    tag_a, kind = tags.copy(), np.zeros(len(tags), dtype=np.int8)
    fwd = tags == BEFORE
    passes = (tags != BEFORE) & (tags != AFTER)
    f = passes & (tags < vpp * m_b)
    c, mb = np.divmod(tags[f], m_b)
    tag_a[f] = c * m_a + np.minimum(mb, m_a - 1)
    kind[f] = np.where(mb == m_a, COPY1, np.where(mb == m_a - 1, COPY0, PLAIN))
    fwd[f] = True
    bk = passes & ~f
    run, p = np.divmod(tags[bk] - vpp * m_b, m_b)
    tag_a[bk] = vpp * m_a + run * m_a + np.where(p == m_a - 1, m_a - 2,
                                                 np.where(p == m_a, m_a - 1, p))
    kind[bk] = np.where(p == m_a - 1, COPY1, np.where(p == m_a - 2, COPY0, PLAIN))
    return tag_a, kind, fwd


def _stream_positions(tl: Timeline, streams: list) -> tuple[np.ndarray, np.ndarray] | None:
    """Per task of ``tl``: its stream's number in ``streams`` and its place in that queue."""
    sid = np.full(len(tl.tasks), -1, dtype=np.int64)
    pos = np.zeros(len(tl.tasks), dtype=np.int64)
    for s, stream in enumerate(streams):
        queue = np.asarray(tl.queues[stream], dtype=np.int64)
        sid[queue], pos[queue] = s, np.arange(len(queue))
    return None if (sid < 0).any() else (sid, pos)


def _groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For ``keys`` sorted: the distinct keys, each one's first index and count, and each
    element's rank within its key (``np.unique``'s answer without it: its first call imports
    ``numpy.ma``, ~8 ms of the first simulate in a process)."""
    first = np.flatnonzero(np.concatenate([[len(keys) > 0], keys[1:] != keys[:-1]]))
    count = np.diff(np.append(first, len(keys)))
    rank = np.arange(len(keys)) - np.repeat(first, count)
    return keys[first], first, count, rank


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct ``values``, sorted."""
    return _groups(np.sort(values))[0]


def _matching(ta: Timeline, tb: Timeline, tags_a: list[int], tags_b: list[int], m_a: int,
              vpp: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per task of B: its counterpart in A, its class and whether it is of the forward phase;
    None where B's tasks are not A's with a period inserted in every run. On each stream the
    k-th task of B at a position and class is matched with the k-th of A at the counterpart
    position; copies 0 and 1 each cover every task of A at the period's position. (Array
    form of settle60's loop over each stream's tasks: the same matches, zbproof61.)"""
    if ta.queues.keys() != tb.queues.keys():
        return None
    streams = list(tb.queues)
    found_a, found_b = _stream_positions(ta, streams), _stream_positions(tb, streams)
    if found_a is None or found_b is None:
        return None
    (sid_a, pos_a), (sid_b, pos_b) = found_a, found_b
    tag_b, cls, forward = _b_to_a_arrays(tags_b, m_a, vpp)
    tags = _distinct(np.concatenate([np.asarray(tags_a, dtype=np.int64), tag_b]))
    width = len(tags)
    key_a = sid_a * width + np.searchsorted(tags, np.asarray(tags_a, dtype=np.int64))
    key_b = sid_b * width + np.searchsorted(tags, tag_b)
    order_a = np.lexsort((pos_a, key_a))  # by stream and position, in queue order
    uniq_a, first_a, count_a, _ = _groups(key_a[order_a])
    late = (cls == COPY1).astype(np.int64)  # copies 1 matched apart from the rest
    order_b = np.lexsort((pos_b, late, key_b))
    key2 = (key_b * 2 + late)[order_b]
    uniq_b, _, count_b, rank_b = _groups(key2)
    at = np.searchsorted(uniq_a, uniq_b // 2)
    if (at >= len(uniq_a)).any():
        return None
    if not (np.array_equal(uniq_a[at], uniq_b // 2) and np.array_equal(count_a[at], count_b)):
        return None  # a position with more or fewer tasks in A than in B
    group = np.repeat(np.arange(len(uniq_b)), count_b)
    counterpart = np.empty(len(tb.tasks), dtype=np.int64)
    counterpart[order_b] = order_a[first_a[at[group]] + rank_b]
    with_copies = _distinct(key_b[cls != PLAIN])
    halves, _, pairs, _ = _groups(uniq_b // 2)
    if not np.all(pairs[np.searchsorted(halves, with_copies)] == 2):
        return None  # a period's copies 0 and 1 of different sizes
    covered = np.zeros(len(ta.tasks), dtype=bool)
    covered[counterpart] = True
    return (counterpart, cls, forward) if covered.all() else None


class _Edges(NamedTuple):
    """B's tasks against A's, read once for both phases' :func:`_slopes`: whether each task
    lasts as its counterpart does, every input (``xs`` waits on ``ds``: its dependencies,
    ``dep_x`` on ``dep_d``, then its stream's task before it) and both runs' times."""

    same: np.ndarray
    xs: np.ndarray
    ds: np.ndarray
    dep_x: np.ndarray
    dep_d: np.ndarray
    times: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    """A's starts and ends, B's starts and ends (each list read into an array once)."""


def _edges(a: Timeline, b: Timeline, j: np.ndarray) -> _Edges:
    """:class:`_Edges` of B (``j``: each task's counterpart in A)."""
    n = len(b.tasks)
    dur_a = np.fromiter(map(_duration, a.tasks), float, len(a.tasks))
    same = np.fromiter(map(_duration, b.tasks), float, n) == dur_a[j]
    n_deps = np.fromiter(map(len, map(_deps, b.tasks)), np.int64, n)
    dep_x = np.repeat(np.arange(n), n_deps)
    dep_d = np.fromiter(chain.from_iterable(map(_deps, b.tasks)), np.int64, len(dep_x))
    prev = np.full(n, -1, dtype=np.int64)
    for queue in b.queues.values():
        prev[queue[1:]] = queue[:-1]
    on = np.flatnonzero(prev >= 0)
    times = tuple(np.asarray(x) for x in (a.start_s, a.end_s, b.start_s, b.end_s))
    return _Edges(same, np.concatenate([dep_x, on]), np.concatenate([dep_d, prev[on]]),
                  dep_x, dep_d, times)


def _slopes(a: Timeline, b: Timeline, j: np.ndarray, cls: np.ndarray, member: np.ndarray,
            fixed: np.ndarray, origin: tuple[float, float], tol: float, edges: _Edges
            ) -> tuple[np.ndarray, np.ndarray] | None:
    """Per task of B in ``member`` (a phase), its ``sigma`` and ``tau`` from ``origin`` (A's,
    B's: the phase's start), proven as the module docstring says where no task slows another
    (the caller checks contention); None where the claim is not shown. Inputs outside the phase
    count as ended by its origin, not moving from it."""
    got = _paces(a, b, j, cls, member, origin, tol, edges)
    if got is None:
        return None
    sigma, tau, twin = got
    sb, eb = edges.times[2] - origin[1], edges.times[3] - origin[1]
    return (sigma, tau) if _inputs_bind(cls, member, fixed, sigma, tau, twin, sb, eb, tol,
                                        edges) else None


def _paces(a: Timeline, b: Timeline, j: np.ndarray, cls: np.ndarray, member: np.ndarray,
           origin: tuple[float, float], tol: float, edges: _Edges
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`_slopes`'s ``sigma`` and ``tau`` read from A and B, and each copy 1's copy 0
    (-1 for the rest); None where a task is slowed otherwise than its counterpart."""
    n = len(b.tasks)
    jm = np.where(member, j, 0)
    if not edges.same[member].all():
        return None
    sa, ea, sb, eb = (t - origin[i // 2] for i, t in enumerate(edges.times))
    d_start, d_end = sb - sa[jm], eb - ea[jm]
    if not np.all(np.abs(d_start - d_end)[member] <= tol):
        return None  # slowed otherwise than its counterpart
    sigma, tau = np.where(member, d_start, 0.0), np.zeros(n)
    copy0 = {int(j[i]): int(i) for i in np.flatnonzero(member & (cls == COPY0))}
    ones = np.flatnonzero(member & (cls == COPY1))
    if len(copy0) != len(ones):
        return None
    twin_of = np.full(n, -1, dtype=np.int64)
    for i in ones:
        twin = copy0.get(int(j[i]))
        if twin is None or abs((eb[i] - eb[twin]) - (sb[i] - sb[twin])) > tol:
            return None
        sigma[i], tau[i] = sigma[twin], sb[i] - sb[twin]
        tau[twin] = tau[i]  # a copy 0's pace, which its copies after it keep
        twin_of[i] = twin
    return sigma, tau, twin_of


def _inputs_bind(cls: np.ndarray, member: np.ndarray, fixed: np.ndarray, sigma: np.ndarray,
                 tau: np.ndarray, twin_of: np.ndarray, sb: np.ndarray, eb: np.ndarray,
                 tol: float, edges: _Edges) -> bool:
    """Whether every task of the phase ``member`` starts at the latest end of its inputs'
    images in G_k with its own coefficients, none larger (the module docstring); settle60's
    loop over each task's inputs, as arrays over every input at once (zbproof61: the same
    decisions, tests/test_zbproof61.py)."""
    n = len(cls)
    keep = member[edges.xs]  # every input of a phase task
    xs, ds = edges.xs[keep], edges.ds[keep]
    # along k, and along k and j together (a copy j >= 1; j is 0 for the others)
    own0, own1 = sigma, sigma + np.where(cls == COPY1, tau, 0.0)
    inside, cx, cd = member[ds], cls[xs], cls[ds]
    ask = inside & (cx == COPY1) & (cd == PLAIN) & ~fixed[ds]
    if ask.any():
        # a copy 1's plain input is every copy's only where its copy 0 waits on it too (a
        # reduction the whole run of a chunk's passes queues behind); else which task in
        # G_k is unknown
        waits = np.sort(edges.dep_x * n + edges.dep_d)
        asked = twin_of[xs[ask]] * n + ds[ask]
        at = np.minimum(np.searchsorted(waits, asked), len(waits) - 1)
        if not len(waits) or not (waits[at] == asked).all():
            return False
    if (inside & (((cx == PLAIN) & (cd == COPY0)) | ((cx == COPY0) & (cd == COPY1)))).any():
        return False  # a plain task after copy 0 (copy 0 after copy 1): which copy unknown
    # a copy 1's copy input moves with its j, a plain one not; the others wait on the last copy
    last = sigma[ds] + np.where(cd == COPY1, tau[ds], 0.0)
    coef0 = np.where(inside, np.where(cx == COPY1, sigma[ds], last), 0.0)
    coef1 = np.where(inside, np.where(cx == COPY1, sigma[ds] + tau[ds], last), 0.0)
    ed = np.where(inside, eb[ds], np.minimum(eb[ds], 0.0))
    if ((coef0 > own0[xs] + tol) | (coef1 > own1[xs] + tol)).any():
        return False  # an input that would overtake it
    binds = (ed >= sb[xs] - tol) & (coef0 >= own0[xs] - tol) & (coef1 >= own1[xs] - tol)
    binding = np.zeros(n, dtype=bool)
    binding[xs[binds]] = True
    alone = member & (np.bincount(xs, minlength=n) == 0)
    binding |= alone & (np.abs(own0) <= tol) & (np.abs(own1) <= tol)
    return bool(binding[member].all())


def bfs_proven(ta: Timeline, tb: Timeline, tags_a: list[int], tags_b: list[int], m_a: int,
               vpp: int, rel_tol: float = REL_TOL) -> bool:
    """Whether looped BFS's run of ``m_a + 1`` micro-batches (B) is the one of ``m_a`` (A) with
    a period inserted in every run of a chunk's passes such that every longer run is A's with
    as many more (the module's proof)."""
    if m_a < 3:
        return False
    found = _matching(ta, tb, tags_a, tags_b, m_a, vpp)
    if found is None:
        return False
    j, cls, forward = found
    slows_a = list(map(_slows, ta.tasks))
    if list(map(_slows, tb.tasks)) != [slows_a[i] for i in j.tolist()]:
        return False  # a task slowing other than its counterpart does
    tol = rel_tol * tb.makespan_s
    fixed = np.asarray(tags_b) == BEFORE
    edges = _edges(ta, tb, j)
    t0 = forward_phase_ends(ta, tb, j[forward], forward, edges.times)
    if t0 is None:
        return False
    slope_t0 = t0[1] - t0[0]
    got_f = _slopes(ta, tb, j, cls, forward, fixed, (0.0, 0.0), tol, edges)
    got_b = _slopes(ta, tb, j, cls, ~forward, fixed, (t0[0], t0[1]), tol, edges)
    if got_f is None or got_b is None or not slope_t0 > tol:
        return False
    sf, tf = got_f
    sbk, tbk = got_b
    if (sf[forward] > slope_t0 + tol).any() or ((sf + tf)[forward] > slope_t0 + tol).any():
        return False  # a forward task overtaking the end of the forward phase
    if (sbk[~forward] < -tol).any() or ((sbk + tbk)[~forward] < -tol).any():
        return False  # a backward task moving earlier than the forward phase's end
    sigma = np.where(forward, sf, slope_t0 + sbk)  # per period inserted, from time 0
    tau = np.where(forward, tf, tbk)
    return _contention_holds(tb, j, cls, sigma, tau, tol, edges.times)


def _contention_holds(tb: Timeline, j: np.ndarray, cls: np.ndarray, sigma: np.ndarray,
                      tau: np.ndarray, tol: float, times: tuple[np.ndarray, ...]) -> bool:
    """Whether every task that slows a stream slows, in every G_k, each task of that stream as
    it slows the task's representative in B (module docstring): pair by pair of *families* (a
    plain task, or a period's copies ``j = 0..k``, whose instance ``(k, j)`` runs at A's times
    plus ``k sigma + j tau``), either never overlapping in any G_k, or moving together so that
    each instance overlaps exactly what its representative does, at the same offsets."""
    start_a, end_a = times[0][j], times[1][j]  # each family's in A
    family = cls != COPY1  # a family's B task: a plain task or copy 0
    queues = {stream: np.asarray(q, dtype=np.int64) for stream, q in tb.queues.items()}
    for y in (i for i, t in enumerate(tb.tasks) if t.slows is not None and family[i]):
        xs = queues.get(tb.tasks[y].slows[0])
        if xs is not None and len(xs) and not _pairs_hold(
                xs[family[xs]], y, start_a, end_a, cls == COPY0, sigma, tau, tol):
            return False
    return True


def _pairs_hold(xs: np.ndarray, y: int, start_a: np.ndarray, end_a: np.ndarray,
                copies: np.ndarray, sigma: np.ndarray, tau: np.ndarray, tol: float) -> bool:
    """:func:`_contention_holds` for slowing family ``y`` against the families ``xs`` of the
    stream it slows (``copies``: which families are a period's)."""
    sx, tx, cx = sigma[xs], np.where(copies[xs], tau[xs], 0.0), copies[xs]
    sy, ty, cy = sigma[y], tau[y] if copies[y] else 0.0, bool(copies[y])

    def over(kx: float, jx: float, ky: float, jy: float) -> np.ndarray:
        """Whether x's instance (kx, jx) and y's (ky, jy) overlap, per x."""
        dx, dy = kx * sx + jx * tx, ky * sy + jy * ty
        return (start_a[xs] + dx < end_a[y] + dy - tol) & (end_a[xs] + dx > start_a[y] + dy + tol)

    def before(kx: float, jx: float, ky: float, jy: float) -> np.ndarray:
        """Whether x's instance ends before y's starts, per x."""
        return end_a[xs] + kx * sx + jx * tx <= start_a[y] + ky * sy + jy * ty + tol

    def after(kx: float, jx: float, ky: float, jy: float) -> np.ndarray:
        return start_a[xs] + kx * sx + jx * tx >= end_a[y] + ky * sy + jy * ty - tol

    # B's instances: (k, j) = (1, 0) and, a period's, (1, 1)
    o00 = over(1, 0, 1, 0)
    o10 = over(1, 1, 1, 0) & cx
    o01 = over(1, 0, 1, 1) & cy
    o11 = over(1, 1, 1, 1) & cx & cy
    any_over = o00 | o10 | o01 | o11
    # never overlapping: every instance of x before (after) every one of y, in every G_k
    hi_x, lo_x = np.maximum(sx, sx + tx), np.minimum(sx, sx + tx)
    hi_y, lo_y = max(sy, sy + ty), min(sy, sy + ty)
    all_before = before(1, 0, 1, 0) & before(1, 1, 1, 0) & (before(1, 0, 1, 1) | ~cy) & \
        before(1, 1, 1, 1) & (hi_x <= lo_y + tol)
    all_after = after(1, 0, 1, 0) & after(1, 1, 1, 0) & (after(1, 0, 1, 1) | ~cy) & \
        after(1, 1, 1, 1) & (lo_x >= hi_y - tol)
    apart = ~any_over & (all_before | all_after)
    same = np.abs(sx - sy) <= tol
    if not cy:  # y plain: x plain at its pace; a period's copy 0 at its pace, copy 1 apart
        together = np.where(cx, same & ~o10 & (tx > tol) & after(1, 2, 1, 0), same)
        return bool(np.all(apart | together))
    if not ty > tol:
        return bool(np.all(apart))
    # y a period's: x plain before its copies (at copy 0's pace, copy 2 after x) or after them
    # (at the last copy's, copy k - 2 before x); a period's at one pace, copy d = -1 apart and
    # copies two apart on their own sides
    lead = same & before(1, 0, 1, 2)
    trail = (np.abs(sx - sy - ty) <= tol) & after(2, 0, 2, 0)
    rigid = same & (np.abs(tx - ty) <= tol) & ~over(1, 0, 1, 1) & after(1, 2, 1, 0) & \
        before(1, 0, 1, 2)
    together = np.where(cx, rigid, lead | trail)
    return bool(np.all(apart | together))


__all__ = ["bfs_proven", "least_length"]
