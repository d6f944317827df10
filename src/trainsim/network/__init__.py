"""Network backends: price a collective or a transfer on a cluster's fabric."""

from trainsim.network.analytical import AnalyticalNetwork, NVLINK_EFFICIENCY, NIC_EFFICIENCY

__all__ = ["AnalyticalNetwork", "NIC_EFFICIENCY", "NVLINK_EFFICIENCY"]
