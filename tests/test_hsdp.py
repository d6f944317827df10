"""Hybrid sharded data parallelism (parallel.dp_replicate): the state sharded inside a replica
of dp / dp_replicate adjacent ranks, gradient shards all-reduced across the replicas."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import CommRecorder

from trainsim import run_config_from_dict, simulate
from trainsim.errors import ConfigError
from trainsim.memory.state import model_state
from trainsim.pricing import Pricer
from trainsim.simulator import build_tasks

# llama2-7b with 2 layers, by hand: a layer holds q, k, v, o (4 x 4096^2 = 67,108,864),
# the SwiGLU MLP (3 x 4096 x 11008 = 135,266,304) and two norms (8,192): 202,383,360;
# the word embedding and the untied output layer 2 x 32000 x 4096 = 262,144,000, the final
# norm 4,096
STAGE_ELEMENTS = 2 * 202_383_360 + 262_144_000 + 4_096


def cfg(replicate=1, num_gpus=32, framework=None, model=None, **parallel):
    training = {"global_batch_size": 32, "micro_batch_size": 1, "seq_length": 1024,
                "dtype": "bf16", "grad_reduce_dtype": "bf16"}
    if framework:
        training["framework"], training["framework_version"] = framework
    par = {"tp": 1, "pp": 1, "zero_stage": 3, "data_parallel_impl": "fsdp2", **parallel}
    if replicate is not None:
        par["dp_replicate"] = replicate
    return run_config_from_dict({
        "model": model or {"preset": "llama2-7b", "num_layers": 2},
        "parallel": par, "training": training,
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": num_gpus, "gpus_per_node": 8,
                    "nic_gbit_s_per_gpu": 100}})



def _comms(c):
    pricer = CommRecorder(c)
    build_tasks(c, pricer)
    return pricer.comms


def test_groups_sizes_and_tiers():
    """32 ranks, 8 per node, 4 replicas: the shard group is one node's 8 GPUs (NVLink), the
    replica group 4 ranks 8 apart, one per node (the NICs)."""
    c = cfg(4)
    assert (c.dp, c.shard_ranks) == (32, 8)
    spans = Pricer(c).spans
    assert (spans["dp_cp"].size, spans["dp_cp"].nodes) == (8, 1)
    assert (spans["dp_rep"].size, spans["dp_rep"].nodes, spans["dp_rep"].per_node) == (4, 4, 1)
    plain = Pricer(cfg(1)).spans
    assert (plain["dp_cp"].size, plain["dp_cp"].nodes) == (32, 4)


def test_fsdp_reduce_scatter_then_replica_all_reduce_bytes():
    """Every reduce-scatter over the replica (bf16: 2 bytes an element, the whole stage's
    gradients over the backward) is followed by an all-reduce of its 1/8 shard over the
    replicas; the gathers stay inside the replica."""
    c = cfg(4)
    comms = _comms(c)  # each distinct collective, priced once
    # the task graph's (the gather walk's per-block ones, ``block_reduce_s``, stay apart: the
    # replicas' all-reduce runs over a process group of its own, not on the gathers' links)
    rs = {op.bytes for op in comms if op.kind == "reduce_scatter" and op.name.startswith("grad_")}
    ar = {op.bytes for op in comms if op.group == "dp_rep"}
    assert rs and {op.group for op in comms if op.kind == "reduce_scatter"} == {"dp_cp"}
    assert {op.kind for op in comms if op.group == "dp_rep"} == {"all_reduce"}
    assert ar == {b / 8 for b in rs}
    assert {op.group for op in comms if op.kind == "all_gather"} == {"dp_cp"}
    labels = [t.label for t in simulate(c, keep_timeline=True).timeline.tasks]
    n_rs = sum(x.startswith("ZeRO-3 grad reduce-scatter") and "HSDP" not in x for x in labels)
    n_ar = sum("HSDP all-reduce over 4 replicas" in x for x in labels)
    assert n_rs == n_ar > 0
    # each block's own gradients, 2 bytes each, the root unit's (embedding and output layer,
    # ``rank_grad_elements``: its final norm's 4,096 left out) with the last block's
    layer, ends = 202_383_360, 262_144_000
    assert rs == {2 * layer, 2 * (layer + ends)}  # a backward's two: the stage's gradients
    assert 2 * layer + 2 * (layer + ends) == 2 * (STAGE_ELEMENTS - 4_096)
    assert not [op for op in _comms(cfg(1)) if op.group == "dp_rep"]


def test_megatron_instances_all_reduce_their_shard():
    """Megatron-core's distributed optimizer with 4 instances (its own flag name):
    reduce-scatter inside an instance, all-reduce of the shard across instances, parameters
    all-gathered inside the instance."""
    c = cfg(None, zero_stage=0, distributed_optimizer=True, data_parallel_impl="megatron",
            num_distributed_optimizer_instances=4)
    assert c.parallel.dp_replicate == 4
    comms = _comms(c)
    rs = {op.bytes for op in comms if op.kind == "reduce_scatter" and op.group == "dp_cp"}
    ar = {op.bytes for op in comms if op.group == "dp_rep"}
    assert rs and ar == {b / 8 for b in rs}
    assert {op.group for op in comms if op.kind == "all_gather"} == {"dp_cp"}


def test_memory_sharded_over_the_replica_only():
    """FSDP2: fp32 shard, fp32 gradient shard and Adam's two fp32 moments (16 bytes an
    element) over the 8 ranks of a replica, not the 32 data-parallel ranks."""
    hsdp, full = model_state(cfg(4), 0), model_state(cfg(1), 0)
    assert hsdp.weights + hsdp.gradients + hsdp.optimizer == pytest.approx(
        16 * STAGE_ELEMENTS / 8)
    assert full.weights + full.gradients + full.optimizer == pytest.approx(
        16 * STAGE_ELEMENTS / 32)
    assert simulate(cfg(4)).peak_memory_bytes > simulate(cfg(1)).peak_memory_bytes


def test_torchtitan_alias_and_replicas_cost_time():
    """torchtitan's name for the replicas; their all-reduces take at least the ring's bound:
    the stage's bf16 gradient shard (2 x STAGE_ELEMENTS / 8 bytes over the backward) crosses
    2 (n-1)/n of itself over each rank's 100 Gbit/s NIC (4 replicas, one per node)."""
    c = cfg(None, data_parallel_replicate_degree=4)
    assert c.parallel.dp_replicate == 4
    tasks = simulate(c, keep_timeline=True).timeline.tasks
    spent = sum(t.duration_s for t in tasks if "HSDP all-reduce" in t.label)
    bound = 2 * 3 / 4 * (2 * STAGE_ELEMENTS / 8) / (100e9 / 8)
    assert bound <= spent < 3 * bound


@pytest.mark.parametrize("kwargs, message", [
    ({"replicate": 3}, "does not divide dp=32"),
    ({"replicate": 32}, "that is plain data parallelism: use zero_stage 0 and dp_replicate 1"),
    ({"replicate": 4, "num_gpus": 8, "cp": 4}, "does not divide dp=2"),
    # the whole-gradient all-reduce of zero1 groups (InternEvo) spans every data-parallel
    # rank: with CP that group is not priced
    ({"replicate": 2, "zero_stage": 1, "data_parallel_impl": "megatron", "cp": 2,
      "zero1_grad_reduce": "all_reduce"}, "zero1_grad_reduce=all_reduce and cp=2"),
    ({"replicate": 0}, "dp_replicate=0 must be a positive"),
    ({"replicate": 2, "zero_stage": 0, "data_parallel_impl": "megatron"}, "needs a sharded"),
    ({"replicate": 2, "zero_stage": 1, "data_parallel_impl": "deepspeed"}, "not modelled"),
    ({"replicate": 2, "model": {"preset": "mixtral-8x7b", "num_layers": 2}, "ep": 8},
     "MoE model"),
    ({"replicate": 2, "zero_stage": 1, "data_parallel_impl": "deepspeed",
      "framework": ("megatron-deepspeed", "2022-03")}, "no hybrid sharded data parallelism"),
    ({"replicate": 2, "data_parallel_impl": "fsdp1", "framework": ("pytorch", "1.13")},
     "no hybrid sharded data parallelism"),
    ({"replicate": 2, "framework": ("torchtitan", "2024-05")},
     "no hybrid sharded data parallelism"),
])
def test_bad_input(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        cfg(**kwargs)


def test_frameworks_that_run_it():
    c = cfg(2, data_parallel_impl="fsdp1", framework=("pytorch", "2.4"))
    assert c.parallel.dp_replicate == 2
    assert cfg(2, framework=("torchtitan", "2025-06")).parallel.dp_replicate == 2


@pytest.mark.parametrize("name, before, since", [
    ("pytorch", "1.13.1", "2.0"),              # HYBRID_SHARD: pytorch#89915, in v2.0.0
    ("megatron-core", "0.9", "0.10"),          # bb84eb93fa, first in core_r0.10.0
    ("megatron-lm", "2024-11", "2024-11-30"),  # bb84eb93fa (2024-11-30)
    ("torchtitan", "2024-09", "2024-10"),      # db6b39acd (2024-09-10), entry 2024-10
])
def test_profiles_date_the_feature(name, before, since):
    from trainsim.catalog.frameworks import framework_profile

    assert framework_profile(name, before).supports("hybrid_shard") is False
    assert framework_profile(name, since).supports("hybrid_shard") is True
    assert framework_profile("megatron-bridge", "25.09").supports("hybrid_shard") is True


def test_megatron_instances_split_dp_times_cp():
    """Megatron-core (core_r0.11.0+) splits the dp x cp ranks into instances: dp 2, cp 4 and
    4 instances shard over 2 ranks (rank = cp_i + 4 dp_i with tp 1: instance blocks of 2
    consecutive dp-cp ranks, their copies 2 apart), which FSDP's dp-only mesh refuses."""
    from trainsim.interop.chakra import Layout

    c = cfg(4, num_gpus=8, cp=4, zero_stage=0, distributed_optimizer=True,
            data_parallel_impl="megatron")
    assert (c.dp, c.shard_ranks) == (2, 2)
    assert Pricer(c).spans["dp_rep"].size == 4
    layout = Layout(c)
    assert layout._ranks("dp_cp", 5) == [4, 5]
    assert layout._ranks("dp_rep", 5) == [1, 3, 5, 7]


def test_checkpoint_bytes_per_gpu_of_one_replica():
    """The state is sharded over one replica: 4 replicas hold 4x the bytes per GPU."""
    from trainsim.reliability.config import CheckpointConfig
    from trainsim.reliability.plan import checkpoint_costs

    ck = CheckpointConfig()
    hsdp, full = checkpoint_costs(cfg(4), ck), checkpoint_costs(cfg(1), ck)
    assert hsdp.per_gpu_bytes == pytest.approx(4 * full.per_gpu_bytes)
    assert hsdp.size_bytes == full.size_bytes


def test_validation_column_on_the_fms_hsdp_rows():
    """The fms-fsdp rows that ran HYBRID_SHARD state one replica per 8-GPU node."""
    from trainsim.validate.row_settings import training_base

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "training_pytorch.csv"
    rows = list(csv.DictReader(path.open(newline="")))
    hsdp = [r for r in rows if r.get("dp_replicate")]
    assert hsdp and all("HYBRID_SHARD" in r["note"] for r in hsdp)
    for r in hsdp:
        assert int(r["dp_replicate"]) == int(r["num_gpus"]) // int(r["gpus_per_node"])
        raw, _ = training_base(r)
        assert int(raw["parallel"]["dp_replicate"]) == int(r["dp_replicate"])


def test_chakra_groups_follow_the_replicas():
    """tp 2 x dp 8 (4 replicas of 2): rank 5 (tp 1, dp 2) shards with dp 2-3 and replicates
    with dp 0, 2, 4, 6 (Megatron order tp-cp-dp: rank = tp + 2 dp)."""
    from trainsim.interop.chakra import Layout

    layout = Layout(cfg(4, num_gpus=16, tp=2))
    assert layout._ranks("dp_cp", 5) == [5, 7]
    assert layout._ranks("dp_rep", 5) == [1, 5, 9, 13]
    assert Layout(cfg(1, num_gpus=16, tp=2))._ranks("dp_cp", 5) == list(range(1, 16, 2))


def test_simai_export_refuses_hsdp():
    from trainsim.interop.simai import simai_rows

    with pytest.raises(ConfigError, match="SimAI's workload format has no second"):
        simai_rows(cfg(4))


def test_cli_bad_replicas_is_one_error_line(tmp_path):
    from helpers import cli, one_error_line

    path = tmp_path / "run.yaml"
    path.write_text("model: {preset: llama2-7b, num_layers: 2}\n"
                    "parallel: {zero_stage: 3, data_parallel_impl: fsdp2}\n"
                    "training: {global_batch_size: 32, micro_batch_size: 1, seq_length: 1024}\n"
                    "cluster: {gpu: a100-sxm-80gb, num_gpus: 32, gpus_per_node: 8}\n")
    # in-process (helpers.cli: an exception other than a refusal escapes with its traceback)
    out = cli("simulate", str(path), "--set", "parallel.data_parallel_replicate_degree=5")
    assert out.exit_code != 0 and "Traceback" not in out.stderr
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert lines == [lines[0]] and lines[0].startswith("error: parallel.dp_replicate=5 does not "
                                                       "divide")
    assert one_error_line(out, warnings=False) == lines[0]


def test_communicators_of_both_groups():
    """NCCL communicators (each with its buffers): the world, the data-parallel group, and
    HSDP's shard group of 8 and replica group of 4."""
    from trainsim.memory.allocator import communicator_sizes

    assert sorted(communicator_sizes(cfg(4))) == [4, 8, 32, 32]
    assert sorted(communicator_sizes(cfg(1))) == [32, 32]


def test_replica_all_reduce_holds_the_gathers_links_only_when_both_groups_cross_nodes():
    """Review finding: HSDP's all-reduce over the replicas runs over a process group of its own,
    concurrently with the sharding group's gathers; it shares their bandwidth where both cross
    the nodes' NICs (a replica of 16 ranks on two nodes), not where the gathers stay on NVLink
    (a replica of 8 ranks, one node): ``block_reduce_s`` counts it only then."""
    from trainsim.sharded_passes import block_reduce_s, grad_reduce, replica_reduce
    from trainsim.workload.sharding import rank_grad_elements

    for num_gpus, counted in ((32, True), (16, False)):
        c = cfg(2, num_gpus)
        pricer = Pricer(c)
        (dense, _), _ = rank_grad_elements(c, [0], False, False)
        op = grad_reduce(c, dense, "dp_cp")
        replicas = replica_reduce(c, op)
        assert replicas is not None
        own, theirs = pricer.comm_time(op), pricer.comm_time(replicas)
        assert theirs > 0
        assert block_reduce_s(c, pricer, 0) == pytest.approx(own + theirs * counted)


def test_replica_all_reduce_runs_on_its_own_stream_unless_on_the_gathers_links():
    """Review finding (fms2402a-13b-a100-128-b1): every collective was a task on the one
    data-parallel stream, so a block's NVLink gather waited behind the inter-node replica
    all-reduce issued before it. FSDP1 ``_reduce_grad`` runs that all-reduce on
    ``_all_reduce_stream`` over ``_inter_node_pg``, FSDP2 ``foreach_reduce`` on
    ``all_reduce_stream`` over the replicate group: a stream of its own, beside the gathers,
    where the sharding group stays in the node (16 GPUs, replicas of 8); where both groups
    cross the NICs (32 GPUs, replicas of 16) it shares the gathers' links, in issue order."""
    from trainsim.engine import run
    from trainsim.simulator import build_graph

    for num_gpus, stream in ((16, "dp_rep"), (32, "dp")):
        c = cfg(2, num_gpus)
        g = build_graph(c, Pricer(c, {"dp": 0.0, "pp": 0.0, "ep": 0.0}))
        replicas = [i for i, t in enumerate(g.tasks) if "HSDP all-reduce" in t.label]
        gathers = [i for i, t in enumerate(g.tasks) if t.label.startswith("FSDP all-gather")]
        assert replicas and gathers
        assert {g.tasks[i].stream for i in replicas} == {(0, stream)}
        assert {g.tasks[i].stream for i in gathers} == {(0, "dp")}
        if stream == "dp_rep":  # no gather starts when a replica all-reduce it did not need ends
            tl = run(g.tasks)
            ends = {tl.end_s[i] for i in replicas}
            assert not any(tl.start_s[i] in ends for i in gathers)
