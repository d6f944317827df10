"""The vpp counts `trainsim search` tries: every count Megatron's interleaved schedule runs where
the framework overlaps pipeline sends only when interleaved (the rule `trainsim validate`'s
tuner applies to a row stating pp_overlap), else those up to 8; --max-vpp caps both."""

from __future__ import annotations

import pytest

from trainsim.validate import row_settings

SPACE = {"tp": (1,), "pp": (4,), "cp": (1,), "micro_batch": (1,), "recompute": ("none",),
         "sequence_parallel": (False,), "zero": (1,)}


def _base(framework: str | None, layers: int, version: str | None = None):
    from trainsim.catalog import run_config_from_dict
    from trainsim.search import Base

    training = {"global_batch_size": 64, "seq_length": 2048, "micro_batch_size": 1}
    if framework:
        training.update(framework=framework, framework_version=version)
    cfg = run_config_from_dict({
        "model": {"preset": "gpt-1.7b", "num_layers": layers},
        "parallel": {"tp": 1, "pp": 4}, "training": training,
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}})
    return Base(cfg.model, cfg.training, cfg.cluster)


def _vpps(base, **space) -> list[int]:
    from trainsim.search import SearchSpace

    held = SearchSpace(**{**SPACE, **space}).held_by(base)
    return sorted({k.vpp for k in held.memory_keys(base, 8)})


def test_a_megatron_core_search_interleaves_23_layers_a_stage_as_vpp_23():
    """Megatron-core 0.8 overlaps sends only in the interleaved schedule and takes any divisor
    of the layers per stage (arguments.py core_v0.8.0 L254-277): 92 layers on pp 4 interleave
    only as vpp 23, which the search now offers without --max-vpp; an explicit cap still caps,
    a search with the overlap off or without a framework keeps the counts up to 8."""
    core = _base("megatron-core", 92, "0.8")
    assert _vpps(core) == [1, 23]
    assert _vpps(core, max_vpp=8) == [1]
    assert _vpps(core, max_vpp=23) == [1, 23]
    assert _vpps(core, overlap="off") == [1]
    assert _vpps(_base(None, 92)) == [1]
    assert _vpps(_base("megatron-core", 96, "0.8")) == [1, 2, 3, 4, 6, 8, 12, 24]
    assert _vpps(_base("megatron-core", 96, "0.8"), max_vpp=8) == [1, 2, 3, 4, 6, 8]
    assert _vpps(_base(None, 96)) == [1, 2, 3, 4, 6, 8]


def test_the_search_and_the_validator_take_the_same_interleavings():
    """A row stating pp_overlap on Megatron-core is tuned over the search's vpp counts above 1
    (one function, search.rules.stage_interleavings, gives both)."""
    row = {"model": "gpt-1.7b", "num_layers": "", "gpu": "h100-sxm-80gb", "num_gpus": "8",
           "tp": "1", "pp": "4", "cp": "1", "global_batch_size": "64", "micro_batch_size": "1",
           "vpp": "", "recompute": "none", "sequence_parallel": "0", "options": "pp_overlap",
           "framework": "megatron-core", "framework_version": "0.8"}
    for layers in (92, 96, 112, 28):
        cells = dict(row, num_layers=str(layers))
        tuned = row_settings.unknowns(cells, row_settings.row_profile(cells))["vpp"]
        assert [1, *tuned] == _vpps(_base("megatron-core", layers, "0.8")), layers


def test_a_searched_megatron_core_run_overlaps_its_sends_at_vpp_23():
    """The exhaustive search on 92 layers over pp 4 simulates vpp 23 with the pipeline
    overlap on; vpp 1 only with blocking sends."""
    from trainsim.search import SearchSpace, search

    base = _base("megatron-core", 92, "0.8")
    result = search(base, [8], SearchSpace(**SPACE), top_k=50, rank_by="config",
                    exhaustive=True, cache=None)
    seen = {(e.candidate.mem.vpp, e.candidate.overlap_p2p_comm) for e in result.evaluated}
    assert (23, True) in seen and (1, True) not in seen


def test_max_vpp_none_is_the_default_and_zero_is_refused():
    from trainsim.errors import ConfigError
    from trainsim.search import SearchSpace

    assert SearchSpace().max_vpp is None
    with pytest.raises(ConfigError, match="max_vpp"):
        SearchSpace(max_vpp=0)


def test_a_vpp_fixed_with_set_is_tried_above_any_cap():
    """``--set parallel.vpp=12`` on 48 layers over pp 4 (12 layers a stage) was dropped by the
    default cap of 8 and the search said no split was valid at all; a fixed vpp is tried
    whatever the cap, on even, uneven and front-loaded splits alike."""
    plain = _base(None, 48)
    assert _vpps(plain, vpp=(12,)) == [12]
    assert _vpps(plain, vpp=(12,), max_vpp=4) == [12]
    assert _vpps(plain, vpp=(5,)) == []  # 5 splits no stage of 12 layers


def test_a_fixed_vpp_that_splits_no_stage_is_named_in_the_refusal():
    from trainsim.search.cli_inputs import nothing_found

    class _Stats:
        enumerated = 0

    base = _base(None, 48)
    base = type(base)(base.model, base.training, base.cluster,
                      fixed=(("virtual_pipeline_model_parallel_size", 5),))
    result = type("R", (), {"base": base, "stats": _Stats(), "gpu_counts": (8,),
                            "refused": None})()
    assert "pp times the fixed vpp=5 the layers" in str(nothing_found(result))
