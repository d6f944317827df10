"""Cluster topologies as graphs of GPUs, NICs and switches, and ECMP routing over them.

A :class:`Topology` is nodes plus directed links (capacity in B/s one way, latency in s).
GPU ``r`` of the cluster is ``topology.gpus[r]``; ``gpus_per_node`` is the size of a
scale-up (NVLink) domain, the unit that rail-aware rings and PXN work in.

Builders:

* :func:`nvswitch_node` - one node, every GPU on an NVSwitch with its NVLink bandwidth
  (gen 3 / A100 300 GB/s, gen 4 / H100 450 GB/s, gen 5 / B200 900 GB/s per direction:
  NVIDIA A100, H100 and B200 datasheets, 600 GB/s, 900 GB/s and 1.8 TB/s bidirectional).
* :func:`pcie_node` - GPUs on PCIe switches under one root complex (no NVLink).
* :func:`rail_fat_tree` - rail-optimized fat-tree, 2 or 3 tiers: NIC ``i`` of every node
  connects to the leaf of rail ``i`` in its scalable unit (NVIDIA DGX SuperPOD reference
  architectures, H100 RA-11333 "compute fabric"); spines shared by all rails or per rail
  plane (``planes='isolated'``: cross-rail traffic must use PXN); leaf oversubscription.
* :func:`spine_leaf` - top-of-rack leaves (all NICs of a node on one leaf), oversubscribed.
* :func:`nvl_domain` - NVL72-style racks: 72 GPUs on one NVLink switch fabric (GB200 NVL72:
  18 trays of 4 GPUs, 1.8 TB/s per GPU), trays' NICs on a rail-optimized scale-out fabric.
* :func:`torus` - ASTRA-sim style multi-dimensional network (Won et al., "ASTRA-sim2.0:
  Modeling Hierarchical Networks and Disaggregated Systems for Large-model Training at
  Scale", ISPASS 2023, Sec. III-B): per dimension a ring (torus), a switch or all-to-all
  links, with its own bandwidth and latency.

Routing (:class:`~trainsim.network.router.Router`, importable from here): shortest paths in hops, the next hop among equal-cost ones chosen
by a deterministic hash of ``(src, dst, key, seed, switch)`` as ECMP does (RFC 2992): two
connections can collide on a link, reproducibly for a seed. GPUs never forward traffic
(except through an explicit PXN relay) and a NIC only bridges its host and the fabric, so
same-rail traffic stays under its rail's leaf and cross-rail traffic climbs to a spine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from trainsim.errors import ConfigError
from trainsim.lazy import lazy_getattr
from trainsim.network.router import Router  # noqa: F401 - re-exported: its routes

NodeKind = Literal["gpu", "nic", "switch"]
NVLINK_GEN_BW_Bps = {3: 300e9, 4: 450e9, 5: 900e9}
"""Per-GPU NVLink bandwidth, one direction, by NVLink generation (A100, H100, B200)."""
PCIE_GEN_BW_Bps = {3: 15.75e9, 4: 31.5e9, 5: 63e9, 6: 126e9}
"""PCIe x16 bandwidth, one direction, by generation (PCI-SIG: 8/16/32/64 GT/s per lane)."""


@dataclass(frozen=True)
class Node:
    name: str
    kind: NodeKind
    host: int = -1
    """Server (or NVLink tray) the node sits in; -1 for fabric switches."""


@dataclass(frozen=True)
class Link:
    src: int
    dst: int
    bw_Bps: float
    latency_s: float = 0.0


@dataclass(frozen=True)
class Topology:
    name: str
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    gpus: tuple[int, ...]
    """Node index of GPU rank 0, 1, ..."""
    gpus_per_node: int = 1
    """GPUs per scale-up (NVLink) domain: rails and PXN relays are counted within it."""

    def __post_init__(self) -> None:
        n = len(self.nodes)
        for i, link in enumerate(self.links):
            if not (0 <= link.src < n and 0 <= link.dst < n) or link.src == link.dst:
                raise ConfigError(f"topology {self.name}: link {i} {link} has bad endpoints")
            if not (link.bw_Bps > 0 and math.isfinite(link.bw_Bps)):
                raise ConfigError(f"topology {self.name}: link {i} bandwidth {link.bw_Bps} "
                                  "must be positive and finite")
            if not link.latency_s >= 0:
                raise ConfigError(f"topology {self.name}: link {i} latency must be >= 0")
        if any(self.nodes[g].kind != "gpu" for g in self.gpus):
            raise ConfigError(f"topology {self.name}: gpus must index GPU nodes")
        if self.gpus_per_node < 1 or len(self.gpus) % self.gpus_per_node:
            raise ConfigError(f"topology {self.name}: {len(self.gpus)} GPUs are not whole "
                              f"nodes of gpus_per_node={self.gpus_per_node}")

    @property
    def num_gpus(self) -> int:
        return len(self.gpus)

    @property
    def num_nodes(self) -> int:
        return len(self.gpus) // self.gpus_per_node

    def links_between(self, a: int, b: int) -> list[int]:
        return [i for i, link in enumerate(self.links) if link.src == a and link.dst == b]


class _Builder:
    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.links: list[Link] = []
        self.gpus: list[int] = []

    def node(self, name: str, kind: NodeKind, host: int = -1) -> int:
        self.nodes.append(Node(name, kind, host))
        if kind == "gpu":
            self.gpus.append(len(self.nodes) - 1)
        return len(self.nodes) - 1

    def duplex(self, a: int, b: int, bw_Bps: float, latency_s: float) -> None:
        self.links += [Link(a, b, bw_Bps, latency_s), Link(b, a, bw_Bps, latency_s)]

    def build(self, name: str, gpus_per_node: int) -> Topology:
        return Topology(name, tuple(self.nodes), tuple(self.links), tuple(self.gpus),
                        gpus_per_node)


def _nvlink(gen: int, bw_Bps: float | None) -> float:
    if bw_Bps:
        return bw_Bps
    if gen not in NVLINK_GEN_BW_Bps:
        raise ConfigError(f"nvlink_gen={gen} unknown; use one of {sorted(NVLINK_GEN_BW_Bps)} "
                          "or give nvlink_bw_Bps")
    return NVLINK_GEN_BW_Bps[gen]


def _server(b: _Builder, host: int, gpus: int, scale_up: str, nvlink_bw_Bps: float,
            pcie_bw_Bps: float, nic_bw_Bps: float | None, nvlink_latency_s: float,
            pcie_latency_s: float, gpus_per_switch: int = 2, gpus_per_nic: int = 1) -> list[int]:
    """One server's GPUs (NVSwitch or PCIe tree) and one NIC per ``gpus_per_nic`` GPUs (GPU i
    on NIC i // gpus_per_nic, each GPU on its own PCIe link to it); returns the NICs."""
    g = [b.node(f"n{host}.gpu{i}", "gpu", host) for i in range(gpus)]
    nics = []
    if scale_up == "nvswitch":
        sw = b.node(f"n{host}.nvswitch", "switch", host)
        for x in g:
            b.duplex(x, sw, nvlink_bw_Bps, nvlink_latency_s)
        for i, x in enumerate(g):
            if nic_bw_Bps:
                if i % gpus_per_nic == 0:
                    nics.append(b.node(f"n{host}.nic{i // gpus_per_nic}", "nic", host))
                b.duplex(x, nics[-1], pcie_bw_Bps, pcie_latency_s)
    elif scale_up == "pcie":
        root = b.node(f"n{host}.root", "switch", host)
        for s in range(math.ceil(gpus / gpus_per_switch)):
            sw = b.node(f"n{host}.pcie{s}", "switch", host)
            b.duplex(sw, root, pcie_bw_Bps, pcie_latency_s)
            for i in range(s * gpus_per_switch, min(gpus, (s + 1) * gpus_per_switch)):
                b.duplex(g[i], sw, pcie_bw_Bps, pcie_latency_s)
                if nic_bw_Bps:
                    nics.append(b.node(f"n{host}.nic{i}", "nic", host))
                    b.duplex(sw, nics[-1], pcie_bw_Bps, pcie_latency_s)
    else:
        raise ConfigError(f"scale_up={scale_up!r} unknown; use nvswitch or pcie")
    return nics


def _check_nic_share(gpus_per_node: int, gpus_per_nic: int, scale_up: str) -> None:
    if gpus_per_nic < 1 or gpus_per_node % gpus_per_nic:
        raise ConfigError(f"gpus_per_nic={gpus_per_nic} must be >= 1 and divide "
                          f"gpus_per_node={gpus_per_node}")
    if gpus_per_nic > 1 and scale_up != "nvswitch":
        raise ConfigError("gpus_per_nic > 1 is built on an NVSwitch node; a PCIe node has a NIC "
                          "a GPU on its switches")


def nvswitch_node(gpus: int = 8, nvlink_gen: int = 4, nvlink_bw_Bps: float | None = None,
                  nvlink_latency_s: float = 0.5e-6) -> Topology:
    """One node: ``gpus`` GPUs on an NVSwitch, each with its generation's NVLink bandwidth."""
    b = _Builder()
    _server(b, 0, gpus, "nvswitch", _nvlink(nvlink_gen, nvlink_bw_Bps), 1.0, None,
            nvlink_latency_s, 0.0)
    return b.build(f"nvswitch-{gpus}", gpus)


def pcie_node(gpus: int = 8, pcie_gen: int = 4, gpus_per_switch: int = 2,
              pcie_bw_Bps: float | None = None, pcie_latency_s: float = 1e-6) -> Topology:
    """One PCIe-only node: pairs (``gpus_per_switch``) of GPUs per PCIe switch, switches on
    one root complex with an x16 uplink each: GPUs on different switches share it."""
    if pcie_gen not in PCIE_GEN_BW_Bps and not pcie_bw_Bps:
        raise ConfigError(f"pcie_gen={pcie_gen} unknown; use one of {sorted(PCIE_GEN_BW_Bps)}")
    b = _Builder()
    _server(b, 0, gpus, "pcie", 0.0, pcie_bw_Bps or PCIE_GEN_BW_Bps[pcie_gen], None, 0.0,
            pcie_latency_s, gpus_per_switch)
    return b.build(f"pcie-{gpus}", gpus)


def _fabric(b: _Builder, host_nics: list[list[int]], nic_bw_Bps: float, rails: bool,
            nodes_per_leaf: int, spines: int | None, oversubscription: float, planes: str,
            tiers: int, nodes_per_pod: int | None, cores: int | None,
            core_oversubscription: float, link_latency_s: float) -> None:
    """Leaves (one per rail and group of ``nodes_per_leaf`` hosts, or one per group when
    ``rails`` is False), spines, and for 3 tiers pods of ``nodes_per_pod`` hosts under core
    switches. Leaf uplink capacity = downlink capacity / ``oversubscription``, spread evenly
    over the spines (parallel cables between a leaf and a spine are one link of their sum)."""
    if nodes_per_leaf < 1 or oversubscription <= 0 or core_oversubscription <= 0:
        raise ConfigError("nodes_per_leaf must be >= 1 and oversubscription ratios > 0")
    if planes not in ("shared", "isolated"):
        raise ConfigError(f"planes={planes!r} unknown; use shared or isolated")
    if tiers not in (2, 3):
        raise ConfigError(f"tiers={tiers}: fat-trees here have 2 or 3 tiers")
    hosts = len(host_nics)
    per_pod = hosts if tiers == 2 else (nodes_per_pod or nodes_per_leaf * 4)
    if per_pod % nodes_per_leaf and per_pod < hosts:
        raise ConfigError(f"nodes_per_pod={per_pod} must be a multiple of "
                          f"nodes_per_leaf={nodes_per_leaf}")
    spines = spines or nodes_per_leaf
    width = max(len(n) for n in host_nics) if rails else 1
    plane_ids = range(width) if planes == "isolated" else [0]
    pod_spines: list[dict[int, list[int]]] = []
    spine_down: dict[int, float] = {}
    for pod, first in enumerate(range(0, hosts, per_pod)):
        pod_hosts = range(first, min(hosts, first + per_pod))
        sp = {p: [b.node(f"pod{pod}.plane{p}.spine{s}", "switch") for s in range(spines)]
              for p in plane_ids}
        pod_spines.append(sp)
        for g0 in range(pod_hosts.start, pod_hosts.stop, nodes_per_leaf):
            group = range(g0, min(pod_hosts.stop, g0 + nodes_per_leaf))
            for r in range(width):
                if rails:
                    members = [host_nics[h][r] for h in group if r < len(host_nics[h])]
                else:
                    members = [nic for h in group for nic in host_nics[h]]
                leaf = b.node(f"pod{pod}.leaf{g0 // nodes_per_leaf}.rail{r}", "switch")
                for nic in members:
                    b.duplex(nic, leaf, nic_bw_Bps, link_latency_s)
                up = len(members) * nic_bw_Bps / oversubscription / spines
                for s in sp[r if planes == "isolated" else 0]:
                    b.duplex(leaf, s, up, link_latency_s)
                    spine_down[s] = spine_down.get(s, 0.0) + up
    if tiers == 3 and len(pod_spines) > 1:
        cores = cores or spines
        for p in plane_ids:
            core = [b.node(f"plane{p}.core{c}", "switch") for c in range(cores)]
            for sp in pod_spines:
                for s in sp[p]:
                    for c in core:
                        b.duplex(s, c, spine_down[s] / core_oversubscription / cores,
                                 link_latency_s)


def rail_fat_tree(nodes: int = 4, gpus_per_node: int = 8, nic_bw_Bps: float = 50e9,
                  nvlink_gen: int = 4, nvlink_bw_Bps: float | None = None,
                  pcie_bw_Bps: float = 64e9, scale_up: str = "nvswitch", tiers: int = 2,
                  nodes_per_leaf: int = 32, spines: int | None = None,
                  oversubscription: float = 1.0, planes: str = "shared",
                  nodes_per_pod: int | None = None, cores: int | None = None,
                  core_oversubscription: float = 1.0, nvlink_latency_s: float = 0.5e-6,
                  pcie_latency_s: float = 0.5e-6, link_latency_s: float = 0.6e-6,
                  name: str = "rail-fat-tree", gpus_per_nic: int = 1) -> Topology:
    """Rail-optimized fat-tree: ``nodes`` servers of ``gpus_per_node`` GPUs, one NIC per
    ``gpus_per_nic`` GPUs (``nic_bw_Bps`` each GPU's share: a NIC carries ``gpus_per_nic``
    times it), NIC ``i`` on the rail-``i`` leaf of its group of ``nodes_per_leaf`` servers."""
    if nodes < 1 or gpus_per_node < 1:
        raise ConfigError(f"nodes={nodes} and gpus_per_node={gpus_per_node} must be >= 1")
    _check_nic_share(gpus_per_node, gpus_per_nic, scale_up)
    b = _Builder()
    nvl = _nvlink(nvlink_gen, nvlink_bw_Bps) if scale_up == "nvswitch" else 0.0
    nics = [_server(b, h, gpus_per_node, scale_up, nvl, pcie_bw_Bps, nic_bw_Bps,
                    nvlink_latency_s, pcie_latency_s, gpus_per_nic=gpus_per_nic)
            for h in range(nodes)]
    _fabric(b, nics, nic_bw_Bps * gpus_per_nic, True, nodes_per_leaf, spines, oversubscription, planes, tiers,
            nodes_per_pod, cores, core_oversubscription, link_latency_s)
    return b.build(name, gpus_per_node)


def spine_leaf(nodes: int = 4, gpus_per_node: int = 8, nic_bw_Bps: float = 50e9,
               nvlink_gen: int = 4, nvlink_bw_Bps: float | None = None,
               pcie_bw_Bps: float = 64e9, nodes_per_leaf: int = 4, spines: int | None = None,
               oversubscription: float = 1.0, link_latency_s: float = 0.6e-6,
               name: str = "spine-leaf", gpus_per_nic: int = 1) -> Topology:
    """Classic 2-tier Clos with top-of-rack leaves: all NICs of a server on one leaf (one NIC
    per ``gpus_per_nic`` GPUs, as in :func:`rail_fat_tree`)."""
    _check_nic_share(gpus_per_node, gpus_per_nic, "nvswitch")
    b = _Builder()
    nics = [_server(b, h, gpus_per_node, "nvswitch", _nvlink(nvlink_gen, nvlink_bw_Bps),
                    pcie_bw_Bps, nic_bw_Bps, 0.5e-6, 0.5e-6, gpus_per_nic=gpus_per_nic)
            for h in range(nodes)]
    _fabric(b, nics, nic_bw_Bps * gpus_per_nic, False, nodes_per_leaf, spines, oversubscription, "shared", 2,
            None, None, 1.0, link_latency_s)
    return b.build(name, gpus_per_node)


def nvl_domain(domains: int = 1, gpus_per_domain: int = 72, gpus_per_host: int = 4,
               nvlink_gen: int = 5, nvlink_bw_Bps: float | None = None,
               nic_bw_Bps: float = 100e9, pcie_bw_Bps: float = 126e9,
               nodes_per_leaf: int = 32, spines: int | None = None,
               oversubscription: float = 1.0, nvlink_latency_s: float = 0.7e-6,
               link_latency_s: float = 0.6e-6, name: str = "nvl72") -> Topology:
    """NVL72-style racks: ``gpus_per_domain`` GPUs on one NVLink switch fabric (trays of
    ``gpus_per_host`` GPUs, one NIC each: GB200 compute tray, ConnectX-8 800 Gb/s),
    trays on a rail-optimized fat-tree (rail = GPU position in its tray)."""
    if gpus_per_domain % gpus_per_host:
        raise ConfigError(f"gpus_per_domain={gpus_per_domain} is not a multiple of "
                          f"gpus_per_host={gpus_per_host}")
    b = _Builder()
    nvl = _nvlink(nvlink_gen, nvlink_bw_Bps)
    host_nics = []
    for d in range(domains):
        sw = b.node(f"d{d}.nvswitch", "switch")
        for t in range(gpus_per_domain // gpus_per_host):
            host = len(host_nics)
            nics = []
            for i in range(gpus_per_host):
                g = b.node(f"d{d}.t{t}.gpu{i}", "gpu", host)
                b.duplex(g, sw, nvl, nvlink_latency_s)
                nics.append(b.node(f"d{d}.t{t}.nic{i}", "nic", host))
                b.duplex(g, nics[-1], pcie_bw_Bps, 0.5e-6)
            host_nics.append(nics)
    if domains > 1:
        _fabric(b, host_nics, nic_bw_Bps, True, nodes_per_leaf, spines, oversubscription,
                "shared", 2, None, None, 1.0, link_latency_s)
    return b.build(name, gpus_per_domain)


def torus(dims: tuple[int, ...] = (4, 4, 4), dim_bw_Bps: tuple[float, ...] = (100e9,) * 3,
          kinds: tuple[str, ...] | None = None, dim_latency_s: tuple[float, ...] | None = None,
          gpus_per_node: int = 1, name: str = "torus") -> Topology:
    """Multi-dimensional network, ASTRA-sim style: GPU ``(x0, x1, ...)`` (x0 fastest) has a
    router; in dimension ``d`` routers form a ring (``'ring'``: a torus; ``dim_bw_Bps[d]`` per
    link and direction), share a switch (``'switch'``: that much per GPU) or are all linked
    (``'fully_connected'``: that much per GPU split over its ``k-1`` peers). ``gpus_per_node``
    consecutive GPUs form one scale-up domain (usually ``dims[0]`` behind a switch)."""
    dims = tuple(int(k) for k in dims)
    kinds = tuple(kinds or ("ring",) * len(dims))
    lat = tuple(dim_latency_s or (0.5e-6,) * len(dims))
    if not dims or any(k < 1 for k in dims) or not len(dims) == len(dim_bw_Bps) == len(kinds) \
            == len(lat):
        raise ConfigError(f"torus: dims {dims}, dim_bw_Bps {dim_bw_Bps}, kinds {kinds} and "
                          "dim_latency_s must have one positive entry per dimension")
    b = _Builder()
    count = math.prod(dims)
    coords = [tuple((g // math.prod(dims[:d])) % dims[d] for d in range(len(dims)))
              for g in range(count)]
    routers = []
    for g in range(count):
        gpu = b.node(f"gpu{g}", "gpu", g)
        routers.append(b.node(f"router{g}", "switch", g))
        b.duplex(gpu, routers[-1], sum(dim_bw_Bps) * 2, 0.0)
    for d, (k, bw, kind) in enumerate(zip(dims, dim_bw_Bps, kinds)):
        if k == 1:
            continue
        lines: dict[tuple, list[int]] = {}
        for g, c in enumerate(coords):
            lines.setdefault(c[:d] + c[d + 1:], []).append(g)
        for members in lines.values():
            if kind == "ring":
                for i in range(k if k > 2 else 1):
                    b.duplex(routers[members[i]], routers[members[(i + 1) % k]], bw, lat[d])
            elif kind == "switch":
                sw = b.node(f"dim{d}.switch{len(b.nodes)}", "switch")
                for g in members:
                    b.duplex(routers[g], sw, bw, lat[d])
            elif kind == "fully_connected":
                for i, a in enumerate(members):
                    for c in members[i + 1:]:
                        b.duplex(routers[a], routers[c], bw / (k - 1), lat[d])
            else:
                raise ConfigError(f"torus kind {kind!r} unknown; use ring, switch or "
                                  "fully_connected")
    return b.build(name, gpus_per_node)


__getattr__ = lazy_getattr(__name__, dict.fromkeys(
    ("BUILDERS", "PRESET_DIR", "topology_names", "topology_from_dict", "load_topology",
     "fabric_size", "from_cluster"), "trainsim.network.topology_files"), globals())
"""Topology files, presets and cluster configs to topologies live in
:mod:`trainsim.network.topology_files`; read here on first use, as before the split."""
