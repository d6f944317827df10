"""An fp8 row on a framework with no profile here, predicted with Megatron-core, keeps the
stack's 16-bit weights wherever they fit and takes fp8 weights (--fp8-param-gather, core_v0.9.0
on, with the distributed optimizer) only where the fastest setting needs them to fit, as the
frameworks built on that stack take them in their fp8 recipes (catalog.fallback.
fp8_weight_candidates, FALLBACK_KEPT)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from trainsim.catalog.fallback import FALLBACK_MARK, fp8_weight_candidates
from trainsim.catalog.frameworks import framework_profile
from trainsim.errors import ConfigError
from trainsim.validate.row_settings import with_choice
from trainsim.validate.training import predict_training_row

ROOT = Path(__file__).resolve().parents[1]
ARCHIVE = ROOT / "benchmarks" / "training_bridge_archive.csv"


def _row(row_id: str, **cells: str) -> dict[str, str]:
    with open(ARCHIVE, newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == row_id)
    return {**row, **cells}


BLIND = {"dtype": "fp8", "fp8_recipe": "mxfp8", FALLBACK_MARK: "otherfw"}


def test_the_candidates_only_where_the_stack_leaves_fp8_weights_to_its_user():
    core = framework_profile("megatron-core", None)
    assert fp8_weight_candidates(BLIND, core) == [False, True]
    assert fp8_weight_candidates({**BLIND, "fp8_recipe": "current"}, core) == [False, True]
    # a named framework's row, a 16-bit row, a stated cell, recipes whose weights stay 16-bit
    assert fp8_weight_candidates({k: v for k, v in BLIND.items() if k != FALLBACK_MARK},
                                 core) == []
    assert fp8_weight_candidates({**BLIND, "dtype": "bf16"}, core) == []
    assert fp8_weight_candidates({**BLIND, "fp8_param_gather": "0"}, core) == []
    assert fp8_weight_candidates({**BLIND, "fp8_recipe": "blockwise"}, core) == []
    assert fp8_weight_candidates({**BLIND, "fp8_recipe": "nvfp4"}, core) == []
    # ZeRO-2/3 rows shard by other engines; DDP has no fp8-parameter path
    assert fp8_weight_candidates({**BLIND, "zero_stage": "3"}, core) == []
    assert fp8_weight_candidates({**BLIND, "distributed_optimizer": "0"}, core) == []
    # before core_v0.9.0 the flag did not exist; a stack whose profile says what its recipes
    # do (torchtitan's fp8 all-gather) is not tuned
    assert fp8_weight_candidates({**BLIND, "fp8_recipe": "delayed"},
                                 framework_profile("megatron-core", "0.8")) == []
    assert fp8_weight_candidates(BLIND, framework_profile("torchtitan", None)) == []


def test_fp8_weights_need_the_distributed_optimizer():
    raw = {"training": {}, "parallel": {"distributed_optimizer": False}}
    with pytest.raises(ConfigError, match="distributed optimizer"):
        with_choice(raw, {"fp8_param_gather": True})
    out = with_choice({"training": {}, "parallel": {}},
                      {"fp8_param_gather": True, "distributed_optimizer": True})
    assert out["training"]["fp8_param_gather"] is True


def test_a_gb300_llama_row_takes_fp8_weights_instead_of_full_recompute():
    """Megatron-Bridge 26.04 Llama 3 70B MXFP8 on 64 GB300 (measured 6.7368 s), blind: with
    Megatron-core's 16-bit weights only full recomputation fit (+39.3 %); the Bridge recipe's
    fp8 weights fit without it, as its own profile predicts (+5.1 %)."""
    res = predict_training_row(_row("bridgearch2604p1-llama3-70b-gb300-64-mxfp8",
                                    framework="otherfw", recompute=""))  # the recipe's: tuned
    assert res.chosen["framework"] == "megatron-core"
    assert res.chosen["fp8_param_gather"] is True and res.chosen["recompute"] == "none"
    assert res.ape is not None and res.ape < 0.10


def test_a_row_whose_16_bit_weights_fit_keeps_them():
    """The Qwen3-30B-A3B MXFP8 row on 8 GB200 (Megatron-Bridge 26.04) fits without fp8
    weights: they are not taken, though they would be priced faster."""
    row = _row("bridgearch2604p1-qwen3-30b-a3b-gb200-8-mxfp8", framework="otherfw")
    res = predict_training_row(row)
    assert res.chosen["framework"] == "megatron-core"
    assert res.chosen.get("fp8_param_gather") is False
    stated = predict_training_row({**row, "fp8_param_gather": "1"})
    assert stated.predicted < res.predicted
