"""Physical-sanity sweep (22nd session, sanity; issue 17): its invariants catch a wrong answer,
its allow-list names the mechanism behind each spread it accepts, and the classes it found
fixed stay fixed."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARD = ("balance", "floor_flops", "floor_dp", "memory_floor", "gpu_dominance", "batch_shorter",
        "batch_compute", "recompute", "micro_memory", "depth")
"""Classes no mechanism excuses: each found none over the seeds read this session (recompute:
none at seed 0 since the sharded-pass fixes of 553e68a, 0 of 2,000 at fixl; micro_memory and
depth: none at seeds 0-2, 500 configs each, once Megatron's buckets were placed, 26th session)."""


@pytest.fixture(scope="module")
def sweep():
    script = ROOT / "benchmarks" / "sanity_sweep.py"
    sys.path.insert(0, str(script.parent))
    spec = importlib.util.spec_from_file_location("sanity_sweep", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cfg(model="llama3-8b", framework="megatron-core", gpu="h100", gpus=8, **par):
    return {"model": model, "parallel": {"tp": 1, **par},
            "training": {"framework": framework, "global_batch_size": 16,
                         "micro_batch_size": 1, "seq_length": 4096},
            "cluster": {"gpu": gpu, "num_gpus": gpus}}


def test_floors_fire_on_an_impossible_result(sweep):
    """A result faster than the FLOP floor (MFU above 0.9) and one holding less than 12 bytes
    per parameter of Adam state are flagged; the honest result is not."""
    cfg = _cfg()
    r = sweep.run(cfg)
    assert sweep.check_floors(cfg, r) == []
    fast = dataclasses.replace(r, iteration_time_s=r.iteration_time_s / 10,
                               breakdown={k: v / 10 for k, v in r.breakdown.items()})
    assert [c for c, _ in sweep.check_floors(cfg, fast)] == ["floor_flops"]
    lean = dataclasses.replace(r, memory=[
        dataclasses.replace(m, weights=0.0, gradients=0.0, optimizer=0.0) for m in r.memory])
    assert "memory_floor" in [c for c, _ in sweep.check_floors(cfg, lean)]


def test_the_dp_floor_is_the_gradient_shard_over_the_node_nics(sweep):
    """Llama 3 8B, DP 16 over two nodes: a ring runs one channel per rail, so each node's 8
    GPUs send over 8 NICs: (15/16) x 8.03e9 x 2 B / (8 x 50 GB/s) = 0.0376 s is the least the
    gradient reduction can take; a result below it is flagged, plain DDP on B200 x 16 is not
    (it was, under a one-NIC floor of 0.30 s). TP 8, DP 2: one member per node, so one NIC
    carries (1/2) x 8.03e9 / 8 x 2 B / 50 GB/s = 0.0201 s."""
    need = 15 / 16 * 8_030_261_248 * 2 / (8 * 50e9)
    assert need == pytest.approx(0.0376, abs=1e-4)
    cfg = _cfg(gpus=16)
    r = sweep.run(cfg)
    assert sweep._dp_floor(r.config, r, 8_030_261_248) == []
    quick = dataclasses.replace(r, iteration_time_s=need * 0.99)
    assert [c for c, _ in sweep._dp_floor(r.config, quick, 8_030_261_248)] == ["floor_dp"]
    ok = dataclasses.replace(r, iteration_time_s=need * 1.01)
    assert sweep._dp_floor(r.config, ok, 8_030_261_248) == []
    for fw in ("megatron-core", "torchtitan"):
        ddp = sweep.run(_cfg(framework=fw, gpu="b200-sxm-180gb", gpus=16))
        assert sweep._dp_floor(ddp.config, ddp, 8_030_261_248) == []
    tp8 = sweep.run(_cfg(gpus=16, tp=8))
    shard = 1 / 2 * 8_030_261_248 / 8 * 2 / 50e9
    assert shard == pytest.approx(0.0201, abs=1e-4)
    slow = dataclasses.replace(tp8, iteration_time_s=shard * 0.99)
    assert [c for c, _ in sweep._dp_floor(tp8.config, slow, 8_030_261_248)] == ["floor_dp"]


def test_automodel_16bit_parameters_halve_the_memory_floor(sweep):
    """AutoModel casts the model to bf16 before FSDP2 shards it (params_16bit): 6 bytes per
    parameter of Adam state, which the sweep's floor takes (it flagged 12 before)."""
    cfg = _cfg(model="gpt3-5b", framework="automodel", gpu="b200-sxm-180gb", gpus=4, tp=2,
               sequence_parallel=True)
    cfg["cluster"]["gpus_per_node"] = 4
    assert sweep.check_floors(cfg, sweep.run(cfg)) == []


def test_torchtitan_releases_of_2025_run_grouped_mm_experts(sweep):
    """The class the sweep found and fixed: torchtitan 0.1.0 on Qwen3-30B-A3B predicted 6.93 s
    (4.24 s of it host launches of a per-expert GEMM loop) against 3.02 s at its newest;
    torch._grouped_mm runs its experts since 2025-04-10 (torchtitan dbb34ccbd)."""
    cfg = _cfg(model="qwen3-30b-a3b", framework="torchtitan", tp=2, ep=1,
               sequence_parallel=True)
    cfg["training"].update(global_batch_size=32, micro_batch_size=2)
    assert sweep.check_version(cfg, sweep.run(cfg)) == []


def test_spreads_are_explained_by_their_mechanism(sweep):
    """Composer's per-tensor AdamW (llm-foundry) on a 128-expert model: the spread is the
    optimizer step's and the host's, named; unfused attention in an old Megatron-core: named."""
    # Composer has no pipeline parallelism (composer/utils/parallelism.py ParallelismConfig:
    # fsdp, tp, fsdp2): llm-foundry under pp=4 is refused, not priced
    piped = _cfg(model="qwen3-30b-a3b", gpu="mi355x", pp=4, ep=1, recompute="selective")
    piped["training"].update(global_batch_size=8, micro_batch_size=2)
    assert sweep.run(sweep.with_(piped, "training", framework="llm-foundry")) is None
    cfg = _cfg(model="qwen3-30b-a3b", gpu="mi355x", ep=1, recompute="selective")
    cfg["training"].update(global_batch_size=16, micro_batch_size=2)
    lo = sweep.run(sweep.with_(cfg, "training", framework="torchtitan"))
    hi = sweep.run(sweep.with_(cfg, "training", framework="llm-foundry"))
    assert hi.iteration_time_s > 2.5 * lo.iteration_time_s
    assert hi.breakdown["optimizer_s"] > 10 * lo.breakdown["optimizer_s"]
    # the .item() per tensor also leaves the host behind: stage times, hence the bubble, grow
    assert sweep.explain(lo, hi) in ("_optimizer", "_host")
    old = _cfg(model="llama3.2-1b", gpus=1, zero_stage=1)
    old["cluster"]["gpus_per_node"] = 1
    old["training"].update(seq_length=8192, dtype="fp8", global_batch_size=4,
                           framework_version="0.4.0")
    new = sweep.with_(old, "training", framework_version=None)
    assert sweep.explain(sweep.run(new), sweep.run(old)) == "_attention"


def _slower(r, gap: float, part: str, dp: float = 0.0):
    """r made ``gap`` seconds slower, all of it in breakdown ``part`` (and ``dp`` of exposed DP)."""
    bd = dict(r.breakdown)
    bd[part] = bd.get(part, 0.0) + gap
    return dataclasses.replace(r, iteration_time_s=r.iteration_time_s + gap, breakdown=bd,
                               exposed_comm={**r.exposed_comm,
                                             "dp": r.exposed_comm.get("dp", 0.0) + dp})


def test_explain_names_a_mechanism_only_where_its_part_grew(sweep):
    """Review J2: the AutoModel FSDP-under-PP label needs exposed DP growth (not just the flag
    and pp > 1); the host label needs other_s growth (not a bubble alone); the per-micro-batch
    FSDP label only for profiles with a cited source (torchtitan, llm-foundry), not AutoModel."""
    pp = _cfg(framework="automodel", gpus=16, pp=2, zero_stage=3)
    lo = sweep.run(pp)
    gap = 2 * lo.iteration_time_s
    assert sweep.explain(lo, _slower(lo, gap, "compute_s")) == ""
    assert sweep.explain(lo, _slower(lo, gap, "exposed_comm_s", dp=gap / 3)) == "_fsdp_pp"
    mc = sweep.run(sweep.with_(pp, "training", framework="megatron-core"))
    assert sweep.explain(mc, _slower(mc, gap, "pipeline_bubble_s")) == ""
    both = _slower(_slower(mc, gap / 2, "pipeline_bubble_s"), gap / 2, "other_s")
    assert sweep.explain(mc, both) == "_host"
    zero1 = sweep.run(_cfg(gpus=16, zero_stage=1))
    for fw, label in (("torchtitan", "_fsdp_accum"), ("llm-foundry", "_fsdp_accum"),
                      ("automodel", "")):
        hi = sweep.run(_cfg(framework=fw, gpus=16, zero_stage=3))
        gap = 3 * zero1.iteration_time_s - hi.iteration_time_s
        hi = _slower(hi, gap, "exposed_comm_s", dp=hi.iteration_time_s + gap)
        assert sweep.explain(zero1, hi) == label, fw


def test_depth_and_micro_checks_fire_on_a_wrong_result(sweep):
    """A run made slower than its one-layer-deeper variant, and one holding more than its
    twice-the-micro-batch variant, are flagged; the honest results are not."""
    cfg = _cfg(gpus=16, pp=2)
    r = sweep.run(cfg)
    assert sweep.check_depth(cfg, r) == [] and sweep.check_micro(cfg, r) == []
    slow = dataclasses.replace(r, iteration_time_s=2 * r.iteration_time_s)
    assert [c for c, _ in sweep.check_depth(cfg, slow)] == ["depth"]
    fat = dataclasses.replace(r, memory=[
        dataclasses.replace(m, activations=m.activations * 4) for m in r.memory])
    assert {c for c, _ in sweep.check_micro(cfg, fat)} == {"micro_memory"}


# Every profile is in the seeded sample. The 55th to 62nd sessions drew some apart (a
# longer list changes every later draw of a seed): the JAX profiles and flash-attention / fast-llm
# until h200inv62 priced FA2 on the H100 and the H200 from the same records
# (``compute.chain.twin_database``), colossalai until mech63: with it in the list seed 3 reaches
# an olmoe-1b-7b run on 16 MI355X (pytorch, cp 2, ep 2) whose micro-batch 4 holds less than its
# micro-batch 2 (85.6 < 87.5 GiB). That is the plain loop's ``zero_grad(set_to_none=True)``: a
# step of one micro-batch peaks at the loss before any gradient exists, where two micro-batches
# hold the first one's gradients there (``memory.estimate._grads_at_backward``, measured on the
# H200 step rows); the micro-batch check now spares those gradients alone (``check_micro``).


def test_a_seeded_sample_breaks_no_hard_invariant(sweep):
    found, valid, _ = sweep.sweep(seed=3, n=60, budget=120, frameworks=list(sweep.FRAMEWORKS))
    assert valid == 60
    assert not {c for c in found if c in HARD}, {c: found[c][:2] for c in found if c in HARD}


@pytest.mark.slow
def test_the_whole_sweep_breaks_no_hard_invariant(sweep):
    found, _, _ = sweep.sweep(seed=5, n=1500, budget=900)
    assert not {c for c in found if c in HARD}, {c: found[c][:2] for c in found if c in HARD}
