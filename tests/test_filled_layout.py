"""Megatron-Bridge's split for a model with MTP layers (``config.layout.filled_layout``): the
virtual stages filled in order, the last with the remainder, the MTP layers and the loss, as
its DeepSeek-V3 recipe lists them (src/megatron/bridge/recipes/deepseek/deepseek_v3.py
``set_deepseek_v3_pipeline_model_parallel_layout``, v0.4.2 L29-49)."""

from __future__ import annotations

import csv

import pytest

from trainsim.catalog.framework_rules import uneven_layout
from trainsim.config.layout import balanced_layout, check_layout, filled_layout, parse_layout
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.row_settings import training_base


def _bridge_map(pp: int, vp: int) -> tuple[str, ...]:
    """The recipe's ``layout_map`` entry for (pp, vp), written out from the source's lists
    (``["embedding"] + ["decoder"] * k`` ..., the last ``+ ["mtp"] + ["loss"]``)."""
    table = {
        (4, 1): [16, 16, 16, 13],
        (8, 1): [8] * 7 + [5], (4, 2): [8] * 7 + [5],
        (16, 1): [4] * 15 + [1], (8, 2): [4] * 15 + [1], (4, 4): [4] * 15 + [1],
    }
    stages = ["t" * k for k in table[(pp, vp)]]
    stages[0] = "E" + stages[0]
    stages[-1] += "mL"
    return tuple(stages)


@pytest.mark.parametrize("pp,vp", [(4, 1), (8, 1), (4, 2), (16, 1), (8, 2), (4, 4)])
def test_every_entry_of_the_recipe_map(pp, vp):
    """DeepSeek-V3's 61 layers and one MTP layer: each (pp, vp) the recipe lists."""
    got = filled_layout(61, 1, pp, vp)
    assert got == _bridge_map(pp, vp)
    check_layout(got, "filled", 61, 1, pp, vp)  # a layout Megatron-core accepts


def test_a_stage_left_empty_before_the_last_falls_back_to_balanced():
    """61 layers over 32 virtual stages: 2 each would leave the 31st with 1 and the 32nd with
    none, which filling cannot place; the balanced layout does, and it is the layout Bridge's
    H100 DeepSeek-V3 workload writes by hand at pp 8 x vpp 4 (scripts/performance/configs/
    deepseek/deepseek_workload_base_configs.py v0.4.2 L137 ``pp_layout="Et|(tt|)*30mL"``)."""
    assert filled_layout(61, 1, 8, 4) == balanced_layout(61, 1, 8, 4)
    assert filled_layout(61, 1, 8, 4) == parse_layout("Et|(tt|)*30mL")
    assert filled_layout(10, 0, 4, 2) == balanced_layout(10, 0, 4, 2)  # 2 each: 5 stages


def test_the_rule_is_bridges_for_mtp_models_only():
    assert uneven_layout("megatron-bridge", "26.04", True) == "filled"
    assert uneven_layout("megatron-bridge", "25.09", True) == "filled"
    assert uneven_layout("megatron-bridge", "26.04", False) == "balanced"
    assert uneven_layout("megatron-core", "0.16", True) == "balanced"
    assert uneven_layout(None, None, True) == "balanced"


def _public(row_id: str) -> dict[str, str]:
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == row_id)


def test_the_validator_fills_a_bridge_deepseek_row():
    """The public B200 DeepSeek-V3 row leaves its layout empty (pp 8, vpp 2): the tuner takes
    the recipe's rule, whose stages are the perf recipe's ``Et*4|(t*4|)*14tmL``."""
    row = _public("bridge2604p1-deepseek-v3-b200-256")
    assert not row["pipeline_layout"]
    _, unknown = training_base(row)
    assert unknown["pipeline_model_parallel_layout"] == ["filled"]
    assert filled_layout(61, 1, 8, 2) == ("Etttt",) + ("tttt",) * 14 + ("tmL",)
