"""MLPerf Training v5.1 Llama 3.1 8B on AMD MI355X and MI350X (benchmarks/training_mlperf51_amd.csv,
issue 17): a held-out source (AMD's implementation on ROCm: NeMo 2.5.0rc0, AMD's Megatron-LM
fork, Transformer Engine's ROCm build), its log format as benchmarks/mlperf_step_time.py reads
it and the one-line refusal of a GPU the catalog lacks (the generic checks and the bound on
today's error: tests/test_training_files.py)."""

from __future__ import annotations

import csv
import json
import os
import re
import statistics
import subprocess
from pathlib import Path

import pytest
from helpers import load_script, mirror_source, training_rows, validated

ROOT = Path(__file__).resolve().parents[1]
MIRROR = "mlcommons+training_results_v5.1"
COMMIT = "441d65f4445cd59687466533fd9f55399136e7a4"
AMD = ROOT / "benchmarks" / "training_mlperf51_amd.csv"
SCRIPT = ROOT / "benchmarks" / "mlperf_step_time.py"


def test_file_is_the_six_submissions():
    rows = training_rows(AMD)
    for r in rows:
        gpu = r["gpu"]
        assert gpu in ("mi355x", "mi350x") and r["id"].startswith("mlperf51-") and \
            r["id"].endswith(f"-{gpu}-8"), r["id"]
        assert "mlcommons/training_results_v5.1 (commit 441d65f444)" in r["source"]
        assert "/results/" in r["source"] and "llama31_8b" in r["source"], r["id"]
        assert (r["num_gpus"], r["gpus_per_node"]) == ("8", "8")
        assert (r["tp"], r["pp"], r["cp"]) == ("1", "1", "1"), r["id"]
        # config_MI35*X_1x8x1_8b.sh and the logs: GBS 32 = DP 8 x MBS 2 x 2 micro-batches
        assert (r["global_batch_size"], r["micro_batch_size"], r["seq_length"]) == \
            ("32", "2", "8192"), r["id"]
        assert "gradient_accumulation_steps 2" in r["note"]
        assert (r["framework"], r["framework_version"]) == ("nemo", "2.5.0rc0"), r["id"]
        assert (r["dtype"], r["fp8_recipe"], r["grad_reduce_dtype"]) == \
            ("fp8", "delayed", "bf16"), r["id"]
        # train.py sets no overlap and no CUDA graphs; the attention is the nemo profile's on
        # an AMD GPU (ROCm TE's CK: tests/test_rocm_attention.py), so the cell stays empty
        assert r["options"] == "" and r["attention"] == "", r["id"]
    assert {r["id"].split("-")[1] for r in rows if r["gpu"] == "mi355x"} == \
        {"amd", "dell", "gigacomputing", "supermicro"}
    assert {r["id"].split("-")[1] for r in rows if r["gpu"] == "mi350x"} == {"amd", "cisco"}


def test_each_row_is_the_median_of_the_ten_runs_in_its_note():
    for r in training_rows(AMD):
        runs = [float(x) for x in re.search(r"'block' \(runs ([\d. ]+)\)", r["note"])
                .group(1).split()]
        assert len(runs) == 10, r["id"]
        assert abs(statistics.median(runs) - float(r["measured_iteration_s"])) < 6e-5, r["id"]


def _amd_log(gbs: int, step_s: float, blocks: int, steps: int) -> str:
    """A result file as AMD's src/callbacks.py writes it: block_start/block_stop carry the
    samples so far (no step), one tracked_stats per block holding only a throughput (samples/s),
    no per-step timing; the first block opens at run_start and holds the warm-up."""
    lines, t = [], 1_759_966_206_549

    def log(key, value=None, **meta):
        lines.append(":::MLLOG " + json.dumps(
            {"time_ms": t, "event_type": "POINT_IN_TIME", "key": key, "value": value,
             "metadata": meta}))

    log("global_batch_size", gbs)
    log("max_sequence_length", 8192)
    log("gradient_accumulation_steps", 2)
    done = 0
    for b in range(blocks):
        log("block_start", samples_count=done * gbs)
        took = round(steps * step_s * 1000) + (16_000 if b == 0 else 0)
        t += took
        done += steps
        log("tracked_stats", {"throughput": steps * gbs / (took / 1000)}, step=done * gbs)
        log("block_stop", samples_count=done * gbs)
        log("eval_start", samples_count=done * gbs)
        t += 10_449
        log("eval_stop", samples_count=done * gbs)
    return "\n".join(lines)


def test_step_time_reader_on_amds_log_format():
    """The block reading is the step time (warm-up block left out); the per-block throughput
    summary is not a step, so there is no delta or step_timing reading."""
    r = load_script(SCRIPT).run_times(_amd_log(gbs=32, step_s=1.045, blocks=4, steps=384))
    assert r["blocks"] == 4 and r["gbs"] == 32 and r["ga"] == 2
    assert abs(r["block"] - 1.045) < 1e-6
    assert r["delta"] is None and r["step_timing"] is None


def test_hand_check_of_one_block():
    """AMD result_0.txt, second block: block_start 1759966624658 ms, block_stop 1759967026079
    ms, 12288 samples = 384 steps of 32: 401.421 s / 384 = 1.0454 s; AMD's own throughput for
    it, 30.619 samples/s, is 32 / 30.619 = 1.0451 s. The AMD row (median of its runs'
    medians) sits within 0.3 % of both."""
    block = (1759967026079 - 1759966624658) / 1e3 / (12288 / 32)
    assert abs(block - 1.0454) < 1e-4 and abs(32 / 30.619 - 1.0451) < 1e-4
    row = {r["id"]: r for r in training_rows(AMD)}["mlperf51-amd-llama3.1-8b-mi355x-8"]
    assert abs(float(row["measured_iteration_s"]) / block - 1) < 0.003


def test_rows_are_the_step_time_script_run_on_the_mirrored_logs():
    """mlperf_step_time.submission() on each row's results directory in the mirror (skipped
    where the mirror is absent): its per-run 'block' readings are the runs in the row's note,
    their median the row, and AMD result_0.txt's second block the hand check's 1.0454 s."""
    amd_dir = "AMD/results/MI355X_EPYC_9575F_pytorch/llama31_8b"
    mirror_source(MIRROR, COMMIT, f"{amd_dir}/result_0.txt")  # skips without the mirror
    git = str(Path(os.environ.get("TRAINSIM_MIRRORS", "/work/.mirror")) / MIRROR / "repo")
    head = subprocess.run(["git", "-C", git, "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    if head != COMMIT:  # submission() reads HEAD
        pytest.skip(f"the {MIRROR} mirror is at {head[:10]}, not {COMMIT[:10]}")
    script = load_script(SCRIPT)
    for r in training_rows(AMD):
        results_dir = re.search(r"(\S+/llama31_8b)/result_\*\.txt", r["source"]).group(1)
        runs, med = script.submission(git, results_dir)
        noted = [float(x) for x in re.search(r"'block' \(runs ([\d. ]+)\)", r["note"])
                 .group(1).split()]
        assert len(runs) == 10 and all(run["gbs"] == 32 and run["ga"] == 2 for _, run in runs)
        assert sorted(round(run["block"], 4) for _, run in runs) == sorted(noted), r["id"]
        assert abs(med["block"] - float(r["measured_iteration_s"])) < 6e-5, r["id"]
        if results_dir == amd_dir:
            first = dict(runs)["result_0.txt"]["first_block"]  # the 2nd block, the 1st after warm-up
            assert abs(first - 401.421 / 384) < 1e-6


def test_rows_read_ck_attention_and_nemo_25_09():
    """No attention cell: the nemo profile's on an AMD GPU, ROCm Transformer Engine's CK; NeMo
    2.5.0rc0 is a pre-release of the 25.09 container's library (profile entry 25.04)."""
    _, res = validated(AMD)
    for r in res:
        d = r.to_dict()
        assert d["settings"]["attention"] == "ck", r.id
        assert "25.09 (the container that ships v2.5.0)" in d["read_as"]["framework_version"]


def test_mi350x_is_slower_than_mi355x_by_its_power(tmp_path):
    """The MI350X rows run the MI355X's code on the same die at 1000 of 1400 W: predicted
    slower by less than the GEMM-rate ratio 1 / 0.817 (attention's exponentials, memory-bound
    kernels and the exposed all-gather do not slow with the power), and an unknown GPU is still
    refused with one line."""
    from trainsim.validate import validate_file

    rows = training_rows(AMD)
    _, res = validated(AMD)
    pred = {r.id: r.predicted for r in res}
    m355 = pred["mlperf51-amd-llama3.1-8b-mi355x-8"]
    m350 = pred["mlperf51-amd-llama3.1-8b-mi350x-8"]
    assert 1.10 < m350 / m355 < 1 / 0.817
    mi400 = {**rows[0], "id": "mlperf51-x-mi400x-8", "gpu": "mi400x"}
    path = tmp_path / "mi400x.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows([mi400, rows[1]])
    _, res = validate_file(path)
    assert res[0].predicted is None and res[0].error and "mi400x" in res[0].error
    assert "\n" not in res[0].error
    assert res[1].predicted is not None and res[1].error is None
