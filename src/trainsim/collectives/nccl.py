"""NCCL's cost model and algorithm/protocol choice, re-derived in our own terms.

NCCL (src/graph/tuning.cc, 2.18-2.23) predicts each (algorithm, protocol) pair's time as
``latency + bytes / bandwidth`` and runs the fastest, unless NCCL_ALGO / NCCL_PROTO say
otherwise. We do the same:

* latency = a base cost per collective launch plus a per-hop cost that depends on the link
  (NVLink, PCIe, network) and protocol. The microsecond values are NCCL's defaults (tuning.cc
  ``baseLat`` / ``hwLat`` tables), except the network hop of the LL protocol, which is measured
  (``NET_HOP_LL_US``), and NVLink LL hops of multi-node collectives, which are slower
  (``MULTINODE_LL_INTRA_FACTOR``). NCCL's tables rank algorithms against each other; they are not
  measurements, and they put a 2 x 8-GPU all_reduce of 8 B at 25 us where nccl-tests measure
  36-62 us (see ``NET_HOP_LL_US``).
* bandwidth = the bottleneck per-rank link bandwidth times the protocol's payload efficiency:
  LL sends 4 bytes of data per 8-byte flag+data line (50 %), LL128 120 of every 128 bytes
  (93.75 %), Simple all of it but with the highest latency (NCCL docs, "NCCL_PROTO").
* algorithms: ring (all collectives); double binary tree (all_reduce across nodes, log-depth
  latency); NVLS (NVLink SHARP, in-switch reduction on NVSwitch generations that have it) and
  NVLS+tree across nodes; CollNet (in-network reduction, needs SHARP switches); PAT (all_gather
  / reduce_scatter with one rank per node, NCCL >= 2.23: log-depth plus a linear part per rank,
  3/4 of the ring's bandwidth); direct all_to_all.
* three costs beyond latency + bytes / bandwidth live in ``collectives.scale_terms``: the fill of
  the one-node NVLS all_reduce kernel's three-stage pipeline, the fill of a ring broadcast's or
  reduce's chain (a whole chunk held at every network hop, and every hop under Simple), and the
  network rate a ring or tree loses per doubling of the nodes it spans beyond two (fitted by
  ``benchmarks/fit_collectives.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainsim.collectives import scale_terms
from trainsim.collectives.ring_channels import ring_channels
from trainsim.collectives.scale_terms import nvls_fill_bytes
from trainsim.config.cluster import ALGORITHMS, PROTOCOLS  # the names a config may force
from trainsim.errors import ConfigError

PROTOCOL_EFFICIENCY = {"LL": 0.5, "LL128": 120 / 128, "Simple": 1.0}

# NCCL tuning.cc defaults, microseconds. Base latency per launch, by algorithm family:
_BASE_US = {"tree": {"LL": 6.8, "LL128": 14.0, "Simple": 8.4},
            "ring": {"LL": 6.6, "LL128": 14.0, "Simple": 8.4},
            "nvls": {"LL": 0.0, "LL128": 0.0, "Simple": 25.0},
            "collnet": {"LL": 0.0, "LL128": 0.0, "Simple": 10.0}}

NET_HOP_LL_US = 7.3
"""One network hop of the LL protocol (GPU -> proxy -> NIC -> switch -> NIC -> GPU), measured.

NCCL's table has 5.0 us (tree) and 2.7 us (ring). Measured: on two Azure NDm A100 v4 nodes with
one GPU each (HDR InfiniBand, NCCL 2.17.1), nccl-tests all_reduce of 1 KiB takes 21.27 us
(microsoft/mscclpp docs/performance-ndmv4.md, in-place). With one GPU per node the ring has no
NVLink step: 2 network steps after the LL launch base (6.6 us), so one hop is
(21.27 - 6.6) / 2 = 7.3 us; the 1 KiB payload adds < 0.1 us. A hop is a hop whatever the
algorithm, so the same value serves the ring and the tree. LL128 and Simple keep NCCL's values:
no published measurement isolates them. With it a 2 x 8-GPU all_reduce of 8 B-64 KiB takes
36-37 us, inside the published 2 x 8 reports: 35.85 us (the same page, 1 KiB), 47.60 us (2 x 8
H20, NDR, NVLSTree; NVIDIA/nccl #1244), 61.58 us (2 x 8 H100, 128 B; NVIDIA/nccl #1453)."""

MULTINODE_LL_INTRA_FACTOR = 1.8
"""NVLink/PCIe LL hops of a collective that spans nodes cost 1.8x a single-node hop.

NCCL's own model had this rule (tuning.cc of the NCCL 2.7-2.8 era:
``if (nNodes > 1 && p == LL) intraLat *= 1.8``; later versions keep a similar penalty for rings
only, ``getNetOverhead``). The same NDm A100 v4 page confirms it: all_reduce of 1 KiB takes
35.85 us on 2 x 8 GPUs against 21.27 us on 2 x 1, and the 14 chain hops of the 2 x 8 tree (7 up,
7 down) account for the 14.6 us between them: 1.04 us per hop = 1.7x NCCL's 0.6 us."""

ONE_RANK_PER_NODE_NET_SHARE = 0.71
"""Share of a NIC's achievable rate that a collective with one rank per node reaches.

With one rank per node every ring (or tree) step crosses the network, and the one GPU drives
its NIC alone. NCCL 2.17.1 on two Azure NDm A100 v4 nodes with one GPU each (HDR 200 Gb/s)
reaches 15.84 GB/s bus bandwidth in all_gather, 18.65 in all_reduce and 15.48 in all_to_all at
1 GiB (microsoft/mscclpp docs/performance-ndmv4.md, in-place), against the 24 GB/s each HDR
NIC carries when a node has eight ranks (the same page's 2 x 8 all_reduce, 183.82 GB/s over 8
NICs; NVIDIA/nccl #812: 192 GB/s). The middle of the three, 17.07 GB/s, is 0.71 of 24 GB/s and
puts each of them within about 10 %. It is the shape of Megatron's data-parallel groups under TP = 8
(one rank per node on each rail).
Point-to-point send/recv keeps the full rate: sendrecv_perf, each rank sending to one peer on
the next node, reaches 24.2 GB/s over 200 Gb/s links on 2-4 nodes of 4 GH200 (NVIDIA/nccl
#1272), and no published measurement shows a lower rate for one pair.
Measured on HDR only; assumed the same for later NICs until a one-rank-per-node figure on one
is published."""

ALL_TO_ALL_NET_SHARE = 0.88
"""Share of a NIC's achievable rate that the network part of an all-to-all reaches.

In an all-to-all every NIC sends to and receives from every remote node at once, many flows
per link instead of a ring's one, and both published measurements land below the rate a
ring or tree keeps on the same NICs:
- NCCL 2.17.1 on two Azure NDm A100 v4 nodes (8 GPUs, 8 HDR 200 Gb/s NICs each): alltoall of
  1 GiB reaches 37.8 GB/s bus bandwidth (microsoft/mscclpp docs/performance-ndmv4.md,
  in-place), i.e. 40.3 GB/s per GPU, half of it off-node: 20.2 GB/s per NIC, 0.88 of the
  23.0 GB/s per NIC that all_reduce reaches on the same nodes (183.82 GB/s over 8 NICs).
- DeepEP's internode kernels on H800 with one CX7 400 Gb/s NIC per GPU (deepseek-ai/DeepEP
  docs/legacy.md, V1 "normal kernels": 4096 tokens of 7168, top-8 of 256 experts, fp8
  dispatch): 58 GB/s at EP 32 and 51 GB/s at EP 64, counted over every destination node of a
  token including its own (tests/test_internode.py ``num_rdma_token_sent``); by symmetry the
  remote share of those copies is 3/4 and 7/8, so the NIC carries 43.5 and 44.6 GB/s: 0.91
  and 0.93 of the 48 GB/s NCCL's rings reach on that NIC (NIC_EFFICIENCY x 50 GB/s).
0.88 puts the first at +5 % and the second at -3 % and -5 % (tests/test_collectives.py)."""

RING_PLATEAU_FACTOR = 1.4
"""A multi-node ring all_reduce on the Simple protocol takes 1.4x its step latencies.

NCCL's tuner (src/graph/tuning.cc, ``ncclTopoGetAlgoTime``, 2.12-2.23) multiplies the latency of
ring/Simple all_reduce across nodes by 1.4 on Ampere and later (1.9 before) whenever each rank's
share per channel is at least 64 B ("Plateau effect of ring"): the Simple protocol's chunks wait
on a flag and a network flush at every one of the 2(n-1) steps, so a long ring pays its step
latencies again while the pipeline fills and drains. It is NCCL's own figure, not ours."""

PLATEAU_MIN_BYTES_PER_RANK = 64 * 32
"""The plateau applies from 64 B per rank per channel; NCCL runs at most 32 channels
(MAXCHANNELS), so from 2 KiB per rank on every channel count."""

LL_MAX_BUSBW_GBPS = {"one_node": ((100, 282.0), (90, 141.0), (80, 87.7), (0, 39.0)),
                     "two_nodes": 39.0, "more_nodes": 20.4}
"""NCCL's ceiling on the LL protocol's bus bandwidth, GB/s (src/graph/tuning.cc ``llMaxBws``,
v2.21.5-1 L86-L90 and v2.27.3-1 L165-L170; the Blackwell row came with NCCL 2.25.1-1, commit
80f6bda4, v2.25.1-1 L151-L156): inside one node by GPU generation (Volta 39, Ampere 87.7, Hopper
141, Blackwell 2 x 141), across nodes by the host CPU's vendor (row ``Volta-N1/Intel-N2/Intel-N4``:
39 on two nodes, 20.4 on more; an AMD or mixed host takes row ``Ampere-N1/AMD-N2/AMD-N4``, 22.5
and 19.0, v2.25.1-1 L218-L219: not told apart here, the cluster names no CPU).
``ncclTopoTuneModel`` caps a ring's LL rate at it (``busBw = std::min(llMaxBw, busBw * .5)``,
v2.21.5-1 L180) and a tree's (``std::min(busBw*1.0/3.8, llMaxBw)``, L183): LL's
flag-per-8-bytes stores stop scaling with the links, so a large collective across nodes never
runs LL, whatever its ring latency saves."""


def ll_max_busbw_Bps(span: GroupSpan, f: Fabric) -> float:
    """NCCL's LL ceiling for a collective over ``span`` (``LL_MAX_BUSBW_GBPS``); infinite where
    the fabric names no NVIDIA GPU."""
    if f.compute_capability is None:
        return math.inf
    if span.nodes <= 1:
        cap = next(bw for cc, bw in LL_MAX_BUSBW_GBPS["one_node"]
                   if f.compute_capability >= cc)
    else:
        cap = LL_MAX_BUSBW_GBPS["two_nodes" if span.nodes == 2 else "more_nodes"]
    return cap * 1e9


PAT_BW_FACTOR = 0.75
"""PAT (all_gather / reduce_scatter at one rank per node, NCCL >= 2.23) reaches 3/4 of the ring's
bus bandwidth (tuning.cc: ``if (a == NCCL_ALGO_PAT) busBw *= .75``)."""

PAT_PER_RANK_US = 2.8
"""PAT's latency keeps a linear part: 8 us + log2(nodes) * (network hop / 3.5) + 2.8 us per rank
(tuning.cc, NCCL 2.23: "Still a linear part; hopefully we'll manage to remove it")."""

NVLS_TREE_NET_TRAFFIC = 2.0
"""Beyond two nodes NVLS+tree moves 2x a node's buffer per direction over its NICs (two on two).

Not fitted: the double binary tree's structure, and NCCL's own model (tuning.cc halves NVLSTree's
inter-node bandwidth when nNodes > 2). Measured: 4 nodes of 8 H100 on 8x 400G RoCE reach 320
GB/s all_reduce with NVLS on or off (NVIDIA/nccl #1221; 430 on two nodes), 248 nodes of 8 H200
about 350 (NVIDIA/nccl-tests #283); the 2-node figure (S per direction) put them at 526 and 482."""

TREE_BW_FACTOR = 0.92
"""Beyond two nodes a tree all_reduce reaches 0.92 of the ring's bus bandwidth.

NCCL's tuner (tuning.cc, ``ncclTopoTuneModel``, 2.8-2.23: ``if (a == NCCL_ALGO_TREE && coll ==
AllReduce) busBw = min(busBw*.92, ...)``) prices the tree so, which makes a large all_reduce run
as a ring and a small one as a tree. Measurements put the tree lower still: 150 against the ring's
190 GB/s on 5 nodes of 8 H100 (NVIDIA/nccl #1368), 36.8 against 43.6 GB/s on 8 nodes
(NVIDIA/nccl #319). On two nodes NCCL prices the tree at the intra-node rate (it can beat the
network: #812, #946), which the ring's NIC-bound rate used here already undercuts, so the factor
applies from three nodes on."""

# ... and per hop, by link kind:
_HOP_US = {"nvlink": {"tree": {"LL": 0.6, "LL128": 1.25, "Simple": 4.0},
                      "ring": {"LL": 0.6, "LL128": 1.9, "Simple": 3.4}},
           "pcie": {"tree": {"LL": 1.0, "LL128": 1.9, "Simple": 6.0},
                    "ring": {"LL": 1.0, "LL128": 2.5, "Simple": 5.7}},
           "net": {"tree": {"LL": NET_HOP_LL_US, "LL128": 8.5, "Simple": 14.0},
                   "ring": {"LL": NET_HOP_LL_US, "LL128": 4.0, "Simple": 14.0}}}


def intra_link_kind(nvlink_bw_Bps: float) -> str:
    """'pcie' for a GPU whose peers are reached over PCIe (no more than Gen5 x16's 64 GB/s one
    way, as the catalog's PCIe cards give it), else 'nvlink'."""
    return "pcie" if nvlink_bw_Bps <= 64e9 else "nvlink"


BUS_FACTOR = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
"""nccl-tests' bus-bandwidth factors (PERFORMANCE.md): busbw = algbw * factor(n)."""


@dataclass(frozen=True)
class LinkTier:
    bw_Bps: float
    """Per-GPU one-direction bandwidth."""
    efficiency: float
    """Achievable fraction of ``bw_Bps`` with the Simple protocol on large messages."""
    kind: str = "nvlink"
    """'nvlink', 'pcie' or 'net': selects NCCL's per-hop latencies."""

    @property
    def busbw_Bps(self) -> float:
        return self.bw_Bps * self.efficiency


@dataclass(frozen=True)
class GroupSpan:
    """Where a process group's ranks sit: ``size`` ranks, ``per_node`` of them in each node."""

    size: int
    per_node: int
    uneven_nodes: int | None = None
    """Nodes (NVLink domains) of a group whose shares differ (``collectives.placement``):
    ``per_node`` is then the smallest share, whose ranks send the most over their NICs; None:
    ``size // per_node`` nodes of ``per_node`` each."""
    max_channels: int | None = None
    """Channels (thread blocks) the group's communicator may run, its ``ncclConfig_t.maxCTAs``
    (a per-communicator NCCL_MAX_CTAS): across nodes its rings carry at most this many times
    ``NET_CHANNEL_Bps`` (``_ring_busbw``); None: NCCL's own count."""
    ranks: tuple[int, ...] | None = None
    """The group's GPUs where a backend prices it on real ranks (the flow backend's group that
    straddles nodes unevenly, ``collectives.placement.worst_group``): part of the span's
    identity, so two groups of one shape on different ranks are priced apart; None: the
    backend lays the group out from ``nodes`` and ``per_node``."""

    @property
    def nodes(self) -> int:
        return self.uneven_nodes or self.size // self.per_node


def group_span(size: int, stride: int, gpus_per_node: int) -> GroupSpan:
    """Span of a group of ``size`` ranks spaced ``stride`` apart in Megatron's rank order."""
    if size <= 1:
        return GroupSpan(max(size, 1), max(size, 1))
    if (size - 1) * stride < gpus_per_node:  # every rank on the first node (any stride)
        return GroupSpan(size, size)
    if stride >= gpus_per_node:
        return GroupSpan(size, 1)
    per_node = min(size, max(1, gpus_per_node // stride))
    if size % per_node:
        per_node = math.gcd(size, per_node)
    return GroupSpan(size, per_node)


@dataclass(frozen=True)
class Fabric:
    intra: LinkTier
    inter: LinkTier
    nvls: bool = False
    """The NVSwitch can reduce in the switch (NVLink SHARP)."""
    collnet: bool = False
    """The network switches can reduce (InfiniBand SHARP)."""
    nvls_efficiency: float = 0.85
    """NVLS traffic's share of the ring's achievable NVLink rate (GPUSpec.nvls_efficiency)."""
    compute_capability: int | None = None
    """The GPUs' CUDA compute capability (major*10+minor), which sets NCCL's LL ceiling inside
    one node (``ll_max_busbw_Bps``); None (no NVIDIA GPU): no ceiling."""
    nics_per_node: int | None = None
    """NICs a node has where fewer than its GPUs (``ClusterConfig.gpus_per_nic`` > 1): NCCL lays
    one ring per NIC (``collectives.ring_channels``), so a group whose ``per_node`` ranks reach
    that many NICs at most (``group_nics``) runs the channels of that many; None: one NIC a GPU.
    ``inter.bw_Bps`` is each GPU's share of its NIC either way."""
    gpus_per_nic: int = 1
    """GPUs sharing one NIC: a NIC's rate is ``inter.bw_Bps`` times it (NCCL's ring speed)."""


def group_nics(span: GroupSpan, f: Fabric) -> int:
    """NICs a node's ranks of ``span`` reach: one a rank, at most the node's NICs. A group
    spaced over a node (Megatron's data-parallel groups under TP) reaches as many NICs as it
    has ranks there, up to the node's; read so for a contiguous group too (the span keeps no
    stride)."""
    k = max(span.per_node, 1)
    return k if f.nics_per_node is None else max(1, min(k, f.nics_per_node))


@dataclass(frozen=True)
class CollectiveCost:
    time_s: float
    algorithm: str
    protocol: str
    busbw_Bps: float


NET_CHANNEL_Bps = 24e9
"""What one NCCL channel (one thread block) of a ring carries across nodes on Hopper and
Blackwell: the most NCCL's own plan gives a channel there. Its search rates a 400 Gb/s NIC's
ring at 48 GB/s (NVIDIA/nccl v2.28.3-1 src/graph/search.cc ``sm90SpeedArrayInter`` /
``sm100SpeedArrayInter``: the first speed under the NIC's 50 GB/s; an 800 Gb/s NIC's 96 is
first halved by ``ncclTopoDupChannels``), and ``ncclTopoPostset`` then runs two channels per
such ring on sm90 and later across nodes "to reach peak BW" (src/graph/connect.cc L473-476:
a ring rated over 45 GB/s gets a second channel): 24 GB/s a channel. The bound only binds
where a communicator's ``maxCTAs`` leaves fewer channels than that plan (``GroupSpan.
max_channels``; connect.cc L487-491 applies the cap after the doubling, keeping the first
rings, one per NIC). Derived from NCCL's code, not fitted and not measured: one channel may
carry up to the 45 GB/s at which NCCL stops doubling (the bound then binds less); an
nccl-tests reduce_scatter on two or more DGX B200 at NCCL_MAX_CTAS=8 would measure it
(benchmarks/mlperf8b_step.py part 6 shows the MLPerf 8B rows at 14-28 GB/s)."""


def _ring_busbw(span: GroupSpan, f: Fabric, algo: str = "ring") -> float:
    """Bottleneck bus bandwidth of NCCL's rings (and of the trees and PAT built on their links).

    Inside a node every ring step is an NVLink transfer. Across nodes NCCL builds one ring per
    NIC (rail-optimized): in each ring, one of a node's k ranks sends off-node through its own
    NIC instead of over NVLink, and each rank is that sender in 1/k of the rings. So a rank's
    NVLink carries (k-1)/k of its ring traffic and its NIC 1/k: the bound is the smaller of
    k/(k-1) times the NVLink rate and k times the NIC rate. The NIC rate of an ``algo`` in
    ``scale_terms.FABRIC_SCALE_ALGOS`` falls with the node count (``_scale``). A communicator
    capped at ``span.max_channels`` channels carries at most that many ``NET_CHANNEL_Bps``
    across nodes.
    """
    if span.nodes == 1:
        return f.intra.busbw_Bps
    k = span.per_node
    nic = k * _net_busbw(span, f) * _scale(span, algo)
    if span.max_channels is not None:
        nic = min(nic, span.max_channels * NET_CHANNEL_Bps)
    return nic if k == 1 else min(f.intra.busbw_Bps * k / (k - 1), nic)


def _scale(span: GroupSpan, algo: str) -> float:
    """``scale_terms.fabric_scale_share`` where ``algo`` pays it and the group has more than one
    rank per node (every measurement behind the constant does), else 1."""
    if algo not in scale_terms.FABRIC_SCALE_ALGOS or span.per_node == 1:
        return 1.0
    return scale_terms.fabric_scale_share(span.nodes)


def _net_busbw(span: GroupSpan, f: Fabric) -> float:
    """A rank's achievable network rate in a collective (ONE_RANK_PER_NODE_NET_SHARE)."""
    return f.inter.busbw_Bps * (ONE_RANK_PER_NODE_NET_SHARE if span.per_node == 1 else 1.0)


def _candidates(kind: str, span: GroupSpan, f: Fabric) -> list[str]:
    if kind in ("all_to_all", "send_recv"):
        return ["direct"]
    algos = ["ring"]
    if kind == "all_reduce" and span.nodes > 1:
        algos.append("tree")
    # NCCL 2.19-2.23 src/graph/tuning.cc: reduce_scatter and all_gather run only ring, NVLS or
    # CollNet Direct (NVLSTree is all_reduce's), and NVLS is disabled across nodes unless
    # CollNet (in-network reduction) is supported ("if (nNodes > 1) algoEnable[NVLS] = 0")
    if f.nvls and span.per_node > 1:
        if span.nodes == 1 and kind in ("all_reduce", "all_gather", "reduce_scatter"):
            algos.append("nvls")
        elif kind == "all_reduce":
            algos.append("nvls_tree")
    if f.collnet and kind == "all_reduce" and span.nodes > 1:
        algos.append("collnet")
    if kind in ("all_gather", "reduce_scatter") and span.per_node == 1 and span.nodes > 1:
        algos.append("pat")
    return algos


def _hop_us(kind: str, fam: str, proto: str) -> float:
    """One hop's latency; an EFA (TCPX) hop is a network hop plus ``scale_terms.EFA_HOP_US``
    (``TCPX_HOP_US``)."""
    if kind in ("efa", "tcpx"):
        extra = scale_terms.EFA_HOP_US if kind == "efa" else scale_terms.TCPX_HOP_US
        return _HOP_US["net"][fam][proto] + extra
    return _HOP_US[kind][fam][proto]


def _time(kind: str, size: float, span: GroupSpan, f: Fabric, algo: str, proto: str) -> float:
    n, k, nodes = span.size, span.per_node, span.nodes
    eff = PROTOCOL_EFFICIENCY[proto]
    fam = "tree" if algo in ("tree", "pat", "nvls_tree") else "ring"
    intra_hop, net_hop = _hop_us(f.intra.kind, fam, proto), _hop_us(f.inter.kind, fam, proto)
    if nodes > 1 and proto == "LL":
        intra_hop *= MULTINODE_LL_INTRA_FACTOR
    if k == 1 and nodes > 1:
        # "With ppn=1 latencies are fully exposed, use the Tree network latency" (tuning.cc):
        # no NVLink step hides a network hop behind it
        net_hop = _hop_us(f.inter.kind, "tree", proto)
    if algo == "direct":  # all_to_all / p2p: every peer at once, off-node data over own NIC
        net = _net_busbw(span, f) * ALL_TO_ALL_NET_SHARE if kind == "all_to_all" \
            else f.inter.busbw_Bps  # p2p: full
        off = (n - k) / n * size / (net * eff) if nodes > 1 else 0.0
        on = (k - 1) / n * size / (f.intra.busbw_Bps * eff) if kind == "all_to_all" else \
            size / ((f.inter if nodes > 1 else f.intra).busbw_Bps * eff)
        lat = _BASE_US["ring"][proto] + (net_hop if nodes > 1 else intra_hop)
        return lat * 1e-6 + max(on, off)
    factor = BUS_FACTOR[kind](n)
    phases = 2 if kind == "all_reduce" else 1
    if algo == "ring":
        # A chunk travels n-1 consecutive ring edges per phase. Of the ring's n edges, `nodes`
        # cross the network; n-1 consecutive edges miss only one edge, so the slowest chunk
        # crosses all `nodes` of them when a node holds more than one rank (NCCL's tuning.cc
        # counts 2 * nNodes network steps for a ring all_reduce), nodes-1 when each rank is a node.
        steps = phases * (n - 1)
        inter_steps = phases * ((nodes if k > 1 else nodes - 1) if nodes > 1 else 0)
        lat = _BASE_US["ring"][proto] + (steps - inter_steps) * intra_hop + inter_steps * net_hop
        if (kind == "all_reduce" and proto == "Simple" and nodes > 1
                and size / n >= PLATEAU_MIN_BYTES_PER_RANK):
            lat *= RING_PLATEAU_FACTOR
        bw = _ring_busbw(span, f) * eff
        if proto == "LL":
            bw = min(bw, ll_max_busbw_Bps(span, f))
        fill = 0.0
        if kind in ("broadcast", "reduce"):  # a chain from (to) the root: it fills
            forwarding = inter_steps + (steps - inter_steps if proto == "Simple" else 0)
            # across nodes NCCL's rings: one a NIC, duplicated (ring_channels); one node: the
            # NVLink search's, read as two a rank
            channels = ring_channels(group_nics(span, f), f.inter.bw_Bps * f.gpus_per_nic,
                                     f.compute_capability) if nodes > 1 else 2 * k
            fill = scale_terms.chain_fill_s(size, proto, eff, forwarding, channels, bw)
        return lat * 1e-6 + factor * size / bw + fill
    if algo == "pat" and proto != "Simple":
        return math.inf  # NCCL runs PAT with the Simple protocol only (tuning.cc, NCCL 2.23)
    if algo == "pat":
        depth = math.ceil(math.log2(nodes))
        lat = 8.0 + depth * net_hop / 3.5 + n * PAT_PER_RANK_US
        return lat * 1e-6 + factor * size / (_ring_busbw(span, f, algo) * eff * PAT_BW_FACTOR)
    if algo == "tree":
        depth = math.ceil(math.log2(nodes))
        lat = _BASE_US["tree"][proto] + phases * ((k - 1) * intra_hop + depth * net_hop)
        bw = _ring_busbw(span, f, algo) * eff * (TREE_BW_FACTOR if nodes > 2 else 1.0)
        if proto == "LL":
            bw = min(bw, ll_max_busbw_Bps(span, f))
        return lat * 1e-6 + factor * size / bw
    if proto != "Simple":
        return math.inf  # NVLS and CollNet run the Simple protocol only
    if algo == "collnet":  # the switches reduce: each rank sends and receives its data once
        lat = _BASE_US["collnet"]["Simple"] + 2 * (k - 1) * intra_hop + 2 * net_hop
        inter = size / (k * f.inter.busbw_Bps * _scale(span, algo))
        intra = size / f.intra.busbw_Bps
        return lat * 1e-6 + max(inter, intra)
    # NVLS: all_reduce pushes each rank's S through multimem reduce loads (S out, S/k in) and
    # multicast stores (S/k out, S in): (1 + 1/k) S per direction per GPU (NVIDIA, NVLink
    # SHARP in NCCL 2.17 release notes / H100 whitepaper). All-gather / reduce-scatter move
    # (k-1)/k S but in one switch hop instead of k-1. The multimem operations reach a smaller
    # share of the link than the ring's copies (Fabric.nvls_efficiency, NCCL's own figure).
    per_gpu = (1 + 1 / k) * size if kind == "all_reduce" else (k - 1) / k * size
    if algo == "nvls" and kind == "all_reduce":  # the kernel's three-stage pipeline fills
        per_gpu += (1 + 1 / k) * nvls_fill_bytes(size, k, f.compute_capability)
    lat = _BASE_US["nvls"]["Simple"] + intra_hop
    t = per_gpu / (f.intra.busbw_Bps * f.nvls_efficiency)
    if algo == "nvls_tree":  # NVLS inside each node, a tree of NICs across nodes
        depth = math.ceil(math.log2(nodes))
        lat += 2 * depth * net_hop
        # each node's reduced buffer goes up and comes down the tree once: S per direction,
        # spread over the node's k NICs, on two nodes. Beyond two, each node is interior in
        # one of the double binary trees' two halves (two children, one parent) and leaf in
        # the other: 2S per direction, half the per-NIC rate. NCCL's tuner says so itself
        # (src/graph/tuning.cc, ncclTopoTuneModel, NCCL 2.19-2.27: ``if (a ==
        # NCCL_ALGO_NVLS_TREE) bw = std::min(bwIntra, nNodes <= 2 ? bwInter : bwInter/2)``).
        t = max(t, size * (NVLS_TREE_NET_TRAFFIC if nodes > 2 else 1.0)
                / (k * f.inter.busbw_Bps * _scale(span, algo)))
    return lat * 1e-6 + t


def collective_cost(kind: str, size_bytes: float, span: GroupSpan, fabric: Fabric,
                    algorithm: str = "auto", protocol: str = "auto") -> CollectiveCost:
    """Time of one collective of ``size_bytes`` (nccl-tests' size: the output of all_gather,
    the input of reduce_scatter / all_reduce) and the algorithm and protocol that run it."""
    if kind not in BUS_FACTOR:
        raise ConfigError(f"unknown collective '{kind}'; known: {', '.join(BUS_FACTOR)}")
    algorithm = algorithm.lower()
    if algorithm != "auto" and algorithm not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm '{algorithm}'; known: {', '.join(ALGORITHMS)}")
    # NCCL reads NCCL_PROTO without regard to case (src/graph/tuning.cc ``parseList`` compares
    # each token with strcasecmp), so 'll128' is LL128 here as there.
    spelled = protocol.strip().lower()
    protocol = "auto" if spelled == "auto" else \
        {p.lower(): p for p in PROTOCOLS}.get(spelled, protocol)
    protos = PROTOCOLS if protocol == "auto" else (protocol,)
    if protocol != "auto" and protocol not in PROTOCOLS:
        raise ConfigError(f"unknown protocol '{protocol}'; known: {', '.join(PROTOCOLS)}")
    n = span.size
    if n <= 1 or size_bytes <= 0:
        return CollectiveCost(0.0, "none", "none", 0.0)
    if kind in ("all_to_all", "send_recv"):
        algorithm = "auto"  # NCCL_ALGO picks among collective algorithms; p2p has none to pick
    allowed = _candidates(kind, span, fabric)
    if algorithm != "auto":
        if algorithm not in allowed:
            why = {"nvls": "NVLink SHARP (an NVSwitch with NVLS: H100 and later) inside one node",
                   "nvls_tree": "an all_reduce, NVLink SHARP and more than one node",
                   "collnet": "in-network reduction (SHARP switches) and more than one node",
                   "tree": "an all_reduce across more than one node",
                   "pat": "all_gather/reduce_scatter with one rank per node"}.get(algorithm, "")
            raise ConfigError(f"algorithm '{algorithm}' cannot run {kind} on this group "
                              f"({n} ranks, {span.per_node} per node)"
                              + (f": needs {why}" if why else ""))
        allowed = [algorithm]
    best: CollectiveCost | None = None
    for algo in allowed:
        for proto in protos:
            t = _time(kind, size_bytes, span, fabric, algo, proto)
            if best is None or t < best.time_s:
                best = CollectiveCost(t, algo, proto, BUS_FACTOR[kind](n) * size_bytes / t
                                      if math.isfinite(t) and t > 0 else 0.0)
    assert best is not None
    if not math.isfinite(best.time_s):
        raise ConfigError(f"protocol {protocol} cannot run algorithm {algorithm}")
    return best
