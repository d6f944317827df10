"""Eleventh input sweep (25th session, fuzz11): the classes ``benchmarks/fuzz_sweep11.py``
found, each answered in one line naming the option or key as written (or run as valid)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli, one_error_line

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llama3-8b-h100.yaml"
GOODPUT = ROOT / "examples" / "goodput-gpt3-175b-1k.yaml"


# ------------------------------------------------------------------------------ stdio

def _process(line: str, **env: str) -> subprocess.CompletedProcess:
    """``python -m trainsim`` through bash with ``line`` holding its arguments and
    redirections; its stderr is what bash's ``2>`` leaves."""
    full = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TRAINSIM_DEBUG": "1", **env}
    return subprocess.run(["bash", "-c", f"'{sys.executable}' -m trainsim {line}"],
                          capture_output=True, text=True, timeout=120, env=full, check=False)


@pytest.mark.parametrize("args", ["--version", "catalog gpus --format names"])
def test_closed_stdout_is_one_error_line_not_a_traceback(args):
    # before: AttributeError: 'NoneType' object has no attribute 'isatty' at import
    done = _process(f"{args} >&-")
    assert "Traceback" not in done.stderr
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: cannot write the output: standard output is closed"]


def test_help_to_a_full_device_is_one_error_line():
    # before: OSError: [Errno 28] No space left on device, a traceback
    done = _process("--help >/dev/full")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == ["error: No space left on device"]


def test_an_output_encoding_without_a_character_still_answers():
    # before: "error: 'ascii' codec can't encode character '\xe9'" for a valid run
    done = _process(f"simulate {EXAMPLE} --set 'model.name=caf\u00e9'",
                    PYTHONIOENCODING="ascii")
    assert done.returncode == 0, done.stderr
    assert "caf\\xe9" in done.stdout


# ------------------------------------------------------------------------------ options

@pytest.mark.parametrize("args", [
    ["collective", "--sizes", "8:64", "--algorithm", ""],
    ["collective", "--sizes", "8:64", "--protocol", " "],
    ["goodput", str(GOODPUT), "--trials", "3", "--failures", ""],
    ["search", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--seq", "1024",
     "--reference", ""],
    ["search", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--seq", "1024",
     "--schedules", " "],
    ["plan", "llama3-8b", "--tokens", "1B", "--days", "1", "--dispatcher", ""],
    ["capture", str(ROOT / "examples" / "hf" / "llama3-8b" / "config.json"), "--gpu", ""],
    ["token", "list", "--db", ""],
])
def test_an_empty_option_value_is_refused_not_read_as_the_default(args):
    # before: --algorithm '' ran as auto, --reference '' compared nothing, --failures '' took
    # the config's profile, capture --gpu '' the node's GPU
    flag = next(a for a, b in itertools.pairwise(args) if not b.strip())
    line = one_error_line(cli(*args), warnings=False)
    assert f"{flag} " in line and "an empty value" in line


@pytest.mark.parametrize("args, words", [
    (["collective", "--sizes", "0:8"], "--sizes '0:8': bad size '0'"),
    (["goodput", str(GOODPUT), "--trials", "3", "--failures", "x"],
     "--failures: unknown failure profile 'x'"),
    (["goodput", str(GOODPUT), "--trials", "3", "--set", "reliability.failures=x"],
     "reliability.failures: unknown failure profile 'x'"),
    (["goodput", str(GOODPUT), "--trials", "3", "--tokens", "1e30"], "fewer --trials or --tokens"),
])
def test_a_refusal_names_the_option_as_written(args, words):
    assert words in one_error_line(cli(*args), warnings=False)


@pytest.mark.parametrize("cmd", [
    ["search", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--seq", "1024"],
    ["plan", "llama3-8b", "--tokens", "1B", "--days", "1"],
])
def test_a_ray_address_without_the_ray_executor_is_refused(cmd):
    # before: the local executor ran and the address was ignored, silently
    line = one_error_line(cli(*cmd, "--ray-address", "auto"), warnings=False)
    assert "--ray-address 'auto' needs --executor ray" in line


# ------------------------------------------------------------------------------ config.json

LLAMA = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 2816,
         "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4,
         "vocab_size": 32000, "rms_norm_eps": 1e-5, "hidden_act": "silu"}


def _model(tmp_path: Path, cfg: dict):
    from trainsim.catalog import model_from_hf_config
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return model_from_hf_config(path)


@pytest.mark.parametrize("key, value, words", [
    ("num_hidden_layers", "x", "num_hidden_layers must be an integer"),
    ("intermediate_size", [1, 2], "intermediate_size must be an integer, got a list"),
    ("num_key_value_heads", 3, "num_key_value_heads=3 must divide num_attention_heads=8"),
    ("hidden_size", 0, "hidden_size=0 must be a positive"),
])
def test_a_config_json_value_is_refused_by_its_key_in_the_file(tmp_path, key, value, words):
    # before: "model.num_layers must be an integer, got 'x'" (trainsim's names, no file)
    from trainsim import ConfigError
    with pytest.raises(ConfigError) as info:
        _model(tmp_path, {**LLAMA, key: value})
    assert str(info.value).startswith(str(tmp_path / "config.json") + ": ")
    assert words in str(info.value) and "model." not in str(info.value)


def test_latent_attention_heads_need_not_divide_the_width(tmp_path):
    # GLM-4.7-Flash (zai-org/GLM-4.7-Flash config.json): 20 heads on a 2048 width; before:
    # refused, "set model.head_dim explicitly", which a config.json cannot do under MLA
    m = _model(tmp_path, {**LLAMA, "model_type": "glm4_moe_lite", "hidden_size": 2048,
                          "num_attention_heads": 20, "num_key_value_heads": 20,
                          "kv_lora_rank": 512, "q_lora_rank": 768, "qk_nope_head_dim": 192,
                          "qk_rope_head_dim": 64, "v_head_dim": 256})
    assert m.is_mla and m.qk_dim == 20 * 256 and m.v_dim == 20 * 256


# ------------------------------------------------------------------------------ service

SMALL = {"model": "llama3.2-1b", "parallel": {"tp": 1},
         "training": {"global_batch_size": 8, "seq_length": 1024},
         "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}}
SEARCH = {"gpus": 8, "global_batch": 8, "seq": 1024, "tp": "1", "pp": "1"}


@pytest.mark.parametrize("kind, options, field", [
    ("search", {**SEARCH, "top": 0}, "options.top"),
    ("search", {**SEARCH, "rank_by": "x"}, "options.rank_by"),
    ("search", {**SEARCH, "pareto_slowdown": 0.5}, "options.pareto_slowdown"),
    ("search", {**SEARCH, "exhaustive": "no"}, "options.exhaustive"),
    ("search", {**SEARCH, "reference": ""}, "options.reference"),
    ("goodput", {"tokens": "1B", "days": 0}, "options.days"),
    ("goodput", {"tokens": "1B", "seed": -1}, "options.seed"),
    ("goodput", {}, "options.tokens"),
    ("plan", {"tokens": "1B", "days": "nan"}, "options.days"),
    ("plan", {"tokens": "0", "days": 1}, "options.tokens"),
    ("plan", {"tokens": "1B", "days": 1, "price": -1}, "options.price"),
    ("plan", {"tokens": "1B", "days": 1, "global_batch": ""}, "options.global_batch"),
    ("simulate", {"trace": 1}, "options.trace"),
])
def test_a_job_option_its_run_would_refuse_is_refused_when_submitted(kind, options, field):
    # before: accepted (202) and the job failed when a worker ran it
    pytest.importorskip("sqlalchemy")
    from trainsim.service import Settings, jobs
    settings = Settings(db_url="sqlite:///unused.db", workers=0, checkers=0)
    status, got, message = jobs.problem(kind, SMALL, options, settings)
    assert (status, got) == (422, field), message
    assert field in message and "\n" not in message


@pytest.mark.parametrize("xdg, under_home", [("relative/data", True), ("", True),
                                             ("/abs/data", False)])
def test_a_relative_xdg_data_home_is_ignored(monkeypatch, tmp_path, xdg, under_home):
    # before: XDG_DATA_HOME=relative/data put the default job store under the current folder
    from trainsim.service.settings import data_dir
    monkeypatch.setenv("XDG_DATA_HOME", xdg)
    monkeypatch.setenv("HOME", str(tmp_path))
    want = tmp_path / ".local" / "share" / "trainsim" if under_home else Path(xdg) / "trainsim"
    assert data_dir() == want
