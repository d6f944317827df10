"""Seventeenth robustness round, its leftovers (29th session, fuzz17b): search and plan on an
NVL72 rack without --gpus-per-node, a failure profile that is a directory, a failure rate that
overflows the run's interruption count, a CSV cell past the csv module's field limit, a
config.json whose attention and MLP biases differ. Each case failed on main 83dcd60 before its
fix; the sanity cases beside them pass there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli, one_error_line

ROOT = Path(__file__).resolve().parents[1]
GOODPUT = ROOT / "examples" / "goodput-gpt3-175b-1k.yaml"
LLAMA_JSON = ROOT / "examples" / "hf" / "llama3-8b" / "config.json"
SMALL = ("--global-batch", "144", "--seq", "2048", "--tp", "1", "--pp", "1", "--recompute",
         "none", "--max-micro-batch", "1", "--format", "json")


# ------------------------------------------------------------------ search / plan on NVL72

def _answer(result) -> dict:
    """A search's or plan's JSON less its run statistics (timings, cache hits, counts)."""
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in ("stats", "elapsed_s", "simulated")}
        return [strip(v) for v in x] if isinstance(x, list) else x
    return strip(json.loads(result.stdout))


@pytest.mark.parametrize("command", [
    ("search", "llama3-8b", "--gpu", "gb200", "--gpus", "144"),
    ("plan", "llama3-8b", "--gpu", "gb200", "--tokens", "1e9", "--days", "1", "--max-gpus",
     "72")])
def test_search_and_plan_on_an_nvl72_rack_take_the_rack_as_the_node(command):
    """Before: "--set cluster.topology=nvl72 is a 72-GPU NVLink domain: cluster.gpus_per_node
    must be 72, not 8" (the option's default 8 was explicit)."""
    rack = ("--set", "cluster.topology=nvl72")
    result = cli(*command, *SMALL, *rack)
    assert result.exit_code == 0, result.output
    stated = cli(*command, *SMALL, *rack, "--gpus-per-node", "72")
    assert _answer(result) == _answer(stated)
    assert "gpus_per_node must be 72, not 8" in one_error_line(
        cli(*command, *SMALL, *rack, "--gpus-per-node", "8"))


def test_search_without_a_topology_keeps_eight_per_node():
    command = ("search", "llama3-8b", "--gpus", "16", *SMALL)
    assert _answer(cli(*command)) == _answer(cli(*command, "--gpus-per-node", "8"))


# ------------------------------------------------------------------ a failure profile directory

@pytest.mark.parametrize("name", ["profiles", "profiles.yaml"])
def test_a_failure_profile_that_is_a_directory_is_named_so(tmp_path, name):
    """Before: "unknown failure profile '...'; known: ..." (or, with a .yaml suffix, "cannot
    read failure profile ...: Is a directory")."""
    (tmp_path / name).mkdir()
    line = one_error_line(cli("goodput", str(GOODPUT), "--trials", "3", "--failures",
                              str(tmp_path / name)))
    assert "is a directory; give a catalog name or a YAML file" in line


# ------------------------------------------------------------------ an overflowing failure rate

def test_a_failure_rate_past_any_finite_count_names_its_mode(tmp_path):
    """Before: "goodput trial-rounds ...: about unbounded, ...; 3 trials x inf interruptions"."""
    path = tmp_path / "big.yaml"
    path.write_text("name: big\nmodes:\n  m: {per_1000_component_days: 1.0e+300, "
                    "component: gpu}\n")
    line = one_error_line(cli("goodput", str(GOODPUT), "--trials", "3", "--failures", str(path)))
    assert "failures[big].modes.m" in line and "per_1000_component_days" in line
    assert "inf" not in line
    line = one_error_line(cli("goodput", str(GOODPUT), "--trials", "3", "--set",
                              "reliability.rate_scale=1e300"))
    assert "reliability.rate_scale=1e+300" in line and "inf" not in line


def test_a_large_finite_failure_rate_still_meets_the_work_limit(tmp_path):
    path = tmp_path / "high.yaml"
    path.write_text("name: high\nmodes:\n  m: {per_1000_component_days: 1000, "
                    "component: gpu}\n")
    line = one_error_line(cli("goodput", str(GOODPUT), "--trials", "3", "--failures", str(path)))
    assert "over the limit" in line


# ------------------------------------------------------------------ a CSV cell past the limit

@pytest.mark.parametrize("quote", ["", '"'], ids=["bare", "quoted"])
def test_a_csv_cell_past_the_field_limit_is_named_by_row_and_column(tmp_path, quote):
    """Before: "not a valid CSV file: line 3: field larger than field limit (131072) (is a '"'
    left open?)"."""
    path = tmp_path / "rows.csv"
    cell = quote + "x" * 140_000 + quote
    path.write_text(f"id,model,measured_iteration_s\na,llama,1.0\nb,{cell},2.0\n")
    line = one_error_line(cli("validate", str(path)))
    assert "line 3 (row 2), column model: a cell of 140,000 characters" in line
    assert "left open" not in line


# ------------------------------------------------------------------ separate biases

@pytest.mark.parametrize(("attention", "mlp"), [(False, True), (True, False)])
def test_a_config_json_with_differing_biases_reads_each_sublayers_own(tmp_path, attention, mlp):
    """Before: attention_bias false beside mlp_bias true read as no bias anywhere (the one
    model.add_bias_linear switch took attention_bias), the MLP's bias dropped silently; then
    (146c9c8) biases on everywhere with a warning. Such files are real (a Qwen2 model re-saved
    as Llama): now each sublayer has the biases its key gives (mem30: add_qkv_bias,
    add_proj_bias, add_mlp_bias), and nothing is warned."""
    import warnings

    from trainsim.catalog.hf_config import model_from_hf_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**json.loads(LLAMA_JSON.read_text()),
                                "attention_bias": attention, "mlp_bias": mlp}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = model_from_hf_config(path)
    assert (m.qkv_bias, m.proj_bias, m.mlp_bias) == (attention, attention, mlp)
    assert m.add_bias_linear is False


@pytest.mark.parametrize("both", [False, True])
def test_a_config_json_with_equal_biases_reads_them(tmp_path, both):
    from trainsim.catalog.hf_config import model_from_hf_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**json.loads(LLAMA_JSON.read_text()),
                                "attention_bias": both, "mlp_bias": both}))
    assert model_from_hf_config(path).add_bias_linear is both
