"""Megatron-LM overlaps an interleaved pipeline's sends by default from 2023-10
(NVIDIA/Megatron-LM@4eeff55d, merged with 3f554d97 on 2023-10-24: --no-overlap-p2p-communication,
store_false; validate_args turns it off without virtual pipeline stages)."""

from __future__ import annotations

import pytest
from helpers import overlaps  # the validator's overlap flags of a row

ROW = {"id": "r", "model": "llama2-70b", "gpu": "h100-sxm-80gb", "num_gpus": "64",
       "gpus_per_node": "8", "tp": "4", "pp": "4", "vpp": "5", "global_batch_size": "128",
       "micro_batch_size": "1", "seq_length": "4096", "dtype": "bf16",
       "framework": "megatron-lm", "framework_version": "2023-10", "measured_iteration_s": "1",
       "options": ""}


def test_interleaved_megatron_lm_overlaps_sends_from_2023_10():
    assert overlaps(ROW)[2] is True
    assert overlaps(ROW, framework_version="2024-06")[2] is True


def test_no_send_overlap_before_2023_10_or_without_interleaving():
    assert overlaps(ROW, framework_version="2023-09")[2] is False
    assert overlaps(ROW, vpp="1")[2] is False        # validate_args: overlap_p2p_comm = False
    assert overlaps(ROW, vpp="")[2] is False
    assert overlaps(ROW, options="dp_overlap")[2] is False  # a row that states options keeps them


def _run(framework: str | None, vpp: int | None, version: str | None = None, **extra):
    from trainsim.catalog import run_config_from_dict

    training = {"global_batch_size": 64, "seq_length": 2048, "micro_batch_size": 1}
    if framework:
        training["framework"] = framework
    if version:
        training["framework_version"] = version
    return run_config_from_dict({
        "model": {"preset": "llama2-7b"},
        "parallel": {"tp": 1, "pp": 4, "overlap_p2p_comm": True, **({"vpp": vpp} if vpp else {}),
                     **extra},
        "training": training, "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}})


def test_megatron_frameworks_send_blocking_without_interleaving():
    # Megatron-core's non-interleaved schedule raises on overlap_p2p_comm and Megatron-LM's
    # arguments.py turns it off without virtual stages: the run sends blocking either way
    from trainsim.catalog.framework_rules import sends_overlap

    for framework in ("megatron-lm", "megatron-core", "megatron-bridge", "nemo", "mlperf-nemo"):
        assert sends_overlap(_run(framework, 1)) is False, framework
        assert sends_overlap(_run(framework, 2)) is True, framework
        # virtual stages a layout states (8 stages on pp 4) interleave as vpp 2 does
        layout = _run(framework, None, pipeline_model_parallel_layout="Et*4|" + "t*4|" * 6 + "t*4L")
        assert layout.parallel.vpp == 2 and sends_overlap(layout) is True, framework
    assert sends_overlap(_run(None, 1)) is True  # no framework: as written
    assert sends_overlap(_run("megascale", 1)) is True  # not a Megatron schedule


def test_a_stated_overlap_without_interleaving_prices_as_blocking_sends():
    from trainsim.simulator import simulate

    stated = simulate(_run("megatron-core", 1)).iteration_time_s
    blocking = simulate(_run("megatron-core", 1, overlap_p2p_comm=False)).iteration_time_s
    assert stated == blocking
    # the flag does shorten a run that names no framework
    assert simulate(_run(None, 1)).iteration_time_s < \
        simulate(_run(None, 1, overlap_p2p_comm=False)).iteration_time_s


def test_search_prices_the_sends_as_simulate_does():
    """`trainsim search` builds its configs without the YAML path: a Megatron run without
    interleaving gets no overlap_p2p_comm variant, one with interleaving does, and the
    search's times are simulate's."""
    from trainsim.search import Base, SearchSpace, search
    from trainsim.simulator import simulate

    cfg = _run("megatron-core", 1, overlap_p2p_comm=False)
    base = Base(cfg.model, cfg.training, cfg.cluster)
    space = SearchSpace(tp=(1,), pp=(4,), cp=(1,), micro_batch=(1,), recompute=("none",),
                        sequence_parallel=(False,), zero=(1,))
    keys = [k for k in space.memory_keys(base, 8) if k.pp == 4]
    for key in keys:
        flags = {c.overlap_p2p_comm for c in space.variants(key, sends_block_alone=True)}
        assert flags == ({False, True} if key.vpp > 1 else {False}), key
        assert {c.overlap_p2p_comm for c in space.variants(key)} == {False, True}
    result = search(base, [8], space, top_k=50, rank_by="config", exhaustive=True)
    assert result.evaluated
    for e in result.evaluated:
        assert e.iteration_time_s == simulate(e.candidate.to_config(base)).iteration_time_s
        assert e.candidate.mem.vpp > 1 or not e.candidate.overlap_p2p_comm


def test_megatron_lm_before_its_overlap_flag_has_no_pipeline_overlap():
    """Megatron-LM had no --overlap-p2p-communication before f9283c5a (merged 2023-05-31,
    e6d7e098): every exchange blocked (batch_isend_irecv, then torch.cuda.synchronize), so
    the loader refuses the switch there, the overlap-needs-interleaving rule starts with the
    flag, and a row stating pp_overlap on such a release is not tuned into interleaving
    (it keeps the short list; from the flag on, 92 layers on pp 4 interleave as vpp 23)."""
    from trainsim.catalog.frameworks import framework_profile
    from trainsim.errors import ConfigError
    from trainsim.validate import row_settings

    for version in ("2021-02", "2022-06", "2023-05"):
        profile = framework_profile("megatron-lm", version)
        assert profile.supports("p2p_overlap") is False, version
        assert not profile.supports("p2p_overlap_interleaved_only"), version
        with pytest.raises(ConfigError, match="p2p overlap"):
            _run("megatron-lm", 2, version)
    for version in ("2023-05-31", "2023-10", "2024-06"):
        profile = framework_profile("megatron-lm", version)
        assert profile.supports("p2p_overlap") and \
            profile.supports("p2p_overlap_interleaved_only"), version
    row = dict(ROW, num_gpus="128", tp="8", pp="4", vpp="", micro_batch_size="",
               model="gpt-1.7b", num_layers="92", options="pp_overlap")
    for version, vpps in (("2022-06", [1, 2, 3, 4, 6, 8]), ("2023-06", [23])):
        cells = dict(row, framework_version=version)
        assert row_settings.unknowns(cells, row_settings.row_profile(cells))["vpp"] == vpps


def test_a_search_on_old_megatron_lm_never_overlaps_sends():
    """The search offers Megatron-LM 2022 no overlap_p2p_comm variant (the loader would refuse
    it), interleaved or not."""
    from trainsim.search import Base, SearchSpace, search

    cfg = _run("megatron-lm", None, "2022-06", overlap_p2p_comm=False)
    base = Base(cfg.model, cfg.training, cfg.cluster)
    space = SearchSpace(tp=(1,), pp=(4,), cp=(1,), micro_batch=(1,), recompute=("none",),
                        sequence_parallel=(False,), zero=(1,))
    result = search(base, [8], space, top_k=50, rank_by="config", exhaustive=True, cache=None)
    assert result.evaluated
    assert not any(e.candidate.overlap_p2p_comm for e in result.evaluated)
    assert any(e.candidate.mem.vpp > 1 for e in result.evaluated)
