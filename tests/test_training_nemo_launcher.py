"""A held-out source added by newsrc7 (2026-11-26), used nowhere before: the pre-training table of
NVIDIA/NeMo-Framework-Launcher examples/README.md ('pre-training performance of various models on
DGXH100, with FP8') at the three commits that set its figures (693244ac 2024-03-05, 81b75a7c
2024-04-22, 3499f38e 2024-06-03 '24.05 results'), the releases before the NeMo 24.07 summary the
public file holds. benchmarks/launcher_table_rows.py writes benchmarks/training_nemo_launcher.csv.
The rows re-derived from the published tokens/s/GPU (the generic checks and the bound on today's
first-prediction error: tests/test_training_files.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import training_rows

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_nemo_launcher.csv"

# id -> published tokens/s/GPU, typed from the README table at each commit
PUBLISHED = {
    "launcher2401-gpt3-175b-512": 741, "launcher2401-gpt3-5b-64": 22599,
    "launcher2401-gpt3-20b-64": 5152, "launcher2401-llama2-7b-8": 15066,
    "launcher2401-llama2-13b-16": 7728, "launcher2401-llama2-70b-64": 1594,
    "launcher2403-gpt3-5b-64": 23574, "launcher2403-gpt3-20b-64": 5528,
    "launcher2403-llama2-7b-8": 16290, "launcher2403-llama2-13b-16": 8317,
    "launcher2403-llama2-70b-64": 1725,
    "launcher2405-gpt3-5b-64": 23117, "launcher2405-gpt3-20b-64": 5611,
    "launcher2405-llama2-7b-8": 16154, "launcher2405-llama2-13b-16": 8344,
    "launcher2405-llama2-70b-64": 1659, "launcher2405-llama3-8b-8": 11879,
    "launcher2405-llama3-70b-64": 1444,
}
COMMIT = {"2401": "693244ac8c", "2403": "81b75a7cbd", "2405": "3499f38e2d"}


def test_file_is_the_published_table():
    rows = training_rows(FILE)
    assert {r["id"] for r in rows} == set(PUBLISHED)
    for r in rows:
        tps = PUBLISHED[r["id"]]
        release = r["id"].split("-", 1)[0].removeprefix("launcher")
        assert f"@ {COMMIT[release]}" in r["source"] and "NeMo-Framework-Launcher" in r["source"]
        assert r["framework"] == "nemo" and r["framework_version"] == f"{release[:2]}.{release[2:]}"
        assert r["gpu"] == "h100-sxm-80gb" and r["dtype"] == "fp8", r["id"]
        assert f"published {tps} tokens/s/GPU" in r["note"], r["id"]
        seq, gbs, gpus = (int(r[k]) for k in ("seq_length", "global_batch_size", "num_gpus"))
        assert float(r["measured_iteration_s"]) == pytest.approx(gbs * seq / (tps * gpus), abs=6e-5)
