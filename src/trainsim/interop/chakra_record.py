"""The pricer a Chakra export builds its graph with: it remembers which op each priced
segment came from, the collectives a segment it did not price stands for (FSDP's gather
waits, with their walk), each op list's pooled expert exchanges (``chakra_gathers``), and the
exchanges a combined-1F1B pair runs beside its passes (``ep_pairs.note_exchanges``, export61)."""

from __future__ import annotations

from typing import Any

from trainsim.config import RunConfig
from trainsim.interop.chakra_gathers import Pool, pool_of
from trainsim.simulator import Pricer
from trainsim.workload.ops import Comm, Op


class _RecordingPricer(Pricer):
    """A Pricer that remembers which op each priced segment came from, and the collectives a
    segment it did not price stands for (``note_ops``: FSDP's gather waits). One export's
    pricers share their records (:func:`_recording`: DualPipe prices its pairs with a pricer
    of its own, ``pipeline.pair_pricer``)."""

    seg_op: dict[int, Op]
    noted: dict[int, tuple[Comm, ...]]
    walks: dict[int, tuple]
    pools: dict[int, Pool]
    pairs: dict[int, tuple[bool, tuple[Comm, ...]]]
    """A combined-1F1B pair's layer pass (by its first segment's identity) -> (whether a
    forward, the expert all-to-alls it leaves to run beside the pair's compute)."""
    _keep: list[Any]

    def __init__(self, cfg: RunConfig) -> None:
        super().__init__(cfg)
        self.outside: list[Comm] = []  # comm_time calls not made by price(), in order
        self._pricing = 0

    def note_ops(self, segment: tuple, ops: list[Comm], walk: tuple | None = None) -> None:
        self.noted[id(segment)] = tuple(ops)
        if walk is not None:  # a forward's gather wait: (units, compute s, parts, root leads)
            self.walks[id(segment)] = walk
        self._keep.append(segment)

    def note_pair(self, priced: Any, ops: tuple[Comm, ...], forward: bool) -> None:
        if priced.segments and ops:
            self.pairs[id(priced.segments[0])] = (forward, tuple(ops))
            self._keep.append(priced)

    def pair_ops(self, segment: tuple) -> tuple[bool, tuple[Comm, ...]] | None:
        """Where a paired layer pass begins at ``segment``: (forward?, its exchanges)."""
        return self.pairs.get(id(segment))

    def ops_of(self, segment: tuple) -> tuple[Comm, ...]:
        """The collectives of a communication segment, in order (none where it has none)."""
        op = self.seg_op.get(id(segment))
        if isinstance(op, Comm):
            return (op,)
        return self.noted.get(id(segment), ())

    def comm_time(self, op: Comm) -> float:
        if not self._pricing:
            self.outside.append(op)
        return super().comm_time(op)

    def price_at(self, ops: list[Op]):
        priced, order, at = super().price_at(ops)
        for seg, op in zip(priced.segments, order):  # a pair's passes (``ep_pairs._timeline``)
            self.seg_op.setdefault(id(seg), op)
        self._keep.append(priced)
        return priced, order, at

    def price(self, ops: list[Op]):
        self._pricing += 1
        try:
            priced, order = self.price_ops(ops)
        finally:
            self._pricing -= 1
        for seg, op in zip(priced.segments, order):
            self.seg_op[id(seg)] = op
        if self.cfg.parallel.moe_overlap_ep_comm and not self.blocking:
            pool = pool_of(priced.segments, order, self.comm_time)
            if pool is not None:  # keyed by its first segment's identity
                self.pools[id(priced.segments[0])] = pool
        self._keep.append(priced)
        return priced


def _recording() -> type[_RecordingPricer]:
    """A class of recording pricers whose instances share one set of records."""
    return type("_Recording", (_RecordingPricer,), {"seg_op": {}, "noted": {}, "walks": {}, "pools": {},
                                                  "pairs": {}, "_keep": []})
