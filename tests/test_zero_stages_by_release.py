"""One reading of the ZeRO stages a framework runs at a release (``catalog.defaults.
zero_stages_run``) for the config loader and the search: every stage the search offers a
profile at a version loads there. Before, the search read the profile's ``zero_stages`` only
and the loader also ``zero_stage_releases``: Megatron-LM at 2025-02-10 (its 2025-02 entry,
Megatron-FSDP from 2025-02-26), NeMo before 25.04 and MLPerf's NeMo before 5.1 were offered a
stage 3 that ``simulate`` refuses."""

from __future__ import annotations

import warnings

import pytest

from trainsim.catalog.frameworks import _load, framework_names
from trainsim.errors import ConfigError
from trainsim.search.cli_inputs import build_base
from trainsim.search.space import SearchSpace


def _versions(name: str) -> list[str]:
    """Each entry's release, and for date-versioned profiles a day early in each entry's
    month (a day before a release made later in that month)."""
    out = []
    for e in _load(name).entries:
        out.append(e.since)
        if len(e.since) == 7 and e.since[4] == "-":  # 'YYYY-MM'
            out.append(f"{e.since}-02")
    return out


CASES = [(n, v) for n in framework_names() for v in _versions(n)]


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}@{v}" for n, v in CASES])
def test_every_stage_the_search_offers_loads(name, version):
    sets = (f"training.framework={name}", f"training.framework_version='{version}'")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            base = build_base("llama3.2-1b", "h100-sxm-80gb", 16, 64, 4096, 8, 400.0, "bf16",
                              sets)
        except ConfigError as exc:  # a release that cannot run this model or GPU at all
            pytest.skip(str(exc))
        space = SearchSpace(tp=(1,), pp=(1,), cp=(1,), max_micro_batch=1,
                            recompute=("none",), overlap="off").held_by(base)
        offered = {}
        for key in space.memory_keys(base, 16):
            if key.dp > 1:
                offered.setdefault(key.zero, next(iter(space.variants(key)), None))
        assert offered, (name, version)
        for stage, cand in offered.items():
            if cand is None:
                continue
            try:
                cand.to_config(base)  # the loader's framework step, as simulate runs it
            except ConfigError as exc:
                pytest.fail(f"{name} {version}: the search offers ZeRO stage {stage}, "
                            f"the loader refuses it: {exc}")


def test_a_day_before_megatron_fsdp_offers_no_stage_3():
    from trainsim.catalog.defaults import zero_stages_run
    from trainsim.catalog.frameworks import framework_profile

    for name, before, since in (("megatron-lm", "2025-02-10", "2025-02-26"),
                                ("nemo", "25.02", "25.04"), ("mlperf-nemo", "5.0", "5.1")):
        assert 3 not in (zero_stages_run(framework_profile(name, before), before) or (3,))
        assert 3 in (zero_stages_run(framework_profile(name, since), since) or (3,))


def test_a_refused_stage_names_the_stages_run_at_that_release():
    """The refusal of ZeRO-2 named every stage of the profile's engines (NeMo 24.07: '0, 1, 3
    only'), a stage 3 the next refusal then says first shipped in 25.04."""
    from trainsim.catalog import run_config_from_dict

    for version, stages in (("24.07", "0, 1 only"), ("25.04", "0, 1, 3 only")):
        raw = {"model": "llama3.2-1b", "parallel": {"zero_stage": 2},
               "training": {"global_batch_size": 16, "micro_batch_size": 1,
                            "seq_length": 2048, "framework": "nemo",
                            "framework_version": version},
               "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(ConfigError, match=f"zero_stage {stages}"):
                run_config_from_dict(raw)
