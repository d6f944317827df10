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

from trainsim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]

RUN = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                 "vocab_size": 1024},
       "parallel": {}, "training": {"global_batch_size": 16, "micro_batch_size": 1,
                                    "seq_length": 512},
       "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                   "compute_db": None}}


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
