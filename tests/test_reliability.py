"""Reliability: failure rates from the catalog, checkpoints, recovery, the goodput Monte Carlo."""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from trainsim.errors import ConfigError
from trainsim.model import total_params
from trainsim.reliability import (
    CAUSES,
    RECOVERY_CAUSES,
    ReliabilityConfig,
    RunPlan,
    build_plan,
    checkpoint_costs,
    component_counts,
    daly_interval,
    expected_interruptions,
    goodput,
    load_profile,
    profile_names,
    reliability_config_from_dict,
    run,
    sweep_interval,
    young_interval,
)
from trainsim.reliability.cli import goodput as goodput_cmd
from trainsim.reliability.cli import load_goodput_config, parse_tokens
from trainsim.reliability.config import profile_from_dict

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
LLAMA3 = EXAMPLES / "goodput-llama3-405b-16k.yaml"
GPT3 = EXAMPLES / "goodput-gpt3-175b-1k.yaml"
DAY = 86400.0


@pytest.fixture(scope="module")
def llama3():
    """The Llama 3 405B run on 16,384 H100s with the Llama 3 failure profile."""
    cfg, rel = load_goodput_config(str(LLAMA3))
    plan, ck = build_plan(cfg, rel)
    return cfg, rel, plan, ck


def one_failure_plan(mtbf_s=4 * 3600.0, steps=(60.0, 120.0, 0.0, 300.0, 60.0, 60.0),
                     **kw) -> RunPlan:
    """One unplanned cause with the given MTBF; blocking 120 s checkpoints every 30 min."""
    return RunPlan(mode_names=("f",), mode_rates=(1.0 / mtbf_s,), mode_planned=(False,),
                   recovery_s=(steps,), **{"interval_s": 1800.0, "stall_s": 120.0, **kw})


# ---------------------------------------------------------------------------- catalog

def test_llama3_profile_counts_add_up_to_the_published_totals():
    """Rates times the observed cluster and days give back Table 5's counts: 419 + 47 = 466."""
    prof = load_profile("llama3-405b-16k-h100")
    obs = prof.observed
    counts = component_counts(int(obs["gpus"]), int(obs["gpus_per_node"]))
    seconds = obs["days"] * DAY
    unexpected = sum(m.rate(counts) * seconds for m in prof.modes if not m.planned)
    planned = sum(m.rate(counts) * seconds for m in prof.modes if m.planned)
    assert unexpected == pytest.approx(prof.published["unexpected"], rel=1e-9)
    assert planned == pytest.approx(prof.published["planned"], rel=1e-9)
    assert unexpected + planned == pytest.approx(prof.published["interruptions"], rel=1e-9)


def test_every_catalog_profile_loads_with_a_source():
    """Each profile in catalog/failures loads, cites a source and has a positive total rate."""
    names = profile_names()
    assert "llama3-405b-16k-h100" in names and len(names) >= 2
    for name in names:
        prof = load_profile(name)
        assert prof.source and prof.modes
        assert sum(m.rate(component_counts(1024, 8)) for m in prof.modes) > 0


def test_rates_scale_with_the_number_of_each_component():
    """Doubling the GPUs doubles per-GPU and per-node rates; per-job rates stay the same."""
    prof = load_profile("llama3-405b-16k-h100")
    small, big = component_counts(8192, 8), component_counts(16384, 8)
    for m in prof.modes:
        ratio = m.rate(big) / m.rate(small)
        assert ratio == pytest.approx(1.0 if m.component == "job" else 2.0)


def test_meta_rsc1_rate_gives_the_papers_projected_mttf_at_16k_gpus():
    """6.50 failures per 1000 node-days on 2,048 nodes: Kokolis et al. project 1.8 h MTTF."""
    prof = load_profile("meta-rsc1-a100")
    rate = sum(m.rate(component_counts(16384, 8)) for m in prof.modes)
    assert 1.0 / rate / 3600 == pytest.approx(prof.published["mttf_16384_gpus_hours"], rel=0.05)


# ---------------------------------------------------------------------------- acceptance 1

def test_llama3_54_days_interruptions_and_effective_training_time(llama3):
    """16,384 H100s for 54 days: interruptions and effective training time within 10% of
    Meta's 466 and 90% (which they report as a lower bound, so also >= 90%).

    The rates are Meta's own counts over this very window, so the interruption count checks
    the rate bookkeeping and the sampler (it must equal rate * components * time); the
    effective training time is a prediction of the recovery and checkpoint model.
    """
    cfg, rel, plan, _ = llama3
    res = goodput(cfg, rel, days=54, trials=1000, seed=3)
    s, pub = res.summary, rel.profile.published
    expected = expected_interruptions(plan, 54 * DAY)
    assert s.interruptions == pytest.approx(expected, abs=4 * math.sqrt(expected / 1000))
    assert abs(s.interruptions / pub["interruptions"] - 1) < 0.10
    assert abs(s.ettr / pub["effective_training_time"] - 1) < 0.10
    assert s.ettr >= pub["effective_training_time"]


def test_megascale_fast_init_matters_at_16k_gpus(llama3):
    """Without MegaScale's init optimizations every restart waits ~1047 s * 8 at 16k GPUs."""
    cfg, rel, _, _ = llama3
    slow = dataclasses.replace(rel, recovery=dataclasses.replace(rel.recovery, fast_init=False))
    fast_r = goodput(cfg, rel, days=54, trials=200, seed=1).summary
    slow_r = goodput(cfg, slow, days=54, trials=200, seed=1).summary
    assert slow.recovery.init_s(2048) / rel.recovery.init_s(2048) > 200
    assert slow_r.lost_s["init"] > 20 * fast_r.lost_s["init"]
    assert slow_r.ettr < fast_r.ettr - 0.1


# ---------------------------------------------------------------------------- acceptance 2

def test_young_and_daly_agree_when_checkpoints_are_cheap_and_daly_caps_at_mtbf():
    """Daly's higher-order optimum tends to Young's as C/M -> 0 and is M when C >= 2M."""
    assert daly_interval(1.0, 1e6) / young_interval(1.0, 1e6) == pytest.approx(1.0, rel=2e-3)
    assert daly_interval(300.0, 3600.0) < young_interval(300.0, 3600.0)
    assert daly_interval(5000.0, 2000.0) == 2000.0


def test_monte_carlo_optimum_matches_young_and_daly(tmp_path):
    """The interval sweep's simulated optimum is within 10% of Young's and Daly's."""
    plan = one_failure_plan()
    sw = sweep_interval(plan, work_s=30 * DAY, trials=500, seed=0)
    assert min(sw.intervals_s) < sw.optimum_s < max(sw.intervals_s)
    assert abs(sw.optimum_s / sw.daly_s - 1) < 0.10
    assert abs(sw.optimum_s / sw.young_s - 1) < 0.10
    means = np.asarray(sw.mean_wall_s)
    assert means[0] > means.min() < means[-1]  # a real minimum inside the sweep
    pytest.importorskip("matplotlib")
    from trainsim.reliability.plot import plot_sweep

    out = plot_sweep(sw, tmp_path / "sweep.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------------- acceptance 3

def test_same_seed_same_result_other_seed_other_result():
    """The Monte Carlo is deterministic for a seed, to the bit."""
    plan = one_failure_plan()
    a = run(plan, work_s=10 * DAY, trials=200, seed=7)
    b = run(plan, work_s=10 * DAY, trials=200, seed=7)
    c = run(plan, work_s=10 * DAY, trials=200, seed=8)
    assert np.array_equal(a.wall_s, b.wall_s) and np.array_equal(a.unexpected, b.unexpected)
    assert all(np.array_equal(a.lost_s[k], b.lost_s[k]) for k in CAUSES)
    assert not np.array_equal(a.wall_s, c.wall_s)


def test_1000_trials_of_a_60_day_run_on_16k_gpus_take_under_10_s(llama3):
    """Speed: 1,000 trials of 60 days of training on 16,384 GPUs (~520 interruptions each)."""
    _, _, plan, _ = llama3
    t0 = time.perf_counter()
    o = run(plan, work_s=60 * DAY, trials=1000, seed=0)
    elapsed = time.perf_counter() - t0
    assert o.unexpected.mean() > 400
    assert elapsed < 10.0


# ---------------------------------------------------------------------------- the model

@pytest.mark.parametrize("kw", [{"work_s": 20 * DAY}, {"horizon_s": 20 * DAY}])
def test_time_is_conserved(kw):
    """Useful training plus time lost per cause adds up to the wall clock of every trial."""
    plan = RunPlan(mode_names=("a", "b", "maint"), mode_rates=(1 / 7200, 1 / 20000, 1 / 86400),
                   mode_planned=(False, False, True),
                   recovery_s=((60, 180, 300, 120, 10, 30), (600, 180, 0, 120, 10, 30),
                               (0, 0, 0, 120, 10, 30)),
                   interval_s=900, stall_s=20, commit_latency_s=60, stop_checkpoint_s=80,
                   straggler_factor=1.05)
    o = run(plan, trials=300, seed=2, **kw)
    total = o.useful_s + sum(o.lost_s[c] for c in CAUSES)
    assert np.allclose(total, o.wall_s, rtol=1e-9)
    if "horizon_s" in kw:
        assert np.allclose(o.wall_s, kw["horizon_s"])
    else:
        assert np.allclose(o.useful_s, kw["work_s"])


def test_without_failures_the_run_is_work_plus_checkpoint_stalls():
    """No failures: wall clock = work * straggler factor + one stall per completed interval."""
    plan = one_failure_plan(mtbf_s=1.0, straggler_factor=1.1)
    plan = dataclasses.replace(plan, mode_rates=(0.0,))
    work = 10 * DAY
    o = run(plan, work_s=work, trials=5, seed=0)
    stalls = math.ceil(work * 1.1 / plan.interval_s) - 1
    assert np.allclose(o.wall_s, work * 1.1 + stalls * plan.stall_s)
    assert np.allclose(o.goodput, work / o.wall_s) and (o.ettr > o.goodput).all()


def test_blocking_checkpoints_lose_half_an_interval_per_failure():
    """Failures land uniformly in the checkpoint cycle: the training lost per failure is
    (tau^2/2 + C tau) / (tau + C) (work since the last checkpoint, all of it during a stall)."""
    tau, c = 1800.0, 120.0
    plan = one_failure_plan(mtbf_s=30 * DAY, interval_s=tau, stall_s=c)
    o = run(plan, work_s=3000 * DAY, trials=400, seed=1)
    per_failure = o.lost_s["lost_work"].sum() / o.unexpected.sum()
    assert per_failure == pytest.approx((tau**2 / 2 + c * tau) / (tau + c), rel=0.05)


def test_async_checkpoints_lose_work_until_the_upload_is_durable():
    """With an upload latency L after the stall, a failure within L of a checkpoint falls
    back one more interval: lost per failure = (tau^2/2 + C tau + L tau) / (tau + C)."""
    tau, c, lat = 1800.0, 10.0, 600.0
    plan = one_failure_plan(mtbf_s=30 * DAY, interval_s=tau, stall_s=c, commit_latency_s=lat)
    o = run(plan, work_s=3000 * DAY, trials=400, seed=1)
    per_failure = o.lost_s["lost_work"].sum() / o.unexpected.sum()
    assert per_failure == pytest.approx((tau**2 / 2 + c * tau + lat * tau) / (tau + c), rel=0.05)


def test_each_recovery_step_is_paid_once_per_failure():
    """Time per recovery step = unplanned failures * that step (rare nested failures)."""
    steps = (60.0, 180.0, 300.0, 120.0, 40.0, 30.0)
    plan = one_failure_plan(mtbf_s=5 * DAY, steps=steps)
    o = run(plan, work_s=200 * DAY, trials=200, seed=4)
    n = o.unexpected.sum()
    for cause, step in zip(RECOVERY_CAUSES, steps):
        assert o.lost_s[cause].sum() == pytest.approx(n * step, rel=0.02)


def test_planned_interruptions_lose_no_work_but_wait_for_a_checkpoint():
    """A planned stop saves first: no lost work, one full checkpoint write per stop; the
    periodic checkpoints restart with the job, so each segment ends half an interval short
    of its next one on average."""
    plan = RunPlan(mode_names=("maint",), mode_rates=(1 / DAY,), mode_planned=(True,),
                   recovery_s=((0, 0, 0, 100, 10, 20),), interval_s=3600, stall_s=5,
                   stop_checkpoint_s=50)
    o = run(plan, work_s=100 * DAY, trials=100, seed=0)
    assert o.lost_s["lost_work"].sum() == 0 and o.unexpected.sum() == 0
    stalls = o.lost_s["checkpoint"].sum() - 50 * o.planned.sum()
    segments = o.planned.sum() + o.trials
    assert stalls == pytest.approx(5 * (o.useful_s.sum() / 3600 - segments / 2), rel=0.01)


def test_bigger_clusters_fail_more_often_and_lose_more(llama3):
    """The same run on 4x the GPUs sees 4x the failures per day (but for the per-job causes,
    which do not grow) and a lower ETTR."""
    cfg, rel, _, _ = llama3
    small = dataclasses.replace(cfg, cluster=dataclasses.replace(cfg.cluster, num_gpus=4096))
    p_small, _ = build_plan(small, rel)
    _, _, p_big, _ = llama3
    per_job = sum(r for r, n, p in zip(p_big.mode_rates, p_big.mode_names, p_big.mode_planned)
                  if not p and n in {m.name for m in rel.profile.modes if m.component == "job"})
    f_job = per_job / p_big.unexpected_rate
    assert 0 < f_job < 0.01
    assert p_big.unexpected_rate / p_small.unexpected_rate == pytest.approx(
        1.0 / (f_job + (1.0 - f_job) / 4.0), rel=1e-9)
    e_small = run(p_small, horizon_s=30 * DAY, trials=200, seed=0).ettr.mean()
    e_big = run(p_big, horizon_s=30 * DAY, trials=200, seed=0).ettr.mean()
    assert e_small > e_big


def test_stragglers_slow_every_step_and_more_so_on_more_nodes():
    """A step waits for the slowest node: the slowdown grows with the node count."""
    rel = reliability_config_from_dict({"straggler": {"node_probability": 0.001,
                                                      "node_slowdown": 0.2, "slowdown": 0.01}})
    f_small, f_big = rel.straggler.factor(16), rel.straggler.factor(2048)
    assert 1.01 < f_small < f_big < 1.01 * 1.2
    assert f_big == pytest.approx(1.01 * (1 + 0.2 * (1 - 0.999**2048)))


# ---------------------------------------------------------------------------- checkpoints

def test_checkpoint_size_is_weights_and_optimizer_per_parameter(llama3):
    """bf16 weights + fp32 master + Adam m, v = 14 bytes per parameter, saved once."""
    cfg, rel, _, ck = llama3
    ckc = rel.checkpoint
    per_param = ckc.weight_bytes_per_param + ckc.optimizer_bytes_per_param
    assert ck.size_bytes == pytest.approx(total_params(cfg.model) * per_param)
    # the distributed optimizer shards the optimizer state over data-parallel ranks
    plain = dataclasses.replace(cfg, parallel=dataclasses.replace(
        cfg.parallel, distributed_optimizer=False))
    assert checkpoint_costs(plain, ckc).per_gpu_bytes > 2 * ck.per_gpu_bytes


def test_async_stalls_less_than_blocking_and_broadcast_restores_faster(llama3):
    """Two-stage async waits only for the host copy; one reader + broadcast beats all-read."""
    cfg, rel, _, ck = llama3
    blocking = checkpoint_costs(cfg, dataclasses.replace(rel.checkpoint, mode="blocking"))
    all_read = checkpoint_costs(cfg, dataclasses.replace(rel.checkpoint, restore="all_read"))
    assert ck.stall_s == ck.host_copy_s < blocking.stall_s == ck.host_copy_s + ck.upload_s
    assert ck.commit_latency_s == ck.upload_s and blocking.commit_latency_s == 0
    assert ck.upload_s == pytest.approx(ck.size_bytes / rel.checkpoint.storage_write_bw_Bps)
    assert ck.restore_s < all_read.restore_s


def test_default_interval_is_dalys_optimum(llama3):
    """Without an interval in the config, checkpoints are taken at Daly's optimum."""
    _, _, plan, ck = llama3
    assert plan.interval_s == pytest.approx(daly_interval(ck.stall_s, plan.mtbf_s))


# ---------------------------------------------------------------------------- bad input

def test_bad_reliability_fields_name_the_field():
    """Unknown or impossible settings are ConfigErrors that name the field."""
    with pytest.raises(ConfigError, match=r"reliability\.checkpoint\.intervl.*interval_s"):
        reliability_config_from_dict({"checkpoint": {"intervl": 60}})
    with pytest.raises(ConfigError, match=r"reliability\.checkpoint\.interval_s"):
        reliability_config_from_dict({"checkpoint": {"interval_s": -5}})
    with pytest.raises(ConfigError, match=r"reliability\.checkpoint\.mode"):
        reliability_config_from_dict({"checkpoint": {"mode": "sometimes"}})
    with pytest.raises(ConfigError, match="unknown failure profile 'llama9'"):
        reliability_config_from_dict({"failures": "llama9"})
    with pytest.raises(ConfigError, match=r"node_probability"):
        reliability_config_from_dict({"straggler": {"node_probability": 2}})


def test_bad_profile_entries_name_the_field():
    """A profile with an unknown component or without an observed cluster is rejected."""
    with pytest.raises(ConfigError, match=r"modes\.x\.component"):
        profile_from_dict({"modes": {"x": {"count": 3, "component": "fan"}}})
    with pytest.raises(ConfigError, match=r"observed needs gpus"):
        profile_from_dict({"modes": {"x": {"count": 3, "component": "gpu"}}})


def test_goodput_needs_tokens_or_days(llama3):
    cfg, rel, _, _ = llama3
    nodays = dataclasses.replace(cfg, training=dataclasses.replace(cfg.training,
                                                                   train_tokens=None))
    with pytest.raises(ConfigError, match="tokens"):
        goodput(nodays, rel)


# ---------------------------------------------------------------------------- CLI

def test_cli_json_and_plot(tmp_path):
    """trainsim goodput --format json gives the headline keys; --plot writes a PNG."""
    r = CliRunner().invoke(goodput_cmd, [str(GPT3), "--tokens", "300B", "--trials", "100",
                                         "--seed", "5", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["expected_days"] >= d["ideal_days"] and d["p90_days"] >= d["p50_days"]
    assert d["tokens"] == 300e9 and 0 < d["effective_training_time_ratio"] <= 1
    assert d["checkpoint"]["interval_s"] == 7200  # from the example's reliability section
    pytest.importorskip("matplotlib")
    png = tmp_path / "budget.png"
    r = CliRunner().invoke(goodput_cmd, [str(LLAMA3), "--days", "54", "--trials", "50",
                                         "--plot", str(png)])
    assert r.exit_code == 0, r.output
    assert "effective training time" in r.output and png.read_bytes()[:4] == b"\x89PNG"


def test_cli_gpus_override_and_bad_input():
    """--gpus changes the cluster; bad --tokens is a one-line error with exit code 2."""
    r = CliRunner().invoke(goodput_cmd, [str(GPT3), "--gpus", "2048", "--trials", "20",
                                         "--set", "training.global_batch_size=3072",
                                         "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["num_gpus"] == 2048
    r = CliRunner().invoke(goodput_cmd, [str(GPT3), "--tokens", "lots"])
    assert r.exit_code == 2 and "error:" in r.output and "--tokens" in r.output
    assert parse_tokens("15T") == 15e12 and parse_tokens("1.5e13") == 1.5e13


def test_reliability_defaults_are_the_documented_profile():
    """ReliabilityConfig() uses the Llama 3 profile, whose storage figures fill the defaults."""
    rel = reliability_config_from_dict({})
    assert rel.failures == ReliabilityConfig().failures == "llama3-405b-16k-h100"
    prof = load_profile(rel.failures)
    assert rel.checkpoint.storage_write_bw_Bps == prof.checkpoint["storage_write_bw_Bps"]
