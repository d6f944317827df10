"""benchmarks/step_parts.py: a validated row's step by part, as written and with the recipe's
cells; (slow) the parts of one priced row add up to its predicted step."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

SCRIPT = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "step_parts.py")
QWEN = "bridge2511-qwen3-235b-a22b-h100-256-gbs2048"


def test_recipe_variant_takes_the_errata_cells():
    written = SCRIPT.read(QWEN, SCRIPT.PUBLIC, False)
    recipe = SCRIPT.read(QWEN, SCRIPT.PUBLIC, True)
    assert written is not None and recipe is not None
    assert written["moe_dispatcher"] == "" and recipe["moe_dispatcher"] == "alltoall"
    assert "ep_overlap" in recipe["options"].split(";")


def test_rows_the_errata_leave_have_no_recipe_variant():
    assert SCRIPT.read("bridge2511-llama3.1-405b-1024", SCRIPT.PUBLIC, True) is None
    assert SCRIPT.read("no-such-row", SCRIPT.PUBLIC, False) is None
    assert all(Path(path).exists() for _, path in SCRIPT.DEFAULT)


@pytest.mark.slow
def test_parts_add_up_to_the_step():
    row = SCRIPT.read("mzoo2505-qwen3-235b-a22b-h100-256-tp2pp8vpp4ep32", SCRIPT.ZOO, False)
    got = SCRIPT.parts(row)
    assert got["m"] == 2048 // 16  # GBS 2048, MBS 1, DP 256 / (TP 2 x PP 8)
    assert sum(got[g] for g in SCRIPT.GROUPS) == pytest.approx(got["exposed"])
    assert got["compute"] + got["exposed"] + got["bubble"] + got["optimizer"] + got["host"] \
        == pytest.approx(got["predicted"], rel=1e-9)
