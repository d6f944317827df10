"""Megatron-LM's Llama FP8 example table (benchmarks/training_mlm_llama.csv, issue 17): Llama 3
8B / 70B / 405B on 8 / 64 / 1,024 H100, examples/llama/README.md @ bf6e99859f. The seconds
re-derived from the table's tokens/s/GPU and the 8B row's cells from the README's own script
(every row predicts, no bound on the error: tests/test_training_files.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import training_rows

ROOT = Path(__file__).resolve().parents[1]
MLM = ROOT / "benchmarks" / "training_mlm_llama.csv"

# the 'FP8 Performance' table: id -> (GPUs, GBS, TP, PP, CP, VP, GA, tokens/s/GPU)
TABLE = {"mlmllama2506-llama3-8b-h100-8": (8, 128, 1, 1, 2, 1, 32, 13812),
         "mlmllama2506-llama3-70b-h100-64": (64, 128, 4, 8, 1, 5, 64, 1621),
         "mlmllama2506-llama3.1-405b-h100-1024": (1024, 512, 8, 8, 2, 8, 64, 315)}


def test_file_is_the_table_in_seconds():
    """GBS x 8192 / (tokens/s/GPU x GPUs); the table's GA = GBS / (GPUs / (TP PP CP)) at MBS 1."""
    rows = training_rows(MLM)
    assert {r["id"] for r in rows} == set(TABLE)
    for r in rows:
        n, gbs, tp, pp, cp, vp, ga, tps = TABLE[r["id"]]
        assert gbs // (n // (tp * pp * cp)) == ga
        assert (int(r["num_gpus"]), int(r["global_batch_size"]), int(r["tp"]), int(r["pp"]),
                int(r["cp"]), int(r["vpp"] or 1)) == (n, gbs, tp, pp, cp, vp)
        assert float(r["measured_iteration_s"]) == pytest.approx(gbs * 8192 / (tps * n), abs=1e-6)
        assert "examples/llama/README.md @ bf6e99859f884fa2d7733497022f49ca5b950569" in r["source"]
        assert r["framework"] == "megatron-core" and r["dtype"] == "fp8"


def test_only_the_8b_row_takes_the_scripts_settings():
    """train_llama3_8b_h100_fp8.sh is the 8B configuration (no recompute flag, bf16 gradient
    reduction, TE fused attention, delayed hybrid fp8, distributed optimizer with overlap); the
    70B and 405B rows have no script: those cells stay empty for the tool to choose."""
    rows = {r["id"]: r for r in training_rows(MLM)}
    eight = rows["mlmllama2506-llama3-8b-h100-8"]
    assert (eight["recompute"], eight["grad_reduce_dtype"], eight["attention"],
            eight["fp8_recipe"], eight["distributed_optimizer"], eight["options"]) == \
        ("none", "bf16", "cudnn", "delayed", "1", "dp_overlap")
    for rid in ("mlmllama2506-llama3-70b-h100-64", "mlmllama2506-llama3.1-405b-h100-1024"):
        r = rows[rid]
        assert not any(r[c] for c in ("recompute", "grad_reduce_dtype", "attention", "fp8_recipe",
                                      "distributed_optimizer", "options")), rid
