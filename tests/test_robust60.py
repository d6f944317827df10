"""robust60: robust59's leads 1 and 3 (a ``cuda_graph_scope`` under a framework without
Megatron-core's scopes priced as Megatron-core's; refusals citing a profile entry's whole
source) and the fortieth fuzz round's classes (``benchmarks/fuzz60.py``). Each test but the
controls fails on the previous src."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
from helpers import SMALL_RUN

from trainsim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]

RUN = SMALL_RUN
MOE = {"num_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 256}


def _cfg(framework: str | None, version: str | None = None, scope=None, moe: bool = False,
         **parallel):
    raw = copy.deepcopy(RUN)
    if moe:
        raw["model"].update(MOE)
        raw["parallel"] = {"ep": 2}
    raw["parallel"].update(parallel)
    t = raw["training"]
    if framework:
        t["framework"] = framework
    if version:
        t["framework_version"] = version
    if scope is not None:
        t.update(cuda_graphs=True, cuda_graph_scope=scope)
    return raw


def _load(raw):
    from trainsim.catalog import run_config_from_dict

    return run_config_from_dict(copy.deepcopy(raw))


# ------------------------------------------------------------------ graph_scopes (lead 1)

@pytest.mark.parametrize(("framework", "old", "new"), [
    ("megatron-core", "0.11", "0.12"),          # a606486ece (2025-03-18), first in core_v0.12.0
    ("megatron-lm", "2025-02", "2025-03"),      # the month that holds a606486ece
    ("nemo", "25.02", "25.04"),                 # v2.3.0 pins Megatron-LM@3cdfd613 (2025-05-02)
    ("mlperf-nemo", "5.0", "5.1"),              # 5.0: MCORE_REVISION core_r0.11.0
])
def test_graph_scopes_arrive_with_the_release_that_pins_megatron_core_0_12(framework, old, new):
    from trainsim.catalog.frameworks import framework_profile

    assert framework_profile(framework, old).supports("graph_scopes") is False
    assert framework_profile(framework, new).supports("graph_scopes") is True


def test_every_profile_with_the_later_scopes_has_graph_scopes_and_every_stack_records_it():
    """``moe_graph_scopes`` (2b343d739f) came on top of ``cuda_graph_scope`` (a606486ece): no
    entry may have the later scopes without the feature; every profile but the two built from
    published runs alone (megascale, meta-llama3) states it."""
    from trainsim.catalog.frameworks import _files, _load, framework_profile

    for name in _files():
        for entry in _load(name).entries:
            p = framework_profile(name, entry.since)
            if p.supports("moe_graph_scopes") is True:
                assert p.supports("graph_scopes") is True, (name, entry.since)
            if name not in ("megascale", "meta-llama3"):
                assert p.supports("graph_scopes") is not None, (name, entry.since)


@pytest.mark.parametrize("scope", ["attn", ["attn"], "ATTN", "full", "full_iteration",
                                   "attn;mlp"])
def test_a_scope_under_deepspeed_is_refused_as_the_config_is_read(scope):
    """DeepSpeed allows ``cuda_graphs`` but has no layer scopes: main priced ``attn`` as
    Megatron-core's layer scope (robust59 lead 1)."""
    with pytest.raises(ConfigError) as err:
        _load(_cfg("deepspeed", scope=scope))
    text = str(err.value)
    assert "\n" not in text and "training.cuda_graph_scope=" in text
    assert "deepspeed" in text and "graph_scopes: false" in text and "a606486ece" in text


@pytest.mark.parametrize(("framework", "version"), [
    ("megatron-core", "0.11"), ("nemo", "24.12"), ("megatron-core", "0.9"),
    ("megatron-lm", "2025-01"), ("mlperf-nemo", "4.1")])
def test_a_scope_before_megatron_core_0_12_is_refused(framework, version):
    with pytest.raises(ConfigError, match="has no cuda_graph_scope"):
        _load(_cfg(framework, version, scope="attn"))


@pytest.mark.parametrize("scope", ["mlp", "moe"])
def test_mlp_and_moe_scopes_came_with_core_0_16_like_moe_router(scope):
    """core_v0.15.0 asserts a TE-graphed scope is full or attn (cuda_graphs.py L1357-1360);
    mlp and moe came with the enum (2b343d739f) as moe_router did."""
    raw = _cfg("megatron-core", "0.15", scope=scope, moe=scope == "moe")
    if scope == "moe":
        raw["model"].update(moe_capacity_factor=1.0, moe_pad_expert_input_to_capacity=True)
    with pytest.raises(ConfigError, match=f"has no {scope} graph scope.*2b343d739f"):
        _load(raw)
    raw["training"]["framework_version"] = "0.16"
    assert scope in _load(raw).training.cuda_graph_scope


def test_controls_scopes_where_the_release_has_them():
    """Control: attn under core 0.12 / Bridge / NeMo 25.04; no scope under DeepSpeed."""
    for framework, version in (("megatron-core", "0.12"), ("megatron-bridge", None),
                               ("nemo", "25.04"), ("mlperf-nemo", "5.1")):
        assert _load(_cfg(framework, version, scope="attn")).training.cuda_graph_scope == \
            ("attn",)
    raw = _cfg("deepspeed")
    raw["training"]["cuda_graphs"] = True
    assert _load(raw).training.cuda_graph_scope == ()


def test_search_set_and_the_service_refuse_the_scope_alike(tmp_path):
    """``search --set`` and a service job read the scope through the same loader."""
    from click.testing import CliRunner

    from trainsim.cli import main
    from trainsim.service import Settings
    from trainsim.service.jobs import problem

    raw = _cfg("deepspeed", scope="attn")
    job = problem("simulate", copy.deepcopy(raw), {}, Settings(workers=0, checkers=0))
    assert job is not None and "has no cuda_graph_scope" in job[2]
    model = tmp_path / "m.json"
    model.write_text('{"model": {"hidden_size": 256, "num_layers": 4, '
                     '"num_attention_heads": 4, "vocab_size": 1024}}')
    r = CliRunner().invoke(main, ["search", str(model), "--gpus", "8", "--global-batch", "16",
                                  "--seq", "512", "--workers", "1", "--max-micro-batch", "1",
                                  "--recompute", "none", "--overlap", "off", "--tp", "1",
                                  "--pp", "1", "--set", "training.framework=deepspeed",
                                  "--set", "training.cuda_graphs=true",
                                  "--set", "training.cuda_graph_scope=attn"])
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert "has no cuda_graph_scope" in r.output


def test_the_service_answers_a_refusal_in_the_clis_words(tmp_path):
    """A schedule written with spaces (' LOOPED_BFS ') under torchtitan 2024-07: the CLI folds
    the runs of spaces in its one line; the service kept them (two wordings, fuzz60). The
    value is quoted, so the spaces a user wrote show."""
    import json

    from click.testing import CliRunner

    from trainsim.cli import main
    from trainsim.service import Settings
    from trainsim.service.jobs import problem

    raw = _cfg("torchtitan", "2024-07", pp=2, pipeline_schedule=" LOOPED_BFS ")
    raw["model"]["num_layers"] = 8
    raw["cluster"]["num_gpus"] = 16
    path = tmp_path / "run.json"
    path.write_text(json.dumps(raw))
    r = CliRunner().invoke(main, ["simulate", str(path), "--format", "json"])
    cli = [ln for ln in r.stderr.splitlines() if ln.startswith("error: ")]
    job = problem("simulate", copy.deepcopy(raw), {}, Settings(workers=0, checkers=0))
    assert len(cli) == 1 and job is not None
    assert cli[0].removeprefix("error: ") == job[2]
    assert "pipeline_schedule=' LOOPED_BFS ' but torchtitan 2024-07" in job[2]


# ------------------------------------------------------------------ short citations (lead 3)

def test_a_feature_refusal_cites_a_short_source():
    """main printed the DeepSpeed entry's whole source (~750 characters) on the line."""
    raw = _cfg("deepspeed", dp_replicate=2)
    with pytest.raises(ConfigError) as err:
        _load(raw)
    text = str(err.value)
    assert "has no hybrid sharded data parallelism" in text
    assert len(text) < 260 and "microsoft/DeepSpeed@v0.3.13" in text and text.endswith("...)")


def test_short_source_cuts_hashes_picks_the_features_clause_and_closes_parentheses():
    from trainsim.catalog.frameworks import short_source

    h = "0123456789abcdef0123456789abcdef01234567"
    assert short_source(f"org/repo@{h} (2025-01-01) a.py") == "org/repo@0123456789 (2025-01-01) a.py"
    text = "org/repo@abc a.py (x); no pipeline parallelism: other/repo@def b.py L1-2"
    assert short_source(text, "pipeline_parallel") == \
        "no pipeline parallelism: other/repo@def b.py L1-2"
    assert short_source(text, "hybrid_shard") == "org/repo@abc a.py (x)"
    # a list item naming the feature, after the entry's own reference (core 0.11's entry:
    # --use-precision-aware-optimizer (47a175b4c4, ...) deep in its arguments.py list)
    assert short_source("org/repo@v1 (2025) a.py --x (off), --use-foo-bar (123abc, 2024)",
                        "foo_bar") == "org/repo@v1 ... --use-foo-bar (123abc, 2024)"
    long = "org/repo@abc (2025) a.py (" + "word " * 60 + ")"
    cut = short_source(long)
    assert len(cut) <= 125 and cut.endswith("...)") and cut.count("(") == cut.count(")")


def test_every_profile_entry_cites_in_a_line():
    from trainsim.catalog.frameworks import _files, _load, short_source

    for name in _files():
        for entry in _load(name).entries:
            cut = short_source(entry.source)
            assert 0 < len(cut) <= 125 and "\n" not in cut, (name, entry.since)


def test_the_whole_source_is_still_there_when_asked():
    from trainsim.catalog.frameworks import feature_source, framework_profile

    p = framework_profile("deepspeed", None)
    assert len(feature_source(p, "hybrid_shard", whole=True)) > 500
    assert len(feature_source(p, "hybrid_shard")) <= 125


# ------------------------------------------------------------------ the round

def test_the_round_imports():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fuzz60

    assert set(fuzz60.surfaces("/tmp", __import__("random").Random(0))) == {
        "gscopes", "schedzero", "hybridpat", "setvals", "alloc", "service"}


@pytest.mark.slow
def test_the_whole_round_finds_no_class():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fuzz60

    assert fuzz60.main([]) == 0
