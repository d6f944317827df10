"""A check file added by dgxc54 (2026-11-28): NVIDIA/dgxc-benchmarking v25.05.01's Llama 3.1 405B
pair on 512 H100 (NeMo 2 in nemo:25.04.01; TP 8, PP 8, CP 2, VP 8, GBS 256), the layout
training_dgxc.csv holds from v25.04's 25.02 container. benchmarks/dgxc_llama31_2505_rows.py writes
benchmarks/training_dgxc_llama31_2505.csv."""

from __future__ import annotations

import csv
import io
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
FILE = ROOT / "benchmarks" / "training_dgxc_llama31_2505.csv"
SCRIPT = ROOT / "benchmarks" / "dgxc_llama31_2505_rows.py"
GEN = load_script(SCRIPT)


def test_file_is_the_tables():
    rows = {r["id"]: r for r in check_extra_training_file(FILE, min_rows=2)}
    assert len(rows) == 2
    for dtype, t, tps in GEN.TABLES.values():
        r = rows[f"dgxc250501-llama3.1-405b-{dtype}-h100-512"]
        assert float(r["measured_iteration_s"]) == t
        assert abs(8192 * 256 / t / tps - 1) < 2e-3
        assert [int(r[k]) for k in ("tp", "pp", "cp", "vpp", "global_batch_size")] == \
            [8, 8, 2, 8, 256]
        assert ("precision_aware_optimizer" in r["options"]) == (dtype == "bf16")


def test_generator_writes_the_file():
    out = check_generator_writes(SCRIPT, FILE)
    assert len(list(csv.DictReader(io.StringIO(out)))) == 2


def test_typed_tables_are_the_mirror_text():
    check_script_check_mode(SCRIPT, GEN.mirror_rows.mirror(GEN.REPO_DIR), "NVIDIA/dgxc-benchmarking")


def test_file_validates_with_no_failed_row():
    check_validates_with_no_failed_row(FILE)


def test_error_stays_under_todays_bound():
    """2026-11-28 first prediction (nothing fitted): bf16 -1.7 %, fp8 -4.7 %. Bounds: each row
    within 10 %; fp8 / bf16 predicted within 10 % of measured (0.657)."""
    _, res = validated(FILE)
    errs = {r.id.split("-")[3]: r.predicted / r.measured - 1 for r in res}
    assert all(abs(e) <= 0.10 for e in errs.values()), errs
    pred = {r.id.split("-")[3]: r.predicted for r in res}
    assert abs(pred["fp8"] / pred["bf16"] / (13.020 / 19.810) - 1) <= 0.10, pred
