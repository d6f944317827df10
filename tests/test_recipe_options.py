"""A framework profile's MoE recipe options fill a row's empty options cell (Megatron-Bridge
26.06+ GB200 MXFP8 perf recipes: full-iteration CUDA graphs and expert all-to-all overlap)."""

from __future__ import annotations

import pytest

from trainsim.catalog.frameworks import _recipe_options, framework_profile
from trainsim.validate.training import _training_base

ROW = {"id": "r", "model": "qwen3-30b-a3b", "gpu": "gb200", "num_gpus": "8",
       "gpus_per_node": "64", "tp": "1", "pp": "1", "ep": "8", "global_batch_size": "512",
       "micro_batch_size": "4", "seq_length": "4096", "dtype": "fp8", "fp8_recipe": "mxfp8",
       "framework": "megatron-bridge", "framework_version": "26.06",
       "measured_iteration_s": "1", "options": ""}


def _flags(**cells: str) -> tuple[bool, bool]:
    raw, _ = _training_base({**ROW, **cells})
    return raw["parallel"]["moe_overlap_ep_comm"], raw["training"]["cuda_graphs"]


def test_bridge_2606_gb200_mxfp8_moe_recipes_overlap_and_graph_the_iteration():
    assert _flags() == (True, True)
    assert _flags(framework_version="26.08") == (True, True)


@pytest.mark.parametrize("cells", [
    {"framework_version": "26.04"},  # the 26.04 recipes did neither for these workloads
    {"gpu": "b200-sxm-180gb", "gpus_per_node": "8"},  # nor the B200 workloads of 26.06
    {"fp8_recipe": "current"},
    {"ep": "1"},  # not expert-parallel
    {"model": "llama3-8b"},  # dense
    {"options": "dp_overlap"},  # a row that states its options keeps them
])
def test_recipe_options_apply_only_where_the_recipe_states_them(cells):
    assert _flags(**cells) == (False, False)


def test_profile_names_mechanisms_only():
    assert framework_profile("megatron-bridge", "26.04").defaults.get("moe_recipe_options") is None
    assert _recipe_options({"gb200": {"mxfp8": ["ep_overlap", "faster"]}})
    assert _recipe_options({"gb200": {"fp9": ["ep_overlap"]}})
    assert _recipe_options({"gb200": {"mxfp8": ["ep_overlap", "cuda_graphs"]}}) is None
