"""How NCCL runs a collective: algorithms, protocols and their cost."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from trainsim.collectives.flows import FLOW_ALGORITHMS, Flow, FlowSchedule, decompose

_FLOWS = ("FLOW_ALGORITHMS", "Flow", "FlowSchedule", "decompose")
"""The decomposition into point-to-point flows (``collectives.flows``), imported when first read
(PEP 562): only the flow network backend uses it (~0.01-0.02 s of every start)."""


def __getattr__(name: str) -> Any:
    if name not in _FLOWS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("trainsim.collectives.flows"), name)
    globals()[name] = value
    return value


__all__ = ["ALGORITHMS", "BUS_FACTOR", "FLOW_ALGORITHMS", "PROTOCOLS", "CollectiveCost", "Fabric",
           "Flow", "FlowSchedule", "GroupSpan", "LinkTier", "collective_cost", "decompose",
           "group_span"]
