"""mllama57: Alibaba's Megatron-LLaMA OverlappedDistributedOptimizer reduce-scatters every
micro-batch's gradient buckets as the backward fills them (profile megatron-llama,
``dp_reduce_every_microbatch``; alibaba/Megatron-LLaMA@d2e05b8 overlapped_dist_optimizer.py
L114-148, L651-666, schedules.py L358-379), after copying each gradient into the bucket; its
first version gathers the parameters after the step, e3d671a's under the next forward."""

from __future__ import annotations

import pytest
from helpers import assert_same_simulation

import trainsim.steady_state as steady
from trainsim import run_config_from_dict, simulate
from trainsim.catalog.frameworks import framework_profile
from trainsim.pricing import Pricer
from trainsim.simulator import build_graph
from trainsim.workload.sharding import bucket_copy_in, reduces_every_microbatch


def _cfg(framework="megatron-llama", version="2023-09", overlap=True, pp=1, gbs=64, dp_gpus=16,
         bucket=100_000_000):
    return run_config_from_dict({
        "model": "llama2-7b",
        "parallel": {"tp": 2, "pp": pp, "sequence_parallel": True, "distributed_optimizer": True,
                     "overlap_grad_reduce": overlap,
                     # the first version gathers after the step (refused overlapped)
                     "overlap_param_gather": overlap and version >= "2023-10",
                     "ddp_bucket_size": bucket},
        "training": {"global_batch_size": gbs, "micro_batch_size": 2, "seq_length": 2048,
                     "dtype": "bf16", "attention": "flash1", "framework": framework,
                     "framework_version": version},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": dp_gpus, "gpus_per_node": 8,
                    "nic_gbit_s_per_gpu": 100}})


def _labels(cfg) -> list[str]:
    return [t.label for t in build_graph(cfg, Pricer(cfg), None).tasks]


def test_profile_dates_the_gather_overlap():
    """The first version gathers after the step (no stage overlaps it); e3d671a overlaps it;
    both reduce every micro-batch."""
    first, later = framework_profile("megatron-llama", "2023-09"), \
        framework_profile("megatron-llama", "2023-10-09")
    assert first.features["dp_reduce_every_microbatch"] is True
    assert later.features["dp_reduce_every_microbatch"] is True
    assert list(first.features["overlap_param_gather"]) == []
    assert later.features["overlap_param_gather"] is True


def test_every_backward_reduces_its_buckets():
    """Each of the m micro-batches' backwards is split where its buckets become ready and
    each bucket is copied in and reduce-scattered after it: m x buckets of each."""
    cfg = _cfg()
    m = cfg.num_microbatches
    labels = _labels(cfg)
    rs = [x for x in labels if x.startswith("grad reduce_scatter")]
    copies = [x for x in labels if x.startswith("grad bucket copy")]
    assert m == 4 and len(rs) == len(copies) and len(rs) % m == 0 and len(rs) // m > 1
    for mb in range(m - 1):
        assert any(f" mb{mb} " in x for x in rs), mb
    assert any(" last " in x for x in rs)


def test_megatron_lm_reduces_the_last_backward_only():
    """Megatron-LM's distributed optimizer (and this one without the overlap) reduces once,
    after or under the last backward: no copy-in, one bucket set."""
    assert not reduces_every_microbatch(_cfg("megatron-lm", "2023-05"), False)
    assert not reduces_every_microbatch(_cfg(overlap=False), False)
    labels = _labels(_cfg("megatron-lm", "2023-09"))
    assert not any(x.startswith("grad bucket copy") for x in labels)
    assert not any(" mb0 " in x for x in labels if x.startswith("grad reduce_scatter"))


def test_more_micro_batches_more_reductions_cost_more():
    """The same tokens a rank in more micro-batches: the every-micro-batch reductions (and their
    SMs) grow with them, Megatron-LM's once-a-step reduction does not."""
    def gap(framework, version):
        few = simulate(_cfg(framework, version, gbs=32)).iteration_time_s
        many_cfg = _cfg(framework, version, gbs=64)
        many = simulate(many_cfg).iteration_time_s
        return many - 2 * few
    assert gap("megatron-llama", "2023-09") > gap("megatron-lm", "2023-09") + 1e-3


def test_bucket_copy_bytes():
    """bf16 gradients into fp32 buckets: read 2 + write 4 (the cast), read 4 + write 4 (the
    copy) = 14 bytes an element; None outside the profile."""
    op = bucket_copy_in(_cfg(), 1e6)
    assert op is not None and op.bytes == pytest.approx(14e6)
    assert bucket_copy_in(_cfg("megatron-lm", "2023-09"), 1e6) is None


def test_gather_overlap_of_e3d671a_is_faster():
    """The same run at e3d671a hides the parameter all-gather under the first forward."""
    first = simulate(_cfg(version="2023-09")).iteration_time_s
    later = simulate(_cfg(version="2023-10-09")).iteration_time_s
    assert later < first


@pytest.mark.parametrize("version", ["2023-09", "2023-10-09"])
def test_shortcut_agrees_with_full_simulation(monkeypatch, version):
    """The periodic shortcut's answer equals the full simulation's with every backward
    split and reduced (a pipeline of 4 stages, 32 micro-batches)."""
    monkeypatch.setattr(steady, "MIN_TASKS", 0)
    cfg = _cfg(version=version, pp=4, gbs=128, dp_gpus=32)
    full = simulate(cfg, keep_timeline=True)
    fast = simulate(cfg)
    assert fast.simulation["method"] == "steady-state", fast.simulation
    assert_same_simulation(fast, full)


@pytest.mark.parametrize("version,pp", [("2023-09", 1), ("2023-10-09", 1), ("2023-10-09", 2)])
def test_lower_bound_holds(version, pp):
    """The search's lower bound stays under the simulation with the extra reductions and the
    bucket-by-bucket gather of every_chunk (bound.first_gathers_s reads the same switch)."""
    from trainsim.bound import lower_bound_s

    cfg = _cfg(version=version, pp=pp, gbs=64, dp_gpus=16 * pp)
    bound = lower_bound_s(cfg)
    assert 0.0 < bound <= simulate(cfg).iteration_time_s


def test_search_bound_counts_every_backward_reductions():
    """The search's refined bound (``search.layout_costs.after_passes``) counts what every
    micro-batch's backward reduces under the overlap (mllama57 Leads 3): each layout's bound
    stays below the simulated time, and on a slow network (25 Gb/s a GPU) it rises above
    the bound without those reductions, up to the data-parallel stream's m backwards."""
    import dataclasses
    import random

    from trainsim.search import Base, SearchSpace, evaluate
    from trainsim.search.evaluation import Bounds

    base_cfg = run_config_from_dict({
        "model": {"preset": "llama2-7b", "num_layers": 8},
        "training": {"global_batch_size": 32, "seq_length": 1024, "dtype": "bf16",
                     "attention": "flash1", "framework": "megatron-llama",
                     "framework_version": "2023-09"},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8,
                    "nic_gbit_s_per_gpu": 25}})
    b = Base(base_cfg.model, base_cfg.training, base_cfg.cluster)
    space = SearchSpace(zero=(1,), recompute=("none",), max_micro_batch=2, max_cp=1,
                        sequence_parallel=(True,)).held_by(b)
    keys = [k for k in space.memory_keys(b, 16) if k.pp == 1 and k.dp > 1]
    bounds = Bounds(b)
    rose = 0
    for k in random.Random(0).sample(keys, min(5, len(keys))):
        for c in space.variants(k):
            if not c.overlap_grad_reduce:
                continue
            cfg = c.to_config(b)
            assert reduces_every_microbatch(cfg, False), k
            t = evaluate(c, b).iteration_time_s
            assert bounds.refined(c) < t, k
            sh = bounds._shape(c.mem)
            assert all(held > 0 and stream > held for held, stream in sh.every_backward)
            passes = bounds._pass_times(c, lambda c=c: c.to_config(b))
            args = (passes, False, True, c.overlap_param_gather)
            without = dataclasses.replace(sh, every_backward=[(0.0, 0.0)] * sh.pp)
            rose += bounds._compose(sh, *args) > bounds._compose(without, *args)
    assert rose and bounds.failed is None


def _small(version="2023-09", gpus=16, framework="megatron-llama"):
    return run_config_from_dict({
        "model": {"preset": "llama2-7b", "num_layers": 4},
        "parallel": {"tp": 2, "pp": 1, "sequence_parallel": True, "distributed_optimizer": True,
                     "overlap_grad_reduce": True,
                     "overlap_param_gather": version >= "2023-10",
                     "ddp_bucket_size": 100_000_000},
        "training": {"global_batch_size": 32, "micro_batch_size": 2, "seq_length": 1024,
                     "dtype": "bf16", "attention": "flash1", "framework": framework,
                     "framework_version": version},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": gpus, "gpus_per_node": 8,
                    "nic_gbit_s_per_gpu": 100}})


def test_chakra_export_carries_every_backward_reductions(tmp_path):
    """The Chakra trace holds the engine's m x buckets reduce-scatters as collectives (they
    were written as compute: the copy-ins between them on the same stream broke the match of
    tasks to collectives), their sizes summing to m x the rank's fp32 gradients, and reads
    back to the same iteration time (mllama57 Leads 6)."""
    from trainsim.interop.chakra import (
        COMM_COLL_NODE,
        COMM_TYPES,
        export_chakra,
        read_chakra,
        read_et,
    )
    from trainsim.memory import stage_param_split

    cfg = _small()
    m = cfg.num_microbatches
    expected = simulate(cfg).iteration_time_s
    ex = export_chakra(cfg, tmp_path / "w")
    assert read_chakra(tmp_path / "w") == pytest.approx(expected, rel=1e-9)
    _, nodes = read_et(ex.paths[0])
    rs = [n for n in nodes if n.type == COMM_COLL_NODE and n.name.startswith("grad reduce")]
    assert m == 2 and len(rs) % m == 0 and len(rs) // m > 1
    assert {n.attr("comm_type") for n in rs} == {COMM_TYPES["reduce_scatter"]}
    params = sum(stage_param_split(cfg, 0))
    assert sum(n.attr("comm_size") for n in rs) == pytest.approx(m * params * 4, rel=1e-6)


def test_simai_rows_carry_every_backward_reductions():
    """SimAI's rows reduce-scatter each bucket in every micro-batch's rows (the copy-in as
    the row's compute), none in the leading data-parallel rows, which keep the gather;
    Megatron-LM's distributed optimizer keeps its one reduction an iteration."""
    from trainsim.interop.simai import simai_rows
    from trainsim.memory import stage_param_split

    cfg = _small()
    m = cfg.num_microbatches
    rows = simai_rows(cfg)
    rs = [r for r in rows if r.wg[1] == "REDUCESCATTER"]
    assert all(r.name.startswith("grad_reduce_c0_b") for r in rs)
    assert len(rs) % m == 0 and len(rs) // m > 1
    params = sum(stage_param_split(cfg, 0))
    assert sum(r.wg[2] for r in rs) == pytest.approx(m * params * 4, rel=1e-6)
    copies = sum(Pricer(cfg).compute.time(bucket_copy_in(cfg, r.wg[2] / 4)) for r in rs)
    assert sum(r.wg[0] for r in rs) == pytest.approx(copies, rel=1e-6)  # (whole bytes)
    assert [r.wg[1] for r in rows if r.name == "grad_gather"] == ["ALLGATHER"]
    plain = simai_rows(_small("2023-05", framework="megatron-lm"))
    assert [r.name for r in plain if r.wg[1] == "REDUCESCATTER"] == ["grad_param_comm"]
