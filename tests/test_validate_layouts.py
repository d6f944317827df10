"""Training rows that leave the tensor or pipeline size, or the model's name, empty."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from trainsim.errors import ConfigError
from trainsim.validate.layouts import MAX_LAYOUTS, parallel_layouts, stated_pps
from trainsim.validate.row_settings import training_base
from trainsim.validate.training import predict_training_row

PUBLIC = Path(__file__).resolve().parents[1] / "src/trainsim/data/validation/training_public.csv"


def _public(row_id: str) -> dict[str, str]:
    if not PUBLIC.exists():
        pytest.skip("bundled training_public.csv not found")
    with PUBLIC.open(newline="") as f:
        return next(r for r in csv.DictReader(f) if r["id"] == row_id)


def test_a_row_without_tp_and_pp_predicts_and_names_its_layout():
    row = _public("megatron21-t1-1.7B")
    stated = predict_training_row(row)
    blank = predict_training_row({**row, "tp": "", "pp": ""})
    assert blank.error is None and blank.predicted is not None
    tp, pp = blank.chosen["tp"], blank.chosen["pp"]
    assert int(row["num_gpus"]) % (tp * pp) == 0 and 24 % tp == 0  # 24 heads
    # the stated layout is one of the candidates, tuned the same way: the tuned one is no slower
    assert blank.predicted <= stated.predicted
    assert "tp" not in stated.chosen and "pp" not in stated.chosen  # stated: not tuned


def test_a_stated_pp_is_kept_while_tp_is_tuned():
    row = _public("korthikanti22-175B-full")
    stated = predict_training_row(row)
    blank = predict_training_row({**row, "tp": ""})
    assert blank.error is None and "pp" not in blank.chosen  # stated: not tuned
    assert blank.chosen["tp"] >= 1
    assert blank.predicted <= stated.predicted or not stated.fits_in_memory


def test_an_impossible_layout_fails_in_one_line():
    row = _public("megatron21-t1-1.7B")
    res = predict_training_row({**row, "tp": "", "pp": "5"})  # 5 divides neither 24 layers
    assert res.predicted is None and res.error and "\n" not in res.error
    assert "tp" in res.error and "layout" in res.error


def test_layouts_divide_the_gpus_heads_and_layers_and_are_capped():
    row = {**_public("mlm-gpt3-175b-a100-1024"), "tp": "1", "pp": "1"}
    raw, _ = training_base(row)
    layouts = parallel_layouts(raw, None, None, 1, None, None, None)
    assert layouts and len(layouts) <= MAX_LAYOUTS
    for tp, pp in layouts:
        assert 1024 % (tp * pp) == 0 and 96 % tp == 0 and tp <= 8 and 96 % pp == 0
        assert 1536 % (1024 // (tp * pp)) == 0  # dp divides the global batch
    assert {tp for tp, _ in parallel_layouts(raw, 8, None, 1, None, None, None)} == {8}


def test_an_empty_model_is_built_from_the_shape_columns():
    row = _public("megatron21-t1-1.7B")
    named = predict_training_row(row)
    shaped = predict_training_row({**row, "model": ""})
    assert shaped.error is None and shaped.predicted is not None
    assert shaped.predicted == pytest.approx(named.predicted, rel=0.25)
    res = predict_training_row({**row, "model": "", "vocab_size": ""})
    assert res.predicted is None and "vocab_size" in res.error and "\n" not in res.error


def test_a_stated_pipeline_layout_gives_the_pipeline_size():
    """126 layers over a hand-written 64-stage layout: pp is its stages over the stated vpp,
    though the layers do not split evenly over it."""
    row = _public("bridge2511-llama3.1-405b-1024")
    res = predict_training_row({**row, "tp": "", "pp": ""})
    assert res.error is None
    assert res.chosen["pp"] * int(row["vpp"]) == 64



def test_a_stated_pipeline_layout_without_vpp_allows_every_pp_dividing_its_stages():
    assert stated_pps("Et|(tt|)*30mL", None) == (1, 2, 4, 8, 16, 32)  # 32 stages
    assert stated_pps("Et|(tt|)*30mL", 4) == (8,)
    with pytest.raises(ConfigError, match="vpp=5"):
        stated_pps("Et|(tt|)*30mL", 5)
    assert stated_pps(None, 2) is None and stated_pps("front_loaded", None) is None


def test_a_row_with_a_stated_layout_and_no_tp_pp_vpp_runs():
    row = _public("bridge2509-deepseek-v3-1024")
    res = predict_training_row({**row, "tp": "", "pp": "", "vpp": ""})
    assert res.error is None, res.error
    assert res.chosen["pp"] * res.chosen["vpp"] == 32 and "ep" not in res.chosen
    assert row["ep"] and res.chosen["tp"] >= 1


def test_deepspeed_zero3_rows_are_not_pipelined():
    """DeepSpeed's pipeline engine asserts ZeRO stage < 2 (runtime/pipe/engine.py)."""
    row = _public("megatron21-t2-zero3-529.6B-2240")  # 2240 GPUs: pp 7 was the fastest
    assert row["framework"] == "deepspeed" and row["zero_stage"] == "3"
    res = predict_training_row({**row, "tp": "", "pp": ""})
    assert res.error is None and res.chosen["pp"] == 1 and res.fits_in_memory
