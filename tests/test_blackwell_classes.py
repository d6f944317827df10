"""benchmarks/blackwell_classes.py: the class cells of a row and the grouped error table."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import blackwell_classes as bc


def test_a_row_is_classed_by_gpu_recipe_family_scale_and_graphs():
    row = {"gpu": "gb200", "dtype": "fp8", "fp8_recipe": "mxfp8", "num_experts": "",
           "model": "deepseek-v3", "num_gpus": "256", "options": "dp_overlap;cuda_graphs"}
    assert bc.classify("training_x", row) == {
        "file": "x", "gpu": "gb200", "precision": "fp8-mxfp8", "family": "MoE",
        "scale": ">=256", "graphs": "graphs"}
    dense = {**row, "model": "llama3-8b", "dtype": "bf16", "num_gpus": "8", "options": ""}
    assert bc.classify("training_x", dense)["family"] == "dense"
    assert bc.classify("training_x", dense)["precision"] == "bf16"
    assert bc.classify("training_x", dense)["scale"] == "<=64"


def test_groups_share_the_absolute_error_largest_first():
    rows = [{"gpu": "gb200", "err": -30.0}, {"gpu": "gb200", "err": 10.0},
            {"gpu": "h100", "err": -10.0}]
    (k1, n1, s1, a1, sh1), (k2, n2, s2, a2, sh2) = bc.groups(rows, ("gpu",))
    assert (k1, n1, k2, n2) == ("gb200", 2, "h100", 1)
    assert (s1, a1, sh1) == pytest.approx((-10.0, 20.0, 80.0))
    assert (s2, a2, sh2) == pytest.approx((-10.0, 10.0, 20.0))
