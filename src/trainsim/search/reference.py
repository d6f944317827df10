"""Where a given configuration (e.g. a published one) lands in a search's ranking
(``search.core.search``'s ``reference``), and the ranking groups (``rank_by``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from trainsim.search.evaluation import Evaluation, evaluate
from trainsim.search.explain import rank_key, why_slower

if TYPE_CHECKING:
    from trainsim.search.results import EvaluationCache
    from trainsim.search.space import Base, Candidate

RankBy = Literal["split", "layout", "config"]
RANK_BY = ("split", "layout", "config")


def group_of(c: Candidate, rank_by: str) -> object:
    """The ranking group of a candidate: its GPU split (GPUs, tp, pp, cp), its layout (plus vpp
    and micro batch), or the candidate itself."""
    if rank_by == "split":
        return c.layout[:4]
    if rank_by == "layout":
        return c.layout
    return c


@dataclass(frozen=True)
class ReferenceRank:
    """Where a given configuration (e.g. a published one) lands in the ranking."""

    evaluation: Evaluation
    rank: int
    """1 + the layouts (others than its own) whose best configuration is faster."""
    exact: bool
    """False when rank > top_k: then it is a lower bound (pruned groups are not counted)."""
    group_rank: int | None
    """Rank of its group (e.g. its GPU split) with the group's fastest settings."""
    reasons: tuple[str, ...] = ()

    def to_dict(self, base: Base | None = None) -> dict[str, Any]:
        return {"rank": self.rank, "rank_is_exact": self.exact, "group_rank": self.group_rank,
                **self.evaluation.to_dict(base),
                "fits_in_memory": self.evaluation.fits, "why_slower": list(self.reasons)}


def rank_reference(reference: Candidate, base: Base, ordered: list[Evaluation], top_k: int,
                   rank_by: str, cache: EvaluationCache | None, bkey: str) -> ReferenceRank:
    """Where ``reference`` lands among the searched evaluations ``ordered`` (best first):
    evaluated (through ``cache`` under the search's ``bkey``) and ranked by ``rank_by`` group."""
    e = cache.get(bkey, reference) if cache else None
    if e is None:
        e = evaluate(reference, base)
        if cache:
            cache.put(bkey, e)
    own = group_of(reference, rank_by)
    faster = sum(1 for o in ordered
                 if group_of(o.candidate, rank_by) != own and rank_key(o) < rank_key(e))
    rank = faster + 1
    # A group pruned by the bound is slower than the k-th best found, so every group faster
    # than the reference was simulated as long as fewer than k others beat it.
    own_in_top = any(group_of(o.candidate, rank_by) == own for o in ordered[:top_k])
    exact = rank < top_k or (rank == top_k and not own_in_top)
    own_best = next((i + 1 for i, o in enumerate(ordered) if group_of(o.candidate, rank_by) == own),
                    None)
    reasons = why_slower(ordered[0], e) if ordered and ordered[0].candidate != reference else ()
    return ReferenceRank(e, rank, exact, own_best, reasons)


__all__ = ["RANK_BY", "RankBy", "ReferenceRank", "group_of", "rank_reference"]
