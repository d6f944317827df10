"""benchmarks/step_part_scales.py: the eager / compiled pairs it prints are runs of one table
that differ only by torch.compile, and the closing scale it reports for a category does bring
the row's prediction to its measurement when that category is scaled by it."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def parts():
    return load_script(ROOT / "benchmarks" / "step_part_scales.py")


def _item(rid, options, mbs="2", model="llama2-7b", gpu="a100-sxm-80gb"):
    return {"id": rid, "options": options, "micro_batch_size": mbs, "model": model, "gpu": gpu,
            "num_gpus": "128"}


def test_pairs_match_model_gpu_count_and_micro_batch(parts):
    items = [_item("e2", ""), _item("e1", "", mbs="1"), _item("e2b", ""),
             _item("c2", "compile"), _item("c1h", "compile", gpu="h100-sxm-80gb")]
    pairs = parts.compile_pairs(items)
    # the compiled mbs-2 A100 run pairs with the first eager mbs-2 A100 run, not the mbs-1 one;
    # the H100 compiled run has no eager partner
    assert [(e["id"], c["id"]) for e, c in pairs] == [("e2", "c2")]


@pytest.mark.slow
def test_gemm_closing_scale_brings_the_prediction_to_the_measurement(parts):
    path = str(ROOT / "benchmarks" / "training_pytorch.csv")
    rid = "fms2405-7b-a100-128-compile"
    (item,) = [i for i in parts.parts(path) if i["id"] == rid]
    assert 0.3 < item["gemm_share"] < 1.0
    assert item["error"] > 0.05  # priced slow on main: the GEMM scale asked for is below 1
    close = item["gemm_close"]
    assert close < 1.0
    again = parts._variant("gemm", close, path, [rid])[rid]
    # linear in the GEMM time to within a point (hiding behind collectives is the nonlinearity)
    assert again["predicted"] / again["measured"] - 1 == pytest.approx(0.0, abs=0.01)
