"""A check file added by data52 (2026-11-28): Alibaba's Megatron-LLaMA README figures, LLaMA-13B on
32 / 256 / 512 A100 80GB (alibaba/Megatron-LLaMA README.md @ 25306de, as first published in
d2e05b8, 2023-09-04). benchmarks/megatron_llama_rows.py writes
benchmarks/training_megatron_llama.csv. The seconds re-derived from the README, the DeepSpeed
baseline's unstated ZeRO stage tuned over the stages DeepSpeed runs, the Megatron-LLaMA rows on
their own profile (mllama57; the generic checks and each row's bound:
tests/test_training_files.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import training_rows, validated

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_megatron_llama.csv"

# id -> tokens/s/GPU as the README gives it (the 32-GPU pair from the hours for 10B tokens)
TPS = {"mllama2309-llama-13b-a100-32-odo2309": 1e10 / (40.3 * 3600 * 32),
       "mllama2309-llama-13b-a100-32-deepspeed-hf": 1e10 / (49.7 * 3600 * 32),
       "mllama2309-llama-13b-a100-256-odo": 1890, "mllama2309-llama-13b-a100-512-odo": 1845,
       "mllama2309-llama-13b-a100-256-odo2309": 1800, "mllama2309-llama-13b-a100-512-odo2309": 1660,
       "mllama2309-llama-13b-a100-256-do": 1630, "mllama2309-llama-13b-a100-512-do": 1430}


def test_file_is_the_readme_in_seconds():
    rows = training_rows(FILE)
    assert {r["id"] for r in rows} == set(TPS)
    for r in rows:
        n = int(r["num_gpus"])
        assert float(r["measured_iteration_s"]) == pytest.approx(2048 * 2048 / (TPS[r["id"]] * n))
        assert (r["model"], r["seq_length"], r["global_batch_size"], r["gpu"]) == \
            ("llama-13b", "2048", "2048", "a100-sxm-80gb")


def test_readme_tflops_agree_with_the_hours():
    """The 32-GPU table's model TFLOPS (146, 180) are the hours' tokens/s x the model's FLOPs a
    token (6 N + 12 l h s, N = 13.0e9): the hours are the throughput, to 1 %."""
    n, l, h, s = 13.016e9, 40, 5120, 2048
    flops = 6 * n + 12 * l * h * s
    for rid, tflops in (("mllama2309-llama-13b-a100-32-odo2309", 180),
                        ("mllama2309-llama-13b-a100-32-deepspeed-hf", 146)):
        assert TPS[rid] * flops / 1e12 == pytest.approx(tflops, rel=0.01)


def test_optimizers_keep_their_measured_order():
    """At 256 and 512 GPUs the README's three optimizers run DistributedOptimizer slowest,
    the first OverlappedDistributedOptimizer (reductions every micro-batch, the gather after
    the step) next, e3d671a's (the gather under the forward) fastest: the predictions keep
    that order (mllama57, profile megatron-llama; before it the two overlapped versions were
    one prediction)."""
    _, res = validated(FILE)
    got = {r.id: r for r in res}
    for gpus in (256, 512):
        rows = [got[f"mllama2309-llama-13b-a100-{gpus}-{opt}"] for opt in ("do", "odo2309", "odo")]
        assert rows[0].measured > rows[1].measured > rows[2].measured
        assert rows[0].predicted > rows[1].predicted > rows[2].predicted, gpus


def test_megatron_llama_rows_run_its_profile():
    """The Megatron-LLaMA rows read profile megatron-llama (not the no-profile fallback), the
    overlapped ones with every micro-batch's reductions, 2 GPUs a NIC as the README's
    machines (4 x 200 Gbps for 8 A100)."""
    from trainsim.validate.training import row_config

    _, res = validated(FILE)
    for row in training_rows(FILE):
        if row["framework"] != "megatron-llama":
            continue
        r = next(x for x in res if x.id == row["id"])
        assert r.error is None and "read_as" not in r.extra, (r.id, r.extra.get("read_as"))
        cfg = row_config(row, r.chosen)
        assert cfg.cluster.gpus_per_nic == 2
        assert cfg.parallel.overlap_grad_reduce == (row["options"] == "dp_overlap")
        assert cfg.parallel.overlap_param_gather == row["id"].endswith("-odo")


def test_deepspeed_row_tunes_its_zero_stage_and_fits():
    """DeepSpeed's ZeRO stage is its user's (ds_config, profile zero_stage_engines): the
    baseline that states none is tuned over stages 0-3 and runs a stage that fits in 80 GB
    (before data52 only ZeRO-0/1 were tried and the row ran at 105 GiB, over the GPU)."""
    _, res = validated(FILE)
    r = next(x for x in res if x.id.endswith("deepspeed-hf"))
    assert r.error is None and r.chosen.get("zero_stage") in (2, 3), r.chosen
    assert r.predicted_memory_gib < 80


def test_deepspeed_stages_are_the_users_choice():
    """The tuner's ZeRO stages for a DeepSpeed row that states none: every stage its one
    engine runs (profile zero_stage_engines), ZeRO-0 first (ds_config's default)."""
    from trainsim.catalog.frameworks import framework_profile
    from trainsim.validate.row_unknowns import user_zero_stages

    profile = framework_profile("deepspeed", "2023-09")
    assert user_zero_stages(profile) == [0, 1, 2, 3]
    assert user_zero_stages(framework_profile("megatron-core", "0.6")) == []
