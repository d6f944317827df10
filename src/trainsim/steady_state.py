"""The periodic steady state of Megatron's 1F1B and interleaved schedules, extrapolated.

Once warm-up ends, every stage of a 1F1B pipeline repeats the same forward/backward pair, and
an interleaved one the same group of ``pp`` micro-batches through its chunks. A long run is a
short one with more of those periods in the middle. So instead of the configured ``m``
micro-batches, two truncated iterations are simulated with the same event loop and the same
task graph builder: A with ``m_a`` micro-batches (warm-up, a few steady periods, cool-down,
the gradient reduction and the optimizer step) and B with one period more. Every task of B is
matched with its counterpart in A by its stage's schedule position (before the cut: the same
pass; from the cut on: the pass one period earlier) and :func:`engine.periodic.period_s`
checks that B is A with one period inserted: same times before the cut, every stream exactly
one period ``P`` later from it. Then the real iteration is B with ``k = (m - m_b) / q`` more
periods: every end time moves by ``k * P`` and every sum the result is made of (work per
stage, breakdown parts) grows by ``k`` times B's less A's. No closed form: the numbers are the
event loop's, and agree with the full simulation to ~1e-12 (``tests/test_steady_state.py``
checks 1e-9 on random configurations).

Where no task slows a stream while that stream runs the period (no overlapped sends, no
ZeRO-3 reductions per pass), A alone is enough (:func:`_one_run`): the loop's times are a
max-plus recurrence up to the cut, and :func:`engine.periodic.period_in_run_s` compares the
ends the rest waits on at A's cut and one period earlier (PP64 vpp 2: 49k tasks, not 114k).
Where tasks slow each other in every period, one run (B) is enough where the loop's whole
state one period before the cut repeats at it (:func:`engine.periodic.period_of_state_s`);
A is simulated only where B does not prove it. The shortcut is tried down to iterations of
twice B's micro-batches. Where the output layer's weight gradient is deferred for the first
micro-batches but not all (``wgrad_deferral_limit``, :mod:`trainsim.deferred_wgrad`), A's
period starts after the last stage's last deferred backward (:func:`_past_deferred`): A, B and
the iteration defer the same ones and drain the same count, and the periods are the same.

The zero-bubble schedules ZB-H1, ZB-H2, ZB-V and interleaved ZB, DualPipeV and DualPipe
(:data:`NAMED`) repeat too: in their steady phase each rank runs one micro-batch's passes (F, I,
W; DualPipeV's overlapped pairs; interleaved, a group of ``pp``; DualPipe, one of each
direction) per period. Their cut is found on the orders themselves (:func:`named_cut`: the
latest position, the same on every rank, where a run of one period more is the shorter one
with that period inserted), and the same proofs decide. Their transients last longer (ZB-H1's
delayed W passes absorb a slower last stage's pace for several periods before its back
pressure reaches stage 0), so more of them take the longer attempts.

ZB-2p's order is a search on the priced pass times (``workload.zb_search``) in whole
microseconds, as its code base runs it: once its state repeats after one round or several,
every longer search is a shorter one with periods of that many rounds inserted
(``zb_settle.settle``), so the cut is found on A's and B's orders; a search that settles later
than the first A tries the least A it allows (read from the priced passes, no graph built:
``ScheduledPipeline.settled_from``), then longer ones, each leaving the iteration whole periods
(:func:`_zb2p_tries`); where the priced passes replayed on the orders show the timeline's own
transient outlasting the search's, from the first length past it
(:func:`trainsim.steady_zb2p.past_transient`); an attempt whose B shows its timeline still in
the transient at the cut (its periods there not one shift apart,
``steady_decay.spaced_evenly``) stops before A is run. GPipe runs two phases
whose stages keep paces of their own (:mod:`trainsim.steady_gpipe`); torch's looped BFS too,
with a period in each chunk's run of passes (:mod:`trainsim.steady_bfs`). Where no period repeats
within the truncated runs, longer runs are tried, and else :func:`steady_summary` returns None
and the caller simulates every micro-batch. Small iterations are simulated in full.

Where two failed attempts in a row have contention in their runs and show a deviation of one
mode, scaled by one factor a period (``steady_decay.one_mode``: DualPipe at pp 2 with
overlapped sends, whose ranks' phase settles by ``1 - s`` a period), a :data:`NAMED`
schedule's iteration is proven as an *affine orbit* on three runs where they are affordable
(:mod:`trainsim.steady_affine`: every sum ``y_0 + k h + D (1 - r^k)``), and the ladder of
longer runs ends where that deviation shrinks too slowly for them (``steady_decay.too_slow``).
"""

from __future__ import annotations

import logging
import math
from operator import attrgetter

from trainsim.catalog.framework_rules import deferred_microbatches
from trainsim.combined_1f1b import pairs_passes
from trainsim.config import RunConfig
from trainsim.engine import run
from trainsim.engine.periodic import period_s
from trainsim.limits import limit, pass_tasks, simulation_tasks
from trainsim.pricing import Pricer
from trainsim.simulator import LayerSource, _TaskGraph, build_graph
from trainsim.steady_affine import affine_plan, run_affine
from trainsim.steady_affine import counterparts as _counterparts
from trainsim.steady_bfs import bfs_proven
from trainsim.steady_bfs import least_length as bfs_least
from trainsim.steady_decay import one_mode, spaced_evenly, too_slow
from trainsim.steady_gpipe import gpipe_proven, two_run_summary
from trainsim.steady_ladder import Plan, _ladder, _runs_cost  # noqa: F401 - _runs_cost: tests
from trainsim.steady_one_run import _grid_one_run, _one_run, _one_run_summary  # noqa: F401
from trainsim.steady_orders import (  # noqa: F401 - named_plan, inserted_at: the module's API
    MAX_NAMED_WARMUP,
    NAMED,
    _bump,
    _chunks,
    _end_passes,
    _label_step,
    _named_q,
    _passes,
    _per_direction,
    inserted_at,
    insertion_cut,
    insertion_ranges,
    named_cut,
    named_plan,
)
from trainsim.steady_zb2p import past_transient, rank_cuts, searched_orders, settled_alone
from trainsim.summary import Summary
from trainsim.twin_graphs import kept_attempt
from trainsim.workload.schedule import microbatch_group, schedule, torch_warmup

log = logging.getLogger(__name__)

MIN_TASKS = 2_000
"""Iterations with fewer pipeline pass tasks (``limits.pass_tasks``) than this are simulated in
full (a few ms): the shortcut is for the long ones, and small runs keep the full loop's last
bits."""
MEGATRON = (None, "1f1b", "interleaved_1f1b")
_slows = attrgetter("slows")


def _warmup(order: list, paired: bool = False) -> int:
    """Forward passes of a 1F1B-style order before its first steady pair: a (forward,
    backward) pair, or under Megatron-core's combined 1F1B (``paired``) a (backward, forward)
    pair, every forward before the first backward running alone (``combined_1f1b``)."""
    first_b = next(i for i, ps in enumerate(order) if ps.kind != "F")
    return first_b if paired else first_b - 1


def plan(cfg: RunConfig) -> tuple[Plan | None, str]:
    """The first pair of truncated runs to try for ``cfg``, or None and why the shortcut does
    not apply (then every micro-batch is simulated)."""
    p = cfg.parallel
    if p.pipeline_schedule not in MEGATRON + NAMED + ("gpipe", "zb_2p", "looped_bfs"):
        return None, f"pipeline schedule {p.pipeline_schedule} has no periodic shortcut"
    m, pp, vpp = cfg.num_microbatches, p.pp, p.vpp
    passes = pass_tasks(cfg)  # a split backward (ZeRO-3 / FSDP) counts its tasks
    if passes < MIN_TASKS:
        return None, f"short iteration ({passes:,.0f} pass tasks < {MIN_TASKS:,})"
    if p.pipeline_schedule in ("gpipe", "zb_2p", "looped_bfs"):
        # GPipe: 3, its backward period apart from the first backward and the last, then the
        # ladder from 2 pp (settle60: 2 pp alone before; every stage keeps its own pace, so
        # its periods need no full pipeline: 191 of tests/test_steady_gpipe.py's 200 configs
        # proven at 3, ``_ladder``);
        # looped BFS: each chunk's runs too (steady_bfs); zb_2p: its search settles from
        # ~5.5 pp micro-batches on (``zb_settle.settle``; _extrapolate checks it)
        m_a = {"gpipe": 3, "looped_bfs": bfs_least(pp, vpp)}.get(p.pipeline_schedule, 8 * pp)
        if 2 * (m_a + 1) > m:
            return None, (f"{m:,} micro-batches: the truncated runs ({m_a:,} and {m_a + 1:,}) "
                          "would cost half the full simulation or more")
        return Plan(m_a, 1, 0, 1), ""
    if p.pipeline_schedule in NAMED:
        q = _named_q(p.pipeline_schedule, pp)
        if m % q:
            return None, f"{m} micro-batches in groups of {q}: a short last group, no period"
        found = named_plan(p.pipeline_schedule, pp, vpp, q)
        if found is None:
            return None, f"pipeline schedule {p.pipeline_schedule}: no period in its orders"
        m_a, cut, shift = found
        if 2 * (m_a + q) > m:
            return None, (f"{m:,} micro-batches: the truncated runs ({m_a:,} and {m_a + q:,}) "
                          "would cost half the full simulation or more")
        return Plan(m_a, q, cut, shift), ""
    # micro-batches per period: interleaving's group (pp unless set), whose last group must
    # be whole for the truncated runs to end as the iteration does
    q = (microbatch_group(cfg) or pp) if vpp > 1 else 1
    if m % q:
        return None, f"{m} micro-batches in groups of {q}: a short last group, no period"
    unit = q * vpp  # steady (F, B) pairs per stage per period
    warm0 = 2 * (pp - 1) + (vpp - 1) * q if vpp > 1 else pp - 1  # stage 0's, the longest
    # A's shortest length: warm-up, one period, a pair more; longer ones give the transient
    # after warm-up more time. The cut is at stage 0's last steady pair that has a full
    # period before it (the other stages, warming up less, have more steady pairs after it).
    # Under the combined 1F1B the steady pairs start one forward later (a backward and the
    # forward after it), so the last pair ends before the cool-down's backwards run alone.
    warm0 += pairs_passes(cfg)
    # With no warm-up (one stage, unpaired) that last pair's backward is the last
    # micro-batch's, which the graph builder gives the gradient reduction: one pair more
    # after the cut keeps the period plain pairs (else no proof ever matches, edge48).
    after = 0 if warm0 else 1
    m_a = q * math.ceil((warm0 + unit + 1 + after) / unit)
    cut, why = m_a * vpp - warm0 - after, ""
    deferred = deferred_microbatches(cfg, m)
    if 0 < deferred < m:  # wgrad_deferral_limit: periodic from the first backward that does not
        m_a, cut = _past_deferred(cfg, m_a, cut, unit, deferred)
        why = f", past the {deferred:,} that defer the output layer's weight gradient"
    if 2 * (m_a + q) > m:  # B alone (which proves most periods) would cost half or more
        return None, (f"{m:,} micro-batches: the truncated runs ({m_a:,} and {m_a + q:,}{why}) "
                      "would cost half the full simulation or more")
    return Plan(m_a, q, cut, unit), ""


def _past_deferred(cfg: RunConfig, m_a: int, cut: int, unit: int, deferred: int
                   ) -> tuple[int, int]:
    """The least run A from ``m_a`` micro-batches on (whole periods more) whose period, the
    last stage's ``unit`` pairs before its cut, comes after every backward of the first
    ``deferred`` micro-batches through the last virtual stage (their output-layer weight
    gradient left to the drain, ``deferred_wgrad``), and its cut. A, B and the iteration then
    defer the same micro-batches and drain the same count (the prefix), and every period
    inserted is of backwards that do not defer: the iteration is B with periods inserted, as
    without the deferral. ``cut``: ``m_a``'s, in stage 0's steady pairs (:func:`plan`)."""
    p = cfg.parallel
    pp, vpp, q = p.pp, p.vpp, unit // p.vpp
    while True:
        order = schedule(pp - 1, pp, vpp, m_a, torch_warmup=torch_warmup(cfg),
                         group=microbatch_group(cfg))
        last = max(i for i, (kind, mb, chunk) in enumerate(order)
                   if kind == "B" and chunk == vpp - 1 and mb < deferred)
        start = _warmup(order, pairs_passes(cfg)) + 2 * (cut - unit)  # the period's first
        if start > last:
            return m_a, cut
        more = -(-(last + 1 - start) // (2 * unit))  # periods of 2 unit positions each
        m_a, cut = m_a + more * q, cut + more * unit


def attempts(cfg: RunConfig) -> list[Plan]:
    """The truncated lengths the shortcut tries for ``cfg``, in order (none where it does not
    apply): the shortest first, then 1, 3, 7, ... periods longer (a transient that outlasts the
    short runs, e.g. stages of unequal work filling a pipeline, settles in a longer one), each
    B (which alone proves most periods) costing at most half the full simulation and all the
    runs together at most twice it (counted in micro-batches simulated; A is run only where B
    alone does not prove the period, and an attempt whose A is the last one's B reuses it:
    counted once, settle58 Lead 1)."""
    return list(_planned(cfg)[2])


_PLANNED: list = []
"""The last config :func:`_planned` answered for, with ``MIN_TASKS`` then and its answer."""


def _planned(cfg: RunConfig) -> tuple[Plan | None, str, list[Plan]]:
    """``plan(cfg)`` and ``attempts(cfg)``, worked out once for the last config object asked
    (and ``MIN_TASKS``, the one module setting they read): a simulation asks three times (its
    task-limit check, :func:`attempt`'s plan and ladder), a search's 564 simulations 1,274
    plans and 710 ladders. Both read only the config's fields (frozen) and the module
    constants, so the kept answer is the one they give again; the entry holds the config, so
    its identity is not reused while kept."""
    hit = _PLANNED[0] if _PLANNED else None
    if hit is not None and hit[0] is cfg and hit[1] == MIN_TASKS:
        return hit[2]
    first, reason = plan(cfg)
    out = (first, reason, _ladder(cfg, first))
    _PLANNED[:] = [(cfg, MIN_TASKS, out)]
    return out


def _tasks(cfg: RunConfig, attempt: Plan) -> float:
    return simulation_tasks(cfg, attempt.m_a) + simulation_tasks(cfg, attempt.m_a + attempt.q)


def simulated_tasks(cfg: RunConfig) -> float:
    """Engine tasks the shortcut simulates for ``cfg`` when its first attempt proves the
    period (later attempts stop at the task limit), or the full iteration's where it does not
    apply (``limits.simulation_tasks``). Both runs are counted: whether A alone proves it is
    known only once A has run."""
    tries = attempts(cfg)
    return _tasks(cfg, tries[0]) if tries else simulation_tasks(cfg)


def steady_summary(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None = None
                   ) -> Summary | None:
    """The iteration's :class:`~trainsim.summary.Summary` from one or two truncated runs, or None
    when the shortcut does not apply or the period is not proven (simulate in full)."""
    return attempt(cfg, pricer, layer_source)[0]


def attempt(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None = None
            ) -> tuple[Summary | None, str]:
    """:func:`steady_summary`, and what was done or why not (``Result.simulation``); a twin's
    answer where one was worked out (``twin_graphs.kept_attempt``)."""
    first, reason, tries = _planned(cfg)
    if first is None:
        return None, reason
    cap = limit("TRAINSIM_MAX_TASKS")
    extra = (tuple(tries), tuple(_tasks(cfg, t) for t in tries), cap, pairs_passes(cfg),
             cfg.num_microbatches)
    return kept_attempt(cfg, pricer, layer_source, extra,
                        lambda c, p, s: _attempt(c, p, s, tries, cap))


def _attempt(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None,
             tries: list[Plan], cap: float) -> tuple[Summary | None, str]:
    """:func:`attempt` where the shortcut applies: the truncated runs ``tries``, in order;
    zb_2p's from where its order search settles, read from the priced passes (the shorter
    ones' orders are not the iteration's with periods taken out, ``_zb2p_tries``)."""
    spent, longest, settles, m = 0.0, 0, 0, cfg.num_microbatches
    runs: dict[int, tuple] = {}  # a failed attempt's B, which is the next attempt's A
    tries, chain = list(tries), None  # chain: the last failed contended attempt's
    # (B's micro-batches, A's timeline, B's counterparts in A)
    settling = None
    if cfg.parallel.pipeline_schedule == "zb_2p":  # from where its order search settles
        settling = _settled_from(cfg, pricer, layer_source)
        settles, tries = _zb2p_tries(cfg, tries, *settling)
        if tries:  # from the first length past the timeline's transient, replayed, then
            # 1, 3, 7, ... periods on (the engine's can outlast the replay's by a period or two:
            # it has the gradient reduction and contention, settle58's #37 and #113)
            m_a = past_transient(cfg, pricer, layer_source, tries[0].m_a, None, tries[0].q)
            if m_a is not None:
                tries = _ladder(cfg, Plan(m_a, tries[0].q, 0, 1))
            else:  # the replay's transient past every rung: B alone past it, not the rungs
                tries = _late_alone(cfg, pricer, layer_source, tries) or tries
        elif 0 < settles < m:  # settled past what A and B afford: B alone from there
            alone = settled_alone(cfg, pricer, layer_source, settles, settling[1])
            tries = [alone] if alone is not None else []
    while tries:
        current = tries.pop(0)
        spent += _tasks(cfg, current) if not current.alone else simulation_tasks(
            cfg, current.m_a + current.q)
        if spent > cap:
            break  # the full simulation's own check says so
        summary, how, mb = _extrapolate(cfg, pricer, layer_source, current.m_a, current.q,
                                        current.cut, current.unit, runs, settling,
                                        current.alone)
        kept = runs.get(current.m_a + current.q)
        if summary is None and how == "" and kept is not None and kept[2] is not None:
            # B with contention in it, not A with a period inserted: after two in a row, a
            # deviation of one mode (steady_decay) is proven as an affine orbit where that is
            # affordable, else the ladder ends where it shrinks too slowly for its runs left
            mode = chain and chain[0] == current.m_a and one_mode(
                (chain[1], kept[2][0], kept[1]), (chain[2], kept[2][1]))
            if mode:
                summary, reason = _one_mode(cfg, pricer, layer_source, current, tries,
                                            cap - spent, mode, kept[1].makespan_s)
                if summary is not None or reason:
                    return summary, reason
            chain = (current.m_a + current.q, kept[2][0], kept[2][1])
        else:
            chain = None
        if summary is not None:
            runs_s = {"one": f"a truncated run of {mb:,}",
                      "state": f"the loop's state repeating in a truncated run of {mb:,}"}.get(
                how, f"truncated runs of {current.m_a:,} and {mb:,}")
            return summary, f"period proven on {runs_s} micro-batches, the rest extrapolated"
        longest = current.m_a + current.q
    log.debug("steady state not proven for %s; simulating every micro-batch", cfg.model.name)
    if settles >= longest and settles:  # zb_2p: no attempt long enough was affordable
        if settles >= m:
            return None, "zb_2p's order search does not settle into a period within the iteration"
        return None, (f"zb_2p's order search settles from {settles:,} micro-batches on: the "
                      "truncated runs would cost half the full simulation or more")
    if not longest:
        return None, "the truncated runs are over the task limit"
    return None, (f"period not proven on truncated runs of up to {longest:,} micro-batches (a "
                  "transient or contention that does not repeat)")


def _zb2p_tries(cfg: RunConfig, tries: list[Plan], settles: int | None, rounds: int
                ) -> tuple[int, list[Plan]]:
    """zb_2p's truncated runs, none shorter than where its order search settles (``settles``
    micro-batches, a period of ``rounds``: ``zb_search.Settled``; a shorter run's order is not
    the iteration's with periods taken out): with a period of one round, that least length
    first where it is past the first of ``tries`` (most prove there), then the longer ones left
    (the timeline's own transient can outlast the search's); with a period of several, the
    least length past both that leaves the iteration whole periods, then 1, 3, 7, ... periods
    more (:func:`_ladder`). And where it settles where that moved the runs (the iteration's
    length where it does not settle; 0 where the runs are ``tries``)."""
    m = cfg.num_microbatches
    if not settles or settles >= m:
        return m, []
    if rounds == 1:
        if not tries or settles <= tries[0].m_a:
            return 0, tries
        return settles, [Plan(settles, 1, 0, 1)] * (2 * (settles + 1) <= m) + [
            t for t in tries if t.m_a > settles]
    m_a = max(settles, 8 * cfg.parallel.pp)
    m_a += (m - m_a) % rounds
    return settles, _ladder(cfg, Plan(m_a, rounds, 0, 1))


def _late_alone(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None,
                tries: list[Plan]) -> list[Plan]:
    """zb_2p's attempt of B alone past a transient that the replay (:func:`past_transient`,
    up to one period short of the iteration) ends past half the iteration, in place of
    ``tries`` (the ladder's rungs, every B of which ends inside that transient): A against B
    would cost more than the full simulation, B alone less, and its one-run proofs decide
    (settle59: #45, #61 and #165 of tests/test_steady_zb2p.py's 200, transients ending at 251
    of 465, 99 of 175, 217 of 405 micro-batches). settle59 ran the rungs first (each failing,
    still in the transient: settle59 Lead 5); now B alone is the one run. None where the
    replay does not settle by then."""
    m, q = cfg.num_microbatches, tries[0].q
    late = past_transient(cfg, pricer, layer_source, tries[0].m_a, m - 2 * q, q)
    if late is None or 2 * (late + q) <= m:
        return []
    return [Plan(late, q, 0, 1, alone=True)]


def _one_mode(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None,
              current: Plan, tries: list[Plan], budget: float, mode: tuple[float, float],
              makespan_s: float) -> tuple[Summary | None, str]:
    """After two failed attempts whose runs show a deviation of one mode (``mode``: its factor
    a period and its spread, ``steady_decay.one_mode``): the summary proven as an affine orbit
    (:func:`affine_plan`, within ``budget`` tasks) and how; or None and why the ladder ends
    (the deviation shrinking too slowly for its longer runs); or (None, "") to go on."""
    found = affine_plan(cfg, current.m_a)
    if found is not None and sum(simulation_tasks(cfg, found[0] + i * found[1])
                                 for i in range(3)) <= budget:
        proven = run_affine(cfg, pricer, layer_source, found)
        if proven is not None:
            lengths = ", ".join(f"{found[0] + i * found[1]:,}" for i in range(2))
            return proven[0], (f"an affine orbit (a deviation shrinking by a factor of "
                               f"{proven[1]:.6g} every "
                               f"{found[1]:,} micro-batches) proven on truncated runs of "
                               f"{lengths} and {found[0] + 2 * found[1]:,} micro-batches, "
                               "the rest extrapolated")
    longest = max((t.m_a for t in tries), default=0)
    m_b = current.m_a + current.q
    if longest and too_slow(mode[0], mode[1], makespan_s * (longest + current.q) / m_b,
                            (longest - current.m_a) // current.q):
        return None, (f"period not proven on truncated runs of up to {m_b:,} micro-batches: "
                      "their deviation is one mode that contention shrinks by a factor of "
                      f"{abs(mode[0]):.6g} a period, too slowly for the longer runs (up to "
                      f"{longest + current.q:,})")
    return None, ""


def _settled_from(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None
                  ) -> tuple[int | None, int]:
    """Where zb_2p's order search for ``cfg`` settles and the micro-batches of its period
    (``Searched.settled_from``, ``settled_rounds``), read from the priced passes before any
    graph is built (the graph of a run too short for it would be built for nothing)."""
    from trainsim.pipeline import ScheduledPipeline
    return ScheduledPipeline(_TaskGraph(cfg, pricer, layer_source, 1)).settled_from()


def _extrapolate(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None, m_a: int,
                 q: int, cut: int, unit: int, runs: dict[int, tuple] | None = None,
                 settling: tuple[int | None, int] | None = None, alone: bool = False
                 ) -> tuple[Summary | None, str, int]:
    """The summary, how the period was proven ("one": one run where nothing slows the period,
    the grid's A or B, :func:`_one_run`; "state": B alone, its loop state repeating; "two": A
    against B; "" where it was not; "settles": zb_2p's order search settles later than A, from
    the count returned, A's graph alone built) and the micro-batches of the longest run it took.
    ``runs``: graphs and timelines by micro-batch count, from an earlier
    attempt (the same cfg and pricer build the same graph and the loop gives the same
    timeline, so a run of that length is not done again); this attempt's B is left there
    for the next one. ``alone``: B's one-run proofs alone (zb_2p), A never run."""
    p = cfg.parallel
    pp, vpp, m = p.pp, p.vpp, cfg.num_microbatches
    runs = {} if runs is None else runs
    # the cut in each stage's schedule positions: after its warm-up, ``cut`` pairs in
    group, name = microbatch_group(cfg), p.pipeline_schedule
    earlier = runs.pop(m_a, None)
    if name in ("gpipe", "looped_bfs"):  # two phases, paces per stream (steady_gpipe, _bfs)
        gb = build_graph(cfg, pricer, layer_source, m_a + 1)
        tb = run(gb.tasks)
        ga, ta = earlier[:2] if earlier else (build_graph(cfg, pricer, layer_source, m_a), None)
        ta = ta or run(ga.tasks)
        if not (gpipe_proven(ta, tb, ga.tags, gb.tags, m_a) if name == "gpipe" else
                bfs_proven(ta, tb, ga.tags, gb.tags, m_a, vpp)):
            runs.clear()
            runs[m_a + 1] = (gb, tb, None)
            return None, "", 0
        return two_run_summary(cfg, ga, ta, gb, tb, m - m_a - 1), "two", m_a + 1
    built: dict[int, object] = {}  # zb_2p's B graph (and A's kept), built first for orders
    searched: dict[int, list] = {}  # zb_2p's orders by micro-batches
    if name == "zb_2p":  # its orders searched on the priced passes: the graphs hold them
        settled, rounds = settling or ((earlier[0].settled_from, earlier[0].settled_rounds)
                                       if earlier else _settled_from(cfg, pricer, layer_source))
        if not (0 < (settled or m) <= m_a and q == rounds and (m - m_a) % q == 0):
            # A's order is not the iteration's with periods taken out: go on from a long
            # enough A (``_zb2p_tries``), which leaves the iteration whole periods
            return None, "settles", settled or m
        if earlier:
            built[m_a] = earlier[0]
        # A's orders without its graph, which B's one-run proofs mostly leave unbuilt
        searched[m_a] = earlier[0].orders if earlier else searched_orders(
            cfg, pricer, layer_source, m_a)
        built[m_a + q] = build_graph(cfg, pricer, layer_source, m_a + q)
        searched[m_a + q] = built[m_a + q].orders
        found = insertion_cut(searched[m_a], searched[m_a + q], q,
                              [_end_passes(m_a, 1, name)] * pp)
    elif name in NAMED:
        found = named_cut(name, pp, vpp, m_a, q)
    if name in NAMED or built:  # one position on every rank, the period's steps
        if found is None:
            return None, "", 0

        def orders_of(m_x: int) -> list:
            if built:
                return searched[m_x]
            return [schedule(s, pp, vpp, m_x, name) for s in range(pp)]

        orders, (cut0, shift) = orders_of(m_a), found
        warm, cut_at = [0] * pp, [cut0] * pp
    else:
        def orders_of(m_x: int) -> list:
            return [schedule(s, pp, vpp, m_x, torch_warmup=torch_warmup(cfg), group=group)
                    for s in range(pp)]

        orders, paired, shift = orders_of(m_a), pairs_passes(cfg), 2 * unit
        warm = [_warmup(order, paired) for order in orders]
        cut_at = [w + 2 * cut for w in warm]
        if earlier is None:  # nothing contends: run A on the grid, no task graph
            one = _grid_one_run(cfg, pricer, layer_source, m_a, warm, cut_at[0], shift, q)
            if one is not None:
                return one, "one", m_a
    # Where tasks slow each other, B first: B alone proves the period where the loop's state
    # one period before B's cut repeats at it (A's period is right after the warm-up, with
    # nothing a period earlier to compare; B has one period more), or where nothing slows its
    # period (max-plus; on the public file it proves 17 the state proof refuses, the state 122,
    # 105 of them the max-plus one cannot); else A against B. Where
    # nothing slows anything, A alone (max-plus), as the grid does, else A against B.
    gb = built.get(m_a + q) or build_graph(cfg, pricer, layer_source, m_a + q)
    tb = None
    if alone or any(map(_slows, gb.tasks)):
        tb = run(gb.tasks)
        orders_b = orders_of(m_a + q)
        cut_b = cut_at[0] + shift
        warm_b = [0] * pp if name in NAMED or built else [_warmup(o, paired) for o in orders_b]
        cuts_b = [cut_b]
        if built:  # zb_2p: each rank's cut, its neighbours' passes periods apart in its order
            ranges = insertion_ranges(orders, orders_b, q)
            per_rank = ranges and rank_cuts(gb, orders_b, [
                (low + shift, high + shift) for low, high in ranges[1]], shift,
                _end_passes(m_a + q, 1, name))
            cuts_b = [per_rank, cut_b] if per_rank and per_rank != [cut_b] * pp else [cut_b]
        for state in (True, False):
            for cut_x in cuts_b:
                one = _one_run(cfg, gb, tb, orders_b, warm_b, cut_x, shift, q, state)
                if one is not None:
                    return one, "state" if state else "one", m_a + q
        if alone or (built and not spaced_evenly(tb, gb.tags, cut_at, shift)):
            # zb_2p: its timeline still in the transient at B's cut, which no A can match;
            # or B alone, no A to run
            runs.clear()
            runs[m_a + q] = (gb, tb, None)
            return None, "", 0
    ga, ta = earlier[:2] if earlier else (
        built.get(m_a) or build_graph(cfg, pricer, layer_source, m_a), None)
    ta = ta or run(ga.tasks)
    if tb is None:
        one = _one_run(cfg, ga, ta, orders, warm, cut_at[0], shift, q)
        if one is not None:
            return one, "one", m_a
        tb = run(gb.tasks)
    pairs = _counterparts(ta, tb, ga.tags, gb.tags, cut_at, shift)
    period = None if pairs is None else period_s(ta, tb, *pairs)
    if period is None:
        runs.clear()
        runs[m_a + q] = (gb, tb, None if pairs is None or not any(map(_slows, gb.tasks))
                         else (ta, pairs))  # contended: how B deviates from A
        return None, "", 0
    return two_run_summary(cfg, ga, ta, gb, tb, (m - m_a - q) // q), "two", m_a + q


__all__ = ["MIN_TASKS", "Plan", "attempt", "attempts", "plan", "simulated_tasks", "steady_summary"]
