"""A --set field no candidate (or no point) can take, refused in one named line: search's
fixed fields against its own options, sweep's --set format, and a schedule at pp 1."""

from __future__ import annotations

import warnings

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError, SettingReplaced
from trainsim.search.cli import build_base
from trainsim.search.space import SearchSpace


def _base(*sets: str):
    return build_base("llama3-8b", "h100-sxm-80gb", 16, 64, 2048, 8, 400.0, "bf16", sets)


@pytest.mark.parametrize("sets, space, match", [
    # every given tp is 1: no tensor-parallel group to split the sequence over (it ranked
    # only SP-off candidates, exit 0)
    (["parallel.sequence_parallel=true"], {"tp": (1,)}, "sequence_parallel=true is fixed"),
    # a virtual pipeline or a stage layout with pp 1 only: the generic "no parallel
    # configuration ... is valid", naming neither field
    (["parallel.vpp=2"], {"pp": (1,)}, "virtual_pipeline_model_parallel_size=2 is fixed"),
    (["parallel.pipeline_model_parallel_layout=first:14,last:18"], {"pp": (1,)},
     "pipeline_model_parallel_layout=first:14,last:18 is fixed"),
    # --recompute none leaves out the fixed full (the --set silently won)
    (["parallel.recompute=full"], {"recompute": ("none",)}, "recompute=full is fixed"),
])
def test_a_fixed_field_the_search_options_exclude_is_refused(sets, space, match):
    base = _base(*sets)
    with pytest.raises(ConfigError, match=match):
        SearchSpace(**space).fixed_by(base.fixed)


@pytest.mark.parametrize("sets, space", [
    (["parallel.sequence_parallel=true"], {"tp": (1, 2)}),
    (["parallel.vpp=2"], {"pp": (1, 2)}),
    (["parallel.recompute=full"], {"recompute": ("none", "full")}),
    (["parallel.recompute=full"], {}),  # --recompute's default lists all three
])
def test_a_fixed_field_some_candidates_take_is_kept(sets, space):
    base = _base(*sets)
    SearchSpace(**space).fixed_by(base.fixed)


def test_a_sweep_set_without_a_value_is_a_format_error():
    """sweep --vary parallel.tp=1,2 --set parallel.tp reported the --vary conflict."""
    from trainsim.search.whatif import Vary, sweep

    raw = {"model": "llama3-8b", "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}}
    with pytest.raises(ConfigError, match="expected section.field=value"):
        sweep(raw, [Vary.parse("parallel.tp=1,2")], ["parallel.tp"])


def _run(schedule: str | None):
    parallel = {"tp": 2, "pp": 1}
    if schedule:
        parallel["pipeline_schedule"] = schedule
    return run_config_from_dict({
        "model": "llama3-8b", "parallel": parallel,
        "training": {"global_batch_size": 32, "micro_batch_size": 1, "seq_length": 2048},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}})


@pytest.mark.parametrize("schedule", ["gpipe", "zb_h1", "zb_v"])
def test_a_schedule_at_pp_1_runs_no_pipeline_and_says_so(schedule):
    """Megatron's get_forward_backward_func runs forward_backward_no_pipelining at pp 1
    whatever the schedule: gpipe at pp 1 kept every micro-batch's activations (626 GiB on
    examples/llama3-8b-h100.yaml). The run is the plain one, with a SettingReplaced note."""
    from trainsim.simulator import simulate

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = _run(schedule)
    assert cfg.parallel.pipeline_schedule is None and cfg.parallel.vpp == 1
    assert any(issubclass(w.category, SettingReplaced) and "ignored" in str(w.message)
               for w in caught)
    plain = simulate(_run(None))
    got = simulate(cfg)
    assert got.iteration_time_s == plain.iteration_time_s
    assert got.memory == plain.memory


def test_a_training_setting_needing_the_distributed_optimizer_is_checked_with_it_fixed():
    """training.use_precision_aware_optimizer needs Megatron-core's distributed optimizer
    (b0ee795): the base check carries --set parallel.distributed_optimizer=true (it refused the
    pair, and with it the DeepSeek-V3 recipe of test_search_moe_published.py); alone it is
    refused in one line that names the field to set."""
    base = _base("training.use_precision_aware_optimizer=true",
                 "parallel.distributed_optimizer=true")
    assert ("distributed_optimizer", True) in base.fixed
    with pytest.raises(ConfigError, match="distributed_optimizer=true"):
        _base("training.use_precision_aware_optimizer=true")
