"""A memory group's overlap siblings, built only when something reads them.

A search enumerates every candidate, but most memory groups are pruned by their bound with
nothing read of them but their size and the leads of their pricing classes (the 22B search on
64 A100s: 17,616 groups of 182,592 candidates, 506 groups simulated), so a group is kept as
its key and the switches that apply to it (``SearchSpace.switches``) until its siblings are
asked for; then they are ``SearchSpace.variants``'s, in its order, as if built at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from trainsim.search.candidate import candidate
from trainsim.search.space import Candidate, MemoryKey


class Family:
    """The siblings of ``lead`` in a memory group: the group's variants (``make(key)``) with
    ``first`` (the group's first lead, every switch that applies on) ahead of the rest, less
    ``lead``; what a search kept as a list of them before (``search.waves``)."""

    __slots__ = ("_leads", "_made", "first", "key", "lead", "make", "switches")

    def __init__(self, key: MemoryKey, switches: tuple[bool, ...], first: Candidate,
                 lead: Candidate, make: Callable[[MemoryKey], list[Candidate]]) -> None:
        self.key, self.switches, self.first, self.lead, self.make = \
            key, switches, first, lead, make
        self._made: list[Candidate] | None = None
        self._leads: list[Candidate] | None = None

    @classmethod
    def of(cls, key: MemoryKey, switches: tuple[bool, ...],
           make: Callable[[MemoryKey], list[Candidate]]) -> Family:
        """The whole group led by its variant with every switch that applies on (the one
        ``search.waves._lead`` picks: the only one with that many on)."""
        first = candidate(key, *switches)
        return cls(key, switches, first, first, make)

    def __len__(self) -> int:
        return (1 << sum(self.switches)) - 1

    def __iter__(self) -> Iterator[Candidate]:
        if self._made is None:
            first, lead = self.first, self.lead
            rest = [v for v in self.make(self.key) if v != first]
            self._made = [x for x in (first, *rest) if x != lead]
        return iter(self._made)

    @property
    def whole(self) -> bool:
        """Whether ``lead`` and its siblings are the whole group as first led."""
        return self.lead is self.first

    def class_leads(self) -> list[Candidate]:
        """The lead of each pricing class (``tp_comm_overlap``, ``moe_overlap_ep_comm``) of the
        whole group, in the classes' sorted order: the class's member with every other switch
        that applies on (its only member with the most switches on)."""
        if self._leads is None:  # (asked at a first pop, then by the group's refined bound)
            og, op, tp, p2p, ep = self.switches
            self._leads = [self.first if (t, e) == (tp, ep) else
                           candidate(self.key, og, op, t, p2p, e)
                           for t in ((False, True) if tp else (False,))
                           for e in ((False, True) if ep else (False,))]
        return self._leads

    def led_by(self, lead: Candidate) -> Family:
        """The same group's siblings of ``lead`` (one of its members)."""
        return Family(self.key, self.switches, self.first, lead, self.make)


__all__ = ["Family"]
