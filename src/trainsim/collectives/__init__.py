"""How NCCL runs a collective: algorithm choice and alpha-beta cost over link tiers."""

from trainsim.collectives.alphabeta import (
    BUS_FACTOR,
    CollectiveCost,
    GroupSpan,
    LinkTier,
    collective_cost,
    group_span,
)

__all__ = ["BUS_FACTOR", "CollectiveCost", "GroupSpan", "LinkTier", "collective_cost", "group_span"]
