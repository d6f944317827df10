"""The same ECMP routes as :class:`~trainsim.network.router.Router`, found without a
breadth-first search over the whole fabric per destination.

``Router.path`` walks from the source towards the destination, choosing among the next hops
that lie on a shortest path (by its hash); to know them it keeps the distance of every state
to every destination it has seen: one search and one list the size of the fabric per
destination GPU, which at 16,384 GPUs is seconds of search and gigabytes of lists. The walk
only needs to know which states lie on a shortest path from *this* source to *this*
destination, and that is a bidirectional search (Pohl 1971, "Bi-directional search", Machine
Intelligence 6): expand the source's ball forward and the destination's ball backward, one
level at a time, until they meet within the sum of their radii; the states whose two
distances add up to the shortest length are the shortest-path graph the walk moves in. A
ring's hop to the next GPU meets in one level each way, a hop across spines in three.

A walk that never had to choose between equal-cost hops does not depend on the ECMP key or
seed, so its path is shared by every channel (a ring's intra-node hops are the same links on
every channel). :func:`same_paths` is the check the tests run against ``Router``.
"""

from __future__ import annotations

from trainsim.errors import ConfigError
from trainsim.network.router import Router
from trainsim.network.topology import Topology


class ShortestPathRouter(Router):
    """``Router`` with paths found by bidirectional search and shared across keys where the
    walk had no choice; ``path`` returns exactly what ``Router.path`` returns."""

    def __init__(self, topology: Topology, seed: int = 0) -> None:
        super().__init__(topology, seed)
        n_states = self._n_states
        ptr = self._in_ptr.tolist()
        preds = self._src_state[self._in_links].tolist()
        self._pred: list[list[int]] = [preds[ptr[s]:ptr[s + 1]] for s in range(n_states)]
        self._succ: list[list[int]] = [[nxt for _, nxt in out] for out in self._out]
        self._between: dict[tuple[int, int], list[int]] = {}
        """Links from one state to another, in link order (the order of ``_out``)."""
        for lk, (a, b) in enumerate(zip(self._src_state.tolist(), self._dst_state)):
            self._between.setdefault((a, b), []).append(lk)
        self._gpu: list[bool] = self._is_gpu.tolist()
        self._keyless: dict[tuple[int, int], tuple[int, ...]] = {}
        self._num_gpus = topology.num_gpus

    def path(self, src: int, dst: int, key: int = 0) -> tuple[int, ...]:
        """Links from GPU rank ``src`` to GPU rank ``dst`` for connection ``key``."""
        out = self._keyless.get((src, dst))
        if out is not None:
            return out
        out = self._paths.get((src, dst, key))
        if out is not None:
            return out
        for r in (src, dst):
            if not 0 <= r < self._num_gpus:
                raise ConfigError(f"GPU {r} is not in topology {self.topology.name} "
                                  f"({self._num_gpus} GPUs)")
        out, chose = self._walk(src, dst, key)
        if chose:
            self._paths[(src, dst, key)] = out
        else:
            self._keyless[(src, dst)] = out
        return out

    def _walk(self, src: int, dst: int, key: int) -> tuple[tuple[int, ...], bool]:
        """The path ``Router.path`` takes, and whether an ECMP hash picked any hop."""
        topo = self.topology
        a, z = topo.gpus[src], topo.gpus[dst]
        if src == dst:
            return (), False
        length, fwd, back, reach = self._meet(a, z)
        if length < 0:
            raise ConfigError(
                f"no route from GPU {src} to GPU {dst} in topology {topo.name}: on isolated "
                "rail planes cross-rail traffic needs a PXN relay (pxn=True)")
        on_path = self._on_path(a, z, length, fwd, back, reach)
        hops, cur, base, chose, i = [], a, None, False, 0
        while cur != z:
            i += 1
            layer = on_path[i]
            if len(layer) == 1:
                cands = self._between.get((cur, next(iter(layer))), [])
            else:
                cands = sorted(lk for nxt in layer for lk in self._between.get((cur, nxt), ()))
            if len(cands) == 1:
                lk = cands[0]
            else:
                if base is None:
                    base = self._mix(src, dst, key)
                lk = cands[self._mix(base, cur) % len(cands)]
                chose = True
            hops.append(lk)
            cur = self._dst_state[lk]
        return tuple(hops), chose

    def _meet(self, a: int, z: int
              ) -> tuple[int, dict[int, int], dict[int, int], tuple[int, int]]:
        """Shortest length from state ``a`` to ``z`` through no GPU but the two ends (-1: no
        route), the forward distances from ``a`` and backward ones to ``z`` found, and how far
        each side is complete (a side that ran out of states is complete to any length).

        Each side is complete to its radius; a path of length L <= both radii summed passes
        a state known to both sides with distances summing to at most L, so the smallest
        such sum is the shortest length once it is within the radii's sum.
        """
        gpu = self._gpu
        fwd, back = {a: 0}, {z: 0}
        f_front, b_front = [a], [z]
        f_rad = b_rad = 0
        f_done = b_done = False
        best = -1
        while True:
            if best >= 0 and (f_done or b_done or best <= f_rad + b_rad):
                return best, fwd, back, (best if f_done else f_rad, best if b_done else b_rad)
            if f_done and b_done:
                return -1, fwd, back, (0, 0)
            grow_fwd = not f_done and (b_done or len(f_front) <= len(b_front))
            if grow_fwd:
                f_front, f_rad = self._expand(f_front, fwd, f_rad, self._succ), f_rad + 1
                f_done, new, other = not f_front, f_front, back
            else:
                b_front, b_rad = self._expand(b_front, back, b_rad, self._pred), b_rad + 1
                b_done, new, other = not b_front, b_front, fwd
            for s in new:
                d = other.get(s)
                if d is not None and (not gpu[s] or s == a or s == z):
                    total = fwd[s] + back[s]
                    if best < 0 or total < best:
                        best = total

    def _expand(self, front: list[int], dist: dict[int, int], radius: int,
                adj: list[list[int]]) -> list[int]:
        """The next level of a breadth-first search: neighbours of ``front`` not yet seen,
        expanding no GPU but the search's own end (as ``Router._distances``)."""
        gpu = self._gpu
        nxt: list[int] = []
        d = radius + 1
        for s in front:
            if radius and gpu[s]:
                continue
            for t in adj[s]:
                if t not in dist:
                    dist[t] = d
                    nxt.append(t)
        return nxt

    def _on_path(self, a: int, z: int, length: int, fwd: dict[int, int],
                 back: dict[int, int], reach: tuple[int, int]) -> list[set[int]]:
        """States at each position of some shortest path from ``a`` to ``z``: those with
        forward + backward distance = length, found from the meeting level outwards where
        one side's ball does not reach (a state before the meeting is on a path when it
        links to one on the next level; one after, when one on the previous links to it)."""
        gpu = self._gpu
        layers: list[set[int]] = [set() for _ in range(length + 1)]
        layers[0].add(a)
        layers[length].add(z)
        for s, df in fwd.items():
            db = back.get(s)
            if db is not None and df + db == length and 0 < df < length and not gpu[s]:
                layers[df].add(s)
        f_reach, b_reach = reach
        # Levels the backward ball does not reach: grow from the next level towards a.
        for i in range(length - 1, 0, -1):
            if length - i > b_reach:
                nxt = layers[i + 1]
                layers[i] = {s for s, df in fwd.items() if df == i and not gpu[s]
                             and any(t in nxt for t in self._succ[s])}
        # Levels the forward ball does not reach: grow from the previous level towards z.
        for i in range(1, length):
            if i > f_reach:
                prev = layers[i - 1]
                layers[i] = {s for s, db in back.items() if db == length - i and not gpu[s]
                             and any(t in prev for t in self._pred[s])}
        return layers


def same_paths(topology: Topology, seed: int, pairs, keys) -> bool:
    """True when ``ShortestPathRouter`` and ``Router`` give the same path (or the same
    error) for every ``(src, dst)`` in ``pairs`` and key in ``keys``."""
    fast, ref = ShortestPathRouter(topology, seed), Router(topology, seed)
    for src, dst in pairs:
        for key in keys:
            try:
                want = ref.path(src, dst, key)
            except ConfigError:
                want = None
            try:
                got = fast.path(src, dst, key)
            except ConfigError:
                got = None
            if got != want:
                return False
    return True
