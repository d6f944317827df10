"""The configuration search: enumeration, memory pruning, bounds, ranking, Pareto front."""

from __future__ import annotations

import dataclasses
import random

import pytest
from helpers import make_base

import trainsim
from trainsim.errors import ConfigError
from trainsim.search import (
    Base,
    Candidate,
    LocalExecutor,
    SearchSpace,
    SerialExecutor,
    evaluate,
    search,
)
from trainsim.search.core import OVERLAP_SLOWDOWN, EvaluationCache
from trainsim.search.evaluation import Bounds, lower_bound_s
from trainsim.search.explain import FrontIndex, dominates, pareto_front, why_slower
from trainsim.search.memory_check import check_memory
from trainsim.search.space import MemoryKey

SMALL_SPACE = SearchSpace(recompute=("none", "full"), zero=(0, 1, 3), max_micro_batch=4, max_cp=2)


@pytest.fixture(scope="module")
def base() -> Base:
    return make_base()


def test_every_enumerated_group_is_a_valid_config(base):
    """Memory groups only hold combinations RunConfig accepts (tp within a node, even splits)."""
    keys = list(SearchSpace().memory_keys(base, 16))
    assert len(keys) > 500
    for k in keys:
        cfg = Candidate(k).to_config(base)
        assert cfg.parallel.tp <= 8 and cfg.dp == k.dp
        assert cfg.model.num_layers % cfg.parallel.pp == 0


def test_variants_are_canonical(base):
    """A switch that cannot change the run takes one value: no two variants are the same run."""
    space = SearchSpace()
    for k in space.memory_keys(base, 16):
        variants = space.variants(k)
        assert len(set(variants)) == len(variants)
        for v in variants:
            assert not (v.overlap_p2p_comm and k.pp == 1)
            assert not (v.tp_comm_overlap and k.tp == 1)
            assert not (v.overlap_param_gather and k.zero not in (1, 2))
        if k.tp == 1:
            assert not k.sequence_parallel
    assert len(SearchSpace(overlap="on").variants(MemoryKey(16, 2, 2, 1, 1, 1, "none", True, 1))) == 1


def test_memory_check_matches_the_simulated_peak(base):
    """The memory verdict of a group is the simulated peak memory of its configurations."""
    key = MemoryKey(16, 2, 2, 1, 2, 2, "none", True, 1)
    mc = check_memory(key, base)
    e = evaluate(SearchSpace().variants(key)[-1], base)
    assert mc is not None and mc.fits
    assert mc.peak_bytes == pytest.approx(e.peak_memory_bytes)


@pytest.mark.parametrize("args", [
    {}, {"dtype": "fp8"}, {"gpus": 32, "batch": 32, "seq": 4096},
    {"model": "gpt-22b", "gpus": 16, "batch": 16, "gpu": "a100-sxm-80gb"},
])
def test_bounds_never_exceed_the_simulated_time(args):
    """Both lower bounds stay below the simulated iteration time (branch and bound is exact)."""
    b = make_base(**args)
    rng = random.Random(0)
    space = SearchSpace()
    keys = list(space.memory_keys(b, b.cluster.num_gpus))
    bounds = Bounds(b)
    for k in rng.sample(keys, 25):
        c = rng.choice(space.variants(k))
        t = evaluate(c, b).iteration_time_s
        assert lower_bound_s(k, b) < t
        assert bounds.refined(c) < t
    assert bounds.failed is None


@pytest.mark.parametrize("framework,version,model,batch,gpus_per_node", [
    ("torchtitan", "2024-12", "llama3-8b", 512, 2),  # fsdp_pp_unsharded: one RS per chunk
    ("automodel", "0.1", "qwen3-30b-a3b", 128, 8),  # fsdp_pp_sync_every_microbatch
])
def test_bounds_never_exceed_the_simulated_time_of_fsdp_under_pp(framework, version, model,
                                                                 batch, gpus_per_node):
    """FSDP2 under pipelining as the framework profiles run it (``workload.sharding.
    fsdp_pp_mode``): the refined bound counts the reduce-scatters the simulator runs."""
    cfg = trainsim.run_config_from_dict({
        "model": {"preset": model, "num_layers": 8},
        "training": {"global_batch_size": 16, "seq_length": 512, "dtype": "bf16",
                     "framework": framework, "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": gpus_per_node}})
    b = Base(cfg.model, dataclasses.replace(cfg.training, global_batch_size=batch), cfg.cluster)
    space = SearchSpace(zero=(3,), recompute=("full",), max_micro_batch=2)
    keys = [k for k in space.memory_keys(b, 16) if k.pp > 1 and k.tp == 1 and k.cp == 1]
    assert any(k.pp == 2 and k.vpp == 1 and k.micro_batch == 1 for k in keys)
    bounds = Bounds(b)
    for k in random.Random(0).sample(keys, min(6, len(keys))) + \
            [k for k in keys if k.pp == 2 and k.vpp == 1 and k.micro_batch == 1][:1]:
        c = space.variants(k)[0]
        assert bounds.refined(c) < evaluate(c, b).iteration_time_s, k
    assert bounds.failed is None


def _flags(c: Candidate) -> tuple[bool, ...]:
    return (c.overlap_grad_reduce, c.overlap_param_gather, c.tp_comm_overlap, c.overlap_p2p_comm)


def _pricing(c: Candidate) -> tuple[bool, bool]:
    """The switches that change how passes are priced (search.waves._pricing)."""
    return (c.tp_comm_overlap, c.moe_overlap_ep_comm)


def test_turning_an_overlap_on_never_slows_the_iteration(base):
    """The search relies on it: a memory group's all-overlaps variant, less OVERLAP_SLOWDOWN
    (the SMs hidden collectives take from compute), bounds its siblings whose passes are priced
    as its own (same TP and expert all-to-all overlap)."""
    space = SearchSpace()
    rng = random.Random(1)
    keys = [k for k in space.memory_keys(base, 16) if k.pp > 1 and k.dp > 1 and k.tp > 1]
    for k in rng.sample(keys, 6):
        times = {v: evaluate(v, base).iteration_time_s for v in space.variants(k)}
        for a, ta in times.items():
            for c, tc in times.items():
                if _pricing(a) == _pricing(c) and \
                        all(x <= y for x, y in zip(_flags(a), _flags(c))):
                    assert tc * (1 - OVERLAP_SLOWDOWN) <= ta * (1 + 1e-9)


@pytest.mark.slow  # a whole search (~10 s on 2 cores since the per-layer ZeRO-3 graphs)
def test_a_tp_overlap_lead_does_not_bound_its_siblings_without_it():
    """Transformer Engine's TP overlap runs its GEMMs on fewer SMs: on an A100 a 22B layout is
    3 % slower with it (more than OVERLAP_SLOWDOWN), so a lead with it on neither bounds nor
    prunes its variants without it. The search finds what simulating everything finds (it
    reported TP2 mb1 without SP first, pruning the faster SP group with its TP-overlap lead)."""
    b = make_base("gpt-22b", gpus=16, batch=32, gpu="a100-sxm-80gb")
    key = MemoryKey(16, 2, 2, 1, 2, 1, "none", True, 1)
    times = {v: evaluate(v, b).iteration_time_s for v in SearchSpace().variants(key)}
    on = max(times, key=lambda v: sum(_flags(v)))
    assert min(times.values()) < times[on] * (1 - OVERLAP_SLOWDOWN)
    space = SearchSpace(tp=(2, 4), pp=(2,), cp=(1,), max_vpp=2, micro_batch=(1, 2),
                        recompute=("none", "selective"), zero=(1,))
    for rank_by in ("split", "layout"):
        fast = search(b, [16], space, top_k=3, rank_by=rank_by, cache=None)
        full = search(b, [16], space, top_k=3, rank_by=rank_by, exhaustive=True, cache=None)
        assert fast.stats.simulated < full.stats.simulated
        assert [r.evaluation for r in fast.top] == [r.evaluation for r in full.top]
        assert [e.candidate for e in fast.pareto] == [e.candidate for e in full.pareto]


@pytest.mark.parametrize("rank_by,size", [
    ("split", "sample"),  # ZeRO 0 and 3, micro-batches 1-2: 1,208 configurations, 4.7 CPU s
    pytest.param("split", "full", marks=pytest.mark.slow),  # ZeRO 0, 1, 3, up to 4: 3,316, 7.4 s
    pytest.param("config", "full", marks=pytest.mark.slow)])
def test_pruned_search_equals_exhaustive(rank_by, size):
    """Branch and bound returns the same top k and Pareto front as simulating everything
    (a small GPU, so that memory prunes too): by default on a sample of the space (two ZeRO
    stages, micro-batches up to 2), ranked by split; the whole space, by split and by config,
    in the slow run (the default of the 44th session)."""
    b = make_base(gpus=8, batch=16, gpu_overrides={"hbm_gib": 5})
    zero, max_micro_batch = ((0, 3), 2) if size == "sample" else ((0, 1, 3), 4)
    space = SearchSpace(recompute=("none", "full"), zero=zero, max_micro_batch=max_micro_batch,
                        max_cp=2, max_vpp=2)
    fast = search(b, [8], space, top_k=5, rank_by=rank_by, cache=None)
    full = search(b, [8], space, top_k=5, rank_by=rank_by, exhaustive=True, cache=None)
    assert fast.stats.simulated < full.stats.enumerated - full.stats.memory_pruned
    assert fast.stats.memory_pruned > 0
    assert [r.evaluation.candidate for r in fast.top] == \
        [r.evaluation.candidate for r in full.top]
    assert [e.candidate for e in fast.pareto] == [e.candidate for e in full.pareto]
    s = fast.stats
    assert s.enumerated == s.memory_pruned + s.bound_pruned + s.simulated


def test_results_do_not_depend_on_the_executor(base):
    """Local worker processes give the same ranking, front and counts as this process (where
    the search prepares memory checks and bounds while the workers simulate)."""
    serial = search(base, [16], SMALL_SPACE, executor=SerialExecutor(), cache=None)
    ex = LocalExecutor(2)
    try:
        local = search(base, [16], SMALL_SPACE, executor=ex, cache=None)
    finally:
        ex.close()
    assert [r.to_dict() for r in serial.top] == [r.to_dict() for r in local.top]
    assert [e.candidate for e in serial.pareto] == [e.candidate for e in local.pareto]
    assert serial.stats.simulated == local.stats.simulated
    assert (serial.stats.memory_pruned, serial.stats.bound_pruned) == \
        (local.stats.memory_pruned, local.stats.bound_pruned)


def test_top_k_are_distinct_splits_and_sorted(base):
    """rank_by='split' lists each GPU split once, fastest first, each with reasons but the best."""
    r = search(base, [16], SMALL_SPACE, top_k=6)
    splits = [x.evaluation.candidate.layout[:4] for x in r.top]
    assert len(set(splits)) == len(splits) == 6
    times = [x.evaluation.iteration_time_s for x in r.top]
    assert times == sorted(times)
    assert r.top[0].reasons == () and all(x.reasons for x in r.top[1:])


def test_pareto_front_is_non_dominated(base):
    """No front member dominates another, and every evaluation is dominated by or on the front."""
    r = search(base, [8, 16], SMALL_SPACE, cache=None)
    front = list(r.pareto)
    assert front and {e.num_gpus for e in r.evaluated} == {8, 16}
    for a in front:
        assert not any(dominates(b, a) for b in front)


def test_front_index_agrees_with_brute_force():
    """The O(log n) dominance index answers as a scan of all points does."""
    rng = random.Random(3)
    key = MemoryKey(8, 1, 1, 1, 1, 1, "none", False, 0)
    pts = []
    idx = FrontIndex()
    for i in range(300):
        e = trainsim.search.Evaluation(Candidate(dataclasses.replace(key, num_gpus=rng.choice(
            [8, 16]))), 1.0, rng.uniform(1, 100), 0.5, 0.0, rng.uniform(0, 50), {}, {}, 1)
        pts.append(e)
        idx.add(e)
        t, h, n = rng.uniform(1, 100), rng.uniform(0, 50), rng.choice([8, 16])
        brute = any(p.tokens_per_s >= t and p.memory_headroom_bytes >= h and p.num_gpus <= n
                    for p in pts)
        assert idx.dominated(t, h, n) == brute


def test_why_slower_names_the_setting(base):
    """Full recompute loses on compute, and the reason says so."""
    fast = evaluate(Candidate(MemoryKey(16, 1, 1, 1, 1, 2, "none", False, 1), True, True), base)
    slow = evaluate(Candidate(MemoryKey(16, 1, 1, 1, 1, 2, "full", False, 1), True, True), base)
    reasons = why_slower(fast, slow)
    assert "compute" in reasons[0] and "recompute full vs none" in reasons[0]
    assert pareto_front([fast, slow]) == [fast, slow]  # full recompute leaves more headroom


def test_reference_rank(base):
    """The best configuration given as reference ranks 1; a slow one ranks lower, exactly."""
    r = search(base, [16], SMALL_SPACE, top_k=10)
    best = r.top[0].evaluation.candidate
    again = search(base, [16], SMALL_SPACE, top_k=10, reference=best)
    assert again.reference.rank == 1 and again.reference.exact
    third = r.top[2].evaluation.candidate
    ref = search(base, [16], SMALL_SPACE, top_k=10, reference=third).reference
    assert ref.rank == 3 and ref.exact and ref.group_rank == 3 and ref.reasons


def test_cache_avoids_simulating_twice(base):
    """A repeated search takes its evaluations from the cache."""
    cache = EvaluationCache()
    first = search(base, [16], SMALL_SPACE, cache=cache)
    second = search(base, [16], SMALL_SPACE, cache=cache)
    assert first.stats.simulated > 0 and second.stats.simulated == 0
    assert second.stats.cache_hits == first.stats.simulated
    assert [r.to_dict() for r in first.top] == [r.to_dict() for r in second.top]


def test_nothing_fits_returns_an_empty_ranking():
    """A model far too big for the GPUs: everything is pruned by memory, nothing simulated."""
    b = make_base(model="gpt-175b", gpus=8, batch=8)
    r = search(b, [8], SearchSpace(recompute=("full",), zero=(3,)))
    assert r.top == () and r.stats.simulated == 0
    assert r.stats.memory_pruned == r.stats.enumerated > 0


@pytest.mark.parametrize("kwargs, field", [
    ({"top_k": 0}, "top"), ({"rank_by": "fastest"}, "rank_by"),
    ({"pareto_slowdown": 0.5}, "pareto_slowdown"),
])
def test_bad_search_arguments_name_the_field(base, kwargs, field):
    with pytest.raises(ConfigError, match=field):
        search(base, [16], SMALL_SPACE, **kwargs)


@pytest.mark.parametrize("kwargs, field", [
    ({"recompute": ("some",)}, "recompute"), ({"zero": (4,)}, "zero"),
    ({"tp": (0,)}, "tp"), ({"max_vpp": 0}, "max_vpp"), ({"overlap": "maybe"}, "overlap"),
])
def test_bad_search_space_names_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        SearchSpace(**kwargs)


def test_the_flops_bound_runs_gemms_at_the_fastest_rate_the_model_gives_any(monkeypatch):
    """An fp8 run's bound divides by the rate of an fp8 GEMM without the split accumulator
    (DeepGEMM's, ``roofline.gemm_rate``), which is above the fp8 ceiling: a bound at the
    ceiling could exceed a simulated time where such kernels run."""
    from trainsim.compute.roofline import gemm_rate
    from trainsim.search import flop_bound
    from trainsim.workload.ops import Gemm

    b = make_base(dtype="fp8")
    key = next(iter(SearchSpace().memory_keys(b, b.cluster.num_gpus)))
    gpu = b.cluster.gpu
    fast = gemm_rate(gpu, Gemm("g", 1, 1, 1, "fp8", 8, grouped="deepgemm"))
    assert fast > gpu.gemm_ceiling("fp8")
    bound = lower_bound_s(key, b)
    monkeypatch.setattr(flop_bound, "gemm_rate", lambda g, op: g.gemm_ceiling(op.dtype))
    assert bound == pytest.approx(lower_bound_s(key, b) * gpu.gemm_ceiling("fp8") / fast)


def test_the_zero3_floor_counts_what_the_sharding_group_links_run():
    """22B, TP4 CP2 DP2 ZeRO-3 on 16 H100 (2 nodes), 32 micro-batches: the sharding group (DP2
    x CP2) spans the nodes, and every micro-batch gathers its 5.5e9 16-bit parameters for the
    forward and again for the backward and reduce-scatters their gradients, one NCCL stream
    in issue order. Across the node pair each rank moves half of each (5.5 GB) through its
    50 GB/s NIC: 3 x 5.5 GB x 32 / 50 GB/s = 10.6 s, so the simulated 11.4 s is link-bound
    (before the link queue, 6.8 s). The bound counts those gathers and reductions one after
    another (``layout_costs.link_floor``): 10.9 s, was 5.35 s (the reductions only)."""
    b = make_base("gpt-22b", gpus=16, batch=64)
    c = Candidate(MemoryKey(16, 4, 1, 2, 1, 1, "none", False, 3), overlap_grad_reduce=True)
    t = evaluate(c, b).iteration_time_s
    assert 3 * 5.5e9 * 32 / 50e9 < t
    bound = Bounds(b).refined(c)
    assert 0.9 * t < bound < t


def test_the_bound_counts_what_follows_the_last_pass():
    """Without gradient-reduce overlap a stage reduces every bucket after its last pass, then
    steps the optimizer, then (without the gather overlap) gathers its parameters: with one
    pipeline stage nothing else runs beside the passes, so the bound is the simulated time
    (to rounding), and each overlap switched on lowers it."""
    b = make_base("gpt-22b", gpus=16, batch=64, gpu="a100-sxm-80gb")
    key = MemoryKey(16, 8, 1, 1, 1, 2, "selective", True, 1)
    bounds = Bounds(b)
    off = Candidate(key)
    t = evaluate(off, b).iteration_time_s
    assert t * (1 - 1e-6) < bounds.refined(off) < t
    grad = Candidate(key, overlap_grad_reduce=True)
    both = Candidate(key, overlap_grad_reduce=True, overlap_param_gather=True)
    assert bounds.refined(both) < bounds.refined(grad) < bounds.refined(off)
    assert bounds.refined(both) < evaluate(both, b).iteration_time_s


@pytest.mark.slow  # a whole search (~10 s on 2 cores since the per-layer ZeRO-3 graphs)
def test_an_exhaustive_search_keeps_its_batches_small():
    """An exhaustive search queues a lead's siblings at the lead's bound; batches are not cut
    between candidates at one bound (twins run once in a worker) only up to TWIN_SPAN batches,
    so a wave still spreads over the workers (review: one batch a wave left them idle)."""
    from trainsim.search.executors import SerialExecutor
    from trainsim.search.waves import BATCH, TWIN_SPAN

    class Recording(SerialExecutor):
        workers = 2

        def __init__(self):
            self.sizes: list[int] = []

        def map(self, base, batches, on_done=None, token=None):
            self.sizes.extend(len(b) for b in batches)
            return super().map(base, batches, on_done, token)

    b = make_base(gpus=8, batch=16)
    space = SearchSpace(recompute=("none", "selective"), zero=(0, 1), max_micro_batch=2,
                        max_vpp=2)
    ex = Recording()
    search(b, [8], space, top_k=3, exhaustive=True, cache=None, executor=ex)
    assert ex.sizes and max(ex.sizes) <= (TWIN_SPAN + 1) * BATCH


def test_divisors_keeps_only_those_up_to_its_bound():
    """search.rules.divisors(n, upto) lists the divisors of n no larger than upto, whichever of
    its two loops runs (upto^2 <= n or not), in increasing order."""
    from trainsim.search.rules import divisors

    for n in (1, 7, 10, 15, 24, 42, 64, 96, 1152):
        every = [d for d in range(1, n + 1) if n % d == 0]
        assert divisors(n) == every
        for upto in (1, 2, 5, 8, 16, 100):
            assert divisors(n, upto) == [d for d in every if d <= upto], (n, upto)
