"""The framework's rule for layers that do not split evenly over the pipeline stages
(``catalog.framework_rules.uneven_layout``): NeMo Automodel's front-loaded split, else a balanced
layout, the same for the validator and the search."""

from __future__ import annotations

import dataclasses

from helpers import TINY_MODEL, make_base

from trainsim.catalog.framework_rules import uneven_layout, uneven_split
from trainsim.search import Candidate, SearchSpace
from trainsim.search.cli import parse_reference
from trainsim.validate.row_settings import training_base

ROW = {"id": "x", "model": "llama3-8b", "gpu": "h100-sxm-80gb", "num_gpus": "64",
       "gpus_per_node": "8", "tp": "1", "pp": "4", "vpp": "4", "global_batch_size": "64",
       "micro_batch_size": "1", "seq_length": "4096", "measured_iteration_s": "1",
       "framework": "automodel", "framework_version": "0.1", "recompute": "full"}


def test_the_rule_follows_the_profile():
    assert uneven_layout("automodel", "0.1") == "front_loaded"
    assert uneven_layout("megatron-bridge", None) == "balanced"
    assert uneven_layout(None, None) == "balanced"
    # front-loaded: needed wherever the virtual stages do not divide the layers
    assert uneven_split("front_loaded", 60, 4, 4) and not uneven_split("front_loaded", 64, 4, 4)
    assert not uneven_split("balanced", 60, 4, 4) and uneven_split("balanced", 61, 4, 1)


def test_the_validator_front_loads_what_the_virtual_stages_do_not_divide():
    """60 layers on pp 4 x vpp 4: 15 per stage do not split into 4 chunks; Automodel front-loads
    them (the even split refused it: 'layers per pipeline stage [15] are not divisible')."""
    _, unknown = training_base({**ROW, "num_layers": "60"})
    assert unknown["pipeline_model_parallel_layout"] == ["front_loaded"]
    _, unknown = training_base({**ROW, "num_layers": "64"})  # 4 per virtual stage: even
    assert "pipeline_model_parallel_layout" not in unknown
    _, unknown = training_base({**ROW, "num_layers": "62", "framework": "megatron-bridge",
                                 "framework_version": "25.09", "vpp": "1"})
    assert unknown["pipeline_model_parallel_layout"] == ["balanced"]


def _automodel_base(model):
    base = make_base(model=model)
    return dataclasses.replace(base, training=dataclasses.replace(
        base.training, framework="automodel", framework_version="0.1"))


def test_the_search_front_loads_for_automodel():
    """10 layers: Automodel runs pp 4 (3+3+2+2) and pp 2 x vpp 3, front-loaded; without a
    framework a dense model only gets even splits, placed by default."""
    model = {**TINY_MODEL, "num_layers": 10}
    base = _automodel_base(model)
    keys = list(SearchSpace(tp=(1,), cp=(1,), max_vpp=4).memory_keys(base, 16))
    splits = {(k.pp, k.vpp) for k in keys}
    assert {(4, 1), (2, 3)} <= splits
    for k in keys:
        cfg = Candidate(k).to_config(base)
        layout = cfg.parallel.pipeline_model_parallel_layout
        assert layout == ("front_loaded" if 10 % (k.pp * k.vpp) else None), (k.pp, k.vpp)
        assert sum(cfg.stage_layer_counts) == 10
    plain = make_base(model=model)
    plain_keys = list(SearchSpace(tp=(1,), cp=(1,), max_vpp=4).memory_keys(plain, 16))
    assert all(10 % k.pp == 0 and 10 % (k.pp * k.vpp) == 0 for k in plain_keys)
    ref = parse_reference("tp=1,pp=2,vpp=3,mb=1", base, 16)
    assert ref.to_config(base).parallel.pipeline_model_parallel_layout == "front_loaded"
