"""A held-out source added by newsrc7 (2026-11-26): MLPerf Training v5.1 Llama 3.1 8B closed-division
runs of Dell, Supermicro, Oracle and Verda on B200 and B300 (mlcommons/training_results_v5.1 @
441d65f444) that training_mlperf5.csv left out, each the one fp8 config its submission holds for
that node count. benchmarks/mlperf51_partner_rows.py writes benchmarks/training_mlperf51_partners.csv.
The rows re-derived from their per-run step times (the generic checks and the bound on today's
error: tests/test_training_files.py)."""

from __future__ import annotations

import statistics
from pathlib import Path

from helpers import training_rows

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_mlperf51_partners.csv"


def test_file_is_the_submissions():
    rows = training_rows(FILE)
    for r in rows:
        assert r["source"].startswith("mlcommons/training_results_v5.1 (commit 441d65f444)"), r["id"]
        assert "fp4" not in r["source"] and r["dtype"] == "fp8" and r["fp8_recipe"] == "current"
        assert r["framework"] == "mlperf-nemo" and r["framework_version"] == "5.1"
        # the step time is the median of the per-run figures the note lists (to their rounding)
        runs = [float(x) for x in r["note"].split("'delta' (runs ", 1)[1].split(";")[0].split()]
        assert len(runs) == 10
        assert abs(statistics.median(runs) - float(r["measured_iteration_s"])) <= 1.5e-4, r["id"]
        dp = int(r["num_gpus"]) // int(r["cp"])
        assert int(r["global_batch_size"]) == dp * int(r["micro_batch_size"]), r["id"]
