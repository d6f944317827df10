"""A forward pass's FSDP unit all-gathers written beside its compute (export60).

The simulation charges a sharded forward one wait segment (``sharded_passes.GATHER_WAIT``): the
time its compute waits for its units' parameters when each unit's all-gather is issued as the
unit before it starts computing, on one communication stream (``schedule.prefetch_walk``), plus
the SMs the hidden gathers take from the compute beside them (``Pricer.sm_share['dp']``). Until
export60 a Chakra export wrote that wait as the gathers on the compute stream holding the
wait's seconds (``trainsim.exposed_only``): a replay that times collectives itself (ASTRA-sim)
would block for the whole gathers. Here the pass is split at its units instead: each unit's
gathers are collective nodes of their own full time on a stream of their own
(:data:`GATHER_STREAM`), issued when the unit before starts (the first when the pass starts),
each unit's compute waits for its own, and the SMs the hidden part took follow the last unit as
an ``(SM contention)`` node; replayed with the simulated durations, this is the walk itself, so
the pass lasts what the simulation charged (tests/test_export60.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from trainsim.workload.ops import Comm
from trainsim.workload.schedule import prefetch_exposed_s

GATHER_STREAM = "fsdp_gather"
"""The stream a forward's unit gathers are written on (``trainsim.stream``): FSDP's all-gather
stream, apart from the compute stream and from the data-parallel stream the graph's own
collective tasks run on (the simulation's forward walk has no reduction in it)."""


@dataclass
class GatherWalk:
    """Where a forward pass's segments split into units, and what runs beside them."""

    starts: dict[int, list[int]]
    """Segment index of the pass at which units' compute begins -> those units (a unit with
    no segments begins where the next does)."""
    end: int
    """Segment index just past the last unit's compute."""
    units: list[tuple[Comm, ...]]
    """Each unit's all-gathers, in issue order."""
    contention_s: float
    """The SMs the hidden gathers held (the wait's seconds beyond the exposed part)."""
    gathered: dict[int, int] = field(default_factory=dict)
    """Unit -> the node id of its last gather (filled as the pass is written)."""


def unit_starts(parts: tuple, root: bool) -> list[int]:
    """Offsets, in the chunk's forward segments, at which each unit's compute begins, as
    ``sharded_passes.unit_gather_passes`` cuts the forward parts into units: the pipe engine's
    receive part goes with the first part; the root unit (embedding) leads where ``root``;
    one unit per layer part; the head runs in the last unit."""
    counts = [len(p.segments) for p in parts]
    lead, *rest = counts
    offsets = [lead]  # where each of ``rest`` begins (the first with the receive part before)
    for c in rest[:-1]:
        offsets.append(offsets[-1] + c)
    offsets[0] = 0
    return ([0] if root else []) + offsets[1:len(rest) - 1]


def plan(segs: list, k: int, walk: tuple, comm_time: Callable[[Comm], float],
         share: float) -> GatherWalk | None:
    """The split of a pass whose segment ``k`` is a forward's gather wait with ``walk`` (the
    pricer's record: units, their compute seconds, the chunk's forward parts, whether the root
    unit leads); None where the pass does not hold the chunk's forward after the wait, or the
    units and their compute do not pair up (written as before)."""
    units, compute, parts, root = walk
    starts = unit_starts(parts, root)
    if not units or len(units) != len(compute) or len(starts) != len(units):
        return None
    fwd = tuple(seg for p in parts for seg in p.segments)
    n = len(fwd)
    at = next((j for j in range(k + 1, len(segs) - n + 1) if tuple(segs[j:j + n]) == fwd), None)
    if at is None:
        return None
    gather = [sum(comm_time(c) for c in unit) for unit in units]
    exposed = prefetch_exposed_s(gather, compute)
    contention = max(0.0, segs[k][1] - exposed)
    if abs(exposed + (sum(gather) - exposed) * share - segs[k][1]) > 1e-9 * max(1.0, segs[k][1]):
        return None  # not the wait this walk gives: leave it to the exposed-time form
    by_index: dict[int, list[int]] = {}
    for u, s in enumerate(starts):
        by_index.setdefault(at + s, []).append(u)
    return GatherWalk(by_index, at + n, [tuple(unit) for unit in units], contention)


POOL_STREAM = "ep_pooled"
"""The stream an op list's pooled expert exchanges are written on (``moe_overlap_ep_comm``)."""


@dataclass
class Pool:
    """An op list's pooled expert exchanges (``Pricer.price_ops`` under
    ``moe_overlap_ep_comm``: DualPipe's pairs, the overlapped 1F1B): run one after another on
    their own stream beside the list's whole compute, exposed past its compute (and host
    wait), and slowing the compute by the SMs they hold."""

    segments: tuple
    """The list's priced segments (identities: where they sit in a pass)."""
    first: int
    """Index of the first pooled segment in ``segments`` (the pooled run, then any host wait)."""
    ops: tuple[Comm, ...]
    contention_s: float
    """The pooled segments' seconds beyond the exchanges' exposed part."""


def pool_of(segments: tuple, order: list, comm_time: Callable[[Comm], float]) -> Pool | None:
    """The :class:`Pool` of a list priced with pooled exchanges (``segments`` and the op of
    each, ``order``), where a replay of the branch gives the priced time exactly: the list's
    blocking collectives (not in the compute the exchanges hide behind) are none, or the
    exchanges end within the compute; None otherwise (written as before)."""
    at = [j for j, op in enumerate(order) if isinstance(op, Comm) and op.group in ("ep", "etp")]
    if not at or at != list(range(at[0], at[0] + len(at))):
        return None
    first, end = at[0], at[-1] + 1
    rest = segments[end:]
    if len(rest) > 1 or (rest and rest[0][0] != "host"):
        return None
    before = segments[:first]
    compute = sum(s[1] for s in before if s[0] == "compute")
    blocking = sum(s[1] for s in before if s[0] != "compute")
    budget = compute + (rest[0][1] if rest else 0.0)
    ops = tuple(order[j] for j in at)
    full = sum(map(comm_time, ops))
    if blocking > 0 and full > budget:
        return None
    exposed = max(0.0, full - budget)
    return Pool(tuple(segments), first, ops,
                max(0.0, sum(s[1] for s in segments[first:end]) - exposed))
