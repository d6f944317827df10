"""benchmarks/bridge_dispatch_gap.py: the Megatron-Bridge MoE rows whose dispatcher the tuner
picks, and (slow) the Qwen3-235B B200 row's HybridEP saving over the recipe's all-to-all taken
apart: fewer bytes sent, no fp8 padding copies."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

SCRIPT = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "bridge_dispatch_gap.py")
B200 = "bridge2604p1-qwen3-235b-a22b-b200-256"


def test_candidates_are_bridge_ep_rows_with_a_recipe_dispatcher():
    rows = {row["id"]: fix for row, fix in SCRIPT.candidates()}
    assert {B200, "bridge2511-qwen3-235b-a22b-h100-256-gbs2048",
            "bridge2604p1-qwen3-235b-a22b-h100-256-gbs8192",
            "bridge2604p1-gpt-oss-120b-b200-64"} <= set(rows)
    assert rows[B200]["moe_dispatcher"] == "alltoall"
    assert all(not row["moe_dispatcher"] and int(row["ep"]) > 1
               for row, _ in SCRIPT.candidates())


@pytest.mark.slow
def test_hybridep_saving_on_b200_is_bytes_and_padding():
    job = next(j for j in SCRIPT.candidates() if j[0]["id"] == B200)
    got = SCRIPT.variants(job)
    tuned, recipe = got["tuned"], got["recipe_disp"]
    assert tuned["dispatcher"] == "hybridep" and recipe["dispatcher"] == "alltoall"
    # one copy per destination rank against one per routed expert (top-8 of 128 over EP 8)
    assert 0.6 < tuned["mb"] / recipe["mb"] < 0.7
    # HybridEP pads each expert's rows in its dispatch, so TE's Fp8Padding copies nothing
    assert recipe["quant"] > tuned["quant"]
    assert recipe["predicted"] > tuned["predicted"]
