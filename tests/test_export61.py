"""A combined-1F1B pair's expert all-to-alls in the Chakra export (export61).

Megatron-core's combined 1F1B runs a steady backward and the next forward as a pair, each MoE
layer's dispatch and combine beside the other micro-batch's compute; the simulation prices the
paired passes without their exchanges and charges what the pair exposes of them on the
backward (``ep_pairs.PAIR_EXPOSED``). Until export61 the export wrote no collective for the
paired passes' exchanges (a step of 4 micro-batches: 16 of 64 all-to-alls), wrote the exposed
seconds as a node with no collective, and the paired forwards' blocking expert all-gathers
(the router's token counts) as compute. Now each pass's exchanges are collective nodes of
their whole time on their own stream and the exposed seconds are the backward's wait for them:
replayed with every collective at its whole time, the export gives the simulated iteration."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import trainsim
from trainsim.ep_pairs import PAIR_EXPOSED
from trainsim.interop.chakra import (
    COMM_COLL_NODE,
    Layout,
    _materialize,
    _micros,
    read_chakra,
    trace_nodes,
    write_et,
)
from trainsim.interop.chakra_audit import audit_chakra, audit_simai, timed_replay
from trainsim.interop.chakra_pairs import PAIR_STREAM, PassPairs, plan_pair
from trainsim.workload.ops import Comm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from export60_gathers import MORE
from export61_pairs import PAIRS, configs

M4 = "moe combined 1f1b (ep overlap) m4"
EXPOSED = ["combined 1f1b ep16 nic50", "combined 1f1b pp2 vpp2 ep16 moe every 2nd nic200",
           "combined 1f1b ep32 nic25 (exchanges past the backward)",
           "combined 1f1b tp2 sp ep16 nic50"]


def _cfg(name: str) -> trainsim.RunConfig:
    return trainsim.run_config_from_dict({**MORE, **PAIRS}[name])


def _exposed_s(builder) -> float:
    return sum(seg[1] for t in builder.tasks if t.detail is not None
               for seg in t.detail.segments if seg[2] == PAIR_EXPOSED)  # type: ignore[attr-defined]


def test_paired_passes_write_their_blocking_expert_collectives():
    """The paired forwards' router all-gathers (priced by ``ep_pairs._timeline``, outside the
    recording ``price``) are collective nodes: the audit finds nothing (main: 12 expert
    segments with no node, 0.10 ms written as compute)."""
    a = audit_chakra(_cfg(M4))
    assert a.clean, (a.as_compute, dict(a.missing), a.bytes_off)


def test_every_micro_batchs_exchanges_are_written():
    """4 micro-batches x (forward + backward) x 4 MoE layers x (dispatch + combine) = 64
    all-to-alls of one size on the rank, 48 of them on the pair stream (main: the 16 of the
    lone first forward and last backward)."""
    builder, _ = trace_nodes(_cfg(M4))
    a2a = [p for p in builder.nodes[0] if p.type == COMM_COLL_NODE and p.comm is not None
           and p.comm.kind == "all_to_all"]
    assert len(a2a) == 64
    assert len({p.comm.bytes for p in a2a}) == 1  # type: ignore[union-attr]
    assert sum(p.stream == PAIR_STREAM for p in a2a) == 48


@pytest.mark.parametrize("name", [M4, *EXPOSED[:3], pytest.param(EXPOSED[3],
                                                                   marks=pytest.mark.slow)])
def test_pairs_replay_to_the_simulated_iteration(name, tmp_path):
    """Audited clean, and replayed with every collective at its whole time the export lasts
    the simulated iteration, the pairs' exposed seconds from none to most of the step."""
    cfg = _cfg(name)
    a = audit_chakra(cfg)
    assert a.clean, (a.as_compute, dict(a.missing), a.bytes_off)
    assert not a.exposed_only
    iteration, replay = timed_replay(cfg, tmp_path / "w")
    assert replay == pytest.approx(iteration, rel=1e-9)


@pytest.mark.parametrize("name", EXPOSED)
def test_exposed_seconds_are_a_wait_not_a_node(name):
    """No node holds the pair's exposed seconds: the exchanges' whole time on the pair stream
    is at least the exposed seconds, and no node is named for them."""
    builder, _ = trace_nodes(_cfg(name))
    x = _exposed_s(builder)
    assert x > 1e-3  # these configs expose the exchanges (ms)
    nodes = [p for protos in builder.nodes.values() for p in protos]
    assert not any(PAIR_EXPOSED in p.name for p in nodes)
    pair_s = sum(p.duration_s for p in nodes if p.stream == PAIR_STREAM)
    assert pair_s >= x


def test_a_slower_network_lengthens_an_exposed_pair(tmp_path):
    """Where a pair exposes its exchanges, they are on the step's critical path: replayed
    with the pair stream's collectives 1.5 times longer, the step is longer by a good part of
    that (main wrote the exposure as compute: no collective to slow)."""
    cfg = _cfg("combined 1f1b ep16 nic50")
    builder, iteration = trace_nodes(cfg)
    added = 0.0
    for protos in builder.nodes.values():
        for p in protos:
            if p.stream == PAIR_STREAM:
                added += 0.5 * p.duration_s
                p.duration_s *= 1.5
    layout = Layout(cfg)
    for rank in range(layout.world):
        stage = layout.stage(rank)
        protos = builder.nodes[stage]
        write_et(tmp_path / f"w.{rank}.et", _materialize(protos, rank, layout, _micros(protos)), {})
    slower = read_chakra(tmp_path / "w")
    assert added > 0
    assert slower - iteration > 0.5 * added  # 0.142 of 0.153 s


def _ops(n: int, size: float = 1e6) -> tuple[Comm, ...]:
    return tuple(Comm(f"a2a{i}", "all_to_all", size, "ep") for i in range(n))


def test_plan_waits_where_the_exposed_seconds_end():
    """Exchanges that fit the backward's compute plus its exposed seconds: the backward holds
    its own (and the forward's first where its own are shorter than the exposure), waiting
    for them ``S - X`` into its compute; the forward keeps the rest, joined at its end."""
    t = {op: 1.0 for op in _ops(4)}
    ops = list(t)
    b = PassPairs(False, tuple(ops[:2]), 2.5, 10.0)
    f = PassPairs(True, tuple(ops[2:]), 0.0, 10.0)
    wb, wf = plan_pair(b, f, t.__getitem__)
    assert wb.ops == tuple(ops[:3]) and wb.join_at_s == pytest.approx(0.5)
    assert wb.contention_s == 0.0 and wf.ops == (ops[3],) and wf.join_at_s is None
    b0 = PassPairs(False, tuple(ops[:2]), 0.0, 10.0)
    wb, wf = plan_pair(b0, f, t.__getitem__)
    assert wb.ops == tuple(ops[:2]) and wb.join_at_s is None and wf.ops == tuple(ops[2:])
    alone = PassPairs(False, tuple(ops[:2]), 3.0, 10.0)  # more exposed than all its exchanges
    wb, _ = plan_pair(alone, None, t.__getitem__)
    assert wb.join_at_s == 0.0 and wb.contention_s == pytest.approx(1.0)


def test_plan_fills_the_backward_exactly_and_splits_one_exchange():
    """Exchanges longer than the backward's compute plus its exposed seconds: the backward's
    window ends exactly there (the straddling exchange in two parts, its bytes split as its
    time), the forward's holds the rest."""
    ops = _ops(4, 1000.0)
    t = dict.fromkeys(ops, 2.0)
    b = PassPairs(False, ops[:2], 2.0, 1.0)  # capacity 3.0 s of 8.0 s
    f = PassPairs(True, ops[2:], 0.0, 6.0)
    wb, wf = plan_pair(b, f, lambda op: t.get(op, 0.0))
    assert sum(wb.seconds) == pytest.approx(3.0) and wb.join_at_s is None
    assert sum(wb.seconds) + sum(wf.seconds) == pytest.approx(8.0)
    assert sum(op.bytes for op in wb.ops + wf.ops) == 4000.0
    assert wb.ops[-1].bytes == 500.0 and wf.ops[0].bytes == 500.0


def test_simai_counts_the_pairs_exchanges_as_hidden():
    """SimAI's audit (and the line ``write_simai`` warns with) counts the paired passes'
    exchanges as hidden: blocked plus hidden bytes are every micro-batch's (main: the lone
    passes' only, hidden 0)."""
    a = audit_simai(_cfg(M4))
    blocks, hidden = a["mp:ALLTOALL_EP"][0], a["hidden mp:ALLTOALL_EP"][0]
    builder, _ = trace_nodes(_cfg(M4))
    written = sum(p.comm.bytes for p in builder.nodes[0] if p.type == COMM_COLL_NODE
                  and p.comm is not None and p.comm.kind == "all_to_all")
    assert blocks + hidden == pytest.approx(written)
    assert hidden == pytest.approx(3 * blocks)


@pytest.mark.parametrize("name", ["torchtitan 2025-12 LoopedBFS fsdp2 pp2",
                                  "torchtitan 2025-12 InterleavedZeroBubble fsdp2 pp2",
                                  "looped_bfs pp2 vpp2", "dualpipe_v pp2 ep8"])
def test_more_schedules_audit_clean_and_replay(name, tmp_path):
    """Schedules export60's table left out (torchtitan's with FSDP2, Megatron's looped BFS and
    DualPipeV with experts) audit clean and replay to the simulated iteration."""
    cfg = configs()[name]
    a = audit_chakra(cfg)  # type: ignore[arg-type]
    assert a.clean and not a.exposed_only
    iteration, replay = timed_replay(cfg, tmp_path / "w")  # type: ignore[arg-type]
    assert replay == pytest.approx(iteration, rel=1e-9)


@pytest.mark.parametrize("name", ["fsdp2 (torchtitan) m4", "megatron-fsdp (nemo 25.04)",
                                  "zero3 deepspeed a100 m4", "ddp zero0", "pp4 vpp2",
                                  "zero3 deepspeed per-parameter gathers",
                                  "fsdp2 pp2 (torchtitan)"])
def test_simai_compute_rows_are_the_simulations_own_compute(name):
    """The first stage's SimAI compute rows sum to the simulation's first-stage compute, host
    waits, optimizer and the exposed part of what SimAI cannot overlap: FSDP2's copy-out /
    copy-in, Megatron-FSDP's gradient copies, DeepSpeed's per-parameter gather launches and
    unflatten included (main: 2.16, 6.35, 6.82, 0.69 ms a step short)."""
    from export59_audit import CONFIGS
    from export61_pairs import simai_gap

    g = simai_gap(trainsim.run_config_from_dict({**CONFIGS, **MORE}[name]))
    assert g["simai"] == pytest.approx(g["own"], rel=1e-9)
