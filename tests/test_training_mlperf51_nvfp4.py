"""A check file added by nvfp452 (2026-11-28): NVIDIA's MLPerf Training v5.1 Llama 3.1 405B
submissions, all NVFP4 (mlcommons/training_results_v5.1 @ 441d65f444), left out of
training_mlperf5.csv until trainsim had an NVFP4 recipe. benchmarks/mlperf51_nvfp4_rows.py writes
benchmarks/training_mlperf51_nvfp4.csv. The rows re-derived from the per-run step times and the
profile's fp4 parameter gather off as config_common_fp4.sh sets it (the generic checks and the
error bounds: tests/test_training_files.py)."""

from __future__ import annotations

import statistics
from pathlib import Path

from helpers import load_script, training_rows

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_mlperf51_nvfp4.csv"
SCRIPT = ROOT / "benchmarks" / "mlperf51_nvfp4_rows.py"
GEN = load_script(SCRIPT)


def test_file_is_the_four_submissions():
    rows = training_rows(FILE)
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
