"""Chakra execution traces: export trainsim's simulated task graph, and read traces back.

Written from Chakra's public schema (``mlcommons/chakra``, ``schema/protobuf/et_def.proto``),
field by field in the protobuf wire format (:mod:`trainsim.interop.chakra_et`); no Chakra code
or generated bindings are used. A trace is ``<prefix>.<rank>.et`` per rank, each a length-
prefixed ``GlobalMetadata`` and then length-prefixed ``Node`` messages, as ASTRA-sim 2.0's
feeder reads them, plus ``<prefix>.json``, the communicator groups ASTRA-sim takes with
``--comm-group-configuration`` (``{"<id>": [ranks]}``; nodes name theirs in ``pg_name``).

What is written, per rank (ranks of one pipeline stage get the same graph, with their own
groups and peers):

* every op segment of trainsim's tasks, in order: compute as ``COMP_NODE`` (``num_ops``,
  ``tensor_size``, ``duration_micros``; consecutive kernels merged unless ``per_kernel``),
  collectives as ``COMM_COLL_NODE`` (``comm_type``, ``comm_size``, ``pg_name``), pipeline
  transfers as ``COMM_SEND_NODE``/``COMM_RECV_NODE`` pairs (``comm_src``/``comm_dst``,
  ``comm_tag``, ``comm_size``): one send per receive, at the end of the sending pass, where
  trainsim's engine releases the passes that wait for it;
* ``ctrl_deps`` keep each stream's order (the node before on the same CUDA-stream-like queue),
  ``data_deps`` the task dependencies; a collective trainsim overlaps with the compute before
  it (ring-attention KV exchange, TP overlap) is a branch beside that compute; so are a
  forward's FSDP unit gathers and an op list's pooled expert exchanges (DualPipe's pairs), on
  streams of their own (:mod:`trainsim.interop.chakra_gathers`), and a combined-1F1B pair's
  expert all-to-alls (:mod:`trainsim.interop.chakra_pairs`);
* ``comm_size`` follows nccl-tests: the full buffer of all-reduce, the gathered output of
  all-gather, the input of reduce-scatter, the bytes each rank sends in all-to-all;
* ``duration_micros`` is trainsim's time in whole microseconds (the schema's unit), rounded so
  that each stream's running total stays within half a microsecond of the exact one; attributes
  ``trainsim.duration_s`` (exact) and ``trainsim.stream`` let :func:`read_chakra` rebuild the
  same engine tasks. ASTRA-sim ignores attributes it does not know.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainsim.config import RunConfig
from trainsim.ds_lockstep import Exchange
from trainsim.engine import Task, Timeline, run
from trainsim.ep_pairs import PAIR_EXPOSED
from trainsim.interop.chakra_et import (  # noqa: F401  (re-exported)
    COMM_COLL_NODE,
    COMM_NAMES,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMM_TYPES,
    COMP_NODE,
    INVALID_NODE,
    NODE_TYPES,
    SCHEMA_VERSION,
    ETNode,
    decode_node,
    encode_metadata,
    encode_node,
    read_et,
    write_et,
)
from trainsim.interop.chakra_gathers import GATHER_STREAM, POOL_STREAM, GatherWalk, Pool, plan
from trainsim.interop.chakra_groups import Layout
from trainsim.interop.chakra_nodes import _materialize, _micros
from trainsim.interop.chakra_pairs import PAIR_STREAM, PairWindow, plan_windows
from trainsim.interop.chakra_read import (  # noqa: F401  (re-exported)
    MAX_DURATION_MICROS,
    MAX_DURATION_S,
    comm_bytes,
    read_chakra,
    tasks_from_chakra,
    trace_files,
)
from trainsim.interop.chakra_record import _recording, _RecordingPricer
from trainsim.limits import EXPORT_FLAG, check, check_simulation
from trainsim.simulator import LayerSource, Pricer, build_graph
from trainsim.workload.ops import Comm, Op

# -------------------------------------------------------------------------------- export

@dataclass
class _Proto:
    """A node of one stage's template graph."""

    id: int
    name: str
    type: int
    stream: str
    duration_s: float
    ctrl: list[int] = field(default_factory=list)
    data: list[int] = field(default_factory=list)
    flops: float = 0.0
    bytes: float = 0.0
    comm: Comm | None = None
    peer_stage: int = 0
    tag: int = 0
    exposed_only: bool = False
    ring: str = ""
    """A send / receive of a ring over this process group (``_Builder._comm``)."""


RING_TAGS = 2**30
"""Tags of ring exchanges start here (pipeline transfers are tagged by task index, below)."""


@dataclass
class ChakraExport:
    paths: list[Path]
    comm_groups_path: Path
    iteration_time_s: float
    """trainsim's iteration time of the exported task graph."""
    nodes_per_rank: dict[int, int]


def _is_overlapped(op: Op | None, cfg: RunConfig) -> bool:
    return isinstance(op, Comm) and (op.overlap_with_previous or (
        cfg.parallel.tp_comm_overlap and op.group == "tp" and not op.waited
        and op.in_tp_overlap))


def _split(ops: tuple[Comm, ...], seconds: float, pricer: Pricer) -> list[float]:
    """``seconds`` shared among ``ops`` as their own times share it (the last takes the rest,
    so that the parts add up to ``seconds``)."""
    own = [pricer.comm_time(op) for op in ops]
    total = sum(own)
    parts = [seconds * t / total if total > 0 else seconds / len(ops) for t in own[:-1]]
    return parts + [max(0.0, seconds - sum(parts))]


class _Builder:
    def __init__(self, cfg: RunConfig, pricer: _RecordingPricer, tasks: list[Task],
                 per_kernel: bool, timeline: Timeline | None = None,
                 collectives: dict[int, tuple[tuple[Comm, int], ...]] | None = None) -> None:
        self.cfg, self.pricer, self.tasks, self.per_kernel = cfg, pricer, tasks, per_kernel
        # how much each task ran longer than its duration, slowed by side-stream collectives
        self.stretch = [timeline.stretch_s(i) for i in range(len(tasks))] if timeline else \
            [0.0] * len(tasks)
        self.nodes: dict[int, list[_Proto]] = defaultdict(list)
        self.last_on_stream: dict[tuple[int, str], int] = {}
        self.task_last: dict[int, int] = {}
        self.span: list[tuple[int, int, int]] = []  # per task: (stage, first node, end)
        # per task, the stage of each task on another stage that depends on it (one receive
        # each, so one send each; DualPipe's F & B pass feeds two of its neighbour's passes)
        self.consumers: dict[int, list[int]] = defaultdict(list)
        for t in tasks:
            for d in t.deps:
                if tasks[d].stream[0] != t.stream[0]:
                    self.consumers[d].append(t.stream[0])
        # the graph's own record of the collectives of its data-parallel-stream tasks
        # (``_TaskGraph.collectives``), each written as a collective node: equal ones priced
        # once (mllama58), fixed-size buckets, FSDP's unit gathers, InternEvo's broadcasts
        # (until export59 matched by position to the pricer's calls outside ``price``, and
        # written as compute where the counts differed)
        self.records: dict[int, tuple[tuple[Comm, int], ...]] = dict(collectives or {})
        nodes = sum(n for ops in self.records.values() for _, n in ops)
        check("TRAINSIM_MAX_TASKS", nodes, "Chakra nodes of the data-parallel collectives "
              "(each a task's worth)", EXPORT_FLAG, f"{nodes:,} collectives (fixed-size buckets "
              "each one)")
        self.sharded = False
        self.p2p = next((op for op in pricer.outside if op.name == "p2p"), None)
        self.pair_windows: dict[int, PairWindow] = {}  # combined 1F1B (chakra_pairs)
        self._parts: dict[int, tuple[tuple, float]] = {}  # a split segment's part -> (it, share)
        self._kept: list[tuple] = []

    def add(self, stage: int, name: str, type_: int, stream: str, dur: float, data: list[int],
            **kw: Any) -> int:
        nodes = self.nodes[stage]
        node = _Proto(len(nodes), name, type_, stream, dur, data=list(dict.fromkeys(data)), **kw)
        prev = self.last_on_stream.get((stage, stream))
        if prev is not None and prev not in node.data:
            node.ctrl.append(prev)
        self.last_on_stream[(stage, stream)] = node.id
        nodes.append(node)
        return node.id

    def build(self) -> None:
        self.pair_windows = plan_windows(self.tasks, self.pricer.pair_ops, self.consumers,
                                         self.pricer.comm_time)
        for i, t in enumerate(self.tasks):
            stage = t.stream[0]
            first = len(self.nodes[stage])
            self.task_last[i] = self._task(i, t)
            self.span.append((stage, first, len(self.nodes[stage])))

    def _task(self, i: int, t: Task) -> int:
        """Write task ``i``'s nodes (its receives first); the id of its last."""
        stage, stream = t.stream
        deps: list[int] = []
        for d in t.deps:
            src = self.tasks[d].stream[0]
            if src == stage:
                deps.append(self.task_last[d])
            else:  # a step's exchange waits for its peer to reach it: no data; nor
                # does a collective wait on its group's other stage (DeepSpeed's tied
                # all-reduce: ``OptimizerTasks.tied_first``)
                size = self.p2p.bytes if self.p2p is not None and not \
                    isinstance(t.detail, Exchange) and t.stream[1] != "dp" else 0.0
                deps.append(self.add(stage, f"recv {self.tasks[d].label}", COMM_RECV_NODE,
                                     f"recv.{d}", 0.0, [], peer_stage=src, tag=d,
                                     comm=Comm("p2p", "send_recv", size, "pp")))
        if isinstance(t.detail, Exchange):  # its contention after its transfers
            return self._exchange(i, t, deps)
        if self.stretch[i] > 0:  # the SMs that DP/PP collectives beside it held
            deps = [self.add(stage, f"{t.label} (SM contention)", COMP_NODE, stream,
                             self.stretch[i], deps)]
        if t.detail is None:
            return self._sends(i, t, [self._plain(i, t, deps)], [])
        return self._segments(i, t, deps)

    def _sends(self, i: int, t: Task, head: list[int], send_s: list[float]) -> int:
        """Task ``i``'s sends, one per receive of it (``consumers``), after ``head``: the
        engine releases every pass that depends on a task when the task ends, so each of its
        sends ends there: the first holds the time of the pass's send segments (``send_s``),
        the others none. Where a send segment had more of its pass after it (DeepSpeed's step:
        its send, then the step's receive, workload/pipe_engine.py; DualPipe's F & B pass: two
        sends), a send written there released a peer early, and a second send of one tag
        left one no receive matched (chakra57: read back 0.01-1 % short under robust53's
        first-in first-out matching)."""
        stage, stream = t.stream
        last = head[0] if len(head) == 1 else None
        for k, peer in enumerate(self.consumers.get(i, ())):
            carries = k < len(send_s)  # the bytes of one of the pass's send segments
            last = self.add(stage, f"{t.label}: send" if carries else f"send {t.label}",
                            COMM_SEND_NODE, stream, sum(send_s) if k == 0 else 0.0, head,
                            peer_stage=peer, tag=i, comm=self.p2p if carries
                            else Comm("p2p", "send_recv", 0.0, "pp"))
            head = [last]
        if last is None:  # no send after a pass ending in two branches: join them
            last = self.add(stage, f"{t.label}: join", COMP_NODE, stream, 0.0, head)
        return last

    def _exchange(self, i: int, t: Task, deps: list[int]) -> int:
        """One stage's side of a DeepSpeed step's transfers (``ds_lockstep.Exchange``), after
        the 0-byte receive of its peer's readiness (``deps``): each send as a send node of its
        time, each receive as a receive node on the same stream (the stage waits for it) that
        ends with the peer's send; the two sides' sends and receives share the exchange's
        tag. Read back, both sides start at the later
        of the two stages and end with the last transfer, as the engine runs the step; where
        side-stream collectives slowed this side, the time they took is a node after its
        transfers (the side they did not slow is not held by it)."""
        stage, stream = t.stream
        ex: Exchange = t.detail  # type: ignore[assignment]
        head = deps
        for (sends, peer, nbytes), (_, dur, _) in zip(ex.messages, ex.segments):
            comm = Comm("p2p", "send_recv", nbytes, "pp")
            head = [self.add(stage, f"{t.label}: send", COMM_SEND_NODE, stream, dur, head,
                             peer_stage=peer, tag=ex.tag, comm=comm) if sends else
                    self.add(stage, f"{t.label}: receive", COMM_RECV_NODE, stream, 0.0, head,
                             peer_stage=peer, tag=ex.tag, comm=comm)]
        if self.stretch[i] > 0:
            head = [self.add(stage, f"{t.label} (SM contention)", COMP_NODE, stream,
                             self.stretch[i], head)]
        return self._sends(i, t, head, [])

    def _plain(self, i: int, t: Task, deps: list[int]) -> int:
        stage, stream = t.stream
        record = self.records.get(i)
        if not record:
            return self.add(stage, t.label, COMP_NODE, stream, t.duration_s, deps)
        ops = tuple(op for op, n in record for _ in range(n))
        return self._collectives(stage, t.label, stream, ops, t.duration_s, deps)

    def _comm(self, stage: int, name: str, stream: str, seconds: float, head: list[int],
              op: Comm) -> int:
        """A collective node of ``op``; a ring exchange (CP's KV blocks: ``send_recv`` over a
        group other than the pipeline's) as a send to the next rank of the group and a receive
        from the one before, tagged alike on every rank (each rank of a stage writes the same
        template); the last node's id."""
        if op.kind != "send_recv":
            return self._collectives(stage, name, stream, (op,), seconds, head,
                                     seconds < self.pricer.comm_time(op) * (1 - 1e-12))
        tag = RING_TAGS + len(self.nodes[stage])
        send = self.add(stage, f"{name}: send", COMM_SEND_NODE, stream, seconds, head,
                        comm=op, tag=tag, ring=op.group)
        return self.add(stage, f"{name}: receive", COMM_RECV_NODE, stream, 0.0, [send],
                        comm=op, tag=tag, ring=op.group)

    def _collectives(self, stage: int, label: str, stream: str, ops: tuple[Comm, ...],
                     seconds: float, head: list[int], exposed_only: bool = False) -> int:
        """``ops`` one after another on ``stream``, sharing ``seconds``; the last node's id."""
        last = -1
        for k, (op, dur) in enumerate(zip(ops, _split(ops, seconds, self.pricer))):
            last = self.add(stage, label if len(ops) == 1 else f"{label} [{k + 1}/{len(ops)}]",
                            COMM_COLL_NODE, stream, dur, head, comm=op,
                            exposed_only=exposed_only)
            head = [last]
        return last

    def _gathers(self, stage: int, stream: str, label: str, walk: GatherWalk, u: int,
                 head: list[int]) -> int:
        """Unit ``u``'s all-gathers of a forward (``chakra_gathers``) on their own stream, each
        of its own time, issued once ``head`` and the pass's stream's last node are done (the
        pass has begun); the id of the last."""
        prev = self.last_on_stream.get((stage, stream))
        issue = head + ([prev] if prev is not None else [])
        ops = walk.units[u]
        return self._collectives(stage, f"{label}: FSDP unit {u} all-gather", GATHER_STREAM,
                                 ops, sum(map(self.pricer.comm_time, ops)), issue)

    def _pools(self, segs: list) -> dict[int, Pool]:
        """Where in a pass's segments each op list priced with pooled expert exchanges
        begins (``chakra_gathers.Pool``, matched by the segments' identities)."""
        out: dict[int, Pool] = {}
        j = 0
        while j < len(segs):
            pool = self.pricer.pools.get(id(segs[j]))
            n = len(pool.segments) if pool is not None else 0
            if pool is not None and j + n <= len(segs) and \
                    all(a is b for a, b in zip(segs[j:j + n], pool.segments)):
                out[j] = pool
                j += n
            else:
                j += 1
        return out

    def _segments(self, i: int, t: Task, deps: list[int]) -> int:
        stage, stream = t.stream
        segs = list(t.detail.segments)  # type: ignore[attr-defined]
        pending: list[tuple[str, float, str]] = []
        head = deps  # what the next node depends on
        last = None
        send_s: list[float] = []  # the pass's send segments, written at its end (_sends)

        def flush(keep_last: bool = False) -> None:
            nonlocal head, last, pending
            groups = [pending] if not keep_last or len(pending) < 2 else \
                [pending[:-1], pending[-1:]]
            for group in groups:
                if not group:
                    continue
                src = [self._parts.get(id(s), (s, 1.0)) for s in group]  # a split's share
                ops = [(self.pricer.seg_op.get(id(s)), share) for s, share in src]
                name = group[0][2] if len(group) == 1 else \
                    f"{group[0][2]}..{group[-1][2]} ({len(group)})"
                last = self.add(stage, f"{t.label}: {name}", COMP_NODE, stream,
                                sum(s[1] for s in group), head,
                                flops=sum(getattr(o, "flops", 0.0) * f for o, f in ops),
                                bytes=sum(getattr(o, "bytes", 0.0) * f for o, f in ops))
                head = [last]
            pending = []

        walk: GatherWalk | None = None  # a forward's FSDP gathers beside its units (export60)

        def walk_to(k: int) -> None:
            """At segment ``k``: each unit whose compute begins there waits for its gathers,
            and the next unit's are issued as it starts; past the last, the SMs the hidden
            gathers held."""
            nonlocal head, last, walk
            if walk is None or (k not in walk.starts and k != walk.end):
                return
            flush()
            for u in walk.starts.get(k, ()):
                if u == 0:
                    walk.gathered[0] = self._gathers(stage, stream, t.label, walk, 0, head)
                head = head + [walk.gathered[u]]
                if u + 1 < len(walk.units):
                    walk.gathered[u + 1] = self._gathers(stage, stream, t.label, walk, u + 1, head)
            if k == walk.end:
                if walk.contention_s > 0:
                    last = self.add(stage, f"{t.label}: FSDP unit all-gathers (SM contention)",
                                    COMP_NODE, stream, walk.contention_s, head)
                    head = [last]
                walk = None

        pools = self._pools(segs)  # list start -> its pooled expert exchanges (export60)
        joins: dict[int, tuple[int, Pool]] = {}  # list end -> (the branch's last node, pool)
        skip: set[int] = set()

        def join_at(k: int) -> None:
            """The end of a list whose pooled exchanges ran beside it: wait for them, then
            the SMs they held."""
            nonlocal head, last
            if k not in joins:
                return
            flush()
            branch, pool = joins.pop(k)
            last = self.add(stage, f"{t.label}: expert exchanges" + (
                " (SM contention)" if pool.contention_s > 0 else " joined"), COMP_NODE, stream,
                pool.contention_s, head + [branch])
            head = [last]

        # a combined-1F1B pass's exchanges beside it, from its start (export61)
        window = self.pair_windows.get(i)
        pair_branch = None  # issued as the pass starts: after its stream's node before it
        issue = head + [p for p in (self.last_on_stream.get((stage, stream)),) if p is not None]
        for n, (op, sec) in enumerate(zip(window.ops, window.seconds) if window else ()):
            label = f"{t.label}: paired expert exchanges [{n + 1}/{len(window.ops)}]"  # type: ignore[union-attr]
            pair_branch = self.add(stage, label, COMM_COLL_NODE, PAIR_STREAM, sec, issue, comm=op)
        elapsed = 0.0  # the pass's compute-stream seconds written so far (chakra_pairs)

        def pair_join() -> None:
            """The pass's compute waits for its exchanges, then the SMs they held beyond."""
            nonlocal head, last, pair_branch
            flush()
            last = self.add(stage, f"{t.label}: paired expert exchanges joined", COMP_NODE,
                            stream, 0.0, head + [pair_branch])  # type: ignore[list-item]
            head, pair_branch = [last], None
            if window.contention_s > 0:  # type: ignore[union-attr]
                last = self.add(stage, f"{t.label}: paired expert exchanges (SM contention)",
                                COMP_NODE, stream, window.contention_s, head)  # type: ignore[union-attr]
                head = [last]

        k = 0
        while k < len(segs):
            join_at(k)
            walk_to(k)
            if window is not None and segs[k][2] == PAIR_EXPOSED:
                k += 1  # the wait for the exchanges (pair_join) holds it
                continue
            if pair_branch is not None and window.join_at_s is not None and not (  # type: ignore[union-attr]
                    segs[k][2] == "p2p send" and i in self.consumers):
                cut = window.join_at_s - elapsed  # type: ignore[union-attr]
                if 0 < cut < segs[k][1] and segs[k][0] in ("compute", "optimizer"):
                    part, rest = (*segs[k][:1], cut, segs[k][2]), \
                        (segs[k][0], segs[k][1] - cut, segs[k][2])
                    self._parts[id(part)] = (segs[k], cut / segs[k][1])
                    self._parts[id(rest)] = (segs[k], 1 - cut / segs[k][1])
                    self._kept += (part, rest)  # alive while their ids key _parts
                    pending.append(part)
                    elapsed += cut
                    segs[k] = rest
                    pair_join()
                elif cut < segs[k][1]:  # reached, or inside a collective: joined before it
                    pair_join()
                elapsed += segs[k][1]
            elif pair_branch is not None:
                elapsed += segs[k][1]
            if k in pools:  # the list's exchanges on their own stream, from its start
                flush()
                pool = pools[k]
                prev = self.last_on_stream.get((stage, stream))
                joins[k + len(pool.segments)] = (self._collectives(
                    stage, f"{t.label}: pooled expert exchanges", POOL_STREAM, pool.ops,
                    sum(map(self.pricer.comm_time, pool.ops)),
                    head + ([prev] if prev is not None else [])), pool)
                skip.update(range(k + pool.first, k + pool.first + len(pool.ops)))
            if k in skip:
                k += 1
                continue
            seg = segs[k]
            cat, dur, name = seg
            op = self.pricer.seg_op.get(id(seg))
            record = self.pricer.walks.get(id(seg)) if walk is None else None
            if record is not None:
                walk = plan(segs, k, record, self.pricer.comm_time, self.pricer.sm_share["dp"])
                if walk is not None:  # the wait is the walk's: not a node of its own
                    flush()
                    k += 1
                    continue
            if cat in ("compute", "optimizer"):
                pending.append(seg)
                if self.per_kernel:
                    flush()
                k += 1
                continue
            # hidden (partly) behind the compute segment just before it, as Pricer.price did:
            # its segment is shorter than the collective
            overlapped = (_is_overlapped(op, self.cfg) and k > 0 and segs[k - 1][0] == "compute"
                          and dur < self.pricer.comm_time(op)  # type: ignore[arg-type]
                          * (1 - 1e-12))
            if overlapped and pending:
                flush(keep_last=True)
            if overlapped and last is not None and self.nodes[stage][last].type == COMP_NODE:
                # a branch beside the compute node it hides behind: both start together
                compute = self.nodes[stage][last]
                full = self.pricer.comm_time(op)  # type: ignore[arg-type]
                branch = self._comm(stage, f"{t.label}: {name}", cat, full,
                                    compute.data + compute.ctrl, op)  # type: ignore[arg-type]
                head = [last, branch]
                # the compute's slowdown from the SMs the collective held (Pricer.hidden_behind)
                slowdown = dur - max(0.0, full - segs[k - 1][1])
                if slowdown > 0:
                    last = self.add(stage, f"{t.label}: {name} (SM contention)", COMP_NODE,
                                    stream, slowdown, head)
                    head = [last]
                k += 1
                continue
            flush()
            if name == "p2p send" and i in self.consumers:
                send_s.append(dur)
                k += 1
                continue
            if name == "p2p send":  # to no other stage: a send to its own
                last = self.add(stage, f"{t.label}: send", COMM_SEND_NODE, stream, dur, head,
                                peer_stage=stage, tag=i, comm=self.p2p)
            elif isinstance(op, Comm) and op.kind == "send_recv":  # CP's ring exchange
                last = self._comm(stage, f"{t.label}: {name}", stream, dur, head, op)
            elif self.pricer.ops_of(seg):  # its collectives (FSDP's gather waits, noted)
                ops = self.pricer.ops_of(seg)
                last = self._collectives(stage, f"{t.label}: {name}", stream, ops, dur, head,
                                         exposed_only=dur < sum(map(self.pricer.comm_time, ops))
                                         * (1 - 1e-12))
            else:  # no op recorded: written as compute (interop.chakra_audit finds it)
                last = self.add(stage, f"{t.label}: {name}", COMM_COLL_NODE, stream, dur, head)
            head = [last]
            k += 1
        join_at(len(segs))
        walk_to(len(segs))
        if pair_branch is not None:
            pair_join()
        flush()
        if last is None and not (send_s and i in self.consumers):  # an empty pass
            last = self.add(stage, t.label, COMP_NODE, stream, 0.0, head)
            head = [last]
        return self._sends(i, t, head, send_s)


def trace_nodes(cfg: RunConfig, layer_source: LayerSource | None = None,
                per_kernel: bool = False) -> tuple[_Builder, float]:
    """(each stage's template nodes, built from the simulated task graph; the iteration time):
    what :func:`export_chakra` writes per rank (``interop.chakra_audit`` reads it)."""
    pricer = _recording()(cfg)
    graph = build_graph(cfg, pricer, layer_source)
    timeline = run(graph.tasks)
    iteration = max(timeline.end_s[e] for e in graph.ends)
    builder = _Builder(cfg, pricer, graph.tasks, per_kernel, timeline, graph.collectives)
    builder.sharded = graph.fsdp  # ZeRO-3 / FSDP: parameters gathered pass by pass
    builder.build()
    return builder, iteration


def export_chakra(cfg: RunConfig, prefix: str | Path, layer_source: LayerSource | None = None,
                  per_kernel: bool = False, ranks: list[int] | None = None) -> ChakraExport:
    """Write ``<prefix>.<rank>.et`` for every rank (or ``ranks``) and ``<prefix>.json``."""
    check_simulation(cfg, what=" (a trace holds the whole iteration)", flag=EXPORT_FLAG)
    builder, iteration = trace_nodes(cfg, layer_source, per_kernel)
    layout = Layout(cfg)
    stage_groups = {s: list(dict.fromkeys(  # each stage's groups in the order first met
        p.comm.group for p in protos
        if p.type == COMM_COLL_NODE and p.comm is not None and p.comm.kind in COMM_TYPES))
        for s, protos in builder.nodes.items()}
    written = (sum(len(builder.nodes[layout.stage(r)]) for r in ranks) if ranks is not None
               else sum(map(len, builder.nodes.values())) * layout.stage_size)
    memberships = sum(map(len, stage_groups.values())) * layout.stage_size
    n_ranks = len(ranks) if ranks is not None else layout.world
    check("TRAINSIM_MAX_TASKS", written + memberships,
          "Chakra trace nodes and communicator-group memberships to write (each a task's "
          "worth)", EXPORT_FLAG, f"{written:,} nodes of {n_ranks:,} rank(s), {memberships:,} "
          f"memberships of a {layout.world:,}-GPU run"
          + ("; fewer ranks (--ranks 0,8) write fewer nodes" if written > memberships else ""))
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    paths, counts = [], {}
    meta = {"trainsim.model": ("string", cfg.model.name),
            "trainsim.iteration_time_s": ("double", iteration),
            "trainsim.world_size": ("int64", layout.world)}
    micros = {s: _micros(protos) for s, protos in builder.nodes.items()}
    for rank in (ranks if ranks is not None else range(layout.world)):
        stage = layout.stage(rank)
        nodes = _materialize(builder.nodes[stage], rank, layout, micros[stage])
        path = prefix.parent / f"{prefix.name}.{rank}.et"
        write_et(path, nodes, meta)
        paths.append(path)
        counts[rank] = len(nodes)
    for rank in range(layout.world):  # groups of ranks not written still need ids
        for group in stage_groups[layout.stage(rank)]:
            layout.group_id(group, rank)
    groups = prefix.parent / f"{prefix.name}.json"
    groups.write_text(json.dumps({str(g): r for g, r in sorted(layout.members.items())}, indent=1))
    return ChakraExport(paths, groups, iteration, counts)
