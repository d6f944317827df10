"""Network backends: price a collective or a transfer on a cluster's fabric.

Both backends offer ``span(size, stride)`` and ``collective(kind, bytes, span, algorithm,
protocol) -> CollectiveCost``; ``network_for`` picks one from the cluster config.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsim.config import ClusterConfig
from trainsim.lazy import lazy_getattr
from trainsim.network.analytical import NIC_EFFICIENCY, NVLINK_EFFICIENCY, AnalyticalNetwork

if TYPE_CHECKING:
    from trainsim.network.flow import FlowNetwork, FlowResult
    from trainsim.network.topology import Router, Topology, load_topology, topology_names

_LAZY = {"FlowNetwork": "trainsim.network.flow", "FlowResult": "trainsim.network.flow",
         "Router": "trainsim.network.topology", "Topology": "trainsim.network.topology",
         "load_topology": "trainsim.network.topology",
         "topology_names": "trainsim.network.topology"}
"""The flow backend and the topologies, imported when first read (PEP 562): a run on the
analytical backend (the default; every validation row) never reads them (~0.03 s of every
start)."""


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def network_for(cluster: ClusterConfig) -> AnalyticalNetwork | FlowNetwork:
    """The backend ``cluster.network_backend`` names (the flow one with the same achievable
    link efficiencies as the analytical one)."""
    if cluster.network_backend == "flow":
        from trainsim.network.flow import FlowNetwork

        return FlowNetwork.from_cluster(cluster, nvlink_efficiency=NVLINK_EFFICIENCY,
                                        nic_efficiency=NIC_EFFICIENCY)
    return AnalyticalNetwork(cluster)


__all__ = [
    "NIC_EFFICIENCY",
    "NVLINK_EFFICIENCY",
    "AnalyticalNetwork",
    "FlowNetwork",
    "FlowResult",
    "Router",
    "Topology",
    "load_topology",
    "network_for",
    "topology_names",
]
