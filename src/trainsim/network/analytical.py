"""Analytical backend: two tiers (NVLink, NIC) priced with NCCL's cost model.

Efficiencies are the achievable fractions of link rate that NCCL's maintainers quote for the
Simple protocol: NVLink ~80 % (nccl-tests issue #212: "~20 % protocol overhead", 370 of 450
GB/s on H100), InfiniBand/RoCE 96 % (nccl-tests issue #119: "24GB/s is the peak performance
per 200G NIC (12 GB/s for 100G NICs)"; nccl-tests #319: "around 48GB/s from each CX7 NIC at
400Gbps"). nccl-tests #290's "46-48GB/s per NIC" is kept apart as a validation row.
"""

from __future__ import annotations

import dataclasses

from trainsim.collectives import (
    CollectiveCost,
    Fabric,
    GroupSpan,
    LinkTier,
    collective_cost,
    group_span,
    scale_terms,
)
from trainsim.collectives.nccl import intra_link_kind
from trainsim.collectives.placement import placed_span
from trainsim.config import ClusterConfig
from trainsim.errors import ConfigError

NVLINK_EFFICIENCY = 0.80
NIC_EFFICIENCY = 0.96


class AnalyticalNetwork:
    name = "analytical"

    def __init__(self, cluster: ClusterConfig) -> None:
        self.cluster = cluster
        kind = intra_link_kind(cluster.gpu.nvlink_bw_Bps)
        self.intra = LinkTier(cluster.nvlink_bw_Bps, NVLINK_EFFICIENCY, kind)
        # EFA, TCPX (cluster.fabric): its own hop cost and share of the NIC rate (scale_terms)
        share = {"efa": scale_terms.EFA_BW_SHARE, "tcpx": scale_terms.TCPX_BW_SHARE}
        net = cluster.fabric if cluster.fabric in share else "net"
        nic_eff = NIC_EFFICIENCY * share.get(cluster.fabric, 1.0)
        # what 'auto' runs: on TCPX, the algorithm and protocol Google's config sets
        # (scale_terms.TCPX_ALGO); elsewhere NCCL's own choice
        self.auto = (scale_terms.TCPX_ALGO, scale_terms.TCPX_PROTO) \
            if cluster.fabric == "tcpx" else ("auto", "auto")
        self.inter = LinkTier(cluster.nic_bw_Bps, nic_eff, net)
        self.fabric = Fabric(self.intra, self.inter, nvls=cluster.gpu.nvls and cluster.nvls,
                             collnet=cluster.in_network_reduction,
                             nvls_efficiency=cluster.gpu.nvls_efficiency,
                             compute_capability=cluster.gpu.compute_capability,
                             nics_per_node=(cluster.nics_per_node if cluster.gpus_per_nic > 1
                                            else None),
                             gpus_per_nic=cluster.gpus_per_nic)
        # A group spanning more nodes than one leaf holds crosses the spines: under an
        # oversubscribed leaf each GPU gets its NIC rate over the oversubscription.
        self.spine_fabric = self.fabric if cluster.oversubscription == 1 else dataclasses.replace(
            self.fabric, inter=LinkTier(cluster.nic_bw_Bps / cluster.oversubscription,
                                        nic_eff, net))
        self._cache: dict[tuple, CollectiveCost] = {}

    def span(self, size: int, stride: int) -> GroupSpan:
        """Where a group of ``size`` ranks ``stride`` apart sits: the worst-placed such group
        over the job's stated domains (``cluster.domain_gpus``), else whole nodes."""
        if self.cluster.domain_gpus is not None:
            return placed_span(size, stride, self.cluster.domain_gpus)
        return group_span(size, stride, self.cluster.gpus_per_node)

    def collective(self, kind: str, size_bytes: float, span: GroupSpan,
                   algorithm: str | None = None, protocol: str | None = None) -> CollectiveCost:
        forced = [f"{k}={v}" for k, v, given in (("nccl_algo", self.cluster.nccl_algo, algorithm),
                                                  ("nccl_proto", self.cluster.nccl_proto, protocol))
                  if given is None and v.lower() != "auto"]
        algorithm = algorithm or self.cluster.nccl_algo
        protocol = protocol or self.cluster.nccl_proto
        if algorithm.lower() == "auto" and kind not in ("all_to_all", "send_recv"):
            algorithm = self.auto[0]
        if protocol.lower() == "auto":
            protocol = self.auto[1]
        key = (kind, size_bytes, span, algorithm, protocol)
        c = self._cache.get(key)
        if c is None:
            fabric = self.fabric if span.nodes <= self.cluster.nodes_per_leaf \
                else self.spine_fabric
            try:
                c = self._cache[key] = collective_cost(kind, size_bytes, span, fabric, algorithm,
                                                       protocol)
            except ConfigError as e:
                if not forced:
                    raise
                # robust61: the refusal named no field; NCCL_ALGO / NCCL_PROTO bind every
                # collective of the job, so one group that cannot run it refuses the run
                raise ConfigError(f"cluster.{' and '.join(forced)}: {e}; the setting applies "
                                  "to every collective of the run (as NCCL_ALGO / NCCL_PROTO "
                                  "do): leave it auto") from None
        return c
