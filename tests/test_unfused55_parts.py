"""benchmarks/unfused55_parts.py: a layer pass's measured and predicted time are the row's over
the same count of passes, the attention is a part of the prediction, and the unfused core's
additive price is not below its kernel-by-kernel one."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

SCRIPT = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "unfused55_parts.py")


def test_a_layer_pass_keeps_the_rows_ratio():
    row = SCRIPT.layer_pass(*SCRIPT.ROWS[0])
    assert row["impl"] == "unfused"
    assert row["predicted"] / row["measured"] == pytest.approx(1.0 + row["err"])
    assert 0.0 < row["attention"] < row["predicted"]


def test_the_additive_core_price_is_not_the_cheap_side():
    priced, split = SCRIPT.core_two_ways()
    assert priced >= split > 0.0
