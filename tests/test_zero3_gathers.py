"""How ZeRO-3 gathers its parameters (issue 17, framework mechanisms): DeepSpeed's 2021 stage 3
gathers one tensor at a time and waits for each; FSDP prefetches whole units."""

from __future__ import annotations

import pytest

from trainsim import simulate
from trainsim.catalog import model as catalog_model
from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError
from trainsim.model.counts import layer_params, layer_tensors
from trainsim.workload.ops import Comm, Elementwise
from trainsim.workload.schedule import prefetch_exposed_s
from trainsim.workload.sharding import ZERO3_PERSISTENCE_THRESHOLD, zero3_tensor_gathers


def cfg(gpus=64, gather=None, recompute="full", framework=None, **training):
    parallel = {"zero_stage": 3, "recompute": recompute}
    if gather:
        parallel["zero3_gather"] = gather
    raw = {"model": {"preset": "gpt3-175b", "num_layers": 8},
           "parallel": parallel,
           "training": {"global_batch_size": gpus, "micro_batch_size": 1, "seq_length": 2048,
                        "dtype": "fp16", **training},
           "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": gpus, "gpus_per_node": 8}}
    if framework:
        raw["training"].update(framework=framework[0], framework_version=framework[1])
    return run_config_from_dict(raw)


@pytest.mark.parametrize("name", ["gpt3-175b", "llama3-8b", "qwen3-30b-a3b", "deepseek-v3"])
def test_layer_tensors_add_up_to_the_layer(name):
    m = catalog_model(name)
    for i in (0, m.num_layers - 1):
        assert sum(n for n, _ in layer_tensors(m, i)) == layer_params(m, i)


def test_small_tensors_stay_gathered_and_each_large_one_is_gathered_and_unflattened():
    c = cfg()
    ops = zero3_tensor_gathers(c, range(1), False, False)
    gathers = [op for op in ops if isinstance(op, Comm)]
    # GPT layer: QKV, projection, fc1, fc2 are large; biases and layer norms stay gathered
    assert len(gathers) == 4
    assert all(op.bytes >= 2 * ZERO3_PERSISTENCE_THRESHOLD for op in gathers)
    copies = [op for op in ops if isinstance(op, Elementwise) and "unflatten" in op.name]
    assert [op.kernels for op in copies] == [64] * 4  # one copy out per rank
    # each gathered tensor is first allocated with torch.zeros: a fill of its 16-bit bytes
    fills = [op for op in ops if isinstance(op, Elementwise) and "zeros" in op.name]
    assert [op.bytes for op in fills] == [op.bytes for op in gathers]
    # and the host waits for the device before each gather (torch.cuda.synchronize())
    assert sum(isinstance(op, Elementwise) and op.host_sync for op in ops) == 4


def test_per_tensor_blocking_gathers_are_slower_and_grow_with_the_group():
    prefetched = {n: simulate(cfg(n)).iteration_time_s for n in (64, 512)}
    blocking = {n: simulate(cfg(n, "per_parameter")).iteration_time_s for n in (64, 512)}
    assert blocking[64] > prefetched[64] * 1.05
    # same work per GPU (one micro-batch each); the per-rank copies (C++-issued,
    # compute.host.CPP_LAUNCH_S each) and ring steps grow with n
    assert blocking[512] - prefetched[512] > 1.3 * (blocking[64] - prefetched[64])


def test_recompute_gathers_again():
    full = simulate(cfg(64, "per_parameter", "full")).iteration_time_s
    none = simulate(cfg(64, "per_parameter", "none")).iteration_time_s
    full_prefetched = simulate(cfg(64, None, "full")).iteration_time_s
    none_prefetched = simulate(cfg(64, None, "none")).iteration_time_s
    assert full - none > full_prefetched - none_prefetched


def test_deepspeed_2021_profile_gathers_per_tensor():
    c = cfg(framework=("deepspeed", "2021-03"))
    assert c.parallel.zero3_gather == "per_parameter"


def test_unknown_gather_mode_is_refused():
    with pytest.raises(ConfigError, match="zero3_gather"):
        cfg(gather="per_layer")


def test_one_ahead_prefetch_exposes_the_first_unit_and_only_the_deficits():
    """FSDP gathers unit i+1 while unit i computes: the first gather is exposed whole, a later
    one only by what it outlasts the compute before it."""
    assert prefetch_exposed_s([2.0, 1.0, 1.0], [5.0, 5.0, 5.0]) == pytest.approx(2.0)
    # gathers of 4 behind computes of 1: each unit waits for the next gather's remainder
    assert prefetch_exposed_s([4.0, 4.0, 4.0], [1.0, 1.0, 1.0]) == pytest.approx(4 + 3 + 3)
    assert prefetch_exposed_s([], []) == 0.0


def test_fsdp_units_wait_more_on_a_slower_network():
    """Per-unit FSDP gathers hide behind compute on a fast network and show on a slow one."""
    raw = {"model": {"preset": "llama3-8b"},
           "parallel": {"zero_stage": 3, "zero3_gather": "per_block"},
           "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}}
    times = {}
    for nic in (400, 25):
        raw["cluster"]["nic_gbps_per_gpu"] = nic
        times[nic] = simulate(run_config_from_dict(raw)).breakdown["exposed_comm_s"]
    assert times[25] > 4 * times[400] > 0


def test_a_rank_gathers_only_its_own_experts():
    """Under expert parallelism an FSDP unit's expert gather holds this rank's num_experts / ep
    experts, the same share the memory model gives the rank (stage_param_split)."""
    from trainsim.memory import stage_param_split
    from trainsim.workload.sharding import fsdp_unit_gathers

    c = run_config_from_dict({
        "model": {"preset": "qwen3-30b-a3b", "num_layers": 4},
        "parallel": {"ep": 8, "zero_stage": 3, "zero3_gather": "per_block"},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 4096},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})
    units = fsdp_unit_gathers(c, range(4), False, False)
    expert_bytes = sum(op.bytes for unit in units for op in unit if op.group == "edp")
    assert expert_bytes == pytest.approx(2 * stage_param_split(c, 0)[1])


def test_fsdp_with_a_chunk_of_only_the_embedding_or_the_head():
    """A balanced interleaved layout can leave the first and last virtual stages without a
    transformer layer (the embedding and the loss count as layers): their FSDP gathers have
    no block to wait for in the backward and the pass is priced once."""
    import trainsim

    cfg = trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"pp": 4, "vpp": 8, "zero_stage": 3, "data_parallel_impl": "fsdp2",
                     "pipeline_model_parallel_layout": "balanced"},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 32, "gpus_per_node": 8}})
    ranges = cfg.virtual_stage_layers()
    assert len(ranges[0]) == 0 and len(ranges[-1]) == 0
    assert trainsim.simulate(cfg).iteration_time_s > 0


def test_fsdp_reduces_each_units_gradients_under_the_backward_of_the_next():
    """One micro-batch (torchtitan's local batch = micro-batch): FSDP reduce-scatters a unit's
    gradients from its post-backward hook while the units before it run their backward, so
    only about the last unit's reduction is left after the backward (not the whole model's)."""
    c = cfg(gather="per_block", recompute="none")
    res = simulate(c, keep_timeline=True)
    tl = res.timeline
    spans = [(tl.start_s[i], t.duration_s, t.label) for i, t in enumerate(tl.tasks)
             if t.stream == (0, "dp") and "reduce-scatter" in t.label]
    compute_end = max(tl.start_s[i] + t.duration_s for i, t in enumerate(tl.tasks)
                      if t.stream == (0, "compute") and t.label.startswith("B"))
    total = sum(d for _, d, _ in spans)
    after = sum(max(0.0, s + d - max(s, compute_end)) for s, d, _ in spans)
    assert len(spans) >= c.model.num_layers  # one per unit
    assert total > 0 and after < 2 * total / c.model.num_layers


def test_deepspeed_2021_backward_waits_for_each_layers_reduce_scatter():
    """Its torch.cuda.synchronize() before every gather waits for the reduction stream too:
    the next layer's backward starts after the previous layer's gradients are reduced."""
    from trainsim.pricing import Pricer
    from trainsim.simulator import build_graph

    def waits(gather):
        c = cfg(64, gather, "none")
        tasks = build_graph(c, Pricer(c)).tasks
        return sum(any("reduce-scatter" in tasks[d].label for d in t.deps)
                   for t in tasks if t.label.startswith("B last"))

    assert waits("per_parameter") == 8 - 1  # every layer but the first to run its backward
    assert waits(None) == 0


def test_fp8_param_gather_moves_the_blocks_matrices_in_one_byte():
    """torchao's float8 all-gather (torchtitan --float8.enable_fsdp_float8_all_gather, on in
    the torchtitan profile) gathers each block's matmul weights in fp8: a block unit moves
    one byte per matrix element and two per norm element; the root unit stays 16-bit."""
    from trainsim.model.counts import norm_params
    from trainsim.workload.sharding import fsdp_unit_gathers

    def units(**training):
        c = run_config_from_dict({
            "model": {"preset": "llama3-8b", "num_layers": 2},
            "parallel": {"zero_stage": 3, "zero3_gather": "per_block"},
            "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 2048,
                         **training},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
        return [sum(op.bytes for op in u) for u in fsdp_unit_gathers(c, range(2), True, False)]

    m = catalog_model("llama3-8b")
    root, block = units(dtype="fp8")[0], units(dtype="fp8")[1]
    root8, block8 = units(dtype="fp8", fp8_param_gather=True)[:2]
    norms = 2 * norm_params(m)
    assert block == 2 * layer_params(m, 0)
    assert block8 == pytest.approx(layer_params(m, 0) + norms)
    assert root8 == root
    assert units(dtype="bf16", fp8_param_gather=True)[1] == block  # 16-bit GEMMs: 16-bit gather


def test_each_fsdp_unit_gather_is_walked_against_its_own_compute(monkeypatch):
    """The forward prefetch walk pairs unit k's gather with unit k's compute: as many compute
    parts as gathers (root with the embedding, the blocks, the head in the last unit). The pipe
    engine's receive slot at the front of a chunk's forward parts (4a858aa) had shifted the
    compute list by one, dropping the last unit from the walk."""
    import trainsim.sharded_passes as passes
    import trainsim.simulator as sim
    from trainsim.pricing import Pricer

    walks = []

    def recording(gathers, compute, reduce=None):
        walks.append((len(gathers), len(compute)))
        assert reduce is None or len(reduce) == len(gathers)
        return prefetch_exposed_s(gathers, compute, reduce)

    monkeypatch.setattr(passes, "prefetch_exposed_s", recording)
    c = cfg(64, None, "none")
    sim.build_graph(c, Pricer(c))
    assert walks and all(g == n for g, n in walks), walks


def test_after_a_recompute_the_layer_tail_under_the_reuse_distance_stays_gathered():
    """stage3_max_reuse_distance (1e9 elements): a recomputed layer's backward gathers again
    only the tensors with at least that many elements run between their recompute and their
    backward: the later tensors of the layer, each twice (recompute forward, backward). GPT-3
    at h 12288: fc2 (nothing after it) stays; fc1 (2 x 4h^2 = 1.2e9), the projection and QKV
    are gathered again. At h 8192 fc1 (0.54e9) stays too."""
    from trainsim.workload.sharding import ZERO3_MAX_REUSE_DISTANCE

    def regathered(hidden):
        raw = {"model": {"preset": "gpt3-175b", "num_layers": 8, "hidden_size": hidden,
                         "num_attention_heads": 128, "ffn_hidden_size": 4 * hidden},
               "parallel": {"zero_stage": 3, "recompute": "full"},
               "training": {"global_batch_size": 64, "micro_batch_size": 1,
                            "seq_length": 2048, "dtype": "fp16"},
               "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}}
        c = run_config_from_dict(raw)
        ops = zero3_tensor_gathers(c, range(1), False, False, after_recompute=True)
        return [op.bytes / 2 / hidden**2 for op in ops if isinstance(op, Comm)]

    assert ZERO3_MAX_REUSE_DISTANCE == 1e9
    assert regathered(12288) == pytest.approx([4.0, 1.0, 3.0])  # fc1, projection, QKV
    assert regathered(8192) == pytest.approx([1.0, 3.0])  # projection, QKV (backward order)


def test_deepspeed_2021_backward_regathers_less_when_the_layer_tail_stays_gathered(monkeypatch):
    """The backward of a recomputed per-tensor ZeRO-3 stage gathers again only what its
    recompute released: with the default reuse distance GPT-3 175B's fc2 stays gathered, so the
    backward moves a third of the layers' matrices fewer than with a distance of 0 (every
    tensor gathered again), which itself is under twice the forward (the embedding and output
    layers gather once)."""
    from trainsim.pricing import Pricer
    from trainsim.simulator import build_graph
    from trainsim.workload import sharding

    def ratio() -> float:
        c = cfg(gather="per_parameter")
        work = build_graph(c, Pricer(c)).work[0]
        gathered = [sum(t for cat, t, name in p.segments if name == "zero3_gather_all_gather")
                    for p in work]
        return gathered[1] / gathered[0]

    kept = ratio()
    monkeypatch.setattr(sharding, "ZERO3_MAX_REUSE_DISTANCE", 0)
    released = ratio()
    # fc2 (4h^2 of a layer's 12h^2) stays gathered: a third of the layers' second gathers
    assert 1.0 < kept < released < 2.0
    assert (released - kept) / (released - 1.0) == pytest.approx(1 / 3, rel=0.1)


def test_zero3_with_an_empty_first_stage_under_interleaving_simulates():
    """A layout whose first virtual stage holds only the embedding leaves that chunk without
    layers: no FSDP unit and nothing to compute there (it raised IndexError before). The layout
    stands in for ``decoder_first_pipeline_num_layers: 0``, which Megatron-core refuses."""
    cfg = run_config_from_dict({
        "model": {"name": "tiny", "hidden_size": 1024, "num_layers": 36,
                  "num_attention_heads": 16, "vocab_size": 50257},
        "parallel": {"tp": 1, "pp": 4, "cp": 2, "vpp": 3, "zero_stage": 3,
                     "distributed_optimizer": True, "overlap_param_gather": True,
                     "pipeline_model_parallel_layout": "E|(t*3|)*10t*6L"},
        "training": {"global_batch_size": 92, "micro_batch_size": 1, "seq_length": 2048},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
    assert [len(r) for r in cfg.virtual_stage_layers()][:1] == [0]
    assert 0 < simulate(cfg).iteration_time_s < 100


def test_deepspeed_2021_reduce_bucket_copies_and_divides_by_hand():
    from dataclasses import replace

    from trainsim.workload.sharding_grads import zero3_reduce_bucket_ops

    c = cfg(64, "per_parameter")
    c = replace(c, parallel=replace(c.parallel, ddp_bucket_size=500_000_000))
    h = 12288
    copy, divide = zero3_reduce_bucket_ops(c, range(1), False, False)
    # backward order: fc2 b (copied), fc2 W (6.0e8 > bucket: flush 1, left in place), fc1 b
    # (flush 2: fc2 W), fc1 W (flush 3), norm (flush 4: fc1 W), norm, proj b, proj W (1.5e8:
    # copied), QKV b, QKV W (4.5e8: the bucket would hold 6.0e8, flush 5, then copied), norm,
    # norm, the epilogue's flush 6. Each flush divides the whole bucket buffer, and the large
    # tensor with it.
    small = [h, 4 * h, h, h, h, 3 * h, h, h]
    assert copy.bytes == 4 * (sum(small) + h * h + 3 * h * h)
    assert copy.kernels == len(small) + 2
    assert divide.kernels == 6 + 2
    assert divide.bytes == 4 * (6 * 500_000_000 + 2 * 4 * h * h)
    # other data-parallel implementations run no such pass
    assert zero3_reduce_bucket_ops(cfg(64), range(1), False, False) == []


@pytest.mark.parametrize("version", ["2021-03", "2021-07"])
def test_deepspeed_2021_bucket_pass_runs_before_each_gradient_reduction(version):
    from trainsim.pricing import Pricer
    from trainsim.simulator import build_graph

    c = cfg(64, framework=("deepspeed", version))
    tasks = build_graph(c, Pricer(c)).tasks
    prep = [i for i, t in enumerate(tasks) if t.label.startswith("grad prep")]
    reductions = [t for t in tasks if t.label.startswith("ZeRO-3 grad")]
    assert prep and all(tasks[i].stream[1] == "dp" and tasks[i].duration_s > 0 for i in prep)
    assert reductions and all(any(i in t.deps for i in prep) for t in reductions)


def test_deepspeed_2021_profile_keeps_its_per_tensor_gathers_and_whole_bucket_divide():
    from trainsim.workload.sharding_grads import zero3_reduce_bucket_ops

    c = cfg(64, framework=("deepspeed", "2021-07"))  # contiguous_gradients on by default
    assert c.parallel.zero3_gather == "per_parameter"
    h = 12288
    _, divide = zero3_reduce_bucket_ops(c, range(1), False, False)
    # the hand count of test_deepspeed_2021_reduce_bucket_copies_and_divides_by_hand
    assert divide.kernels == 6 + 2
    assert divide.bytes == 4 * (6 * 500_000_000 + 2 * 4 * h * h)


def test_deepspeed_2021_default_all_reduces_each_bucket_by_hand():
    """v0.3.13 - v0.4.2: stage 3's contiguous_gradients defaults to false (zero/constants.py
    ZERO3_OPTIMIZATION_CONTIGUOUS_GRADIENTS_DEFAULT), so stage3.py reduce_ipg_grads takes
    buffered_reduce_fallback -> allreduce_and_copy: each flushed bucket flattened (none for a
    lone tensor), divided, all-reduced whole and copied back; nothing copied into a bucket
    buffer. c9fee82 (2021-07-01, v0.4.3) made contiguous_gradients the default."""
    from trainsim.pricing import Pricer
    from trainsim.simulator import build_graph
    from trainsim.workload.sharding_grads import zero3_grad_collective, zero3_reduce_bucket_ops

    c = cfg(64, framework=("deepspeed", "2021-03"))
    assert c.parallel.zero3_grad_reduce == "all_reduce"
    assert zero3_grad_collective(c) == "all_reduce"
    h = 12288
    ops = {op.name: op for op in zero3_reduce_bucket_ops(c, range(1), False, False)}
    # the flushes of the hand count above: [fc2 b], [fc2 W], [fc1 b], [fc1 W], [norm, norm,
    # proj b, proj W, QKV b], [QKV W, norm, norm] (the epilogue's): six divides of the
    # gradients themselves, two flattens and 5 + 3 copies back of the two shared buckets
    layer = 12 * h * h + 13 * h
    shared = (h * h + 6 * h) + (3 * h * h + 2 * h)
    assert set(ops) == {"zero3_bucket_flatten", "zero3_bucket_divide", "zero3_bucket_copy_back"}
    assert (ops["zero3_bucket_divide"].kernels, ops["zero3_bucket_divide"].bytes) == \
        (6, 4 * layer)
    assert (ops["zero3_bucket_flatten"].kernels, ops["zero3_bucket_flatten"].bytes) == \
        (2, 4 * shared)
    assert (ops["zero3_bucket_copy_back"].kernels, ops["zero3_bucket_copy_back"].bytes) == \
        (5 + 3, 4 * shared)
    # the task graph all-reduces the gradients where v0.4.3 reduce-scatters them: a ring
    # all-reduce moves twice a reduce-scatter's bytes
    new = cfg(64, framework=("deepspeed", "2021-07"))
    assert new.parallel.zero3_grad_reduce == "reduce_scatter"

    def reductions(c):
        tasks = build_graph(c, Pricer(c)).tasks
        return [t for t in tasks if t.label.startswith("ZeRO-3 grad")]

    old_r, new_r = reductions(c), reductions(new)
    assert len(old_r) == len(new_r) == 8
    assert all("all-reduce" in t.label for t in old_r)
    assert all("reduce-scatter" in t.label for t in new_r)
    assert sum(t.duration_s for t in old_r) > 1.8 * sum(t.duration_s for t in new_r)
    # FSDP (no DeepSpeed) reduce-scatters whatever the field says
    from dataclasses import replace
    fsdp = cfg(64, "per_block")
    forced = replace(fsdp, parallel=replace(fsdp.parallel, zero3_grad_reduce="all_reduce"))
    assert zero3_grad_collective(forced) == "reduce_scatter"


def test_deepspeed_2022_zero3_coalesces_prefetches_and_divides_only_the_bucket():
    """DeepSpeed v0.6.0: fetch_sub_module's all_gather_coalesced (no torch.cuda.synchronize,
    prefetched) and __avg_scatter_grads' cat + div_ of the bucket's own gradients."""
    from trainsim.pricing import Pricer
    from trainsim.simulator import build_graph
    from trainsim.workload.sharding_grads import zero3_reduce_bucket_ops

    c = cfg(64, framework=("deepspeed", "2022-04"))
    assert c.parallel.zero3_gather == "per_block"
    h = 12288
    ops = {op.name: op for op in zero3_reduce_bucket_ops(c, range(1), False, False)}
    # backward order as in the 2021 hand count; flushes: [fc2 b], [fc2 W], [fc1 b], [fc1 W],
    # [norm, norm, proj b, proj W, QKV b] (cat), [QKV W, norm, norm] (cat, the epilogue's):
    # every gradient divided once, never the empty rest of the 5e8-element buffer
    layer = 12 * h * h + 13 * h
    assert ops["zero3_bucket_divide"].kernels == 6
    assert ops["zero3_bucket_divide"].bytes == 4 * layer
    assert ops["zero3_bucket_interleave"].kernels == 2
    assert ops["zero3_bucket_interleave"].bytes == 4 * (h * h + 6 * h + 3 * h * h + 2 * h)
    assert ops["zero3_grad_to_bucket"].bytes == 4 * (layer - 8 * h * h)
    # a profile that does not say which reduce path its DeepSpeed runs prices none
    md = cfg(64, framework=("megatron-deepspeed", "2022-03"))
    assert md.parallel.data_parallel_impl == "deepspeed"
    assert zero3_reduce_bucket_ops(md, range(1), False, False) == []
    # the pass runs on the reduce stream before the reduce-scatters; no host waits per gather
    tasks = build_graph(c, Pricer(c)).tasks
    prep = [i for i, t in enumerate(tasks) if t.label.startswith("grad prep")]
    assert prep and all(tasks[i].stream[1] == "dp" for i in prep)
    old = cfg(64, framework=("deepspeed", "2021-03"))
    assert simulate(c).iteration_time_s < simulate(old).iteration_time_s


def test_deepspeed_2022_backward_gathers_again_what_the_recompute_released():
    from dataclasses import replace

    from trainsim.pricing import Pricer
    from trainsim.sharded_passes import unit_gather_waits
    from trainsim.simulator import build_graph
    from trainsim.workload import fsdp2_copies
    from trainsim.workload.sharding import zero3_regathers

    c = cfg(64, framework=("deepspeed", "2022-04"))
    h = 12288
    # TP1: after the QKV, projection and fc1 weights the rest of the layer runs twice
    # (recompute, backward) over more than 1e9 elements; fc2's weight and the biases stay
    assert sorted(op.bytes for op in zero3_regathers(c, 0)) == [2 * h * h, 6 * h * h, 8 * h * h]
    # TP8: the rest of the layer after any tensor is under 1e9 elements twice over
    tp8 = replace(c, parallel=replace(c.parallel, tensor_model_parallel_size=8))
    assert zero3_regathers(tp8, 0) == []
    pricer = Pricer(c)
    chunks = build_graph(c, pricer).chunks
    ds = unit_gather_waits(c, pricer, chunks, [0.0] * c.parallel.pp)
    plain = replace(c, parallel=replace(c.parallel, data_parallel_impl="fsdp2"))
    # the reference: per-unit gathers without torch's FSDP2 copies (the DeepSpeed profile has
    # no ``fsdp2_copies`` line; tests/test_fsdp2_copies.py)
    assert not fsdp2_copies.applies(plain)
    fsdp = unit_gather_waits(plain, pricer, chunks, [0.0] * c.parallel.pp)
    assert ds[0][1].duration_s > fsdp[0][1].duration_s
    assert ds[0][0].duration_s == fsdp[0][0].duration_s


@pytest.mark.parametrize("version", ["2021-03", "2021-07"])
@pytest.mark.parametrize("recompute", ["none", "full"])
def test_deepspeed_2021_split_last_backward_keeps_the_pass_it_replaces(version, recompute):
    """The last micro-batch's backward, split per layer, runs the segments of the pass it
    replaces: the gathers before it and the bucket copies after it, each once."""
    from trainsim.pricing import Pricer
    from trainsim.simulator import build_graph

    c = cfg(64, framework=("deepspeed", version), recompute=recompute)
    tg = build_graph(c, Pricer(c))
    split = sum(t.duration_s for t in tg.tasks if t.label.startswith("B last c0 part"))
    assert split == pytest.approx(tg.work[0][1].duration_s, rel=1e-12)


@pytest.mark.parametrize("micro_batches", [1, 4])
@pytest.mark.parametrize("recompute", ["full", "none"])
@pytest.mark.parametrize("framework", [("deepspeed", "2021-03"), ("deepspeed", "2022-04"),
                                       ("pytorch", "2.4"), ("torchtitan", "2025-01"),
                                       ("automodel", "0.1")])
def test_sharded_step_is_no_shorter_than_its_network_time_at_large_dp(framework, recompute,
                                                                       micro_batches):
    """Issue 17 item 3. Every ZeRO-3 / FSDP mode gathers each block's 16-bit weights before its
    forward and before its backward (DeepSpeed, after a full recompute, the QKV, projection and
    fc1 weights once more: 8 of the 12 h^2, ``zero3_regathers``) and reduces its gradients once
    per micro-batch, all over the data-parallel group's links. Hand count, 12 h^2 weight elements per
    GPT block (biases left out: a lower bound). (1) In a ring over nodes of 8 GPUs a node's
    NICs carry (N-1)/N of each collective's bytes once (NVLink forwards the rest inside the
    node), so the step lasts at least those bytes over the node's line rate. (2) Tighter, the
    model's own price of those collectives, one after another: on shared links no overlap of
    gathers, reductions and compute shortens them (before the fix, the backward's reductions
    ran beside its gathers as if on links of their own: 4.32 s < 4.57 s for DeepSpeed 0.6+,
    4.77 s < 4.94 s for FSDP2 at 1,024 ranks). Each micro-batch gathers and reduces again
    (FSDP reduces every backward without no_sync, DeepSpeed ZeRO-3 in every backward): with 4,
    before the next passes' gathers queued behind the earlier ones' reductions, 13.95 s <
    14.95 s for DeepSpeed 0.6+ without recompute, 15.39 s < 19.77 s for FSDP1."""
    from trainsim.pricing import Pricer

    gpus, nic_Bps = 1024, 25e9 / 8  # 25 Gbit/s per GPU, 8 GPUs and NICs per node
    c = run_config_from_dict({
        "model": {"preset": "gpt3-175b", "num_layers": 8},
        "parallel": {"zero_stage": 3, "recompute": recompute},
        "training": {"global_batch_size": gpus * micro_batches, "micro_batch_size": 1,
                     "seq_length": 2048, "dtype": "fp16", "framework": framework[0],
                     "framework_version": framework[1]},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": gpus, "gpus_per_node": 8,
                    "nic_gbit_s_per_gpu": 25}})
    h, layers = 12288, 8 * micro_batches  # the step's block passes
    block = 12 * h * h
    passes = 2 + (8 / 12 if framework[0] == "deepspeed" and recompute == "full" else 0)
    reduce_width = 4 if c.training.grad_reduce_in_fp32 else 2
    step = simulate(c).iteration_time_s
    per_node = (gpus - 1) / gpus * layers * block * (passes * 2 + reduce_width)
    assert step >= per_node / (8 * nic_Bps) > 3.0  # the network sets the pace here
    pricer = Pricer(c)
    gather = pricer.comm_time(Comm("g", "all_gather", 2 * block, "dp_cp"))
    reduce = pricer.comm_time(Comm("r", "reduce_scatter", reduce_width * block, "dp_cp"))
    assert step >= layers * (passes * gather + reduce)


def test_backward_reductions_hold_the_gathers_links():
    """A unit's gradient reduce-scatter, issued when its backward ends, runs on the links of
    the gathers issued after it (by hand: gathers 1 s, computes 1 s, reductions 3 s)."""
    from trainsim.sharded_passes import backward_wait_s
    from trainsim.workload.schedule import prefetch_walk

    # unit 0 gathered at 1, computes 1-2; unit 1 gathered at 2, computes 2-3; its reduction
    # 0 holds the links 2-5; unit 2's gather 5-6, computes 6-7: 4 s waited
    assert prefetch_exposed_s([1.0] * 3, [1.0] * 3, [3.0] * 3) == pytest.approx(4.0)
    assert prefetch_exposed_s([1.0] * 3, [1.0] * 3) == pytest.approx(1.0)
    # one at a time: unit 2 computes 6-7; reduction 1 holds the links 6-9, reduction 2 (issued
    # at 7) 9-12: the next pass's first gather starts at 12. The task graph with no wait runs
    # the computes 0-3 and the reductions beside them 1-4, 4-7, 7-10; the wait shifts that
    # end: 12 - 10 = 2 s (more than the 1 s without the reductions)
    assert prefetch_walk([1.0] * 3, [1.0] * 3, [3.0] * 3) == pytest.approx((4.0, 12.0))
    assert backward_wait_s([1.0] * 3, [1.0] * 3, [3.0] * 3) == pytest.approx(2.0)
    # FSDP2's wait for the reduction two units before: unit 2 computes from reduction 0's end
    # (5) as well, in the graph from 4 (computes 0-1, 1-2, 4-5; reductions 1-4, 4-7, 7-10)
    assert backward_wait_s([1.0] * 3, [1.0] * 3, [3.0] * 3, True) == pytest.approx(2.0)
    # light reductions: hidden, the wait is the gathers' own
    assert backward_wait_s([1.0, 0.5, 0.5], [2.0] * 3, [0.5] * 3) == pytest.approx(1.0)


def test_block_reduction_on_the_gathers_links_counts_the_experts_only_off_the_node():
    """Review findings: a block's reduction in the gathers' queue is its dense gradients over the
    sharding group; its routed experts' go over the expert data-parallel group, a process group
    (and NCCL stream) of its own, which runs beside the gathers inside a node but shares the
    node's NICs with them once it leaves the node (16 GPUs, ep 8: edp 2, a node apart)."""
    from trainsim.pricing import Pricer
    from trainsim.sharded_passes import block_reduce_s
    from trainsim.workload.sharding import fsdp_grad_bytes, rank_grad_elements

    def parts(gpus: int, ep: int):
        c = run_config_from_dict({
            "model": "mixtral-8x7b", "parallel": {"tp": 1, "ep": ep, "zero_stage": 3},
            "training": {"global_batch_size": 2 * gpus, "seq_length": 4096,
                         "micro_batch_size": 1},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": gpus}})
        pricer = Pricer(c)
        (dense, _), (experts, _) = rank_grad_elements(c, [0], False, False)
        width = fsdp_grad_bytes(c)
        assert dense > 0 and experts > 0 and c.shard_ranks > 1 and c.edp > 1
        own = pricer.comm_time(Comm("r", "reduce_scatter", dense * width["dp_cp"], "dp_cp"))
        theirs = pricer.comm_time(Comm("r", "reduce_scatter", experts * width["edp"], "edp"))
        return block_reduce_s(c, pricer, 0), own, theirs

    total, own, theirs = parts(16, 8)  # edp ranks on two nodes
    assert total == pytest.approx(own + theirs) and theirs > 0
    total, own, theirs = parts(8, 4)  # edp 2 inside the node
    assert total == pytest.approx(own) and theirs > 0


@pytest.mark.parametrize("micro_batches", [1, 4])
@pytest.mark.parametrize("framework", [("pytorch", "2.4"), ("torchtitan", "2025-01")])
def test_moe_sharded_step_is_no_shorter_than_its_collectives_in_series(framework,
                                                                       micro_batches):
    """Review finding (Mixtral-8x7B, ep 8, ZeRO-3, 64 H100 at 25 Gbit/s): every micro-batch
    gathers each unit before its forward and each block before its backward, and reduces the
    blocks' dense gradients over the sharding group and their experts' over the expert
    data-parallel group, both groups across the nodes' NICs. Separate communicators run
    concurrently but share that bandwidth, so the step is no shorter than the model's own prices
    of those collectives one after another (before the fix, with the experts' reductions off
    the gathers' queue: 18.986 s < 19.028 s for one micro-batch, 75.14 s < 76.11 s for 4)."""
    from trainsim.pricing import Pricer
    from trainsim.sharded_passes import grad_reduce
    from trainsim.workload.sharding import fsdp_unit_gathers, rank_grad_elements

    c = run_config_from_dict({
        "model": "mixtral-8x7b", "parallel": {"tp": 1, "ep": 8, "zero_stage": 3},
        "training": {"global_batch_size": 64 * micro_batches, "seq_length": 4096,
                     "micro_batch_size": 1, "framework": framework[0],
                     "framework_version": framework[1]},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8,
                    "nic_gbit_s_per_gpu": 25}})
    pricer = Pricer(c)
    layers = range(c.model.num_layers)
    units = fsdp_unit_gathers(c, layers, True, True)
    forward = sum(pricer.comm_time(op) for unit in units for op in unit)
    backward = sum(pricer.comm_time(op) for unit in units[-len(layers):] for op in unit)
    reduce = 0.0
    for i in layers:
        (dense, _), (experts, _) = rank_grad_elements(c, [i], False, False)
        reduce += pricer.comm_time(grad_reduce(c, dense, "dp_cp"))
        reduce += pricer.comm_time(grad_reduce(c, experts, "edp"))
    series = forward + backward + reduce
    assert series > 15.0  # the network sets the pace
    assert simulate(c).iteration_time_s >= micro_batches * series


@pytest.mark.parametrize("framework", [("pytorch", "2.4"), ("torchtitan", "2025-01"),
                                       ("deepspeed", "2022-04")])
def test_split_backward_runs_as_its_walk(framework):
    """Review finding: the task graph ran a backward's whole gather wait ahead of its compute,
    so its compute ended before the walk's (hand case: gathers 1, computes 1, reductions 3 s:
    5 s against 7 s) and, under pipelining, its gradient send left early. Now each block's
    gather is a task on the sharding group's stream, issued as the block before it starts, in
    issue order with the reductions: on the graph's own durations (SM shares off, so no task
    slows another) the backward's compute ends, and its links' queue empties, when
    ``prefetch_walk`` says (a network-bound Llama 3 8B on 2 nodes at 25 Gbit/s), walked on
    each block's own reduction (``block_reduce_s``, the root unit's with the last block) and
    the reduce stream's prep before it (review finding: the graph priced every part as the
    stage's parameters over its parts, 1.6x a block's on this model)."""
    from trainsim.engine import run
    from trainsim.pricing import Pricer
    from trainsim.sharded_passes import block_reduce_s
    from trainsim.simulator import build_graph
    from trainsim.workload.schedule import prefetch_walk

    c = run_config_from_dict({
        "model": {"preset": "llama3-8b", "num_layers": 6}, "parallel": {"zero_stage": 3},
        "training": {"global_batch_size": 16, "micro_batch_size": 1, "seq_length": 4096,
                     "framework": framework[0], "framework_version": framework[1]},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8,
                    "nic_gbit_s_per_gpu": 25}})
    pricer = Pricer(c, {"dp": 0.0, "pp": 0.0, "ep": 0.0})
    g = build_graph(c, pricer)
    tl = run(g.tasks)
    tasks = g.tasks
    parts = [i for i, t in enumerate(tasks) if t.label.startswith("B last c0 part")]
    gathers = [i for i, t in enumerate(tasks) if t.label.startswith("FSDP all-gather last")]
    assert len(parts) == len(gathers) == 6
    # the reduce stream's prep (FSDP1's casts, DeepSpeed's bucket) before each reduction
    preps = {t.duration_s for t in tasks if t.label.startswith("grad prep")}
    prep = preps.pop() if preps else 0.0
    assert not preps and (prep > 0) == (framework[0] != "torchtitan")
    reduce = [block_reduce_s(c, pricer, i, i == 0, i == 0) + prep for i in range(5, -1, -1)]
    assert all(r > 0 for r in reduce)
    origin = tl.start_s[gathers[0]]
    compute = [tasks[i].duration_s for i in parts]
    rs_wait = g.rs_wait
    exposed, queue_end = prefetch_walk([tasks[i].duration_s for i in gathers], compute, reduce,
                                       rs_wait)
    assert exposed > 0.1 * sum(compute)  # the network sets the pace
    assert tl.end_s[parts[-1]] - origin == pytest.approx(exposed + sum(compute), rel=1e-9)
    last = max(i for i, t in enumerate(tasks) if t.stream[1] == "dp"
               and t.label.endswith("part5") and "all-gather" not in t.label)
    assert tl.end_s[last] - origin == pytest.approx(queue_end, rel=1e-9)
