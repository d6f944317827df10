"""How NCCL runs a collective: algorithms, protocols and their cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
from trainsim.lazy import lazy_getattr

if TYPE_CHECKING:
    from trainsim.collectives.flows import FLOW_ALGORITHMS, Flow, FlowSchedule, decompose

_FLOWS = ("FLOW_ALGORITHMS", "Flow", "FlowSchedule", "decompose")
"""The decomposition into point-to-point flows (``collectives.flows``), imported when first read
(PEP 562): only the flow network backend uses it (~0.01-0.02 s of every start)."""


__getattr__ = lazy_getattr(__name__, dict.fromkeys(_FLOWS, "trainsim.collectives.flows"), globals())


__all__ = ["ALGORITHMS", "BUS_FACTOR", "FLOW_ALGORITHMS", "PROTOCOLS", "CollectiveCost", "Fabric",
           "Flow", "FlowSchedule", "GroupSpan", "LinkTier", "collective_cost", "decompose",
           "group_span"]
