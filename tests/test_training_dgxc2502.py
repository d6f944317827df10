"""A held-out source added by newsrc7 (2026-11-26): NVIDIA/dgxc-benchmarking release v25.02
(8f5cbb3799), the v24.11.1 launcher recipes (training_dgxc.csv's dgxc2411 rows) re-measured in the
nemo:24.12 container: Llama 3.1 8B / 70B / 405B, GPT-3 175B and Nemotron-4 15B on DGX H100, BF16
and FP8, smallest and largest full-model scale. benchmarks/dgxc2502_rows.py writes
benchmarks/training_dgxc2502.csv from those rows and the v25.02 tables. Checked: the published
figures and the cells shared with the dgxc2411 rows (every row predicted, the generator and
today's error bound: tests/test_training_files.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import training_rows

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_dgxc2502.csv"
BASE = ROOT / "benchmarks" / "training_dgxc.csv"

# id -> (published step time s, published tokens/s), typed from the v25.02 README tables
PUBLISHED = {
    "llama3.1-8b-bf16-8": (12.78, 82028), "llama3.1-8b-bf16-128": (13.16, 1275155),
    "llama3.1-8b-fp8-8": (9.44, 111054), "llama3.1-8b-fp8-128": (9.73, 1725163),
    "llama3.1-70b-bf16-64": (14.61, 71756), "llama3.1-70b-bf16-2048": (14.84, 2260623),
    "llama3.1-70b-fp8-64": (10.46, 100275), "llama3.1-70b-fp8-2048": (10.99, 3053178),
    "llama3.1-405b-bf16-576": (17.50, 117964), "llama3.1-405b-bf16-2304": (17.70, 466527),
    "llama3.1-405b-fp8-576": (11.00, 187671), "llama3.1-405b-fp8-2304": (11.20, 737280),
    "gpt3-175b-bf16-128": (8.309, 63099), "gpt3-175b-bf16-2048": (8.49, 988057),
    "gpt3-175b-fp8-128": (5.626, 93190), "gpt3-175b-fp8-2048": (5.96, 1407485),
    "nemotron4-15b-bf16-16": (2.812, 93223), "nemotron4-15b-bf16-2048": (2.887, 11622595),
    "nemotron4-15b-fp8-16": (2.039, 128565), "nemotron4-15b-fp8-2048": (2.12, 15827562),
}
# the cells v25.02 changed (see the generator); everything else is the dgxc2411 row's
CHANGED = {"id", "source", "note", "framework_version", "measured_iteration_s", "attention", "vpp",
           "grad_reduce_dtype"}


def test_file_is_the_published_tables_on_the_2411_recipes():
    rows = training_rows(FILE)
    with open(BASE, newline="") as fh:
        base = {r["id"]: r for r in csv.DictReader(fh)}
    assert {r["id"].removeprefix("dgxc2502-") for r in rows} == set(PUBLISHED)
    for r in rows:
        t, tps = PUBLISHED[r["id"].removeprefix("dgxc2502-")]
        assert float(r["measured_iteration_s"]) == t and r["framework_version"] == "24.12"
        assert "@ 8f5cbb3799 (release v25.02" in r["source"], r["id"]
        tokens = int(r["seq_length"]) * int(r["global_batch_size"])
        assert tokens / t == pytest.approx(tps, rel=2e-3), r["id"]
        old = base[r["id"].replace("dgxc2502", "dgxc2411")]
        assert {k for k in r if r[k] != old[k]} <= CHANGED, r["id"]
