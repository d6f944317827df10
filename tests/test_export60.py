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
from trainsim.interop.chakra_gathers import GATHER_STREAM, plan
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


def test_only_dualpipe_pairs_keep_exposed_only_nodes():
    """Of the audited configs, only DualPipe's paired expert exchanges are still written with
    their exposed seconds (a lead: the pair would need its passes interleaved as branches)."""
    left = {n for n in CONFIGS if audit_chakra(_cfg(n)).exposed_only}
    assert left == {"moe ep8 dualpipe"}
