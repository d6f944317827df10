"""A check file added by ds30 (2026-11-26): the unlabelled bars of the DeepSpeed-on-Azure post's
Figures 5 and 6 (DeepSpeed 0.6.2 ZeRO-3, 175B and 530B on 128-1,024 A100), read by pixel height.
benchmarks/dsazure_rows.py writes benchmarks/training_dsazure.csv; its --check re-measures the
bars in the mirror's images and compares the labelled ones with their labels (the generic
checks and the error bound, the slow ones under ``-m slow``: tests/test_training_files.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import load_script, training_rows

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_dsazure.csv"
SCRIPT = ROOT / "benchmarks" / "dsazure_rows.py"
GEN = load_script(SCRIPT)


def test_file_is_the_figure_bars():
    rows = training_rows(FILE)
    assert len(rows) == len(GEN.BARS)
    for r, (fig, model, seq, gpus, mb, tf) in zip(rows, GEN.BARS):
        assert r["framework"] == "deepspeed" and r["framework_version"] == "0.6.2"
        assert r["zero_stage"] == "3" and r["tp"] == "1" and r["pp"] == "1"
        assert f"Figure {fig}" in r["source"] and f"{tf} TFLOPs" in r["note"]
        assert int(r["num_gpus"]) == gpus and int(r["seq_length"]) == seq
        assert int(r["global_batch_size"]) == gpus * mb == gpus * int(r["micro_batch_size"])
        assert GEN.flops(r) / (float(r["measured_iteration_s"]) * gpus * 1e12) == \
            pytest.approx(tf, rel=1e-4)


def test_labelled_bars_are_not_repeated():
    """The three labelled bars are rows of training_deepspeed.csv already; their ids and
    settings are not in this file."""
    with open(GEN.CHECKS, newline="") as fh:
        ids = {r["id"] for r in csv.DictReader(fh)}
    for (model, seq, gpus, mb), (row_id, _) in GEN.LABELLED.items():
        assert row_id in ids
        assert not any(b[1:5] == (model, seq, gpus, mb) for b in GEN.BARS)
