"""Analytical backend: two tiers (NVLink, NIC) and the alpha-beta collective model.

Efficiencies are the achievable fractions of link rate that NCCL's maintainers quote:
NVLink ~80 % (nccl-tests issue #212: "~20 % protocol overhead", 370 of 450 GB/s on H100),
InfiniBand/RoCE ~94 % (nccl-tests issue #290: 46-48 GB/s on a 400 Gbit/s NDR NIC).
"""

from __future__ import annotations

from trainsim.collectives import CollectiveCost, GroupSpan, LinkTier, collective_cost, group_span
from trainsim.config import ClusterConfig

NVLINK_EFFICIENCY = 0.80
NIC_EFFICIENCY = 0.94


class AnalyticalNetwork:
    name = "analytical"

    def __init__(self, cluster: ClusterConfig) -> None:
        self.cluster = cluster
        self.intra = LinkTier(cluster.nvlink_bw_Bps, cluster.nvlink_latency_s, NVLINK_EFFICIENCY)
        self.inter = LinkTier(cluster.nic_bw_Bps, cluster.network_latency_s, NIC_EFFICIENCY)
        self._cache: dict[tuple, CollectiveCost] = {}

    def span(self, size: int, stride: int) -> GroupSpan:
        return group_span(size, stride, self.cluster.gpus_per_node)

    def collective(self, kind: str, size_bytes: float, span: GroupSpan,
                   algorithm: str = "auto") -> CollectiveCost:
        key = (kind, size_bytes, span, algorithm)
        c = self._cache.get(key)
        if c is None:
            c = self._cache[key] = collective_cost(kind, size_bytes, span, self.intra, self.inter,
                                                   algorithm)
        return c
