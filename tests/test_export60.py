"""A forward's FSDP unit all-gathers in the Chakra export run beside the compute they hide
behind (export60): each unit's gathers are collective nodes of their whole time on a stream of
their own, issued as the unit before starts, and each unit's compute waits for its own. A
replay with every collective at its whole time (what ASTRA-sim does with a collective node)
then gives the simulated iteration; before export60 the gathers held only the wait's seconds on
the compute stream (``trainsim.exposed_only``) and such a replay ran 0.3-5.7 % long."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import trainsim
from trainsim.interop.chakra import COMM_COLL_NODE, export_chakra, read_chakra, trace_nodes
from trainsim.interop.chakra_audit import audit_chakra, timed_replay
from trainsim.interop.chakra_gathers import GATHER_STREAM, POOL_STREAM, plan
from trainsim.sharded_passes import GATHER_WAIT

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from export59_audit import CONFIGS
from export60_gathers import MORE

ALL = {**CONFIGS, **MORE}
SHARDED = [n for n, d in ALL.items() if d["parallel"].get("zero_stage") == 3
           and d["parallel"].get("zero3_gather") != "per_parameter"]


def _cfg(name: str) -> trainsim.RunConfig:
    return trainsim.run_config_from_dict(ALL[name])


def _gather_nodes(builder):
    return [p for protos in builder.nodes.values() for p in protos if p.stream == GATHER_STREAM]


def _waits(builder):
    """The simulation's forward gather-wait segments (those with a walk record)."""
    return [seg for t in builder.tasks if t.detail is not None
            for seg in t.detail.segments  # type: ignore[attr-defined]
            if seg[2] == GATHER_WAIT and id(seg) in builder.pricer.walks]


def test_the_sharded_configs_are_many():
    assert len(SHARDED) >= 12


@pytest.mark.parametrize("name", SHARDED)
def test_timed_replay_gives_the_simulated_iteration(name, tmp_path):
    """Every collective at its whole time, the replay of every rank's export lasts the
    simulated iteration (to 1e-6); the gathers' written seconds exceed the waits the
    simulation charged, so an exposed-time form could not pass."""
    cfg = _cfg(name)
    iteration, replay = timed_replay(cfg, tmp_path / "w")
    assert replay == pytest.approx(iteration, rel=1e-6)
    assert iteration == pytest.approx(trainsim.simulate(cfg).iteration_time_s, rel=1e-9)
    builder, _ = trace_nodes(cfg)
    gathers = _gather_nodes(builder)
    assert gathers and all(p.type == COMM_COLL_NODE and not p.exposed_only for p in gathers)
    assert sum(p.duration_s for p in gathers) > sum(seg[1] for seg in _waits(builder)) * 1.01
    assert not audit_chakra(cfg).exposed_only


@pytest.mark.parametrize("name", ["fsdp2 (torchtitan) m4", "megatron-fsdp pp2 (nemo 25.04)"])
def test_written_durations_round_trip(name, tmp_path):
    """The export read back as written (exact seconds) gives the simulated iteration too."""
    cfg = _cfg(name)
    out = export_chakra(cfg, tmp_path / "w")
    assert read_chakra(tmp_path / "w") == pytest.approx(out.iteration_time_s, rel=1e-6)


@pytest.mark.parametrize("name", ["fsdp2 (torchtitan) m4", "zero3 deepspeed a100 m4",
                                  "fsdp2 pp2 vpp2 (torchtitan) m8", "moe fsdp2 ep2 (edp)"])
def test_units_split_where_the_simulation_cut_them(name):
    """Each unit's segments hold the compute seconds the simulation's walk gave the unit
    (``sharded_passes.unit_gather_passes``' ``compute``), and its gathers its units' ops."""
    builder, _ = trace_nodes(_cfg(name))
    checked = 0
    for t in builder.tasks:
        segs = list(getattr(t.detail, "segments", ()))
        for k, seg in enumerate(segs):
            record = builder.pricer.walks.get(id(seg))
            if record is None:
                continue
            walk = plan(segs, k, record, builder.pricer.comm_time,
                        builder.pricer.sm_share["dp"])
            assert walk is not None
            units, compute = record[0], record[1]
            bounds = sorted((s, u) for s, us in walk.starts.items() for u in us)
            for (s, u), nxt in zip(bounds, [b for b, _ in bounds[1:]] + [walk.end]):
                assert sum(x[1] for x in segs[s:nxt]) == pytest.approx(compute[u], rel=1e-9,
                                                                     abs=1e-15)
            assert walk.units == [tuple(u) for u in units]
            checked += 1
    assert checked


def test_each_unit_waits_for_its_own_gathers():
    """The first compute node of unit u depends on unit u's last gather; unit u + 1's
    gathers wait for what unit u's compute waits for (issued as it starts)."""
    builder, _ = trace_nodes(_cfg("zero3 deepspeed a100 m4"))
    nodes = builder.nodes[0]
    gathers = [p for p in nodes if p.stream == GATHER_STREAM]
    assert gathers
    for g in gathers:
        waiting = [p for p in nodes if g.id in p.data and p.stream == "compute"]
        later = [p for p in nodes if g.id in p.data + p.ctrl and p.stream == GATHER_STREAM]
        assert waiting or later  # every gather is waited for
        for p in waiting:
            assert p.duration_s > 0 or p.name.endswith("(SM contention)")


@pytest.mark.parametrize("name", ["moe ep8 dualpipe", "moe ep8 dualpipe tp2",
                                  "moe combined 1f1b (ep overlap) m4"])
def test_pooled_expert_exchanges_replay_to_the_simulated_iteration(name, tmp_path):
    """DualPipe's pairs (and any list priced with ``moe_overlap_ep_comm``): the list's expert
    exchanges are collective nodes of their whole time on a stream of their own from the
    list's start, joined at its end; the timed replay gives the simulated iteration (before:
    100 exposed-only nodes, +1.9 % / +1.3 % for the two DualPipe runs)."""
    cfg = _cfg(name)
    iteration, replay = timed_replay(cfg, tmp_path / "w")
    assert replay == pytest.approx(iteration, rel=1e-6)
    builder, _ = trace_nodes(cfg)
    pooled = [p for protos in builder.nodes.values() for p in protos if p.stream == POOL_STREAM]
    if "dualpipe" in name:
        assert len(pooled) >= 100 and all(p.comm.group in ("ep", "etp") for p in pooled)
        full = sum(builder.pricer.comm_time(p.comm) for p in pooled)
        assert sum(p.duration_s for p in pooled) == pytest.approx(full, rel=1e-9)


def test_no_collective_is_written_with_its_exposed_seconds_only():
    """Of every audited configuration (export59's and the ones above), no collective node
    holds only the part the simulation exposed (before: 15 configs, 317 nodes)."""
    left = {n for n in ALL if audit_chakra(_cfg(n)).exposed_only}
    assert not left


# ------------------------------------------------------------------ SimAI: what it cannot state

def _limits(name: str) -> list[str]:
    from trainsim.interop.simai_limits import simai_limits

    return simai_limits(_cfg(name))


def test_simai_names_dualpipe_pairs_with_the_simulations_bytes():
    """DualPipe: SimAI's rows block on every expert all-to-all; the line gives the written and
    the simulation's blocking and hidden bytes (``audit_simai``'s)."""
    from trainsim.interop.chakra_audit import audit_simai

    a = audit_simai(_cfg("moe ep8 dualpipe"))
    lines = [s for s in _limits("moe ep8 dualpipe") if "of ALLTOALL_EP" in s]
    assert len(lines) == 1 and "DualPipe" in lines[0]
    written, blocks, hidden = (a["mp:ALLTOALL_EP"][1], a["mp:ALLTOALL_EP"][0],
                               a["hidden mp:ALLTOALL_EP"][0])
    assert hidden > 0.5 * written > 0
    for x in (written, blocks, hidden):
        assert f"{x / 1e6:.1f} MB" in lines[0]


def test_simai_names_the_combined_1f1b_lone_passes():
    """The combined 1F1B: the rows hide every all-to-all (kept as time), the simulation's
    lone passes block on theirs."""
    from trainsim.interop.chakra_audit import audit_simai

    name = "moe combined 1f1b (ep overlap)"
    blocks, written = audit_simai(_cfg(name))["mp:ALLTOALL_EP"]
    lines = [s for s in _limits(name) if "of ALLTOALL_EP" in s]
    assert len(lines) == 1 and "combined 1F1B" in lines[0]
    assert written == 0 < blocks
    assert lines[0].startswith("SimAI: the rows block on 0.0 kB of ALLTOALL_EP a step where "
                               f"the simulation blocks on {blocks / 1e6:.1f} MB")


@pytest.mark.parametrize("name", ["fsdp2 (torchtitan)", "megatron-fsdp pp2 (nemo 25.04)",
                                  "zero3 deepspeed a100 m4"])
def test_simai_names_the_forward_gathers(name):
    """ZeRO-3 / FSDP: SimAI has data-parallel collectives only in weight-gradient phases; the
    line gives the first stage's forward gather bytes (those the Chakra export writes beside
    the units) and the wait the simulation charged."""
    builder, _ = trace_nodes(_cfg(name))
    stage0 = [p for p in builder.nodes[0] if p.stream == GATHER_STREAM]
    lines = [s for s in _limits(name) if "FSDP unit all-gathers" in s]
    assert len(lines) == 1
    assert f"({sum(p.comm.bytes for p in stage0) / 1e6:.1f} MB a step)" in lines[0]


def test_simai_names_groups_it_lacks():
    assert any("'embd'" in s for s in _limits("tied embeddings pp2"))
    assert any("'cp'" in s for s in _limits("tp-sp-cp-pp-vpp"))


@pytest.mark.parametrize("name", ["zero1 (distributed optimizer)", "moe ep4 pp2",
                                  "deepspeed pp2 zero1", "zero3 deepspeed per-parameter gathers"])
def test_simai_rows_that_block_as_simulated_have_no_blocking_line(name):
    """Where the rows block on what the simulation blocks on, no line says otherwise (the
    DualPipe / combined 1F1B lines come from a real difference)."""
    assert not any("the rows block on" in s for s in _limits(name))


def test_write_simai_warns_each_line(tmp_path):
    from trainsim.interop.simai import write_simai
    from trainsim.interop.simai_limits import SimAIApproximation

    cfg = _cfg("moe ep8 dualpipe")
    with pytest.warns(SimAIApproximation) as got:
        write_simai(cfg, tmp_path / "w.txt")
    assert [str(w.message) for w in got if w.category is SimAIApproximation] == \
        _limits("moe ep8 dualpipe")


@pytest.mark.parametrize("schedule,vpp", [("GPipe", 1), ("ZBVZeroBubble", 2), ("DualPipeV", 2)])
def test_torchtitan_schedules_with_fsdp_replay_to_the_simulated_iteration(schedule, vpp,
                                                                          tmp_path):
    """torchtitan's pipeline schedules beside FSDP2 (fsdppp60): the forward gathers are
    branches (on the gather stream) wherever a pass holds a wait, and the timed replay of
    the export is the simulated iteration."""
    cfg = trainsim.load_run_config(
        Path(__file__).resolve().parents[1] / "examples" / "llama3-8b-h100.yaml",
        ["parallel.tp=1", "training.micro_batch_size=1", "training.global_batch_size=16",
         "model.num_layers=8", "cluster.num_gpus=4", "parallel.pp=2",
         f"parallel.pipeline_schedule={schedule}", f"parallel.vpp={vpp}",
         "training.framework=torchtitan", "parallel.zero_stage=3"])
    iteration, replay = timed_replay(cfg, tmp_path / "w")
    assert replay == pytest.approx(iteration, rel=1e-6)
    assert not audit_chakra(cfg).exposed_only
