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

from collections import defaultdict

import numpy as np

from trainsim.engine import Timeline
from trainsim.engine.periodic import REL_TOL
from trainsim.optimizer_tasks import AFTER, BEFORE
from trainsim.steady_gpipe import forward_phase_ends

PLAIN, COPY0, COPY1 = 0, 1, 2


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


def _matching(ta: Timeline, tb: Timeline, tags_a: list[int], tags_b: list[int], m_a: int,
              vpp: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per task of B: its counterpart in A, its class and whether it is of the forward phase;
    None where B's tasks are not A's with a period inserted in every run. On each stream the
    k-th task of B at a position and class is matched with the k-th of A at the counterpart
    position; copies 0 and 1 each cover every task of A at the period's position."""
    if ta.queues.keys() != tb.queues.keys():
        return None
    n = len(tb.tasks)
    counterpart = np.full(n, -1, dtype=np.int64)
    cls, forward = np.zeros(n, dtype=np.int8), np.zeros(n, dtype=bool)
    covered = np.zeros(len(ta.tasks), dtype=bool)
    for stream, queue_b in tb.queues.items():
        at: dict[int, list[int]] = defaultdict(list)
        for i in ta.queues[stream]:
            at[tags_a[i]].append(i)
        seen: dict[tuple[int, bool], int] = defaultdict(int)
        copies: set[int] = set()
        for i in queue_b:
            tag, kind, fwd = _b_to_a(tags_b[i], m_a, vpp)
            key = (tag, kind == COPY1)
            k = seen[key]
            seen[key] += 1
            if k >= len(at.get(tag, ())):
                return None
            counterpart[i], cls[i], forward[i] = at[tag][k], kind, fwd
            covered[at[tag][k]] = True
            if kind != PLAIN:
                copies.add(tag)
        if any(n_seen != len(at[tag]) for (tag, _), n_seen in seen.items()):
            return None  # a counterpart position with more tasks in A
        if any(seen[tag, True] != seen[tag, False] for tag in copies):
            return None  # a period's copies 0 and 1 of different sizes
    return (counterpart, cls, forward) if covered.all() else None


def _slopes(a: Timeline, b: Timeline, j: np.ndarray, cls: np.ndarray, member: np.ndarray,
            fixed: np.ndarray, origin: tuple[float, float], tol: float
            ) -> tuple[np.ndarray, np.ndarray] | None:
    """Per task of B in ``member`` (a phase), its ``sigma`` and ``tau`` from ``origin`` (A's,
    B's: the phase's start), proven as the module docstring says where no task slows another
    (the caller checks contention); None where the claim is not shown. Inputs outside the phase
    count as ended by its origin, not moving from it."""
    n = len(b.tasks)
    dur_a = np.fromiter((t.duration_s for t in a.tasks), float, len(a.tasks))
    dur_b = np.fromiter((t.duration_s for t in b.tasks), float, n)
    jm = np.where(member, j, 0)
    if not np.array_equal(dur_a[jm][member], dur_b[member]):
        return None
    sa, ea = np.asarray(a.start_s) - origin[0], np.asarray(a.end_s) - origin[0]
    sb, eb = np.asarray(b.start_s) - origin[1], np.asarray(b.end_s) - origin[1]
    d_start, d_end = sb - sa[jm], eb - ea[jm]
    if not np.all(np.abs(d_start - d_end)[member] <= tol):
        return None  # slowed otherwise than its counterpart
    sigma, tau = np.where(member, d_start, 0.0), np.zeros(n)
    copy0 = {int(j[i]): int(i) for i in np.flatnonzero(member & (cls == COPY0))}
    ones = np.flatnonzero(member & (cls == COPY1))
    if len(copy0) != len(ones):
        return None
    for i in ones:
        twin = copy0.get(int(j[i]))
        if twin is None or abs((eb[i] - eb[twin]) - (sb[i] - sb[twin])) > tol:
            return None
        sigma[i], tau[i] = sigma[twin], sb[i] - sb[twin]
        tau[twin] = tau[i]  # a copy 0's pace, which its copies after it keep
    tasks = b.tasks
    prev = np.full(n, -1, dtype=np.int64)
    for queue in b.queues.values():
        prev[queue[1:]] = queue[:-1]
    # a copy 1's plain inputs that its copy 0 waits on too: every copy's in G_k (a reduction
    # the whole run of a chunk's passes queues behind)
    shared = {int(i): set(tasks[copy0[int(j[i])]].deps) for i in ones}
    for x in np.flatnonzero(member):
        ins = tasks[x].deps + ([int(prev[x])] if prev[x] >= 0 else [])
        # along k, and along k and j together (a copy j >= 1; j is 0 for the others)
        own = (sigma[x], sigma[x] + (tau[x] if cls[x] == COPY1 else 0.0))
        binding = not ins and abs(own[0]) <= tol and abs(own[1]) <= tol
        for d in ins:
            if not member[d]:
                coef, ed = (0.0, 0.0), min(eb[d], 0.0)
            else:
                if cls[x] == COPY1:
                    if cls[d] == PLAIN and not fixed[d] and d not in shared.get(int(x), ()):
                        return None  # a plain input of a copy: which task in G_k unknown
                    coef = (sigma[d], sigma[d] + tau[d]) if cls[d] != PLAIN else \
                        (sigma[d], sigma[d])
                else:
                    if cls[d] == COPY0 and cls[x] == PLAIN:
                        return None  # a plain task after copy 0: which copy in G_k unknown
                    if cls[d] == COPY1 and cls[x] == COPY0:
                        return None
                    s = sigma[d] + (tau[d] if cls[d] == COPY1 else 0.0)  # copy 1: the last
                    coef = (s, s)
                ed = eb[d]
            if coef[0] > own[0] + tol or coef[1] > own[1] + tol:
                return None  # an input that would overtake it
            binding |= ed >= sb[x] - tol and coef[0] >= own[0] - tol and coef[1] >= own[1] - tol
        if not binding:
            return None
    return sigma, tau


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
    if any(t.slows != ta.tasks[i].slows for t, i in zip(tb.tasks, j.tolist())):
        return False  # a task slowing other than its counterpart does
    tol = rel_tol * tb.makespan_s
    fixed = np.asarray(tags_b) == BEFORE
    t0 = forward_phase_ends(ta, tb, j[forward], forward)
    if t0 is None:
        return False
    slope_t0 = t0[1] - t0[0]
    got_f = _slopes(ta, tb, j, cls, forward, fixed, (0.0, 0.0), tol)
    got_b = _slopes(ta, tb, j, cls, ~forward, fixed, (t0[0], t0[1]), tol)
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
    return _contention_holds(ta, tb, j, cls, sigma, tau, tol)


def _contention_holds(ta: Timeline, tb: Timeline, j: np.ndarray, cls: np.ndarray,
                      sigma: np.ndarray, tau: np.ndarray, tol: float) -> bool:
    """Whether every task that slows a stream slows, in every G_k, each task of that stream as
    it slows the task's representative in B (module docstring): pair by pair of *families* (a
    plain task, or a period's copies ``j = 0..k``, whose instance ``(k, j)`` runs at A's times
    plus ``k sigma + j tau``), either never overlapping in any G_k, or moving together so that
    each instance overlaps exactly what its representative does, at the same offsets."""
    start_a, end_a = np.asarray(ta.start_s)[j], np.asarray(ta.end_s)[j]  # each family's in A
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
