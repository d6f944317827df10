"""The truncated runs the periodic shortcut tries (:mod:`trainsim.steady_state`), in order: the
first pair ``steady_state.plan`` gives, then 1, 3, 7, ... periods longer within the budget
(split out of steady_state.py, zbproof61)."""

from __future__ import annotations

from dataclasses import dataclass

from trainsim.config import RunConfig


@dataclass(frozen=True)
class Plan:
    """The truncated runs of a shortcut: A with ``m_a`` micro-batches, B with ``m_a + q``."""

    m_a: int
    q: int
    """Micro-batches per period (``pp`` when interleaved, else 1)."""
    cut: int
    """Steady pairs of stage 0 before the cut, in A (a :data:`NAMED` schedule's: the cut's
    position, ``steady_orders.named_cut``)."""
    unit: int
    """Steady (F, B) pairs per stage per period (a :data:`NAMED` schedule's: its steps)."""
    alone: bool = False
    """B alone: its one-run proofs decide and A is never run (zb_2p's run past a transient
    that ends past half the iteration, ``steady_state._late_alone``)."""


def _ladder(cfg: RunConfig, first: Plan | None) -> list[Plan]:
    """``steady_state.attempts`` from ``steady_state.plan(cfg)``'s first pair (None: no shortcut). GPipe's first
    pair (3 and 4 micro-batches) goes before the ladder from 2 pp, which keeps its own budget
    (settle60: most configs prove at 3, the rest where they proved before; 7 micro-batches
    more at most)."""
    if first is None:
        return []
    pp = cfg.parallel.pp
    if cfg.parallel.pipeline_schedule == "gpipe" and first.m_a < 2 * pp:
        rest = _ladder(cfg, Plan(2 * pp, first.q, first.cut, first.unit))
        return [first] * (2 * (first.m_a + first.q) <= cfg.num_microbatches) + rest
    m, out, extra = cfg.num_microbatches, [], 0
    while True:
        current = Plan(first.m_a + extra * first.q, first.q, first.cut + extra * first.unit,
                       first.unit)
        if 2 * (current.m_a + current.q) > m or _runs_cost(out + [current]) > 2 * m:
            if cfg.parallel.pipeline_schedule in ("gpipe", "looped_bfs"):
                return _longest_last(first, out, m)
            return out
        out.append(current)
        extra = 2 * extra + 1


def _longest_last(first: Plan, out: list[Plan], m: int) -> list[Plan]:
    """A two-phase schedule's ladder ``out`` (GPipe, looped BFS: ``steady_gpipe``,
    ``steady_bfs``) whose next doubling is past its budget, ending at the longest run the budget
    affords: appended where it fits after every rung, else in place of the last one where that
    is longer. Their transient is the stages' catch-up of the pace of the slowest before them,
    one stage after the other, so it grows with the pipeline (zbproof61: config #6 of
    tests/test_steady_bfs.py, pp 8, 51 micro-batches, proven from A = 19; its rungs were 3, 4,
    6, 10 and 18, and 34 past the budget; now 3, 4, 6, 10 and 24)."""
    if len(out) < 2:
        return out
    q = first.q
    for kept in (out, out[:-1]):
        # B at most half of m, A and B (2 m_a + q) within what the rungs kept leave
        top = min(m // 2 - q, (2 * m - _runs_cost(kept) - q) // 2)
        extra = (top - first.m_a) // q
        last = Plan(first.m_a + extra * q, q, first.cut + extra * first.unit, first.unit)
        if last.m_a > out[-1].m_a and _runs_cost(kept + [last]) <= 2 * m:
            return kept + [last]
    return out


def _runs_cost(tries: list[Plan]) -> int:
    """Micro-batches the attempts ``tries`` simulate at most, in order: A and B each, B alone
    where that is the attempt (``Plan.alone``), and an A that is the last attempt's B once."""
    spent, last_b = 0, 0
    for t in tries:
        spent += t.m_a + t.q + (t.m_a != last_b and not t.alone) * t.m_a
        last_b = t.m_a + t.q
    return spent
