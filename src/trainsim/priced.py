"""The priced form of an op list (``Priced``: ordered (category, seconds, name) segments, summed
by category for the report) and the store that ``shared`` keeps across the pricers of one
question, so that passes priced, summed or joined once are not priced again (issue 21).
``pricing.Pricer`` makes them; the simulator places their segments on streams."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any

from trainsim.config.cached import cached
from trainsim.workload.ops import Op

_SECONDS = itemgetter(1)  # a segment's seconds
_SEGMENTS = attrgetter("segments")


@dataclass(frozen=True)
class Priced:
    """An op list priced into an ordered list of (category, seconds, name) segments."""

    segments: tuple[tuple[str, float, str], ...]

    @cached
    def duration_s(self) -> float:
        return sum(map(_SECONDS, self.segments))  # the same sum, left to right

    def __add__(self, other: Priced) -> Priced:
        store = _STORE if _ACTIVE else None
        if store is not None:  # one sum per pair of kept operands (see ``shared``)
            key = ("+", id(self), id(other))
            hit = store.joined.get(key)
            if hit is not None:
                return hit[1]
        out = Priced(self.segments + other.segments)
        if "summary" in self.__dict__:  # go on from this one's sums, as summary would add
            sums = dict(self.summary)
            for cat, dur, _ in other.segments:
                sums[cat] = sums.get(cat, 0.0) + dur
            out.__dict__["summary"] = tuple(sums.items())
        if store is not None:
            store.keep(key, (self, other), out)
        return out

    def __mul__(self, n: int) -> Priced:
        store = _STORE if _ACTIVE else None
        if store is None:
            return Priced(self.segments * n)
        key = ("*", id(self), n)
        hit = store.joined.get(key)
        if hit is None:
            hit = store.keep(key, (self,), Priced(self.segments * n))
        return hit[1]

    @cached
    def summary(self) -> tuple[tuple[str, float], ...]:
        out: dict[str, float] = {}
        for cat, dur, _ in self.segments:
            out[cat] = out.get(cat, 0.0) + dur
        return tuple(out.items())


def join(parts: tuple[Priced, ...] | list[Priced]) -> Priced:
    """``parts`` one after another (inside ``shared``: once per tuple of kept parts)."""
    store = _STORE if _ACTIVE else None
    if store is None:
        return Priced(tuple(chain.from_iterable(map(_SEGMENTS, parts))))
    key = ("join", *map(id, parts))
    hit = store.joined.get(key)
    if hit is None:
        hit = store.keep(key, tuple(parts),
                         Priced(tuple(chain.from_iterable(map(_SEGMENTS, parts)))))
    return hit[1]


def interned(segments: tuple[tuple[str, float, str], ...]) -> Priced:
    """``Priced(segments)``; inside ``shared``, one object per distinct segments, so that what
    is built from it (``+``, ``join``) is shared too."""
    store = _STORE if _ACTIVE else None
    if store is None:
        return Priced(segments)
    hit = store.joined.get(segments)
    if hit is None:
        hit = store.keep(segments, (), Priced(segments))
    return hit[1]


class _Store:
    """What :func:`shared` keeps: priced op lists by (pricer signature's number, ops), each op's time and
    model by cluster (which names the compute model), and sums of kept ``Priced`` by the identities of their operands
    (kept alive with them, so an identity is never reused while its entry is kept)."""

    MAX_ENTRIES = 50_000
    """Entries kept at most (sums of long passes hold a tuple of their segments each); past
    it the kept op lists and sums are dropped and priced again (each op's time stays)."""

    def __init__(self, token: Hashable) -> None:
        self.token = token
        self.prices: dict[tuple, tuple[Priced, tuple[Op, ...], dict[Op, str], tuple[int, ...]]] \
            = {}
        self.times: dict[object, dict[Op, tuple[float, str]]] = {}
        self.joined: dict[object, tuple[tuple, Priced]] = {}
        self.clusters: dict[int, object] = {}  # keeps the clusters whose ids key ``prices``
        self.comms: dict[tuple, float] = {}  # (signature's number, op) -> ``Pricer.comm_time``
        self.sigs: dict[tuple, int] = {}  # pricer signature -> its number in ``prices``, ``comms``
        self.networks: dict[int, object] = {}  # analytical network by cluster (``network``)

    def network(self, cluster: Any, make: Callable[[Any], object]) -> object:
        """The network ``make(cluster)`` builds, one per cluster (kept with it, as ``clusters``
        keeps it): an analytical network's collective prices are a pure function of the
        cluster and the collective (``network.analytical.AnalyticalNetwork.collective``), so
        every pricer of one cluster shares its table (the 22B search's bounds priced 6,833
        collectives for 1,750 distinct ones, one network per pricer)."""
        hit = self.networks.get(id(cluster))
        if hit is None:
            self.clusters[id(cluster)] = cluster
            hit = self.networks[id(cluster)] = make(cluster)
        return hit

    def keep(self, key: object, operands: tuple, out: Priced) -> tuple[tuple, Priced]:
        if len(self.joined) + len(self.prices) >= self.MAX_ENTRIES:
            self.joined.clear()
            self.prices.clear()
        hit = self.joined[key] = (operands, out)
        return hit


_STORE: _Store | None = None
_ACTIVE = 0


def kept() -> _Store | None:
    """What :func:`shared` keeps, inside it; None outside (a ``Pricer`` built then keeps it)."""
    return _STORE if _ACTIVE else None


@contextmanager
def shared(token: Hashable) -> Iterator[None]:
    """Inside it, every ``Pricer`` prices an op list it has priced before (the same ops under
    the same pricing settings: cluster, group spans, TP and expert overlap, host launches)
    from what an earlier one of ``token`` kept, and sums of priced passes built from kept
    operands are made once: the search's workers price the passes its candidates share once
    per process instead of once per candidate (issue 21: price each distinct op once per
    process). The same arithmetic on the same floats, so every price is the same to the bit
    (what a pricer prices with is fixed when it is built: set its SM shares there).

    Enter it with one token per question whose prices cannot change between its simulations
    (one search): a token other than the last one's drops what was kept, so a pricer built
    after a module constant changed, under another token, prices anew."""
    global _STORE, _ACTIVE
    if _STORE is None or _STORE.token != token:
        _STORE = _Store(token)
    _ACTIVE += 1
    try:
        yield
    finally:
        _ACTIVE -= 1
