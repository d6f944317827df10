"""How NCCL runs a collective: algorithms, protocols and their cost."""

from trainsim.collectives.flows import FLOW_ALGORITHMS, Flow, FlowSchedule, decompose
from trainsim.collectives.nccl import (
    ALGORITHMS,
    BUS_FACTOR,
    PROTOCOLS,
    CollectiveCost,
    Fabric,
    GroupSpan,
    LinkTier,
    collective_cost,
    group_span,
)

__all__ = ["ALGORITHMS", "BUS_FACTOR", "FLOW_ALGORITHMS", "PROTOCOLS", "CollectiveCost", "Fabric",
           "Flow", "FlowSchedule", "GroupSpan", "LinkTier", "collective_cost", "decompose",
           "group_span"]
