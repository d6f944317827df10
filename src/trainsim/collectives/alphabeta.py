"""Alpha-beta cost of collectives on a two-tier (NVLink inside a node, NICs across) fabric.

A ring over n ranks moves ``factor(n) * S`` bytes through every rank's outgoing link, where
factor is 2(n-1)/n for all-reduce and (n-1)/n for all-gather / reduce-scatter (Patarasuk &
Yuan 2009; nccl-tests ``PERFORMANCE.md`` "bus bandwidth"). So time = steps * alpha +
factor * S / busbw, with busbw the bottleneck per-rank bandwidth:

* inside one node: the GPU's NVLink bandwidth;
* across nodes, with k group members per node and one NIC per GPU (rail-optimized), NCCL
  runs k rings, one per NIC; each node boundary is crossed once per ring, so the NICs give a
  bus bandwidth of k * NIC bandwidth, capped by NVLink.

The double binary tree (NCCL >= 2.4) replaces the n-step latency with 2 log2(nodes) steps
for all-reduce; NCCL picks whichever is faster, as does ``algorithm="auto"`` here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainsim.errors import ConfigError

BUS_FACTOR = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}


@dataclass(frozen=True)
class LinkTier:
    bw_Bps: float
    """Per-GPU one-direction bandwidth."""
    latency_s: float
    efficiency: float
    """Achievable fraction of ``bw_Bps`` for large messages (protocol overhead)."""

    @property
    def busbw_Bps(self) -> float:
        return self.bw_Bps * self.efficiency


@dataclass(frozen=True)
class GroupSpan:
    """Where a process group's ranks sit: ``size`` ranks, ``per_node`` of them in each node."""

    size: int
    per_node: int

    @property
    def nodes(self) -> int:
        return self.size // self.per_node


def group_span(size: int, stride: int, gpus_per_node: int) -> GroupSpan:
    """Span of a group of ``size`` ranks spaced ``stride`` apart in Megatron's rank order."""
    if size <= 1:
        return GroupSpan(max(size, 1), max(size, 1))
    if stride >= gpus_per_node:
        return GroupSpan(size, 1)
    per_node = min(size, max(1, gpus_per_node // stride))
    if size % per_node:
        per_node = math.gcd(size, per_node)
    return GroupSpan(size, per_node)


@dataclass(frozen=True)
class CollectiveCost:
    time_s: float
    algorithm: str
    busbw_Bps: float


def collective_cost(kind: str, size_bytes: float, span: GroupSpan, intra: LinkTier,
                    inter: LinkTier, algorithm: str = "auto") -> CollectiveCost:
    """Time of one collective; ``size_bytes`` is the nccl-tests message size (output buffer
    for all-gather, input for reduce-scatter and all-reduce)."""
    if kind not in BUS_FACTOR:
        raise ConfigError(f"unknown collective '{kind}'; known: {', '.join(BUS_FACTOR)}")
    if algorithm not in ("auto", "ring", "tree"):
        raise ConfigError(f"unknown algorithm '{algorithm}' for the analytical model; "
                          "use ring, tree or auto")
    n = span.size
    if n <= 1 or size_bytes <= 0:
        return CollectiveCost(0.0, "none", 0.0)
    factor = BUS_FACTOR[kind](n)
    if span.nodes == 1:
        busbw, alpha = intra.busbw_Bps, intra.latency_s
    else:
        busbw = min(intra.busbw_Bps, span.per_node * inter.busbw_Bps)
        alpha = inter.latency_s
    if kind == "send_recv":
        return CollectiveCost(alpha + size_bytes / busbw, "p2p", busbw)
    if kind == "all_to_all" and span.nodes > 1:
        # every rank sends (n - per_node)/n of its data off-node through its own NIC
        off = (n - span.per_node) / n * size_bytes / inter.busbw_Bps
        on = (span.per_node - 1) / n * size_bytes / intra.busbw_Bps
        return CollectiveCost(max(on, off) + (span.nodes - 1) * alpha, "direct", busbw)
    steps = (2 if kind == "all_reduce" else 1) * (n - 1)
    ring = CollectiveCost(steps * alpha + factor * size_bytes / busbw, "ring", busbw)
    if kind != "all_reduce" or algorithm == "ring" or (span.nodes == 1 and algorithm == "auto"):
        return ring
    tree_steps = 2 * (math.ceil(math.log2(span.nodes)) + span.per_node)
    tree = CollectiveCost(tree_steps * alpha + factor * size_bytes / busbw, "tree", busbw)
    if algorithm == "tree":
        return tree
    return tree if tree.time_s < ring.time_s else ring
