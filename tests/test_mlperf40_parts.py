"""benchmarks/mlperf40_parts.py: its row selection and arithmetic (hand calculations)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import mlperf40_parts as mp


def test_row_selection() -> None:
    assert mp.is_gpt3_mlperf("mlperf31-gpt3-175b-4096")
    assert mp.is_gpt3_mlperf("mlperf41-oracle-gpt3-175b-3072")
    assert not mp.is_gpt3_mlperf("nemo2407-gpt3-175b-128")
    assert not mp.is_gpt3_mlperf("mlperf50-llama3.1-405b-512")
    # the partners file holds 9 GPT-3 rows (mlperf30 x5, 31 azure, 40 smc, 41 oracle x2)
    assert len(mp.gpt3_ids(mp.PARTNERS)) == 9


def test_micro_batches_and_bubble() -> None:
    # mlperf31 4096 GPUs: GBS 2048, MBS 1, DP 4096 / (TP 4 x PP 8) = 128 -> 16 per rank
    assert mp.micro_batches(2048, 1, 128) == 16
    # (p - 1) / (v m) = 7 / (12 x 16) of 1.245 s = 0.0454 s
    assert mp.formula_bubble(1.245, 8, 12, 16) == pytest.approx(1.245 * 7 / 192)
    assert mp.formula_bubble(1.0, 1, 1, 16) == 0.0


def test_two_point_split() -> None:
    # measured mlperf31 512 (m 128, 11.072 s) and 4096 (m 16, 1.628 s): 84.3 ms a micro-batch
    per_mb, fixed = mp.two_point(128, 11.072, 16, 1.628)
    assert per_mb == pytest.approx(9.444 / 112)
    assert fixed == pytest.approx(1.628 - 16 * 9.444 / 112)
    assert fixed + 128 * per_mb == pytest.approx(11.072)


def test_gap_share_and_variants() -> None:
    assert mp.gap_share(1.628, 1.524, 1.245) == pytest.approx(0.104 / 1.245)
    row = {"options": "tp_overlap;pp_overlap;dp_overlap", "attention": "cudnn"}
    assert mp.without_option(row, "pp_overlap")["options"] == "tp_overlap;dp_overlap"
    assert mp.other_attention(row)["attention"] == "flash2"
    assert mp.other_attention({"attention": "flash1"}) is None
