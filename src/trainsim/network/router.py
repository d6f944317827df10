"""ECMP routing over a :class:`~trainsim.network.topology.Topology`: shortest paths in hops, the
next hop among equal-cost ones chosen by a deterministic hash of ``(src, dst, key, seed,
switch)`` as ECMP does (RFC 2992), so two connections can collide on a link, reproducibly for a
seed. GPUs never forward traffic (except through an explicit PXN relay) and a NIC only bridges
its host and the fabric, so same-rail traffic stays under its rail's leaf and cross-rail
traffic climbs to a spine. ``network.routing.ShortestPathRouter`` finds the same paths faster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trainsim.errors import ConfigError

if TYPE_CHECKING:
    from trainsim.network.topology import Topology


class Router:
    """Shortest-path ECMP routes between GPUs of one topology (paths are link indices).

    Routing runs on a state graph where a NIC has two states, entered from its host or from
    the fabric, so a NIC only bridges the two; GPUs other than the endpoints never forward.
    """

    def __init__(self, topology: Topology, seed: int = 0) -> None:
        self.topology = topology
        self.seed = int(seed)
        nodes, links = topology.nodes, topology.links
        n = len(nodes)
        is_nic = [nd.kind == "nic" for nd in nodes]

        def host_side(a: int, b: int) -> bool:
            return nodes[a].host >= 0 and nodes[a].host == nodes[b].host

        src_state = np.empty(len(links), np.int64)
        dst_state = np.empty(len(links), np.int64)
        for i, lk in enumerate(links):
            src_state[i] = n + lk.src if is_nic[lk.src] and host_side(lk.src, lk.dst) else lk.src
            dst_state[i] = lk.dst if not is_nic[lk.dst] or host_side(lk.src, lk.dst) \
                else n + lk.dst
        self._n_states = 2 * n
        self._dst_state = dst_state.tolist()
        self._src_state = src_state
        self._is_gpu = np.zeros(2 * n, bool)
        self._is_gpu[[i for i, nd in enumerate(nodes) if nd.kind == "gpu"]] = True
        order = np.argsort(dst_state, kind="stable")
        self._in_links = order
        self._in_ptr = np.searchsorted(dst_state[order], np.arange(2 * n + 1))
        self._out: list[list[tuple[int, int]]] = [[] for _ in range(2 * n)]
        for i in range(len(links)):
            self._out[int(src_state[i])].append((i, self._dst_state[i]))
        self._dist: dict[int, list[int]] = {}
        self._paths: dict[tuple[int, int, int], tuple[int, ...]] = {}

    def _distances(self, target: int) -> list[int]:
        """Hops from every state to node ``target`` (-1: unreachable); breadth-first over
        incoming links, never expanding through a GPU other than the target."""
        got = self._dist.get(target)
        if got is not None:
            return got
        dist = np.full(self._n_states, -1, np.int64)
        dist[target] = 0
        frontier = np.array([target])
        d = 0
        while frontier.size:
            if d:
                frontier = frontier[~self._is_gpu[frontier]]
            starts, stops = self._in_ptr[frontier], self._in_ptr[frontier + 1]
            lens = stops - starts
            total = int(lens.sum())
            if not total:
                break
            offsets = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(total)
            preds = self._src_state[self._in_links[offsets]]
            preds = np.unique(preds[dist[preds] < 0])
            d += 1
            dist[preds] = d
            frontier = preds
        got = self._dist[target] = dist.tolist()
        return got

    def _mix(self, *values: int) -> int:
        """splitmix64-style hash: deterministic across runs and platforms (unlike hash())."""
        h = (0x9E3779B97F4A7C15 ^ self.seed) & 0xFFFFFFFFFFFFFFFF
        for v in values:
            h = ((h ^ (v & 0xFFFFFFFFFFFFFFFF)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
            h ^= h >> 29
            h = (h * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
            h ^= h >> 32
        return h

    def path(self, src: int, dst: int, key: int = 0) -> tuple[int, ...]:
        """Links from GPU rank ``src`` to GPU rank ``dst`` for connection ``key``."""
        topo = self.topology
        for r in (src, dst):
            if not 0 <= r < topo.num_gpus:
                raise ConfigError(f"GPU {r} is not in topology {topo.name} "
                                  f"({topo.num_gpus} GPUs)")
        cached = self._paths.get((src, dst, key))
        if cached is not None:
            return cached
        a, z = topo.gpus[src], topo.gpus[dst]
        dist = self._distances(z)
        if src == dst:
            out: tuple[int, ...] = ()
        elif dist[a] < 0:
            raise ConfigError(
                f"no route from GPU {src} to GPU {dst} in topology {topo.name}: on isolated "
                "rail planes cross-rail traffic needs a PXN relay (pxn=True)")
        else:
            hops, cur, base = [], a, self._mix(src, dst, key)
            while cur != z:
                want = dist[cur] - 1
                cands = [lk for lk, nxt in self._out[cur]
                         if dist[nxt] == want and (nxt == z or not self._is_gpu[nxt])]
                lk = cands[0] if len(cands) == 1 else cands[self._mix(base, cur) % len(cands)]
                hops.append(lk)
                cur = self._dst_state[lk]
            out = tuple(hops)
        self._paths[(src, dst, key)] = out
        return out


__all__ = ["Router"]
