"""Network backends: price a collective or a transfer on a cluster's fabric."""

from trainsim.network.analytical import NIC_EFFICIENCY, NVLINK_EFFICIENCY, AnalyticalNetwork

__all__ = ["AnalyticalNetwork", "NIC_EFFICIENCY", "NVLINK_EFFICIENCY"]
