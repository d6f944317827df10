"""Check a Chakra export against the simulated task graph it was written from (export59).

Every task of the simulation is written as a run of nodes of its stage's template
(``chakra._Builder.span``). Its time splits into the simulation's categories
(``Task.segments``: compute, optimizer, host launch, and the communication categories
``tp_comm`` ... ``dp_comm``). The export is true to the simulation where, task by task:

* the compute nodes (less the SM-contention nodes and 0-second joins, time the engine adds
  beside a task's own) hold the task's non-communication seconds, so no communication is
  written as compute;
* each communication segment (a collective, a pipeline send) of the task is a node ASTRA-sim
  replays as communication: ``COMM_COLL_NODE`` with a collective type and a group of more than
  one rank, or ``COMM_SEND_NODE`` with its bytes;
* the collectives' bytes, summed by (collective, group), equal those of the ops the simulation
  priced (the graph's record of its data-parallel collectives, ``_TaskGraph.collectives``, and
  each priced segment's op).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from trainsim.config import RunConfig
from trainsim.ds_lockstep import Exchange
from trainsim.ep_pairs import PAIR_EXPOSED
from trainsim.interop.chakra import Layout, _materialize, _micros, trace_nodes
from trainsim.interop.chakra_et import (
    COMM_COLL_NODE,
    COMM_NAMES,
    COMM_SEND_NODE,
    COMM_TYPES,
    COMP_NODE,
)
from trainsim.interop.chakra_pairs import PAIR_STREAM
from trainsim.pricing import CP, DP, EP, PP, TP
from trainsim.simulator import LayerSource
from trainsim.workload.ops import Comm

COMM_CATEGORIES = (TP, CP, EP, PP, DP)
CATEGORY_OF_GROUP = {"tp": TP, "cp": CP, "ep": EP, "etp": EP, "pp": PP}
"""The simulation's category of a collective over each process group; any other (the data-
parallel, sharding, replica and expert-data-parallel groups, the tied embedding's) is DP."""


@dataclass
class Audit:
    """What an export misses of its simulation (all empty / zero: none)."""

    tasks: int = 0
    comm_tasks: int = 0
    """Tasks with a communication segment."""
    as_compute_s: float = 0.0
    """Communication seconds written as compute nodes, over every stage's template."""
    as_compute: list[str] = field(default_factory=list)
    """Labels of the tasks that have them."""
    missing: Counter = field(default_factory=Counter)
    """Communication segments with no communication node, by category."""
    bytes_written: dict[tuple[str, str], float] = field(default_factory=dict)
    bytes_simulated: dict[tuple[str, str], float] = field(default_factory=dict)
    """Bytes by (collective type, group) over every stage's first rank."""
    exposed_only: list[str] = field(default_factory=list)
    """Collective nodes written with only the seconds the simulation exposed of them
    (``trainsim.exposed_only``): a replay that times collectives itself blocks for the whole
    collective there (until export60: FSDP's forward gathers, DualPipe's paired expert
    exchanges; none in benchmarks/export60_gathers.py's configs now). Not counted in
    :attr:`clean`: their bytes and kind are right."""
    all_ranks: dict[str, float] = field(default_factory=dict)
    """The simulation's collective bytes by type over every rank (what
    ``chakra_read.comm_bytes`` reads back of a whole export)."""

    @property
    def bytes_off(self) -> dict[tuple[str, str], tuple[float, float]]:
        keys = set(self.bytes_written) | set(self.bytes_simulated)
        return {k: (self.bytes_simulated.get(k, 0.0), self.bytes_written.get(k, 0.0))
                for k in sorted(keys)
                if abs(self.bytes_written.get(k, 0.0) - self.bytes_simulated.get(k, 0.0))
                > 0.5 + 1e-9 * self.bytes_simulated.get(k, 0.0)}

    @property
    def clean(self) -> bool:
        return not (self.as_compute or self.missing or self.bytes_off)


def _category(group: str) -> str:
    return CATEGORY_OF_GROUP.get(group, DP)


def _simulated_comms(task, pricer, record) -> list[tuple[str, object]]:
    """(category, op or None) of each collective of ``task``: of a data-parallel-stream task
    the graph's record (or one unknown), of a pass each communication segment's ops (or one
    unknown; a 0-second one with none is nothing: FSDP's wait where no block is regathered)."""
    detail = task.detail
    if isinstance(detail, Exchange):
        return [(PP, None) for _ in detail.messages]
    if detail is None:
        cats = [cat for cat, s in task.segments if cat in COMM_CATEGORIES]
        if not cats:
            return []
        return [(cats[0], op) for op, n in record for _ in range(n)] if record else \
            [(cats[0], None)]
    out: list[tuple[str, object]] = []
    for seg in detail.segments:
        if seg[2] == PAIR_EXPOSED:  # the wait for the pair's exchanges (_pair_comms), no node
            continue
        if seg[0] in COMM_CATEGORIES:
            ops = pricer.ops_of(seg)
            out += [(seg[0], op) for op in ops] if ops else [] if seg[1] == 0 else \
                [(seg[0], None)]
    return out


def _pair_comms(task, pricer) -> list[Comm]:
    """The expert all-to-alls a combined-1F1B pass's paired layers run beside the pair
    (``ep_pairs.note_exchanges``): on the pair's stream, in this pass or its partner's."""
    if task.detail is None or isinstance(task.detail, Exchange):
        return []
    return [op for seg in task.detail.segments for op in (pricer.pair_ops(seg) or (0, ()))[1]]


def audit_chakra(cfg: RunConfig, layer_source: LayerSource | None = None) -> Audit:
    """:class:`Audit` of ``export_chakra(cfg)``'s nodes (each stage's first rank)."""
    builder, _ = trace_nodes(cfg, layer_source)
    layout = Layout(cfg)
    written = {s: _materialize(protos, s * layout.stage_size, layout, _micros(protos))
               for s, protos in builder.nodes.items()}
    out = Audit(tasks=len(builder.tasks))
    by_written: dict[tuple[str, str], float] = defaultdict(float)
    by_simulated: dict[tuple[str, str], float] = defaultdict(float)
    pair_expected: Counter = Counter()  # by stage: a pair's exchanges may sit in either pass
    pair_found: Counter = Counter()
    for i, (task, (stage, first, end)) in enumerate(zip(builder.tasks, builder.span)):
        pairs = _pair_comms(task, builder.pricer)
        pair_expected[stage] += len(pairs)
        comms = _simulated_comms(task, builder.pricer, builder.records.get(i)) + \
            [(EP, op) for op in pairs]
        out.comm_tasks += bool(comms)
        own_s = sum(s for cat, s in task.segments if cat not in COMM_CATEGORIES)
        nodes = written[stage][first:end]
        protos = builder.nodes[stage][first:end]
        compute_s = sum(p.duration_s for p, n in zip(protos, nodes) if n.type == COMP_NODE
                        and not p.name.endswith("(SM contention)"))
        if compute_s > own_s * (1 + 1e-9) + 1e-15:
            out.as_compute_s += compute_s - own_s
            out.as_compute.append(task.label)
        found: Counter = Counter()
        for p, n in zip(protos, nodes):
            if n.type == COMM_COLL_NODE and n.attr("trainsim.exposed_only"):
                out.exposed_only.append(p.name)
            if n.type == COMM_COLL_NODE and p.stream == PAIR_STREAM:
                pair_found[stage] += 1
            elif n.type == COMM_COLL_NODE:
                found[_category(p.comm.group)] += 1  # type: ignore[union-attr]
            if n.type == COMM_COLL_NODE:
                key = (COMM_NAMES[n.attr("comm_type")], p.comm.group)  # type: ignore[union-attr]
                by_written[key] += n.attr("comm_size")
            elif n.type == COMM_SEND_NODE and n.attr("comm_size") > 0:
                found[_category(p.comm.group) if p.comm is not None else PP] += 1
        expected = Counter(cat for cat, _ in comms)
        expected[EP] -= len(pairs)
        for cat, k in expected.items():
            if k > found[cat] and not (cat == PP and isinstance(task.detail, Exchange)):
                out.missing[cat] += k - found[cat]
        for _, op in comms:
            if op is not None and op.kind in COMM_TYPES and \
                    layout.group_id(op.group, stage * layout.stage_size)[1] > 1:
                by_simulated[(op.kind, op.group)] += round(op.bytes)
                out.all_ranks[op.kind] = out.all_ranks.get(op.kind, 0) + \
                    round(op.bytes) * layout.stage_size
    for stage, k in pair_expected.items():
        if k > pair_found[stage]:
            out.missing[EP] += k - pair_found[stage]
    out.bytes_written, out.bytes_simulated = dict(by_written), dict(by_simulated)
    return out



SIMAI_DP_GROUPS = {"dp": "", "dp_cp": "", "edp": "_DP_EP"}
SIMAI_MP_GROUPS = {"tp": "", "etp": "", "ep": "_EP"}


def first_stage_collectives(cfg: RunConfig, layer_source: LayerSource | None = None
                            ) -> tuple[bool, list[tuple[str, Comm, bool, int]]]:
    """(whether the run gathers its parameters pass by pass (ZeRO-3 / FSDP); the first stage's
    collectives in task order, each with its category, whether it blocks (a data-parallel-
    stream task's, or a pass's segment no shorter than its collective) and how many times it
    runs there), from the simulation's own records (as :func:`audit_chakra` reads them)."""
    builder, _ = trace_nodes(cfg, layer_source)
    comm_time = builder.pricer.comm_time
    out: list[tuple[str, Comm, bool, int]] = []
    for i, task in enumerate(builder.tasks):
        if task.stream[0] != 0 or isinstance(task.detail, Exchange):
            continue
        if task.detail is None:
            cat = next((c for c, _ in task.segments if c in COMM_CATEGORIES), DP)
            out += [(cat, op, True, n) for op, n in builder.records.get(i, ())]
            continue
        for seg in task.detail.segments:  # type: ignore[attr-defined]
            if seg[0] in COMM_CATEGORIES:
                ops = builder.pricer.ops_of(seg)
                blocks = seg[1] >= sum(map(comm_time, ops)) * (1 - 1e-12)
                out += [(seg[0], op, blocks, 1) for op in ops]
        # a combined-1F1B pair's exchanges, beside its compute (export61: none listed before)
        out += [(EP, op, False, 1) for op in _pair_comms(task, builder.pricer)]
    return builder.sharded, out


def audit_simai(cfg: RunConfig, layer_source: LayerSource | None = None,
                rows: list | None = None) -> dict[str, tuple[float, float]]:
    """(simulated, written) bytes of each SimAI communication (``ALLGATHER``, ``ALLREDUCE_EP``,
    ...; ``dp:``/``mp:`` for the weight-gradient rows' data-parallel groups and the forward /
    input-gradient rows' model-parallel ones) over one iteration of the first stage's
    representative rank; the simulation's collectives SimAI has no group for (CP's, the tied
    embedding's, HSDP's replicas) under their own names. ``rows``: the SimAI rows, where
    written already (else ``simai_rows``)."""
    from trainsim.interop.simai import KINDS, simai_rows

    sim: dict[str, float] = defaultdict(float)
    for _, op, blocks, n in first_stage_collectives(cfg, layer_source)[1]:
        kind, group = op.kind, op.group
        if group in SIMAI_DP_GROUPS and kind in KINDS:
            sim["dp:" + KINDS[kind] + SIMAI_DP_GROUPS[group]] += op.bytes * n
        elif group in SIMAI_MP_GROUPS and kind in KINDS:
            # hidden behind compute: SimAI's rows block, so their exposed part is compute
            sim[("mp:" if blocks else "hidden mp:") + KINDS[kind] + SIMAI_MP_GROUPS[group]] \
                += op.bytes * n
        else:
            sim[f"{kind} over {group}"] += op.bytes * n
    written: dict[str, float] = defaultdict(float)
    for row in rows if rows is not None else simai_rows(cfg, layer_source):
        for phase, (_, kind, size) in (("mp", row.fwd), ("mp", row.ig), ("dp", row.wg)):
            if kind != "NONE":
                written[f"{phase}:{kind}"] += size
    return {k: (sim.get(k, 0.0), written.get(k, 0.0)) for k in sorted(set(sim) | set(written))}


def timed_replay(cfg: RunConfig, prefix: str | Path,
                 layer_source: LayerSource | None = None) -> tuple[float, float]:
    """(the simulated iteration, the iteration trainsim's reader replays from the export when
    every collective node lasts its collective's whole time, as a replay that times
    collectives itself takes them: ASTRA-sim's network model in the simulation's place).
    Equal where every collective is written where it runs (export60: FSDP's forward gathers
    beside the units they hide behind); longer where a node holds only the exposed part of a
    collective (``trainsim.exposed_only``). Writes ``<prefix>.<rank>.et`` for every rank."""
    from trainsim.interop.chakra import read_chakra, write_et

    builder, iteration = trace_nodes(cfg, layer_source)
    comm_time = builder.pricer.comm_time
    for protos in builder.nodes.values():
        for p in protos:
            if p.exposed_only and p.comm is not None:
                p.duration_s = comm_time(p.comm)
    layout = Layout(cfg)
    prefix = Path(prefix)
    micros = {s: _micros(protos) for s, protos in builder.nodes.items()}
    for rank in range(layout.world):
        stage = layout.stage(rank)
        write_et(prefix.parent / f"{prefix.name}.{rank}.et",
                 _materialize(builder.nodes[stage], rank, layout, micros[stage]), {})
    return iteration, read_chakra(prefix)
