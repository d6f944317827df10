"""A check file added by nvfp452 (2026-11-28): NVIDIA's MLPerf Training v5.1 Llama 3.1 405B
submissions, all NVFP4 (mlcommons/training_results_v5.1 @ 441d65f444), left out of
training_mlperf5.csv until trainsim had an NVFP4 recipe. benchmarks/mlperf51_nvfp4_rows.py writes
benchmarks/training_mlperf51_nvfp4.csv. The rows re-derived from the per-run step times, the
profile's fp4 parameter gather off as config_common_fp4.sh sets it, every row predicted, and error
bounds that can fail."""

from __future__ import annotations

import csv
import io
import statistics
from pathlib import Path

from helpers import (
    check_extra_training_file,
    check_generator_writes,
    check_script_check_mode,
    check_validates_with_no_failed_row,
    load_script,
    validated,
)

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_mlperf51_nvfp4.csv"
SCRIPT = ROOT / "benchmarks" / "mlperf51_nvfp4_rows.py"
GEN = load_script(SCRIPT)


def test_file_is_the_four_submissions():
    rows = check_extra_training_file(FILE, min_rows=4)
    assert [(r["gpu"], r["num_gpus"]) for r in rows] == [
        ("gb300", "512"), ("gb200", "512"), ("gb200", "2560"), ("gb200", "5120")]
    for r, run in zip(rows, GEN.RUNS):
        assert (r["dtype"], r["fp8_recipe"], r["framework_version"]) == ("fp8", "nvfp4", "5.1")
        assert float(r["measured_iteration_s"]) == round(statistics.median(run[-3]), 4)
        assert "tp_overlap" not in r["options"]  # config_common_fp4.sh TP_COMM_OVERLAP=False


def test_the_profile_does_not_gather_nvfp4_weights():
    """config_common_fp4.sh sets FP8_PARAM_GATHER=False after config_common.sh's True."""
    from trainsim.catalog.frameworks import framework_profile

    v51 = framework_profile("mlperf-nemo", "5.1")
    assert v51.fp8_param_gather("nvfp4") is False and v51.fp8_param_gather("current") is True


def test_generator_writes_the_file():
    out = check_generator_writes(SCRIPT, FILE)
    assert len(list(csv.DictReader(io.StringIO(out)))) == 4


def test_step_times_are_the_mirror_logs():
    check_script_check_mode(SCRIPT, GEN.mirror_rows.mirror(GEN.REPO_DIR), "training_results_v5.1")


def test_file_validates_with_no_failed_row():
    check_validates_with_no_failed_row(FILE)


def test_error_stays_under_todays_bound():
    """2026-11-28 first prediction (nvfp452, NVFP4 GEMMs at 0.658 of the fp4 ceiling from TE's
    B300 GEMM benchmark, nothing fitted to these rows): GB300 512 -3.4 %, GB200 512 / 2560 / 5120
    +9.8 / +6.7 / +6.1 %; MAPE 6.5 %. Since nvfp453 (NVFP4 GEMMs at 1.975x the 8-bit rate, the
    same B300 benchmark, checked on torchao's B200 GEMMs): GB300 -3.4 %, GB200 -10.9 / -12.7 /
    -12.7 %; MAPE 9.9 % (the GB200 rows as far under as they were over). Bounds: each within
    -16 / +16 %, MAPE under 12 %."""
    _, res = validated(FILE)
    errs = [r.predicted / r.measured - 1 for r in res]
    assert len(errs) == 4 and all(-0.16 <= e <= 0.16 for e in errs)
    assert sum(abs(e) for e in errs) / len(errs) < 0.12
