"""zb_2p's periodic steady state, where its timeline's transient outlasts its order search's.

``workload.zb_settle.settle`` proves from how many micro-batches on the searched orders are one
another with periods inserted; the periodic shortcut (:mod:`trainsim.steady_state`) tries its
truncated runs from there. But the search runs on one time per pass kind for every stage (the
upper medians, as the zero-bubble code base feeds it), and the engine runs each stage's own:
where one stage is slower than the search's period, the others run ahead at their own pace
until its back pressure reaches them, a drift of (its period less theirs) a micro-batch that
ends at once where a dependency starts to bind (settle56: test_steady_zb2p.py's config 8,
stages of 3,102.9 / 3,240.9 us a micro-batch, stage 0 paced by the last stage only ~45
micro-batches after the search settled). The shortcut's ladder of lengths (1, 3, 7, ...
periods longer) found them by failing on each shorter run; here the priced passes are replayed
on the orders of the longest run (no task graph: every pass starting when its rank is free and
its input has arrived) and the first length whose cut is past the replay's transient is tried
first. Only a cost decision: the engine's runs prove the period or refuse it, as before.
"""

from __future__ import annotations

from trainsim.config import RunConfig
from trainsim.engine.periodic import REL_TOL
from trainsim.pricing import Pricer
from trainsim.simulator import LayerSource, _TaskGraph
from trainsim.steady_ladder import Plan
from trainsim.steady_orders import _end_passes, _passes, insertion_cut

MAX_CUT_STEPS = 8
"""Lengths :func:`past_transient` tries, a period apart from the first, for one whose orders
have an insertion cut at one position on every rank (``steady_orders.insertion_cut``): where
the search has just settled, the last rank's inserted rounds can still sit before the first
rank's earliest (settle58: 6 of tests/test_steady_zb2p.py's 200 configs, a period or two
short, so their shortcut never had a cut)."""
SPARE_PERIODS = 3
"""Periods of the replay's steady state a length's cut must have before it: the proofs compare
the period before the cut with the one before that (``engine.periodic``), and one more for
what the replay leaves out (the gradient reduction, the optimizer step, contention)."""


def replay_periodic_from(orders: list, times: tuple[list[float], list[float], list[float], float],
                         cut: int, shift: int) -> int | None:
    """Where a zb_2p run whose orders are ``orders`` (every rank's, of one long run: one period
    of ``shift`` steps inserted at every position ``cut + j shift``, ``steady_orders.
    insertion_cut``) stops being in its timeline's transient, replayed on the priced passes
    alone (``times``: each rank's F, I and W seconds and the send, ``pipeline.
    ScheduledPipeline._times``): every pass starting when its rank is free and its input has
    arrived, the send after the neighbour's pass. The least position ``p`` (every rank's order)
    from which each step starts the same time after the step ``shift`` before it, within the
    proofs' tolerance (``REL_TOL`` of the replay's makespan), on every rank, through ``cut``
    (the run's own last insertion point); None where the replay's last period is not that. Only a cost decision: it drops the gradient reduction,
    the optimizer and any contention, and the engine's runs prove or refuse the period
    (settle56: the transient of a slower stage's back pressure reaching the others, which
    outlasts the order search's)."""
    from trainsim.workload.pipeline_schedules import pass_starts
    starts, free = pass_starts(orders, *times)
    if any(len(x) < cut for x in starts) or cut < 2 * shift:
        return None
    tol = REL_TOL * max(free)
    last = [x[cut - 1] - x[cut - 1 - shift] for x in starts]
    period = last[0]
    if any(abs(d - period) > tol for d in last):
        return None
    p = cut - 1
    while p - 1 - shift >= 0 and all(abs(x[p - 1] - x[p - 1 - shift] - period) <= tol
                                     for x in starts):
        p -= 1
    return p


def rank_cuts(graph, orders: list, ranges: list[tuple[int, int]], shift: int, ends: set
              ) -> list[int] | None:
    """Each rank's cut for a one-run proof on ``graph`` (a zb_2p run whose orders are
    ``orders``, ``ranges`` each rank's least and latest insertion position, ``steady_orders.
    insertion_ranges``): the latest positions, one a rank, at which no task waits on a task of
    a later period on another stream (nor the prefix on the period, nor the period on the
    tail), and no period holds an end pass (``ends``); None where there are none within the
    ranges. A common position on every rank does not do that for zb_2p: its search puts a
    neighbour's pass that one waits on several positions on, a period later or more in its
    order (settle58 Lead 2: 172 of tests/test_steady_zb2p.py's 185 proven configs refused by
    the state proof, ``engine.periodic.period_of_state_s``). A task waiting on one of an
    earlier period is left to the proofs (``period_of_state_s`` follows its copies).

    The greatest fixed point of ``cut[s] <= bound(p, p', cut[s'])`` over every dependency of a
    task at position ``p`` of rank ``s`` on one at ``p'`` of rank ``s'``: ``p`` (the task in
    the tail) where ``p'`` is in the tail, ``p + shift`` (in the period or the tail) where in
    the period, none where in the prefix. Each bound grows with the other rank's cut, so
    lowering cuts from the latest ones until none is broken finds it, or passes a least one."""
    from trainsim.simulator import AFTER
    tags, tasks = graph.tags, graph.tasks
    edges = set()
    for i, task in enumerate(tasks):
        p = tags[i]
        if 0 <= p < AFTER:
            for d in task.deps:
                p2 = tags[d]
                if 0 <= p2 < AFTER and tasks[d].stream != task.stream:
                    edges.add((task.stream[0], p, tasks[d].stream[0], p2))
    cuts = [high for _, high in ranges]
    changed = True
    while changed:
        changed = False
        for s, order in enumerate(orders):
            while cuts[s] >= ranges[s][0] and not ends.isdisjoint(
                    _passes(order[cuts[s] - shift:cuts[s]])):
                cuts[s] -= 1
        if any(c < low for c, (low, _) in zip(cuts, ranges)):
            return None
        for s, p, s2, p2 in edges:  # the prefix, the period, the tail: 0, 1, 2
            bound = p if p2 >= cuts[s2] else p + shift if p2 >= cuts[s2] - shift else AFTER
            if bound < cuts[s]:
                cuts[s], changed = bound, True
    return cuts


def _search_inputs(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None
                   ) -> tuple[tuple[list[float], list[float], list[float], float], float]:
    """What zb_2p's search for ``cfg`` is fed: the priced passes' times
    (``pipeline.ScheduledPipeline._times``) and the W share of memory."""
    from trainsim.pipeline import ScheduledPipeline
    from trainsim.workload.pipeline_schedules import zb_w_fraction
    model = cfg.model
    return (ScheduledPipeline(_TaskGraph(cfg, pricer, layer_source, 1))._times(),
            zb_w_fraction(model.hidden_size, model.num_attention_heads, cfg.training.seq_length))


def searched_orders(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None,
                    m_x: int) -> list:
    """zb_2p's orders for a truncated run of ``m_x`` micro-batches of ``cfg`` (those its task
    graph holds, ``pipeline.ScheduledPipeline.place``), searched without building the graph."""
    from trainsim.workload.pipeline_schedules import zb_2p
    times, wf = _search_inputs(cfg, pricer, layer_source)
    return zb_2p(cfg.parallel.pp, m_x, times, wf, cfg.num_microbatches)


def settled_alone(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None,
                  settles: int, rounds: int) -> Plan | None:
    """zb_2p's one attempt where its order search settles from ``settles`` micro-batches in
    periods of ``rounds`` (``zb_settle.settle``) past half the iteration, so that no A and B
    both from there are affordable (``steady_state._zb2p_tries``): B alone (its one-run proofs,
    ``Plan.alone``) from the least length past both the search's settling and the timeline's
    transient replayed (:func:`past_transient`) that leaves the iteration whole periods, B at
    least a period short of the iteration. None where there is none or the replay does not
    settle by then (simulated in full, as before). zbproof61 Lead 4: 2 of
    tests/test_steady_zb2p.py's 200 random configs' searches settle 8 and 3 micro-batches past
    what A and B afford (#75 from 108 of 210, #194 from 252 of 503) and 6 more later still
    (#27, #28 and #122 from 335 of 574, 290 of 369, 382 of 588; #3, #22, #41 in periods of two
    rounds from 530 of 594, 358 of 369, 530 of 534): each costs B's micro-batches, not the
    iteration's, which stays so for any longer iteration (the search settles where it does
    whatever the count past it)."""
    m = cfg.num_microbatches
    m_a = settles + (m - settles) % rounds
    if not 0 < settles or m_a + 2 * rounds > m:
        return None
    late = past_transient(cfg, pricer, layer_source, m_a, m - 2 * rounds, rounds, True)
    return None if late is None else Plan(late, rounds, 0, 1, alone=True)


def longest_run(m: int, m_first: int, q: int) -> int:
    """The longest truncated run from ``m_first`` on, in steps of ``q`` micro-batches, whose B
    (``q`` more) costs at most half the iteration's ``m`` (``steady_state.plan``'s rule)."""
    return m_first + max(0, (m // 2 - q - m_first) // q) * q


def past_transient(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None,
                   m_first: int, m_last: int | None, q: int, keep_first: bool = False
                   ) -> int | None:
    """The least length from ``m_first`` on, in steps of ``q`` micro-batches, whose cut
    (``steady_orders.insertion_cut``) has :data:`SPARE_PERIODS` periods of the replay's steady
    state (:func:`replay_periodic_from`) before it, that length at most ``m_last`` (None: the
    longest run the iteration affords, :func:`longest_run`); None where that is ``m_first``
    itself (``keep_first``: ``m_first`` then), past ``m_last``, or the replay has not settled by then (the ladder's lengths are
    tried as they are). The replay runs the orders of ``m_first`` plus about as many again,
    then twice as many more, and so on, up to ``m_last``, and stops at the first whose steady
    state reaches back to such a length: its cost follows the transient, not the iteration.

    zbpeak57: settle56 replayed up to the ladder's last rung only (lengths that double), where
    22 of tests/test_steady_zb2p.py's 200 configs' transients end past it yet within a run the
    iteration affords (#8: 73 micro-batches of 268, the ladder's last 63); and replayed the
    orders of that rung whole (at 16,384 micro-batches, ~8,200 of them)."""
    from trainsim.workload.pipeline_schedules import zb_2p
    m = cfg.num_microbatches
    m_last = longest_run(m, m_first, q) if m_last is None else m_last
    times, wf = _search_inputs(cfg, pricer, layer_source)
    pp, start = cfg.parallel.pp, m_first
    for _ in range(MAX_CUT_STEPS):  # the least length whose orders have a cut on every rank
        if m_last < m_first + (not keep_first):
            return None
        found = insertion_cut(zb_2p(pp, m_first, times, wf, m),
                              zb_2p(pp, m_first + q, times, wf, m), q,
                              [_end_passes(m_first, 1, "zb_2p")] * pp)
        if found is not None:
            break
        m_first += q
    else:
        return None
    cut, shift = found
    periods_last = (m_last - m_first) // q
    periods = min(periods_last, max(1, m_first // q))
    while True:  # orders of m_first + periods q micro-batches: a cut ``periods`` shifts on
        p = replay_periodic_from(zb_2p(pp, m_first + periods * q, times, wf, m), times,
                                 cut + periods * shift, shift)
        if p is not None:
            m_a = m_first + q * max(0, -((cut - p - SPARE_PERIODS * shift) // shift))
            if m_a <= m_first + periods * q:
                return m_a if m_a > start or keep_first else None
        if periods == periods_last:
            return None
        periods = min(periods_last, 2 * periods)


__all__ = ["MAX_CUT_STEPS", "SPARE_PERIODS", "longest_run", "past_transient", "rank_cuts",
           "replay_periodic_from", "searched_orders", "settled_alone"]
