"""Read Chakra execution traces back (``<prefix>.<rank>.et``, any writer's) as engine tasks:
the import half of :mod:`trainsim.interop.chakra` (split off in robust54 to keep each file
small), which re-exports its names."""

from __future__ import annotations

import dataclasses
import heapq
from pathlib import Path

from trainsim.engine import Task, run
from trainsim.errors import TrainsimError
from trainsim.interop.chakra_et import (
    COMM_COLL_NODE,
    COMM_NAMES,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    INVALID_NODE,
    NODE_TYPES,
    ETNode,
    read_et,
)


def _kahn_order(waits: list[int], unblocks: list[list[int]]) -> list[int]:
    """Indices in dependency order, the lowest ready index first (Kahn's sort): ``waits[i]``
    counts what ``i`` still waits on (decremented here: the callers read what is left over as
    the blocked nodes), ``unblocks[i]`` what waits on ``i``."""
    ready = [i for i, w in enumerate(waits) if not w]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in unblocks[i]:
            waits[j] -= 1
            if not waits[j]:
                heapq.heappush(ready, j)
    return order


def _rank_of(path: Path) -> int:
    try:
        return int(path.name.rsplit(".", 2)[-2])
    except (ValueError, IndexError):
        raise TrainsimError(f"{path}: expected <prefix>.<rank>.et") from None


def trace_files(prefix: str | Path) -> list[Path]:
    prefix = Path(prefix)
    files = sorted(prefix.parent.glob(f"{prefix.name}.*.et"), key=_rank_of)
    if not files:
        raise TrainsimError(f"no Chakra traces {prefix}.<rank>.et")
    return files


MAX_DURATION_MICROS = 2**64 - 1
"""The longest node Chakra can state: ``uint64 duration_micros = 7`` in ``message Node``
(mlcommons/chakra@6dc63e14 ``schema/protobuf/et_def.proto``), ~584,942 years. trainsim's exact
``trainsim.duration_s`` is held to the same range (robust52: 1e308 s passed as finite and two in
a row read back as an inf iteration; a 10-byte varint past 64 bits read as a duration no
Chakra reader holds). Within it a trace's iteration stays finite: its makespan is at most the
sum of its nodes' durations (the reader's tasks slow no stream)."""
MAX_DURATION_S = MAX_DURATION_MICROS * 1e-6


def _issue_order(path: Path, nodes: list[ETNode]) -> list[ETNode]:
    """``nodes`` in an order where each follows the nodes it depends on: among the nodes ready
    at a step, the one listed first (so a trace already in that order, as trainsim writes it,
    keeps its order). Chakra's schema orders nothing: a node names its dependencies by id
    (``ctrl_deps``, ``data_deps``), and ASTRA-sim's feeder issues a node once they are done;
    the engine runs a stream's tasks in submission order, so a trace listing a node before one
    it waits for read as a "deadlock" (robust53). A duplicate id, a missing dependency or a
    cycle is refused naming the file and a node."""
    at: dict[int, int] = {}
    for i, n in enumerate(nodes):
        if at.setdefault(n.id, i) != i:
            first = nodes[at[n.id]]
            raise TrainsimError(f"{path}: node id {n.id} is given twice ({first.name} and "
                                f"{n.name}); a node's id names it in the trace's dependencies, "
                                "so each is unique")
    waits = [0] * len(nodes)
    unblocks: list[list[int]] = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        for d in dict.fromkeys(n.ctrl_deps + n.data_deps):
            if d not in at:
                raise TrainsimError(f"{path}: node {n.id} depends on missing node {d}")
            waits[i] += 1
            unblocks[at[d]].append(i)
    order = _kahn_order(waits, unblocks)
    if len(order) < len(nodes):
        i, seen = next(i for i, w in enumerate(waits) if w), set()
        while i not in seen:  # back along waiting dependencies until one repeats: a cycle's
            seen.add(i)
            i = next(at[d] for d in nodes[i].ctrl_deps + nodes[i].data_deps if waits[at[d]])
        n = nodes[i]
        raise TrainsimError(f"{path}: node {n.id} ({n.name}) depends on itself through a cycle "
                            f"of dependencies ({len(nodes) - len(order)} nodes never ready); "
                            "a Chakra trace's dependencies form no cycle")
    return [nodes[i] for i in order]


def tasks_from_chakra(prefix: str | Path, exact: bool = True) -> list[Task]:
    """Engine tasks of every ``<prefix>.<rank>.et``: one task per node, on its stream
    (``trainsim.stream``, else compute for COMP nodes and one communication stream for the
    rest, as ASTRA-sim runs one collective at a time), depending on its ctrl and data deps; a
    receive waits for the matching send (``comm_src``, ``comm_dst``, ``comm_tag``) of its
    peer: the k-th receive of a (source, destination, tag) the k-th send of it, in each rank's
    issue order (messages between two ranks with one tag do not overtake each other, as in MPI
    and NCCL's point-to-point calls; a foreign trace may give every message tag 0). Tasks are
    submitted in an order the engine can run (:func:`_runnable`). Durations:
    ``trainsim.duration_s`` if ``exact`` and present, else ``duration_micros``."""
    tasks: list[Task] = []
    where: list[tuple[Path, ETNode]] = []
    sends: dict[tuple[int, int, int], list[int]] = {}
    recvs: list[tuple[int, tuple[int, int, int]]] = []
    for path in trace_files(prefix):
        rank = _rank_of(path)
        nodes = _issue_order(path, read_et(path)[1])
        index = {}
        for n in nodes:
            if n.type not in NODE_TYPES or n.type == INVALID_NODE:
                # robust52: 99 read as a communication node; robust53: so was 0, INVALID_NODE
                # (also what a node without a type field decodes to)
                what = ("type 0 (INVALID_NODE, or no type field), which Chakra's schema marks "
                        "invalid" if n.type == INVALID_NODE else
                        f"type {n.type}, which Chakra's schema does not define")
                raise TrainsimError(f"{path}: node {n.id} ({n.name}) has {what}; a node type "
                                    "is one of " + ", ".join(f"{k} {v}" for k, v in
                                                             NODE_TYPES.items() if k))
            index[n.id] = len(tasks)
            if exact and "trainsim.duration_s" in n.attrs:
                dur = n.attr("trainsim.duration_s")
            elif n.duration_micros > MAX_DURATION_MICROS:  # a varint decodes to 70 bits
                raise TrainsimError(f"{path}: node {n.id} ({n.name}) has duration_micros="
                                    f"{n.duration_micros}, past a uint64 (Chakra's type); a "
                                    f"duration is 0 to {MAX_DURATION_MICROS} microseconds")
            else:
                dur = n.duration_micros * 1e-6
            if isinstance(dur, bool) or not (isinstance(dur, (int, float))
                                             and 0 <= dur <= MAX_DURATION_S):
                raise TrainsimError(f"{path}: node {n.id} ({n.name}) lasts {dur!r} s; a "
                                    f"duration is 0 to {MAX_DURATION_S:.6g} s (Chakra's "
                                    "duration_micros is a uint64 of microseconds)")
            stream = n.attr("trainsim.stream")
            if stream is None:
                stream = {COMP_NODE: "compute", COMM_RECV_NODE: f"recv.{n.id}"}.get(n.type, "comm")
            tasks.append(Task((rank, str(stream)), dur, [], n.name))
            where.append((path, n))
            if n.type == COMM_SEND_NODE:
                sends.setdefault(_peers(n, path, rank, None), []).append(len(tasks) - 1)
            elif n.type == COMM_RECV_NODE:
                recvs.append((len(tasks) - 1, _peers(n, path, None, rank)))
        for n in nodes:
            t = tasks[index[n.id]]
            for d in dict.fromkeys(n.ctrl_deps + n.data_deps):
                if d not in index:
                    raise TrainsimError(f"{path}: node {n.id} depends on missing node {d}")
                t.deps.append(index[d])
    matched: dict[tuple[int, int, int], int] = {}
    for i, key_ in recvs:
        k = matched[key_] = matched.get(key_, -1) + 1
        if k >= len(sends.get(key_, ())):
            path, n = where[i]
            nth = f" (receive {k + 1} of it; {len(sends[key_])} sent)" if key_ in sends else ""
            raise TrainsimError(f"{path}: receive node {n.id} ({n.name}) {key_} (src, dst, tag) "
                                f"has no matching send{nth}: read every rank's trace")
        tasks[i].deps.append(sends[key_][k])
    return _runnable(tasks, where)


def _topological(tasks: list[Task], chained: bool) -> list[int]:
    """Indices of ``tasks`` in an order where each follows its dependencies (and, when
    ``chained``, the task before it on its stream), among the ready the lowest index first;
    shorter than ``tasks`` where they wait on each other in a cycle."""
    waits = [0] * len(tasks)
    unblocks: list[list[int]] = [[] for _ in tasks]
    last: dict[tuple[int, str], int] = {}
    for i, t in enumerate(tasks):
        before = set(t.deps)
        if chained and t.stream in last:
            before.add(last[t.stream])
        last[t.stream] = i
        waits[i] = len(before)
        for d in before:
            unblocks[d].append(i)
    order = _kahn_order(waits, unblocks)
    return order


def _runnable(tasks: list[Task], where: list[tuple[Path, ETNode]]) -> list[Task]:
    """``tasks`` as listed where the engine runs them so (a stream runs its tasks in submission
    order: every trace trainsim writes); else in one order over every rank's nodes where each
    follows what it waits for, its matched send included (robust53 lead 3: a foreign trace
    whose ranks list their sends and receives another way could put, on a shared stream, a
    send behind one waiting for a receive that waits for it, and read as "deadlock"). ASTRA-
    sim's feeder issues a node once its dependencies are done, not in listed order. A cycle
    through other ranks' sends is refused naming a node in it."""
    if len(_topological(tasks, chained=True)) == len(tasks):
        return tasks
    order = _topological(tasks, chained=False)
    if len(order) < len(tasks):
        done = set(order)
        i, seen = next(i for i in range(len(tasks)) if i not in done), set()
        while i not in seen:  # back along waiting dependencies until one repeats: a cycle's
            seen.add(i)
            i = next(d for d in tasks[i].deps if d not in done)
        path, n = where[i]
        raise TrainsimError(f"{path}: node {n.id} ({n.name}) waits for itself through other "
                            f"ranks' sends ({len(tasks) - len(order)} nodes never ready); the "
                            "ranks' traces wait on each other in a cycle")
    at = {i: k for k, i in enumerate(order)}
    return [dataclasses.replace(tasks[i], deps=[at[d] for d in tasks[i].deps]) for i in order]


def _peers(n: ETNode, path: Path, src: int | None, dst: int | None) -> tuple[int, int, int]:
    """(comm_src, comm_dst, comm_tag) of a send or receive node; ``src`` / ``dst``: the
    default of the end that is the node's own rank (robust51: a receive without comm_src
    raised a TypeError, a word a ValueError)."""
    out = []
    for name, default in (("comm_src", src), ("comm_dst", dst), ("comm_tag", 0)):
        v = n.attr(name, default)
        if isinstance(v, bool) or not isinstance(v, int):
            raise TrainsimError(f"{path}: {'send' if dst is None else 'receive'} node {n.id} "
                                f"({n.name}) has {name}={v!r}; expected a whole number")
        out.append(v)
    return out[0], out[1], out[2]


def read_chakra(prefix: str | Path, exact: bool = True) -> float:
    """Simulated iteration time of a Chakra trace set on trainsim's engine."""
    return run(tasks_from_chakra(prefix, exact)).makespan_s


def comm_bytes(prefix: str | Path) -> dict[str, int]:
    """Bytes of every ``<prefix>.<rank>.et``'s communication, summed over the ranks, by
    collective (``comm_type``'s name in Chakra's schema; ``send`` for point-to-point sends):
    the sizes as each rank states them (``comm_size``, nccl-tests' convention)."""
    out: dict[str, int] = {}
    for path in trace_files(prefix):
        for n in read_et(path)[1]:
            if n.type == COMM_COLL_NODE:
                kind = COMM_NAMES.get(n.attr("comm_type"), f"comm_type {n.attr('comm_type')}")
            elif n.type == COMM_SEND_NODE:
                kind = "send"
            else:
                continue
            out[kind] = out.get(kind, 0) + int(n.attr("comm_size", 0))
    return out
