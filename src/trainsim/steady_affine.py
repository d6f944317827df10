"""A steady state approached geometrically, proven on three truncated runs: the affine orbit.

Where tasks slow each other inside every period (an overlapped send holding SMs of its stage's
compute stream), the loop can approach its periodic orbit only geometrically: DualPipe at pp 2
with overlapped sends (RESULTS.md, ss51) moves its two ranks' relative phase, a neutral mode of
the max-plus loop, by a factor ``1 - s`` a period (``s`` the send's SM share), so no two runs
of affordable length repeat within ``engine.periodic.REL_TOL`` and the proofs of
:mod:`trainsim.steady_state` fail for ~500-700 periods.

The argument. Between events the loop is affine in its times: a task starts at the latest end
of its inputs (which one is latest, fixed), a slowed task's end moves by its remaining work
over the rate its stream keeps (which slowers hold shares, fixed). So where the *event order*
(which input binds, which tasks overlap which) stays the same, one period of the loop maps the
times of the last ``D`` periods (its *state*, ``D`` how many periods back a task's inputs and
slowers reach) to the next period's by an affine map ``F``, and whatever follows the periods
(the cool-down, the optimizer: the *tail*) is an affine function of the state it starts from.
If the state's change from one period to the next is an eigenvector of ``F``'s linear part,
``s(c + 1) - s(c) = lambda (s(c) - s(c - 1))``, then every later change is ``lambda`` times
the one before, and with ``0 < lambda < 1`` the states lie on the segment from the observed one
to the limit ``s* = s(c) + (s(c + 1) - s(c)) / (1 - lambda)``. The set of states with one event
order is convex (its comparisons are affine inequalities), so where the observed times and the
limit's are ordered alike, every state on the segment is, and the claim holds for every run
length: each time is ``alpha + j P + gamma lambda^j`` in the run with ``j`` periods inserted,
and so is every sum a result is made of (busy time, exposed communication, bubble: functions of
the times that are affine while their order holds), ``y_j = y_0 + j h + D (1 - lambda^j)``.

Three runs A, B, C (``j`` = 0, 1, 2 periods inserted at the cut; a period being as many of the
schedule's steady steps as the caller inserts) are matched task by task (:func:`counterparts`)
and checked (:func:`affine_summary`), each a reason to refuse:

- *same graph*: matched tasks have the same duration and slow the same stream by the same share;
- *prefix*: before the window (below) B and C run as A, within the tolerance;
- *window*: the tasks from :data:`AFFINE_WINDOW` + 1 periods before A's cut on (the
  *window*: the periods that carry the state, the tail after them) are matched across the runs
  by their position from the end; every task past the window's first ``D`` periods waits only
  on tasks of the window (and is slowed only by them; a task placed before every pass that
  ended before it started never binds it), with at least one period left between those ``D``
  and the tail; those first ``D`` periods end before the tail's first task starts, in each run
  (they are the long run's own periods, no tail in them);
- *eigen*: over the window, ``Delta_2 = lambda Delta_1`` up to one common shift (``Delta_1``, B's
  times less A's, ``Delta_2``, C's less B's; the shift the period), every start and end, to
  ``engine.periodic.GROWTH_TOL`` of the makespan (the floor the contended proofs accept: a
  deviation of rounding size), ``0 < lambda <=`` :data:`MAX_RATIO`;
- *order*: the comparisons the loop makes among the window's tasks come out alike at A's times
  and at the limit's (each event at ``A + (Delta_1 - shift) / (1 - lambda)``): every task's
  start against its inputs' ends (which one binds it), and on each slowed stream the order of
  its tasks' and its slowers' starts and ends (which shares hold while each runs); events that
  are never compared (two streams that do not slow each other) may change order.

Then C with ``k - 2`` more periods is the iteration (``k`` = its periods beyond A), each sum
extrapolated from A's, B's and C's. A deviation in several modes, a ratio of 1 or more, or
an order that changes on the way is refused: the caller simulates in full.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import pairwise

import numpy as np

from trainsim.config import RunConfig
from trainsim.engine import Timeline, run
from trainsim.engine.periodic import GROWTH_TOL, REL_TOL
from trainsim.optimizer_tasks import AFTER, BEFORE
from trainsim.pricing import Pricer
from trainsim.simulator import LayerSource, build_graph
from trainsim.steady_orders import NAMED, _named_q, inserted_at, named_cut
from trainsim.summary import Summary, critical_stage, stage_sums, totals

MAX_RATIO = 1 - 1e-6
"""Largest per-period factor accepted: nearer 1 the limit ``1 / (1 - lambda)`` multiplies the
rounding of the measured deviation past what the checks bound."""


def counterparts(ta: Timeline, tb: Timeline, tags_a: list[int], tags_b: list[int],
                 cut_at: list[int], shift: int) -> tuple[list[int], list[bool]] | None:
    """Per task of B, its counterpart in A and whether it is from the cut on (the arguments of
    ``engine.periodic.period_s``), or None where B's tasks are not A's with one period
    inserted.

    On each stream, tasks are placed in schedule order, so their tags (positions) never
    decrease: B's tasks before the stage's cut are A's first ones, tag for tag, and B's from the
    cut on are A's from one period before the cut on, their tags one period (``shift``
    positions) apart (the optimizer's, AFTER, the same). Matched stream by stream, in order: the
    k-th task of a tag with the k-th of its counterpart tag."""
    counterpart, after = [-1] * len(tb.tasks), [False] * len(tb.tasks)
    if ta.queues.keys() != tb.queues.keys():
        return None
    for stream, queue_b in tb.queues.items():
        queue_a, c = ta.queues[stream], cut_at[stream[0]]
        seq_a, seq_b = [tags_a[i] for i in queue_a], [tags_b[i] for i in queue_b]
        if sorted(seq_a) != seq_a or sorted(seq_b) != seq_b:
            return None  # not placed in schedule order: no positional match
        early, start = bisect_left(seq_b, c), bisect_left(seq_a, c - shift)
        if (start > early or seq_a[:early] != seq_b[:early]
                or seq_a[start:] != [t if t == AFTER else t - shift for t in seq_b[early:]]):
            return None
        for i, j in zip(queue_b, queue_a[:early] + queue_a[start:]):
            counterpart[i] = j
        for i in queue_b[early:]:
            after[i] = True
    return counterpart, after


def _times(tl: Timeline) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(tl.start_s), np.asarray(tl.end_s)


def _same_graph(ta: Timeline, tb: Timeline, j: np.ndarray) -> bool:
    """Whether B's tasks have their counterparts' durations and slowing."""
    return all(t.duration_s == ta.tasks[i].duration_s and t.slows == ta.tasks[i].slows
               for t, i in zip(tb.tasks, j.tolist()))


def _inputs(tl: Timeline) -> list[list[int]]:
    """Per task, its dependencies and its stream's previous task."""
    ins = [list(t.deps) for t in tl.tasks]
    for queue in tl.queues.values():
        for prev, x in pairwise(queue):
            ins[x].append(prev)
    return ins


def _window_parts(ta: Timeline, tags: list[int], window: np.ndarray, cut: int, lo: int,
                  shift: int, tol: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The *window* check on A's structure (module docstring): ``window`` its tasks (from
    position ``lo`` on), ``cut`` where its tail begins, ``shift`` positions a period. Its state
    (the first ``D`` periods) and its tail, as masks over A's tasks; None where a task past the
    state reaches before the window or the state leaves no period before the tail."""
    start, end = _times(ta)
    tag = np.asarray(tags)
    periods = (cut - lo) // shift
    depth = 0
    ins = _inputs(ta)
    slowers: dict[tuple[int, str], list[int]] = {}
    for y, t in enumerate(ta.tasks):
        if t.slows is not None:
            slowers.setdefault(t.slows[0], []).append(y)
    for x in np.flatnonzero(window).tolist():
        # a task placed before every pass (FIXED in every run) that ended before ``x``
        # started never binds it, here or where ``x`` runs later
        reach = [d for d in ins[x] if not window[d]
                 and not (tag[d] == BEFORE and end[d] < start[x] - tol)]
        reach += [y for y in slowers.get(ta.tasks[x].stream, ())
                  if not window[y] and start[y] < end[x] - tol and end[y] > start[x] + tol]
        if reach:  # waits on (or is slowed by) a task before the window: part of the state
            if tag[x] == AFTER or tag[x] >= cut:
                return None  # the tail reaches past the window
            depth = max(depth, (int(tag[x]) - lo) // shift + 1)
    if not 0 < depth <= periods - 1:
        return None
    state = window & (tag != AFTER) & (tag != BEFORE) & (tag < lo + depth * shift)
    return state, window & ((tag == AFTER) | (tag >= cut))


def affine_summary(cfg: RunConfig, graphs: list, timelines: list[Timeline], cut: int,
                   lo: int, shift: int, k: int) -> tuple[Summary, float] | None:
    """The iteration's summary where A, B and C (``graphs`` and ``timelines``: ``j`` = 0, 1, 2
    periods inserted at A's ``cut``, every rank's schedule position; ``shift`` positions a
    period) prove an affine orbit (module docstring), the window being A's tasks from position
    ``lo`` on (whole periods up to the cut, then the tail; B's from ``lo + shift``, C's from
    ``lo + 2 shift``); ``k``: periods the iteration has beyond A; and the factor a period.
    None where a check fails."""
    ta, tb, tc = timelines
    ga, gb, gc = graphs
    pp = len(ga.ends)
    ab = counterparts(ta, tb, ga.tags, gb.tags, [lo + shift] * pp, shift)
    bc = counterparts(tb, tc, gb.tags, gc.tags, [lo + 2 * shift] * pp, shift)
    if ab is None or bc is None:
        return None
    j_ab, j_bc = np.asarray(ab[0]), np.asarray(bc[0])
    late_ab, late_bc = np.asarray(ab[1], dtype=bool), np.asarray(bc[1], dtype=bool)
    if not (_same_graph(ta, tb, j_ab) and _same_graph(tb, tc, j_bc)):
        return None
    makespan = tc.makespan_s
    tol, floor = REL_TOL * makespan, GROWTH_TOL * makespan
    (sa, ea), (sb, eb), (sc, ec) = _times(ta), _times(tb), _times(tc)
    for (s0, e0), (s1, e1), j, late in (((sa, ea), (sb, eb), j_ab, late_ab),
                                        ((sb, eb), (sc, ec), j_bc, late_bc)):
        if not (np.all(np.abs(s1[~late] - s0[j[~late]]) <= tol)
                and np.all(np.abs(e1[~late] - e0[j[~late]]) <= tol)):
            return None  # before the window, B and C run as A
    # the window's chains: C's task, its counterpart in B (from B's cut on), that one's in A
    c_w = np.flatnonzero(late_bc)
    b_w = j_bc[c_w]
    if not late_ab[b_w].all():
        return None
    a_w = j_ab[b_w]
    window = np.zeros(len(ta.tasks), dtype=bool)
    window[a_w] = True
    parts = _window_parts(ta, ga.tags, window, cut, lo, shift, tol)
    if parts is None:
        return None
    state, tail = parts[0][a_w], parts[1][a_w]  # over the chains
    for (s, e), w in (((sa, ea), a_w), ((sb, eb), b_w), ((sc, ec), c_w)):
        if not np.all(e[w[state]] <= s[w[tail]].min() + tol):
            return None  # the state's periods are not the long run's: the tail reaches them
    t0 = np.concatenate((sa[a_w], ea[a_w]))
    t1 = np.concatenate((sb[b_w], eb[b_w]))
    t2 = np.concatenate((sc[c_w], ec[c_w]))
    d1, d2 = t1 - t0, t2 - t1
    lo_i, hi_i = int(np.argmin(d1)), int(np.argmax(d1))
    spread = d1[hi_i] - d1[lo_i]
    if not spread > tol:
        return None  # no deviation: a period the other proofs prove
    ratio = (d2[hi_i] - d2[lo_i]) / spread
    if not 0 < ratio <= MAX_RATIO:
        return None
    if not np.all(np.abs(d2 - d2[lo_i] - ratio * (d1 - d1[lo_i])) <= floor):
        return None  # not one mode scaled by one factor
    limit = t0 + (d1 - d1[lo_i]) / (1 - ratio)  # each event on the limit orbit (a common shift)
    if not _same_order(ta, a_w, window, t0, limit, floor / (1 - ratio)):
        return None  # the event order changes on the way to the limit
    return _summary(cfg, graphs, timelines, ratio, k), float(ratio)


def _same_order(ta: Timeline, a_w: np.ndarray, window: np.ndarray, t0: np.ndarray,
                limit: np.ndarray, tol: float) -> bool:
    """The *order* check: the comparisons the loop makes among the window's tasks come out
    alike at A's times ``t0`` and at the limit ``limit`` (both: the starts of ``a_w``, then
    their ends). Those are: each task's start against each input's end (which input binds
    it), and on a slowed stream the order of its tasks' starts and ends and its slowers'
    (which shares hold while each runs). Events that are never compared (two streams'
    that do not slow each other) may change order."""
    n = len(a_w)
    at = np.full(len(ta.tasks), -1, dtype=np.int64)
    at[a_w] = np.arange(n)
    ins = _inputs(ta)
    for times in (t0, limit):
        start, end = times[:n], times[n:]
        for x in a_w.tolist():
            s_x = start[at[x]]
            if any(end[at[d]] > s_x + tol for d in ins[x] if window[d]):
                return False  # an input ends after it started: another one binds
    slowed: dict[tuple[int, str], list[int]] = {}
    for x in a_w.tolist():
        sl = ta.tasks[x].slows
        if sl is not None:
            slowed.setdefault(sl[0], []).append(x)
    for stream, ys in slowed.items():
        xs = [x for x in ta.queues.get(stream, ()) if window[x]]
        events = np.asarray([at[x] for x in xs + ys], dtype=np.int64)
        both = np.concatenate((events, events + n))  # starts, then ends
        order = np.lexsort((limit[both], t0[both]))
        if not np.all(np.diff(limit[both][order]) >= -tol):
            return False
    return True


def _summary(cfg: RunConfig, graphs: list, timelines: list[Timeline], ratio: float, k: int
             ) -> Summary:
    """The summary of A with ``k`` periods inserted, each sum ``y_0 + k h + D (1 - r^k)``
    fitted to A's, B's and C's (``r`` the ratio)."""
    gap = 1 - ratio
    decay = 1 - ratio ** k

    def more(y0: float, y1: float, y2: float) -> float:
        d = -(y2 - 2 * y1 + y0) / (gap * gap)
        h = (y1 - y0) - d * gap
        return y0 + k * h + d * decay

    tots = [totals(cfg, tl, g.ends) for g, tl in zip(graphs, timelines)]
    (end0, origin0, busy0), (end1, origin1, busy1), (end2, origin2, busy2) = tots
    end = [more(*v) for v in zip(end0, end1, end2)]
    busy = [more(*v) for v in zip(busy0, busy1, busy2)]
    origin = [more(*v) for v in zip(origin0, origin1, origin2)]
    stage = critical_stage(busy, end)
    sums = [stage_sums(tl, g.ends, tot[1], [stage])[stage]
            for g, tl, tot in zip(graphs, timelines, tots)]
    keys = dict.fromkeys(key for s in sums for key in s)
    return Summary(end, origin, busy,
                   {stage: {key: more(*(s.get(key, 0.0) for s in sums)) for key in keys}})


AFFINE_STEPS = 2
"""The affine orbit's period, in the schedule's periods: a deviation may alternate in sign from
one to the next (DualPipe's two directions swap roles each period), so two of them, over which
it keeps its sign."""
AFFINE_WINDOW = 1
"""Periods of the affine orbit's window before its tail beyond the one it is matched from
(``steady_affine``: the state's periods and at least one they map to)."""
AFFINE_SEARCH = 8
"""Run lengths tried (one period apart) for the first whose orders hold the window."""


def affine_plan(cfg: RunConfig, m_from: int) -> tuple[int, int, int, int, int] | None:
    """The affine orbit's runs for a :data:`NAMED` schedule (:mod:`trainsim.steady_affine`):
    ``(m_a, Q, cut, lo, shift)``, runs of ``m_a``, ``m_a + Q`` and ``m_a + 2 Q`` micro-batches
    (``Q``: :data:`AFFINE_STEPS` periods; ``m_a`` from ``m_from`` on, the least whose orders
    hold the window and from which the iteration is whole periods), A's cut, its window's
    first position and the positions a period; None where there are none, or where they would
    cost as much as the full simulation."""
    p = cfg.parallel
    name, pp, vpp, m = p.pipeline_schedule, p.pp, p.vpp, cfg.num_microbatches
    if name not in NAMED:
        return None
    q = _named_q(name, pp)
    big = AFFINE_STEPS * q
    for m_a in range(m_from, min(m_from + AFFINE_SEARCH * q, m), q):
        if 3 * (m_a + big) > m:
            return None  # three runs as long as the iteration
        found = named_cut(name, pp, vpp, m_a, big) if not (m - m_a) % big else None
        if found is None:
            continue
        cut, shift = found
        lo = cut - (AFFINE_WINDOW + 1) * shift
        if lo >= 0 and inserted_at(name, pp, vpp, m_a, big, lo + shift) and inserted_at(
                name, pp, vpp, m_a + big, big, lo + 2 * shift):
            return m_a, big, cut, lo, shift
    return None


def run_affine(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None,
               runs: tuple[int, int, int, int, int]) -> tuple[Summary, float] | None:
    """The summary proven as an affine orbit on :func:`affine_plan`'s ``runs`` and the factor
    a period, or None."""
    m_a, big, cut, lo, shift = runs
    graphs = [build_graph(cfg, pricer, layer_source, m_a + i * big) for i in range(3)]
    timelines = [run(g.tasks) for g in graphs]
    return affine_summary(cfg, graphs, timelines, cut, lo, shift,
                          (cfg.num_microbatches - m_a) // big)


__all__ = ["AFFINE_STEPS", "AFFINE_WINDOW", "MAX_RATIO", "affine_plan", "affine_summary",
           "counterparts", "run_affine"]
