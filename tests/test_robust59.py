"""robust59: robust58's leads (a stated output-layer deferral under a framework without one,
the deferral-without-fusion refusal at config reading) and graphs58's (a partly filled options
cell dropping the profile's options without a word), and the thirty-ninth fuzz round's classes
(``benchmarks/fuzz59.py``). Each test but the controls fails on the previous src."""

from __future__ import annotations

import copy
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from helpers import SMALL_RUN

from trainsim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]

RUN = SMALL_RUN


def _run(parallel: dict, **training):
    """``run_config_from_dict`` of the small run with these settings (its warnings recorded)."""
    from trainsim.catalog import run_config_from_dict

    raw = copy.deepcopy(RUN)
    raw["parallel"] = parallel
    raw["cluster"]["num_gpus"] = 8 * parallel.get("pp", 1)
    raw["training"].update(training)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cfg = run_config_from_dict(raw)
    return cfg, [str(x.message) for x in w]


# ------------------------------------------- a deferral the framework lacks (robust58 lead 1)

@pytest.mark.parametrize("framework,version", [("torchtitan", None), ("deepspeed", None),
                                               ("megatron-deepspeed", None),
                                               ("megatron-core", "0.5"),
                                               ("megatron-lm", "2023-05-31"),
                                               ("mlperf-nemo", "3.1")])
def test_a_stated_deferral_the_framework_lacks_is_refused(framework, version):
    """torchtitan, DeepSpeed and the Megatron releases before f16be74ff3 (2024-04-03) have no
    ``defer_embedding_wgrad_compute``; a run stating it was priced as Megatron-core's."""
    extra = {"framework_version": version} if version else {}
    with pytest.raises(ConfigError, match=r"^parallel\.defer_embedding_wgrad_compute=true but "
                                          rf"{framework} \S+ has no output-layer weight-gradient "
                                          r"deferral .*; set it false$"):
        _run({"pp": 2, "defer_embedding_wgrad_compute": True}, framework=framework, **extra)


@pytest.mark.parametrize("framework,version", [("megatron-core", "0.6"), ("megatron-lm", None),
                                               ("nemo", None), ("megatron-bridge", None),
                                               ("mlperf-nemo", "4.0"), ("megascale", None),
                                               (None, None)])
def test_control_a_deferral_where_the_framework_has_it_or_is_not_recorded(framework, version):
    training = {"framework": framework} if framework else {}
    if version:
        training["framework_version"] = version
    cfg, _ = _run({"pp": 2, "defer_embedding_wgrad_compute": True}, **training)
    assert cfg.parallel.defer_embedding_wgrad_compute is True
    # unstated or off: nothing to refuse under any framework
    _run({"pp": 2, "defer_embedding_wgrad_compute": False}, framework="torchtitan")


def test_every_profile_with_a_deferral_rule_has_the_deferral():
    """A profile whose recipe defers by rule (``embedding_wgrad_deferral``) must not say its
    framework lacks the mechanism (``output_wgrad_deferral: false``)."""
    from trainsim.catalog.frameworks import framework_entries, framework_names, framework_profile

    seen = 0
    for name in framework_names():
        for since in framework_entries(name):
            profile = framework_profile(name, since)
            if profile.features.get("embedding_wgrad_deferral"):
                seen += 1
                assert profile.supports("output_wgrad_deferral") is True, (name, since)
    assert seen >= 2


# ---------------------------------- deferral without fusion at config reading (robust58 lead 2)

def test_a_deferral_without_fusion_is_refused_as_the_config_is_read():
    """Megatron-core refuses ``defer_embedding_wgrad_compute`` without gradient accumulation
    fusion; trainsim refused it only when the run was priced (after a search's work)."""
    for pp in (1, 2):  # Megatron-core refuses the pair whatever the pipeline
        with pytest.raises(ConfigError, match=r"^parallel\.defer_embedding_wgrad_compute=true "
                                              r"needs gradient accumulation fusion, and training"
                                              r"\.gradient_accumulation_fusion is false \("
                                              r"Megatron-core refuses the pair\)"):
            _run({"pp": pp, "defer_embedding_wgrad_compute": True}, framework="megatron-core",
                 gradient_accumulation_fusion=False)


def test_a_recipe_deferral_without_fusion_is_refused_as_the_config_is_read():
    """MLPerf 4.0's recipe defers every micro-batch where pp > 1 and the micro-batch is one
    sequence (profile ``embedding_wgrad_deferral``); with the fusion stated off it was refused
    only when priced."""
    with pytest.raises(ConfigError, match=r"^mlperf-nemo 4\.0's recipe defers the output-layer "
                                          r"weight gradient here .* needs gradient accumulation"):
        _run({"pp": 2}, framework="mlperf-nemo", framework_version="4.0",
             gradient_accumulation_fusion=False)


def test_control_no_deferral_no_refusal_of_the_fusion_off():
    for parallel in ({"pp": 1}, {"pp": 2, "defer_embedding_wgrad_compute": False}):
        _run(parallel, framework="mlperf-nemo", framework_version="4.0",
             gradient_accumulation_fusion=False)


@pytest.mark.parametrize("sets,said", [
    (["training.framework=megatron-core", "training.gradient_accumulation_fusion=false"],
     "needs gradient accumulation fusion"),
    (["training.framework=torchtitan"], "but torchtitan 2026-08 has no output-layer")])
def test_search_refuses_a_fixed_deferral_before_any_work(sets, said):
    """``trainsim search``'s --set parallel fields are checked apart from the base config
    (``search.cli_inputs._check_fixed``): the pair was refused by the first candidate priced,
    a torchtitan deferral searched as Megatron-core's."""
    args = ["search", "llama3-8b", "--gpus", "16", "--global-batch", "64", "--seq", "4096",
            "--top", "1", "--set", "parallel.defer_embedding_wgrad_compute=true"]
    for s in sets:
        args += ["--set", s]
    r = subprocess.run([sys.executable, "-m", "trainsim", *args], capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("error: --set parallel.defer_embedding_wgrad_compute=true") \
        and said in line


# -------------------------------- a partly filled options cell (graphs58's lead, robust59 (c))

def _row(**cells) -> dict[str, str]:
    import csv

    path = ROOT.parent / "shared" / "validation" / "training_public.csv"
    if not path.exists():
        pytest.skip("../shared/validation is not in this checkout")
    with open(path, newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == "bridge2509-deepseek-v3-1024")
    return {**row, **cells}


def _base_warnings(row: dict[str, str]) -> list[str]:
    from trainsim.validate.row_settings import training_base

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        training_base(row)
    return [str(x.message) for x in w if "options cell" in str(x.message)]


def test_a_stated_options_cell_that_drops_the_profiles_options_is_warned_of():
    """A stated cell is the run's whole list (validation README: "features the run used"), so
    ``cuda_graphs`` alone drops megatron-bridge's ``dp_overlap`` and ``pp_overlap``: said in
    one line naming them (the 57th session's what-if lost ``dp_overlap`` without a word)."""
    (said,) = _base_warnings(_row(options="cuda_graphs"))
    assert said == ("row bridge2509-deepseek-v3-1024: its options cell 'cuda_graphs' leaves out "
                    "dp_overlap, pp_overlap, which megatron-bridge 25.09 turns on where the cell "
                    "is empty; a stated cell is the run's whole list, so the row runs without "
                    "them (list them to keep them)")


def test_control_a_full_or_empty_options_cell_or_no_data_parallel_ranks_says_nothing():
    assert _base_warnings(_row(options="dp_overlap;pp_overlap;ep_overlap;cuda_graphs")) == []
    assert _base_warnings(_row(options="dp_overlap;pp_overlap")) == []
    assert _base_warnings(_row(options="")) == []
    # dp_overlap left out where no data- or context-parallel rank reduces anything
    (said,) = _base_warnings(_row(options="ep_overlap", num_gpus="64", tp="2", pp="32",
                                  global_batch_size="64"))
    assert "leaves out pp_overlap, which" in said


# ------------------------------------------------------------ the thirty-ninth round's classes

def test_an_nccl_release_in_other_digits_is_refused():
    """``\\d`` read full-width and Arabic-Indic digits: '\\uff12.19' was NCCL 2.19."""
    for text in ("\uff12.19", "\u0662.\u0661\u0669", "2.\uff11\uff19"):
        with pytest.raises(ConfigError, match=r"^cluster\.nccl_version=.* is not an NCCL release"):
            _nccl(text)


def _nccl(text: str):
    from trainsim.catalog import run_config_from_dict

    raw = copy.deepcopy(RUN)
    raw["cluster"]["nccl_version"] = text
    return run_config_from_dict(raw).cluster.nccl_version


def test_control_nccls_own_names_are_taken():
    for text in ("2.19.4", "v2.19.4-1", "2.19.4+cuda12.3", "2.19", " 2.20 "):
        assert _nccl(text).strip() == text.strip()


@pytest.mark.parametrize("scope,said", [
    ("mamba", ("names mamba, which captures nothing here: the model has no Mamba layer "
              "(model.hybrid_layer_pattern); no layer is graphed, the run is eager")),
    ("attn;mamba", ("names mamba, which captures nothing here: the model has no Mamba layer "
                   "(model.hybrid_layer_pattern); only attn is graphed"))])
def test_a_graph_scope_naming_a_layer_kind_the_model_lacks_is_warned_of(scope, said):
    """Megatron-core takes ``mamba`` on a GPT model and graphs nothing under it: the run was
    priced eager without a word (robust56's rule: a stated setting that changes nothing is
    said so)."""
    _, warned = _run({}, framework="megatron-core", cuda_graphs=True, cuda_graph_scope=scope)
    assert [w for w in warned if "cuda_graph_scope" in w] == [f"training.cuda_graph_scope {said}"]


def test_control_a_scope_the_model_has_says_nothing():
    raw_hybrid = {"hybrid_layer_pattern": "M-M*", "num_layers": 4, "ffn_hidden_size": 512,
                  "mamba_num_heads": 8, "mamba_head_dim": 64, "mamba_num_groups": 2,
                  "mamba_state_dim": 64, "num_kv_heads": 2, "position_embedding": "none"}
    from trainsim.catalog import run_config_from_dict

    raw = copy.deepcopy(RUN)
    raw["model"].update(raw_hybrid)
    raw["training"].update(framework="megatron-core", cuda_graphs=True,
                           cuda_graph_scope="attn;mamba")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        run_config_from_dict(raw)
    assert not [x for x in w if "cuda_graph_scope" in str(x.message)]
    _, warned = _run({}, framework="megatron-core", cuda_graphs=True, cuda_graph_scope="attn")
    assert not [x for x in warned if "cuda_graph_scope" in x]


@pytest.mark.parametrize("engine", ["Megatron", " megatron ", "MEGATRON"])
def test_the_megatron_engine_in_any_case_takes_the_fusion_switch(engine):
    """``data_parallel_impl: Megatron`` is Megatron's engine (ParallelConfig reads it so), but
    a stated ``gradient_accumulation_fusion`` beside it was refused as "another engine's"."""
    cfg, _ = _run({"data_parallel_impl": engine}, framework="megatron-core",
                  gradient_accumulation_fusion=True)
    assert cfg.parallel.data_parallel_impl == "megatron"
    assert cfg.training.gradient_accumulation_fusion is True


def test_an_unknown_engine_is_refused_as_unknown_not_as_another_engine():
    with pytest.raises(ConfigError, match=r"^parallel\.data_parallel_impl='fsdp' is not one of"):
        _run({"data_parallel_impl": "fsdp"}, framework="megatron-core",
             gradient_accumulation_fusion=True)
    with pytest.raises(ConfigError, match=r"Megatron's switch, but megatron-core \S+ runs "
                                          r"data_parallel_impl=fsdp2"):
        _run({"data_parallel_impl": "FSDP2"}, framework="megatron-core",
             gradient_accumulation_fusion=True)


def test_the_round_files_stay_importable_and_the_fuzz_script_takes_its_flags():
    """The round's scripts import (their surfaces build) without running an input."""
    import random
    import tempfile

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fuzz59

    with tempfile.TemporaryDirectory() as d:
        names = sorted(fuzz59.surfaces(d, random.Random(0)))
    assert names == ["dspp", "gafzero", "ncclver", "scopes", "searchmoe", "service"]
    assert fuzz59._nccl("v2.19.4-1") == "2.19.4" and fuzz59._nccl("\uff12.19") is None


@pytest.mark.slow
def test_the_whole_round_finds_no_class():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fuzz59

    assert fuzz59.main([]) == 0


def test_an_attention_scope_on_a_hybrid_model_without_attention_is_warned_of():
    from trainsim.catalog import run_config_from_dict

    raw = copy.deepcopy(RUN)
    raw["model"].update(hybrid_layer_pattern="M-M-", ffn_hidden_size=512, mamba_num_heads=8,
                        mamba_head_dim=64, mamba_num_groups=2, mamba_state_dim=64,
                        position_embedding="none")
    raw["training"].update(framework="megatron-core", cuda_graphs=True, cuda_graph_scope="attn")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        run_config_from_dict(raw)
    assert [str(x.message) for x in w if "cuda_graph_scope" in str(x.message)] == [
        ("training.cuda_graph_scope names attn, which captures nothing here: the model has no "
        "attention layer (model.hybrid_layer_pattern); no layer is graphed, the run is eager")]
