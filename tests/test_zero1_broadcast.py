"""ZeRO-1 parameters shared by one broadcast per owner rank after the step
(``parallel.zero1_param_sync = "broadcast"``, ``workload.zero1_broadcast``), InternEvo's hybrid
ZeRO as its HybridZeroOptimizer runs it (InternLM/InternEvo@c18bec9 hybrid_zero_optim.py
``_partition_param_list`` L272-297, ``broadcast_params(overlap=False)`` L621-649, gradients
``reduce_tensor`` over ParallelMode.DATA), and the internevo profile that selects it."""

from __future__ import annotations

import dataclasses
import random

import pytest
from helpers import CommRecorder

from trainsim import run_config_from_dict, simulate
from trainsim.errors import ConfigError
from trainsim.pricing import Pricer
from trainsim.simulator import build_tasks
from trainsim.validate.training import row_config
from trainsim.workload.zero1_broadcast import owner_loads, stage_tensors


def _partition_as_read(sizes: list[float], ranks: int) -> list[float]:
    """The loop of ``_partition_param_list`` as read: sorted by numel, largest first, each to
    ``numel_per_rank.index(min(numel_per_rank))``; the ranks given anything, in rank order."""
    numel_per_rank = [0.0] * ranks
    for n in sorted(sizes, reverse=True):
        rank_to_go = numel_per_rank.index(min(numel_per_rank))
        numel_per_rank[rank_to_go] += n
    return [x for x in numel_per_rank if x > 0]


def test_owner_loads_is_the_source_partition():
    """By hand: 10, 7, 5, 3, 1 over two ranks go 0, 1, 1, 0, 1 (13 and 13); over eight ranks
    each tensor is an owner of its own; and on random sizes the rule as read in the loop."""
    assert owner_loads([10, 7, 5, 3, 1], 2) == [13.0, 13.0]
    assert owner_loads([10, 7, 5, 3, 1], 8) == [10.0, 7.0, 5.0, 3.0, 1.0]
    rng = random.Random(7)
    for _ in range(200):
        sizes = [float(rng.choice([1, 4096, 2**20, 2**24, 3 * 2**24, 10**8]))
                 for _ in range(rng.randint(1, 60))]
        ranks = rng.randint(1, 80)
        assert owner_loads(sizes, ranks) == _partition_as_read(sizes, ranks)
    with pytest.raises(ValueError, match="at least one rank"):
        owner_loads([1.0], 0)


def cfg(num_gpus=16, dp_replicate=1, sync=None, framework=("internevo", "2023-07"), **par):
    parallel = {"tp": 1, "pp": 1, "zero_stage": 1, "dp_replicate": dp_replicate, **par}
    if sync:
        parallel["zero1_param_sync"] = sync
    training = {"global_batch_size": 2 * num_gpus, "micro_batch_size": 1, "seq_length": 2048,
                "dtype": "bf16"}
    if framework:
        training["framework"], training["framework_version"] = framework
    return run_config_from_dict({
        "model": {"preset": "llama2-7b", "num_layers": 4, "vocab_size": 103168},
        "parallel": parallel, "training": training,
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": num_gpus, "gpus_per_node": 8,
                    "nic_gbit_s_per_gpu": 50}})



def test_the_profile_selects_the_mechanisms():
    """internevo 2023-07: whole-gradient all-reduce, per-owner broadcasts, the reduction
    overlapped with the backward, nothing overlapping the broadcasts, bf16 reduction."""
    p = cfg().parallel
    assert (p.zero1_grad_reduce, p.zero1_param_sync, p.overlap_grad_reduce,
            p.overlap_param_gather) == ("all_reduce", "broadcast", True, False)
    assert not cfg().training.grad_reduce_in_fp32
    with pytest.raises(ConfigError, match="overlap_param_gather=true under internevo"):
        cfg(overlap_param_gather=True)


@pytest.mark.parametrize("replicate, grad_group", [(1, "dp_cp"), (2, "dp")])
def test_the_collectives_of_a_step(replicate, grad_group):
    """16 ranks on two nodes, four layers: the gradient buckets are all-reduced over every
    data-parallel rank (zero1=-1: the sharding group is all of them; zero1=8: two groups of 8,
    the all-reduce still over all 16), then after the step each owner broadcasts its tensors
    over its zero1 group: as many broadcasts as owners (min(ranks, tensors)), each its owner's
    elements in 16 bits, and no parameter all-gather."""
    c = cfg(dp_replicate=replicate)
    pricer = CommRecorder(c)
    tasks, ends = build_tasks(c, pricer)
    kinds = [(op.name, op.kind, op.group) for op in pricer.comms]
    assert ("grad_reduce", "all_reduce", grad_group) in kinds
    assert not any(k in ("reduce_scatter", "all_gather") for _, k, _ in kinds), kinds
    ranks = 16 // replicate
    tensors, experts = stage_tensors(c, range(4), True, True)
    # qkv, proj, 2 norms, fc1, fc2 a layer; embedding, head, final norm
    assert not experts and len(tensors) == 4 * 6 + 3
    loads = owner_loads(tensors, ranks)
    assert len(loads) == min(ranks, len(tensors))
    sent = [op for op in pricer.comms if op.name == "param_broadcast"]
    assert [op.bytes for op in sent] == [2 * n for n in loads]
    assert {(op.kind, op.group) for op in sent} == {("broadcast", "dp_cp")}
    # one task, the stage's last, after the step, as long as its broadcasts one after another
    last = tasks[ends[0]]
    assert last.label.startswith("param broadcast dp_cp") and \
        f"{len(loads)} owners of {ranks} ranks" in last.label
    fresh = Pricer(c)
    assert last.duration_s == pytest.approx(sum(fresh.comm_time(op) for op in sent))
    # after the step's chain on the compute stream (the step, then zero_grad_buffer's rest)
    step = next(i for i, t in enumerate(tasks) if t.label == "optimizer step")
    (dep,) = last.deps
    assert dep >= step and tasks[dep].stream == (0, "compute") and \
        all(t.stream != (0, "compute") for t in tasks[dep + 1:])


def test_internlm_7b_has_the_291_tensors_internevo_partitions():
    """The internlm-7b preset as InternEvo's model holds it (InternLM/InternEvo@c18bec9
    modeling_internlm.py L79-125, linear.py L146-158, multi_head_attention.py L80-100): per
    layer two norms, Wqkv and its bias, out_proj and its bias, w1, w2 and w3 apart; with the
    embedding, the final norm and the head 32 x 9 + 3 = 291, so 1,024 ranks make 291 owners.
    llama2-7b (Megatron's layout, gate and up fused, no biases) makes 32 x 6 + 3 = 195."""
    def one_stage(preset, ranks=1024):
        c = run_config_from_dict({
            "model": {"preset": preset},
            "parallel": {"tp": 1, "pp": 1, "zero_stage": 1},
            "training": {"global_batch_size": ranks, "micro_batch_size": 1, "seq_length": 2048,
                         "dtype": "bf16", "framework": "internevo",
                         "framework_version": "2023-07"},
            "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": ranks, "gpus_per_node": 8}})
        tensors, _ = stage_tensors(c, range(c.model.num_layers), True, True)
        return tensors, owner_loads(tensors, ranks)
    tensors, loads = one_stage("internlm-7b")
    assert len(tensors) == len(loads) == 291
    assert sorted(tensors)[-2:] == [103168 * 4096] * 2 and tensors.count(11008 * 4096) == 96
    assert tensors.count(4096) == 32 * 3 + 1 and tensors.count(3 * 4096) == 32
    assert sum(tensors) == pytest.approx(7.32194816e9)
    assert len(one_stage("llama2-7b")[0]) == 195


def test_split_gate_and_up_keeps_the_parameters():
    """``fused_gate_up: false`` holds SwiGLU's fc1 as two tensors of half its elements (and a
    gated MLP's biases likewise); the layer's parameters are the same."""
    from trainsim.catalog import model
    from trainsim.model.counts import layer_params, layer_tensors
    fused = model("llama2-7b")
    for bias in (False, True):
        a = dataclasses.replace(fused, add_mlp_bias=bias)
        b = dataclasses.replace(a, fused_gate_up=False)
        ta, tb = layer_tensors(a), layer_tensors(b)
        assert len(tb) == len(ta) + 1 + int(bias)
        assert sum(n for n, _ in tb) == sum(n for n, _ in ta) == layer_params(b)
        assert tb.count((4096 * 11008, False)) == 3 and (2 * 4096 * 11008, False) not in tb


def test_the_broadcasts_wait_after_the_step():
    """The iteration ends with the broadcasts, nothing of them hidden: the same run with its
    parameters all-gathered after the step instead is shorter by at least the difference of
    the two exchanges (the broadcasts of 26 tensors over 16 ranks move what the ring
    all-gather moves, 26 launches and chains for one)."""
    bcast, gather = cfg(sync="broadcast"), cfg(sync="all_gather")
    tb, tg = simulate(bcast, keep_timeline=True), simulate(gather, keep_timeline=True)
    dur = {name: next(t.duration_s for t in r.timeline.tasks if t.label.startswith(name))
           for name, r in (("param broadcast", tb), ("param all-gather", tg))}
    assert dur["param broadcast"] > dur["param all-gather"] > 0
    assert tb.iteration_time_s - tg.iteration_time_s == pytest.approx(
        dur["param broadcast"] - dur["param all-gather"], rel=1e-6)


def test_whole_gradient_all_reduce_with_zero1_groups_is_accepted_without_cp():
    """zero1=k groups with InternEvo's whole-DP all-reduce run (cp 1); with cp the group that
    all-reduce spans is not priced, refused in one line."""
    assert cfg(dp_replicate=2, framework=None, zero1_grad_reduce="all_reduce").parallel \
        .dp_replicate == 2
    with pytest.raises(ConfigError, match="zero1_grad_reduce=all_reduce and cp=2"):
        cfg(num_gpus=32, dp_replicate=2, framework=None, zero1_grad_reduce="all_reduce", cp=2)


def test_a_row_stating_dp_overlap_overlaps_the_reduction_only():
    """benchmarks/training_internevo.csv states dp_overlap; InternEvo overlaps its gradient
    all-reduce (zero_overlap_communication=True) but has no gather to overlap (profile
    overlap_param_gather: []), so the row's run keeps the broadcasts after the step."""
    row = {"id": "x", "model": "llama2-7b", "vocab_size": "103168", "seq_length": "2048",
           "gpu": "a100-sxm-80gb", "num_gpus": "16", "gpus_per_node": "8",
           "nic_gbps_per_gpu": "50", "tp": "1", "pp": "1", "zero_stage": "1",
           "dp_replicate": "2", "global_batch_size": "128", "micro_batch_size": "2",
           "dtype": "bf16", "options": "dp_overlap", "framework": "internevo",
           "framework_version": "2023-07", "measured_iteration_s": "4.0"}
    p = row_config(row, compute_db=None).parallel
    assert (p.overlap_grad_reduce, p.overlap_param_gather, p.zero1_param_sync) == \
        (True, False, "broadcast")


def test_the_lower_bound_stays_below_with_broadcasts():
    """bound.lower_bound_s counts the broadcasts in the step's chain (``param_syncs``) and the
    whole-DP all-reduce: over random runs (helpers.random_config) with ZeRO-1/2 parameters
    broadcast and replicas, it stays at or below the simulated iteration and counts them."""
    from helpers import random_config

    from trainsim.bound import lower_bound_s

    rng, done, grew = random.Random(53), 0, 0
    while done < 24:
        raw = random_config(rng)
        par = raw["parallel"]
        par.update(zero_stage=rng.choice([1, 2]), data_parallel_impl="megatron",
                   zero1_param_sync="broadcast", overlap_param_gather=False,
                   pipeline_schedule=None, dp_replicate=rng.choice([1, 2]),
                   zero1_grad_reduce=rng.choice(["all_reduce", "reduce_scatter"]))
        try:
            c = run_config_from_dict(raw)
        except ConfigError:
            continue
        bound, t = lower_bound_s(c), simulate(c).iteration_time_s
        assert bound <= t, (c.parallel, bound, t)
        par["zero1_param_sync"] = "all_gather"
        grew += bound > lower_bound_s(run_config_from_dict(raw))
        done += 1
    assert grew >= 6
