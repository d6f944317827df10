"""A framework profile's MoE recipe options fill a row's empty options cell (Megatron-Bridge
26.06+ GB200 MXFP8 perf recipes: full-iteration CUDA graphs and expert all-to-all overlap)."""

from __future__ import annotations

import pytest
from helpers import overlaps

from trainsim.catalog.frameworks import framework_profile
from trainsim.catalog.schema_checks import _recipe_options
from trainsim.validate.row_settings import training_base

ROW = {"id": "r", "model": "qwen3-30b-a3b", "gpu": "gb200", "num_gpus": "8",
       "gpus_per_node": "64", "tp": "1", "pp": "1", "ep": "8", "global_batch_size": "512",
       "micro_batch_size": "4", "seq_length": "4096", "dtype": "fp8", "fp8_recipe": "mxfp8",
       "framework": "megatron-bridge", "framework_version": "26.06",
       "measured_iteration_s": "1", "options": ""}


def _flags(**cells: str) -> tuple[bool, bool]:
    raw, _ = training_base({**ROW, **cells})
    return raw["parallel"]["moe_overlap_ep_comm"], raw["training"]["cuda_graphs"]


def test_bridge_2606_gb200_mxfp8_moe_recipes_overlap_and_graph_the_iteration():
    assert _flags() == (True, True)
    assert _flags(framework_version="26.08") == (True, True)


@pytest.mark.parametrize("cells", [
    {"framework_version": "26.04"},  # the 26.04 recipes did neither for these workloads
    {"gpu": "b200-sxm-180gb", "gpus_per_node": "8"},  # nor the B200 workloads of 26.06
    {"gpus_per_node": "8"},  # keyed by the system (an NVLink rack), not by the GPU's name
    {"fp8_recipe": "current"},
    {"ep": "1"},  # not expert-parallel
    {"model": "llama3-8b"},  # dense
    {"options": "dp_overlap"},  # a row that states its options keeps them
])
def test_recipe_options_apply_only_where_the_recipe_states_them(cells):
    assert _flags(**cells) == (False, False)


def test_profile_names_mechanisms_only():
    assert framework_profile("megatron-bridge", "26.04").defaults.get("moe_recipe_options") is None
    assert _recipe_options({"rack": {"mxfp8": ["ep_overlap", "faster"]}})
    assert _recipe_options({"rack": {"fp9": ["ep_overlap"]}})
    assert "GPU name" in _recipe_options({"gb200": {"mxfp8": ["ep_overlap"]}})
    assert _recipe_options({"rack": {"mxfp8": ["ep_overlap", "cuda_graphs"]}}) is None


def test_rack_scope_follows_the_nvlink_domain_not_the_gpu():
    # a B200 in a (hypothetical) 72-GPU NVLink domain gets the rack recipes' options; the
    # GB200's own domain comes from the catalog node when the cell is empty
    assert _flags(gpu="b200-sxm-180gb", gpus_per_node="72") == (True, True)
    assert _flags(gpus_per_node="", num_gpus="64") == (True, True)


DENSE = {**ROW, "model": "llama3-70b", "gpu": "h100-sxm-80gb", "gpus_per_node": "8",
         "num_gpus": "64", "tp": "4", "pp": "8", "vpp": "5", "ep": "", "fp8_recipe": "current",
         "framework_version": "26.04", "global_batch_size": "256", "micro_batch_size": "1"}


def test_bridge_run_without_options_gets_the_recipes_dp_and_interleaved_pp_overlap():
    # recipes/common.py DDP config and CommOverlapConfig: DP overlap always, PP overlap with vp > 1
    assert overlaps(DENSE) == (True, True, True, False)
    assert overlaps(DENSE, vpp="1") == (True, True, False, False)  # batch_p2p_comm, no overlap
    assert overlaps(DENSE, vpp="") == (True, True, False, False)  # tuned vpp: no overlap assumed
    assert overlaps(DENSE, options="tp_overlap") == (False, False, False, True)  # stated: kept
    # Megatron-core's empty cell: its own default only (--no-overlap-p2p-communication, on with
    # interleaving); its off-by-default DP and TP overlaps are tuned (test_tuned_options.py)
    assert overlaps(DENSE, framework="megatron-core", framework_version="0.14") == \
        (False, False, True, False)


def test_bridge_tp_overlap_is_tuned_and_needs_sequence_parallelism():
    from trainsim.errors import ConfigError
    from trainsim.validate.row_settings import with_choice

    raw, unknown = training_base(DENSE)
    assert unknown["tp_comm_overlap"] == [False, True]
    assert "tp_comm_overlap" not in training_base({**DENSE, "tp": "1"})[1]
    assert "tp_comm_overlap" not in training_base({**DENSE, "options": "dp_overlap"})[1]
    assert with_choice(raw, {"tp_comm_overlap": True, "sequence_parallel": True})["parallel"][
        "tp_comm_overlap"] is True
    with pytest.raises(ConfigError, match="sequence_parallel"):
        with_choice(raw, {"tp_comm_overlap": True, "sequence_parallel": False})


def test_run_options_name_mechanisms_only():
    from trainsim.catalog.schema_checks import _option_list

    assert _option_list(["dp_overlap", "pp_overlap"]) is None
    assert _option_list(["dp_overlap", "faster"])
    assert _option_list("dp_overlap")
