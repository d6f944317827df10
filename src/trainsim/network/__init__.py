"""Network backends: price a collective or a transfer on a cluster's fabric.

Both backends offer ``span(size, stride)`` and ``collective(kind, bytes, span, algorithm,
protocol) -> CollectiveCost``; ``network_for`` picks one from the cluster config.
"""

from trainsim.config import ClusterConfig
from trainsim.network.analytical import NIC_EFFICIENCY, NVLINK_EFFICIENCY, AnalyticalNetwork
from trainsim.network.flow import FlowNetwork, FlowResult
from trainsim.network.topology import Router, Topology, load_topology, topology_names


def network_for(cluster: ClusterConfig) -> AnalyticalNetwork | FlowNetwork:
    """The backend ``cluster.network_backend`` names (the flow one with the same achievable
    link efficiencies as the analytical one)."""
    if cluster.network_backend == "flow":
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
