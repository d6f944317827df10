"""Gradient accumulation outside the pipeline schedule (``training.local_batch_size``): NeMo
Automodel's benchmark loop (recipes/llm/benchmark.py @ 89e3a9fd) calls ``schedule.step`` once
per local batch, so a pipelined iteration fills and drains the pipeline once per local batch."""

from __future__ import annotations

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError
from trainsim.memo import stage_memory
from trainsim.pricing import Pricer
from trainsim.report import chrome_trace
from trainsim.simulator import simulate
from trainsim.validate.training import row_config


def _raw(local: int | None, pp: int = 4, gbs: int = 64) -> dict:
    training = {"global_batch_size": gbs, "micro_batch_size": 1, "seq_length": 2048}
    if local is not None:
        training["local_batch_size"] = local
    return {"model": {"preset": "llama3-8b"},
            "parallel": {"tp": 1, "pp": pp, "zero_stage": 1},
            "training": training,
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8}}


def test_each_local_batch_is_a_schedule_of_its_own():
    """16 sequences per rank (dp 4) in local batches of 4: four schedules of 4 micro-batches,
    each with its fill and drain; the optimizer runs once."""
    whole, stepped = run_config_from_dict(_raw(None)), run_config_from_dict(_raw(4))
    assert whole.schedule_steps == 1 and stepped.schedule_steps == 4
    one = run_config_from_dict(_raw(None, gbs=16))  # one local batch per rank
    r, s, o = simulate(whole), simulate(stepped), simulate(one)
    opt = o.breakdown["optimizer_s"]
    assert s.iteration_time_s == pytest.approx(4 * (o.iteration_time_s - opt) + opt)
    assert s.iteration_time_s > r.iteration_time_s
    assert s.breakdown["pipeline_bubble_s"] > 3 * r.breakdown["pipeline_bubble_s"]
    assert s.model_flops == pytest.approx(r.model_flops)
    assert sum(s.breakdown.values()) == pytest.approx(s.iteration_time_s)


def test_without_a_pipeline_the_local_batch_changes_nothing():
    a, b = run_config_from_dict(_raw(None, pp=1)), run_config_from_dict(_raw(4, pp=1))
    assert b.schedule_steps == 1
    assert simulate(a).iteration_time_s == simulate(b).iteration_time_s


@pytest.mark.parametrize("local", [3, 32])
def test_a_local_batch_must_split_the_rank_batch_into_micro_batches(local):
    with pytest.raises(ConfigError, match="training.local_batch_size"):
        run_config_from_dict(_raw(local))


def test_the_training_file_column_sets_it():
    row = {"id": "r", "model": "llama3-8b", "gpu": "h100-sxm-80gb", "num_gpus": "16",
           "gpus_per_node": "8", "tp": "1", "pp": "4", "global_batch_size": "64",
           "micro_batch_size": "1", "local_batch_size": "4", "seq_length": "2048",
           "vpp": "1", "measured_iteration_s": "1"}
    assert row_config(row).schedule_steps == 4


@pytest.mark.parametrize("vpp, local", [(1, 2), (2, 4)])
def test_the_memory_estimate_holds_one_schedule_step(vpp, local):
    """The search prunes on ``stage_memory(cfg)`` while ``simulate`` reports one step's memory:
    both count the micro-batches of one schedule step (the first stage holds min(m, pp) of them
    in flight), not the iteration's."""
    raw = _raw(local)
    raw["parallel"]["vpp"] = vpp
    raw["training"]["global_batch_size"] = 128
    cfg = run_config_from_dict(raw)
    assert cfg.schedule_steps == 32 // local and cfg.schedule_microbatches == local
    reported = simulate(cfg).memory
    for s in range(cfg.parallel.pp):
        assert stage_memory(cfg, s).total == pytest.approx(reported[s].total)
    raw["training"].pop("local_batch_size")
    whole = stage_memory(run_config_from_dict(raw), 0).total
    assert reported[0].total < whole


def test_a_stepped_result_says_so_and_prices_with_the_pricer_given():
    cfg = run_config_from_dict(_raw(4))
    pricer = Pricer(cfg)
    assert not pricer.compute_sources()
    given, own = simulate(cfg, pricer=pricer), simulate(cfg)
    assert pricer.compute_sources()  # the step's passes were priced by it
    assert given.iteration_time_s == pytest.approx(own.iteration_time_s)
    assert given.simulation["schedule_steps"] == 4
    assert simulate(run_config_from_dict(_raw(None))).simulation.get("schedule_steps") is None


def test_a_stepped_trace_is_one_step_and_says_so():
    cfg = run_config_from_dict(_raw(4))
    r = simulate(cfg, keep_timeline=True)
    meta = chrome_trace(r.timeline, info=r.simulation)["otherData"]
    assert meta["schedule_steps"] == 4 and "one of the iteration's 4" in meta["timeline"]
    labels = {t.label for t in r.timeline.tasks}
    assert not any("mb4" in label for label in labels)  # micro-batches 0-3: one step's
