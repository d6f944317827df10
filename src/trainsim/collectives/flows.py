"""The point-to-point flows NCCL issues for a collective, step by step.

A collective over ``ranks`` (global GPU indices) becomes a :class:`FlowSchedule`: flows
``(src, dst, bytes, step, channel, via)``. Within a channel, step ``k + 1`` may start once
step ``k`` is done; channels run in parallel, each carrying ``1/C`` of the message, as NCCL's
channels do (one CUDA block and one connection per peer each; NCCL docs, "Environment
variables: NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS").

Algorithms (nccl-tests ``PERFORMANCE.md`` gives the byte counts each must move):

* ring all-reduce: reduce-scatter then all-gather, ``2(n-1)`` steps; in every step each rank
  sends one chunk of ``S / (C n)`` to its ring successor, so a rank sends ``2(n-1)/n * S``.
* ring all-gather / reduce-scatter: ``n-1`` such steps, ``(n-1)/n * S`` per rank.
* double binary tree all-reduce (NCCL >= 2.4; Sanders, Speck & Traeff 2009, "Two-tree
  algorithms for full bandwidth broadcast, reduction and scan"; NVIDIA blog "Massively Scale
  Your Deep Learning Training with NCCL 2.4"): two trees, each reducing half of the message
  up and broadcasting it down, pipelined in chunks. Between nodes the trees are the in-order
  binary tree and its mirror (shift for odd counts); inside a node a chain, as NCCL builds.
* direct all-to-all: every ordered pair exchanges ``S / n``.
* broadcast / reduce: a pipelined chain from (to) the root.
* send/recv: one flow.

Rail-aware rings: on a rail-optimized cluster NIC ``i`` of every node sits on rail ``i``.
Channel ``c`` visits each node's GPUs in local order starting at local GPU ``c`` and ending at
``c - 1``; the hop to the next node must land on GPU ``c`` of that node. With PXN (NCCL >= 2.12,
``NCCL_PXN_DISABLE=0``; NVIDIA blog "Doubling all2all Performance with NCCL 2.12") the last GPU
hands the data over NVLink to the local GPU on the destination's rail, whose NIC sends it:
``via`` names that relay GPU. All cross-node bytes of channel ``c`` then stay on rail ``c``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from trainsim.errors import ConfigError

DEFAULT_CHUNK_BYTES = 512 * 2**10
"""Pipelining chunk of tree/chain algorithms (NCCL's Simple-protocol slice is of this order)."""
MAX_CHUNKS = 64

FLOW_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "all_reduce": ("ring", "tree"),
    "all_gather": ("ring",),
    "reduce_scatter": ("ring",),
    "all_to_all": ("direct",),
    "broadcast": ("ring",),
    "reduce": ("ring",),
    "send_recv": ("p2p",),
}
"""Collectives and the algorithms decomposed here; the first is the default ('auto')."""


@dataclass(frozen=True)
class Flow:
    """One point-to-point transfer of ``bytes`` from GPU ``src`` to GPU ``dst``."""

    src: int
    dst: int
    bytes: float
    step: int = 0
    """Order within the channel: step k+1 starts when step k has finished."""
    channel: int = 0
    """NCCL channel (also the connection: flows of one channel between two GPUs share a path)."""
    via: int | None = None
    """PXN relay: the GPU on the source's node whose NIC sends the data (None: src's own)."""


@dataclass(frozen=True)
class FlowSchedule:
    """Flows in compact form: ``flows`` (steps ``0..period-1``) repeated ``repeat`` times.

    Repetition ``r`` shifts every step by ``r * period``. Ring algorithms repeat one identical
    step ``2(n-1)`` or ``n-1`` times, so a 1,024-rank ring is ``n * C`` flows, not millions.
    :meth:`expand` lists every flow.
    """

    flows: tuple[Flow, ...] = ()
    repeat: int = 1

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise ConfigError(f"FlowSchedule.repeat={self.repeat} must be >= 1")

    @property
    def period(self) -> int:
        return 1 + max((f.step for f in self.flows), default=-1)

    def __len__(self) -> int:
        return len(self.flows) * self.repeat

    def expand(self) -> tuple[Flow, ...]:
        p = self.period
        return tuple(Flow(f.src, f.dst, f.bytes, f.step + r * p, f.channel, f.via)
                     for r in range(self.repeat) for f in self.flows)

    @property
    def total_bytes(self) -> float:
        return self.repeat * math.fsum(f.bytes for f in self.flows)

    def sent_bytes(self) -> dict[int, float]:
        """Bytes each source GPU sends over the whole collective."""
        return self._sum(lambda f: f.src)

    def received_bytes(self) -> dict[int, float]:
        return self._sum(lambda f: f.dst)

    def _sum(self, key) -> dict[int, float]:
        parts: dict[int, list[float]] = {}
        for f in self.flows:
            parts.setdefault(key(f), []).append(f.bytes)
        return {k: self.repeat * math.fsum(v) for k, v in parts.items()}


EMPTY = FlowSchedule()


def _check(ranks: Sequence[int], size_bytes: float) -> list[int]:
    out = [int(r) for r in ranks]
    if any(r < 0 for r in out):
        raise ConfigError(f"ranks must be GPU indices >= 0, got {out}")
    if len(set(out)) != len(out):
        raise ConfigError(f"ranks contain duplicates: {out}")
    if not math.isfinite(size_bytes) or size_bytes < 0:
        raise ConfigError(f"size_bytes={size_bytes} must be finite and >= 0")
    return out


def _by_node(ranks: list[int], gpus_per_node: int | None) -> list[list[int]]:
    """Group members per node (nodes in order of first appearance, members by local index)."""
    if not gpus_per_node:
        return [list(ranks)]
    nodes: dict[int, list[int]] = {}
    for r in ranks:
        nodes.setdefault(r // gpus_per_node, []).append(r)
    return [sorted(m, key=lambda r: r % gpus_per_node) for m in nodes.values()]


def pxn_relay(src: int, dst: int, gpus_per_node: int | None, pxn: bool = True) -> int | None:
    """The GPU on ``src``'s node and ``dst``'s rail that relays a cross-rail send (PXN).

    None when PXN is off, the transfer stays in one node, or src is already on dst's rail.
    """
    if not pxn or not gpus_per_node:
        return None
    if src // gpus_per_node == dst // gpus_per_node or src % gpus_per_node == dst % gpus_per_node:
        return None
    return (src // gpus_per_node) * gpus_per_node + dst % gpus_per_node


def default_channels(ranks: Sequence[int], gpus_per_node: int | None) -> int:
    """One channel per rail a multi-node group uses (so every NIC carries one ring), else 1."""
    groups = _by_node(list(ranks), gpus_per_node)
    return max(len(m) for m in groups) if len(groups) > 1 else 1


def ring_orders(ranks: Sequence[int], channels: int, gpus_per_node: int | None = None
                ) -> list[list[int]]:
    """Ring order of every channel: node by node, each node's GPUs rotated to start at local
    GPU ``c`` so the ring enters every node on rail ``c`` (single node: the given order)."""
    groups = _by_node(list(ranks), gpus_per_node)
    if len(groups) == 1:
        return [list(ranks) for _ in range(channels)]
    return [[r for m in groups for r in m[c % len(m):] + m[:c % len(m)]] for c in range(channels)]


def _ring(ranks: list[int], size_bytes: float, steps: int, channels: int | None,
          gpus_per_node: int | None, pxn: bool) -> FlowSchedule:
    n = len(ranks)
    if n < 2 or size_bytes == 0:
        return EMPTY
    c_count = channels or default_channels(ranks, gpus_per_node)
    chunk = size_bytes / (c_count * n)
    flows: list[Flow] = []
    g = gpus_per_node if pxn else None
    for c, order in enumerate(ring_orders(ranks, c_count, gpus_per_node)):
        if g:  # pxn_relay, inlined: a ring at 16,384 GPUs has 131,072 flows
            flows += [Flow(a, b, chunk, 0, c, None if a // g == b // g or a % g == b % g
                           else a - a % g + b % g)
                      for a, b in zip(order, order[1:] + order[:1])]
        else:
            flows += [Flow(a, b, chunk, 0, c) for a, b in zip(order, order[1:] + order[:1])]
    return FlowSchedule(tuple(flows), steps)


def ring_all_reduce(ranks: Sequence[int], size_bytes: float, channels: int | None = None,
                    gpus_per_node: int | None = None, pxn: bool = True) -> FlowSchedule:
    """Ring all-reduce: ``2(n-1)`` steps of one ``S/(C n)`` chunk per rank and channel."""
    r = _check(ranks, size_bytes)
    return _ring(r, size_bytes, 2 * (len(r) - 1), channels, gpus_per_node, pxn)


def ring_all_gather(ranks: Sequence[int], size_bytes: float, channels: int | None = None,
                    gpus_per_node: int | None = None, pxn: bool = True) -> FlowSchedule:
    """Ring all-gather of an ``S``-byte output buffer: ``n-1`` steps."""
    r = _check(ranks, size_bytes)
    return _ring(r, size_bytes, len(r) - 1, channels, gpus_per_node, pxn)


def ring_reduce_scatter(ranks: Sequence[int], size_bytes: float, channels: int | None = None,
                        gpus_per_node: int | None = None, pxn: bool = True) -> FlowSchedule:
    """Ring reduce-scatter of an ``S``-byte input buffer: ``n-1`` steps, the same flows as
    all-gather (each step forwards a partial sum instead of a finished chunk)."""
    return ring_all_gather(ranks, size_bytes, channels, gpus_per_node, pxn)


def btree_parents(n: int) -> list[int]:
    """In-order binary tree over ``0..n-1`` rooted at 0 (its only child is the top of the
    rest): a rank's parent clears its lowest set bit and sets the next one, or just clears
    it where that would leave the range. Depth is ``ceil(log2 n)``."""
    parents = [-1] * n
    for r in range(1, n):
        low = r & -r
        up = (r ^ low) | (low << 1)
        parents[r] = up if up < n else r ^ low
    return parents


def double_tree_parents(n: int) -> tuple[list[int], list[int]]:
    """The two complementary trees of NCCL's double binary tree: the second is the first
    mirrored (even n) or shifted by one (odd n), so a rank that is inner in one tree is a
    leaf in the other and every rank's links carry the same load."""
    first = btree_parents(n)
    if n % 2 == 0:
        second = [-1 if first[n - 1 - r] < 0 else n - 1 - first[n - 1 - r] for r in range(n)]
    else:
        second = [-1 if first[(r - 1) % n] < 0 else (first[(r - 1) % n] + 1) % n
                  for r in range(n)]
    return first, second


def _depths(parent: dict[int, int]) -> dict[int, int]:
    depth: dict[int, int] = {}
    for start in parent:
        chain, r = [], start
        while r not in depth and r != -1:
            chain.append(r)
            r = parent[r]
        d = -1 if r == -1 else depth[r]
        for x in reversed(chain):
            d += 1
            depth[x] = d
    return depth


def tree_all_reduce(ranks: Sequence[int], size_bytes: float, channels: int | None = None,
                    gpus_per_node: int | None = None, pxn: bool = True,
                    chunk_bytes: float = DEFAULT_CHUNK_BYTES) -> FlowSchedule:
    """Double binary tree all-reduce, pipelined in chunks (simplified but byte-exact).

    ``channels`` (rounded up to even; default one per rail in use) are split into tree
    pairs; channel ``2p + t`` runs tree ``t`` on ``S / channels`` bytes, entering each node
    on its own rail.
    Chunk ``j`` goes up from depth ``d`` at step ``j + D - d`` and down to depth ``d`` at step
    ``j + D + d - 1`` (``D`` the depth of the tree), so reduction and broadcast overlap as in
    NCCL. Every non-root rank of a tree sends its share up once and receives it down once:
    ``2 (n-1) S`` bytes in all, as for the ring.
    """
    r = _check(ranks, size_bytes)
    n = len(r)
    if n < 2 or size_bytes == 0:
        return EMPTY
    pairs = max(1, math.ceil((channels or default_channels(r, gpus_per_node)) / 2))
    share = size_bytes / (2 * pairs)
    chunks = int(min(MAX_CHUNKS, max(1, math.ceil(share / max(chunk_bytes, 1.0)))))
    piece = share / chunks
    groups = _by_node(r, gpus_per_node)
    if len(groups) == 1:
        groups = [[x] for x in r]  # one node: a plain double binary tree over the ranks
    node_trees = double_tree_parents(len(groups))
    flows = []
    for ch in range(2 * pairs):
        node_parent = node_trees[ch % 2]
        chains = [m[ch % len(m):] + m[:ch % len(m)] for m in groups]
        parent: dict[int, int] = {}
        for g, chain in enumerate(chains):
            up = node_parent[g]
            parent[chain[0]] = -1 if up < 0 else chains[up][0]
            for a, b in pairwise(chain):
                parent[b] = a
        depth = _depths(parent)
        top = max(depth.values())
        for x, p in parent.items():
            if p < 0:
                continue
            d = depth[x]
            for j in range(chunks):
                flows.append(Flow(x, p, piece, j + top - d, ch, pxn_relay(x, p, gpus_per_node, pxn)))
                flows.append(Flow(p, x, piece, j + top + d - 1, ch,
                                  pxn_relay(p, x, gpus_per_node, pxn)))
    return FlowSchedule(tuple(flows))


def direct_all_to_all(ranks: Sequence[int], size_bytes: float, gpus_per_node: int | None = None,
                      pxn: bool = True) -> FlowSchedule:
    """All-to-all of an ``S``-byte send buffer: every ordered pair exchanges ``S/n``, all at
    once (NCCL groups the n-1 sends and receives); cross-rail sends relay through PXN."""
    r = _check(ranks, size_bytes)
    n = len(r)
    if n < 2 or size_bytes == 0:
        return EMPTY
    part = size_bytes / n
    return FlowSchedule(tuple(Flow(a, b, part, 0, 0, pxn_relay(a, b, gpus_per_node, pxn))
                              for a in r for b in r if a != b))


def _chain(order: list[int], size_bytes: float, chunk_bytes: float, channel: int,
           gpus_per_node: int | None, pxn: bool) -> list[Flow]:
    chunks = int(min(MAX_CHUNKS, max(1, math.ceil(size_bytes / max(chunk_bytes, 1.0)))))
    piece = size_bytes / chunks
    return [Flow(a, b, piece, j + p, channel, pxn_relay(a, b, gpus_per_node, pxn))
            for p, (a, b) in enumerate(pairwise(order)) for j in range(chunks)]


def _rooted(ranks: Sequence[int], size_bytes: float, root: int | None, channels: int | None,
            gpus_per_node: int | None, pxn: bool, chunk_bytes: float, to_root: bool
            ) -> FlowSchedule:
    r = _check(ranks, size_bytes)
    if len(r) < 2 or size_bytes == 0:
        return EMPTY
    root = r[0] if root is None else root
    if root not in r:
        raise ConfigError(f"root={root} is not one of the group's ranks {r}")
    c_count = channels or 1
    flows: list[Flow] = []
    for c, order in enumerate(ring_orders(r, c_count, gpus_per_node)):
        i = order.index(root)
        order = order[i:] + order[:i]
        if to_root:
            order = order[1:] + order[:1]
        flows += _chain(order, size_bytes / c_count, chunk_bytes, c, gpus_per_node, pxn)
    return FlowSchedule(tuple(flows))


def chain_broadcast(ranks: Sequence[int], size_bytes: float, root: int | None = None,
                    channels: int | None = None, gpus_per_node: int | None = None,
                    pxn: bool = True, chunk_bytes: float = DEFAULT_CHUNK_BYTES) -> FlowSchedule:
    """Broadcast along the ring from ``root`` (NCCL's ring broadcast is a pipelined chain):
    every other rank receives ``S`` once."""
    return _rooted(ranks, size_bytes, root, channels, gpus_per_node, pxn, chunk_bytes, False)


def chain_reduce(ranks: Sequence[int], size_bytes: float, root: int | None = None,
                 channels: int | None = None, gpus_per_node: int | None = None,
                 pxn: bool = True, chunk_bytes: float = DEFAULT_CHUNK_BYTES) -> FlowSchedule:
    """Reduce along the ring towards ``root``: every other rank sends ``S`` once."""
    return _rooted(ranks, size_bytes, root, channels, gpus_per_node, pxn, chunk_bytes, True)


def send_recv(ranks: Sequence[int], size_bytes: float, gpus_per_node: int | None = None,
              pxn: bool = True) -> FlowSchedule:
    """Two ranks: one transfer from ``ranks[0]`` to ``ranks[1]`` (a pipeline send). More: a
    ring shift, every rank sending ``size_bytes`` to the next at once (ring attention passes
    its key/value block around the context-parallel ring this way)."""
    r = _check(ranks, size_bytes)
    if len(r) < 2:
        raise ConfigError(f"send_recv needs at least two ranks, got {r}")
    if size_bytes == 0:
        return EMPTY
    pairs = [(r[0], r[1])] if len(r) == 2 else [(a, r[(i + 1) % len(r)]) for i, a in enumerate(r)]
    return FlowSchedule(tuple(Flow(a, b, size_bytes, 0, c, pxn_relay(a, b, gpus_per_node, pxn))
                              for c, (a, b) in enumerate(pairs)))


def resolve_algorithm(kind: str, algorithm: str = "auto") -> str:
    """The algorithm name to decompose ``kind`` with; ConfigError for unknown names."""
    if kind not in FLOW_ALGORITHMS:
        raise ConfigError(f"unknown collective '{kind}'; known: {', '.join(FLOW_ALGORITHMS)}")
    if algorithm == "auto":
        return FLOW_ALGORITHMS[kind][0]
    if algorithm not in FLOW_ALGORITHMS[kind]:
        raise ConfigError(f"algorithm '{algorithm}' cannot run {kind} as flows; use one of "
                          f"{', '.join(('auto',) + FLOW_ALGORITHMS[kind])}")
    return algorithm


def decompose(kind: str, size_bytes: float, ranks: Sequence[int], algorithm: str = "auto",
              channels: int | None = None, gpus_per_node: int | None = None, pxn: bool = True,
              root: int | None = None, chunk_bytes: float = DEFAULT_CHUNK_BYTES) -> FlowSchedule:
    """The flows of collective ``kind`` on ``size_bytes`` (nccl-tests message size: output
    buffer of all-gather, input of reduce-scatter and all-reduce, send buffer of all-to-all)
    over ``ranks``. ``gpus_per_node`` enables rail-aware rings and PXN; ``channels=None``
    takes one per rail in use."""
    algo = resolve_algorithm(kind, algorithm)
    if channels is not None and channels < 1:
        raise ConfigError(f"channels={channels} must be >= 1")
    if kind == "all_reduce":
        if algo == "tree":
            return tree_all_reduce(ranks, size_bytes, channels, gpus_per_node, pxn, chunk_bytes)
        return ring_all_reduce(ranks, size_bytes, channels, gpus_per_node, pxn)
    if kind == "all_gather":
        return ring_all_gather(ranks, size_bytes, channels, gpus_per_node, pxn)
    if kind == "reduce_scatter":
        return ring_reduce_scatter(ranks, size_bytes, channels, gpus_per_node, pxn)
    if kind == "all_to_all":
        return direct_all_to_all(ranks, size_bytes, gpus_per_node, pxn)
    if kind == "broadcast":
        return chain_broadcast(ranks, size_bytes, root, channels, gpus_per_node, pxn, chunk_bytes)
    if kind == "reduce":
        return chain_reduce(ranks, size_bytes, root, channels, gpus_per_node, pxn, chunk_bytes)
    return send_recv(ranks, size_bytes, gpus_per_node, pxn)
