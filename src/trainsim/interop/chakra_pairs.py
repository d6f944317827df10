"""A combined-1F1B pair's expert all-to-alls written beside its two passes (export61).

Megatron-core's combined 1F1B (``--overlap-moe-expert-parallel-comm``) runs a steady backward
and the forward after it as one pair, each MoE layer's dispatch and combine all-to-alls on a
communication stream beside the other micro-batch's compute (core_v0.16.0
megatron/core/models/common/model_chunk_schedule_plan.py ``TransformerLayerSchedulePlan.run``;
``ep_pairs``). The simulation prices each paired layer pass without its exchanges
(``ep_pairs.moe_sides``) and charges what the pair's phases expose of them, with the SMs they
take, as ``PAIR_EXPOSED`` seconds on the backward (``ep_pairs.exposed``, summed per layer by
``chunks.chunks``, per pass by ``combined_1f1b.beside_forward``). Until export61 an export
wrote those seconds as a node with no collective and the exchanges not at all.

Here each pass's exchanges (recorded by ``ep_pairs.note_exchanges``) are collective nodes of
their whole time on a stream of their own (:data:`PAIR_STREAM`), issued when the pass starts
(after the node before it on its stream); the backward's exposed seconds are no node. Where the
pair's exchanges fit in the backward's compute plus its exposed seconds (``busy + X``), the
backward holds its own (and the forward's first ones where its own are shorter than ``X``, or
the forward's compute is shorter than its own) and its compute waits for them ``S - X`` into
its compute (``S`` their whole seconds; a compute segment is split there), so it lasts
``busy + X``; the forward's are joined at its end. Where they do not fit, the backward's window
is filled to ``busy + X`` exactly (the exchange that straddles the end written as two
collectives, its bytes split as its time) and joined at its end, and the forward holds the
rest, which fit in its compute (``ep_pairs.exposed``: a pair's time is never less than its
exchanges'). Exposure beyond every exchange's whole time is the SMs they held: an ``(SM
contention)`` node. Replayed with the simulated durations, the pair lasts what the simulation
charged, and a slower network lengthens an exposed pair one for one
(``chakra_audit.timed_replay``, tests/test_export61.py). A wait that falls inside a collective
on the compute stream is joined before it (inexact by the part of that collective; no
configuration of benchmarks/export61_pairs.py meets it).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace

from trainsim.ep_pairs import PAIR_EXPOSED
from trainsim.workload.ops import Comm

PAIR_STREAM = "ep_paired"
"""The stream a combined-1F1B pair's expert all-to-alls are written on (``trainsim.stream``)."""


@dataclass
class PairWindow:
    """The exchanges written beside one pass of a pair, one after another."""

    ops: tuple[Comm, ...]
    seconds: tuple[float, ...]
    """Each one's seconds: its whole time, but for a part of one split between the passes."""
    join_at_s: float | None
    """Seconds of the pass's compute-stream time (its segments before its sends, the exposed
    ones left out) after which it waits for :attr:`ops`; None: at its end."""
    contention_s: float
    """Exposed seconds beyond the exchanges' whole time (the SMs they held)."""


@dataclass
class PassPairs:
    """What a pass's segments hold of a pair."""

    forward: bool
    ops: tuple[Comm, ...]
    exposed_s: float
    busy_s: float


def pass_pairs(segments: tuple, pair_ops: Callable[[tuple], tuple[bool, tuple] | None],
               sends_at_end: bool) -> PassPairs | None:
    """A pass's paired layers' exchanges (``pair_ops`` of each segment: where a paired layer
    pass begins), its exposed seconds and the rest of its compute-stream time (less the send
    segments written at its end); None where it holds no paired layer."""
    ops: list[Comm] = []
    forward: bool | None = None
    exposed = busy = 0.0
    for seg in segments:
        hit = pair_ops(seg)
        if hit is not None:
            forward = hit[0] if forward is None else forward
            ops += hit[1]
        if seg[2] == PAIR_EXPOSED:
            exposed += seg[1]
        elif not (sends_at_end and seg[2] == "p2p send"):
            busy += seg[1]
    if forward is None and exposed <= 0:
        return None
    return PassPairs(bool(forward), tuple(ops), exposed, busy)


def _part(op: Comm, share: float) -> tuple[Comm, Comm]:
    """``op`` as two collectives of its bytes' ``share`` and the rest (whole bytes each)."""
    first = float(round(op.bytes * share))
    return replace(op, bytes=first), replace(op, bytes=op.bytes - first)


def plan_pair(b: PassPairs, f: PassPairs | None, comm_time: Callable[[Comm], float]
              ) -> tuple[PairWindow | None, PairWindow | None]:
    """The windows of a backward ``b`` and the forward ``f`` paired with it (module
    docstring). Where the pair's exchanges fit in the backward's compute plus its exposed
    seconds, the backward holds its own and as many of the forward's as its exposed seconds
    need (or the forward's compute cannot hold), waiting for them ``S - X`` into its compute;
    else the backward waits at its end for exchanges filling its compute and exposed seconds
    exactly (the one that straddles written as two parts, bytes split as time), the forward
    the rest, which fit in its compute (``ep_pairs.exposed``: a pair's time is no less than
    its exchanges')."""
    t = comm_time
    wb = [(op, t(op)) for op in b.ops]
    wf = [(op, t(op)) for op in (f.ops if f is not None else ())]
    cap_b, cap_f = b.busy_s + b.exposed_s, f.busy_s if f is not None else 0.0

    def s(w: list) -> float:
        return sum(x for _, x in w)

    def window(w: list, join: float | None, contention: float) -> PairWindow | None:
        return PairWindow(tuple(o for o, _ in w), tuple(x for _, x in w), join, contention) \
            if w else None

    if s(wb) + s(wf) <= cap_b:
        while wf and (s(wb) < b.exposed_s or (f is not None and s(wf) > cap_f)):
            wb.append(wf.pop(0))
        total = s(wb)
        join = max(0.0, total - b.exposed_s) if b.exposed_s > 0 else None
        return window(wb, join, max(0.0, b.exposed_s - total)), window(wf, None, 0.0)
    ops = wb + wf  # the backward's first: fill the backward's window to its end exactly
    cut, at = [], 0.0
    while ops and at + ops[0][1] <= cap_b:
        at += ops[0][1]
        cut.append(ops.pop(0))
    if ops and cap_b - at > 0:
        op, x = ops.pop(0)
        share = (cap_b - at) / x
        head, tail = _part(op, share)
        cut.append((head, cap_b - at))
        ops.insert(0, (tail, x - (cap_b - at)))
    return window(cut, None, 0.0), window(ops, None, 0.0)


def plan_windows(tasks: list, pair_ops: Callable[[tuple], tuple[bool, tuple] | None],
                 sends_at_end: Collection[int], comm_time: Callable[[Comm], float]
                 ) -> dict[int, PairWindow]:
    """Each combined-1F1B pass's window (by task index): a backward holding paired layers (or
    a pair's exposed seconds) with the next pass on its stream holding paired forward layers;
    a pass with no partner, its own exchanges. ``sends_at_end``: the tasks whose send segments
    are written at their end (``chakra._Builder._sends``)."""
    out: dict[int, PairWindow] = {}
    open_b: dict[tuple, tuple[int, PassPairs]] = {}

    def keep(j: int, w: PairWindow | None) -> None:
        if w is not None:
            out[j] = w

    def alone(j: int, pp: PassPairs) -> None:
        keep(j, plan_pair(pp, None, comm_time)[0] if not pp.forward else
             PairWindow(pp.ops, tuple(map(comm_time, pp.ops)), None, 0.0) if pp.ops else None)

    for i, t in enumerate(tasks):
        if t.detail is None:
            continue
        pp = pass_pairs(t.detail.segments, pair_ops, i in sends_at_end)
        if pp is None:
            continue
        b = open_b.pop(t.stream, None)
        if not pp.forward:
            if b is not None:
                alone(*b)
            open_b[t.stream] = (i, pp)
        elif b is None:
            alone(i, pp)
        else:
            for j, w in zip((b[0], i), plan_pair(b[1], pp, comm_time)):
                keep(j, w)
    for j, pp in open_b.values():
        alone(j, pp)
    return out


__all__ = ["PAIR_STREAM", "PairWindow", "PassPairs", "pass_pairs", "plan_pair", "plan_windows"]
