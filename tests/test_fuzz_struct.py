"""Structural fuzzing of the files a user hands trainsim (benchmarks/fuzz_struct.py, the 15th
session): example configs, Hugging Face configs, GPU specs, failure profiles, kernel databases,
validation CSVs and layer records with their *shape* mutated. One regression test per failure
class the sweep found, then a short seeded sweep of each surface behind ``-m slow``."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
import yaml
from helpers import cli, one_error_line

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "fuzz_struct.py"
FAILURES = ROOT / "src" / "trainsim" / "catalog" / "failures"
GOODPUT = str(ROOT / "examples" / "goodput-gpt3-175b-1k.yaml")
LAYERS = ROOT / "src" / "trainsim" / "data" / "validation" / "layers_h100_measured.jsonl"


# ---------------------------------------------------------------------------- failure profiles

def _profile(tmp_path, base: str, change) -> str:
    doc = yaml.safe_load((FAILURES / base).read_text())
    change(doc)
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _set(*keys, value):
    def change(doc):
        node = doc
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return change


@pytest.mark.parametrize("base, change, field", [
    # ValueError / TypeError from dict() of a section that is no mapping
    ("meta-rsc1-a100.yaml", _set("observed", value="x"), "observed"),
    ("meta-rsc1-a100.yaml", _set("observed", value=[None]), "observed"),
    ("meta-rsc1-a100.yaml", _set("published", value=1.5), "published"),
    ("meta-rsc1-a100.yaml", _set("recovery", value="x"), "recovery"),
    # ValueError / TypeError from float() of a count or a rate that is no number
    ("llama3-405b-16k-h100.yaml", _set("modes", "cpu", "count", value="false"),
     "modes.cpu.count"),
    ("llama3-405b-16k-h100.yaml", _set("modes", "host_maintenance", "count", value=[32]),
     "modes.host_maintenance.count"),
    ("meta-rsc2-a100.yaml", _set("modes", "node_failure", "per_1000_component_days",
                                 value=None), "per_1000_component_days"),
    ("meta-rsc2-a100.yaml", _set("modes", "node_failure", "per_1000_component_days",
                                 value="null"), "per_1000_component_days"),
    # ZeroDivisionError (int(1e-300) GPUs) and OverflowError (int(-inf)) of the observed cluster
    ("llama3-405b-16k-h100.yaml", _set("observed", "gpus", value=1e-300), "observed.gpus"),
    ("llama3-405b-16k-h100.yaml", _set("observed", "gpus", value=float("-inf")),
     "observed.gpus"),
    ("llama3-405b-16k-h100.yaml", _set("observed", "days", value=0), "observed.days"),
    ("llama3-405b-16k-h100.yaml", _set("observed", "gpus_per_node", value=True),
     "observed.gpus_per_node"),
])
def test_a_failure_profile_of_the_wrong_shape_is_one_error_naming_the_field(tmp_path, base,
                                                                            change, field):
    path = _profile(tmp_path, base, change)
    line = one_error_line(cli("goodput", GOODPUT, "--failures", path, "--trials", "2"))
    assert field in line, line


def test_a_well_formed_failure_profile_file_still_runs(tmp_path):
    path = tmp_path / "profile.yaml"
    shutil.copy(FAILURES / "llama3-405b-16k-h100.yaml", path)
    result = cli("goodput", GOODPUT, "--failures", str(path), "--trials", "2", "--format",
                 "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["failure_profile"] == str(path) and 0 < out["goodput_ratio"] <= 1


@pytest.mark.parametrize("how", [("--set", "reliability.checkpoint.interval_s=1e18"),
                                 ("--interval", "1e12")])
def test_a_run_that_cannot_finish_between_failures_is_refused_at_once(how):
    """A checkpoint interval longer than the run (22 days of work, a failure every 29 h) loses
    everything at each failure: e^19 interruptions expected. The Monte Carlo gave up only after
    its 200,000 passes, 15-25 s later (a hang to the fuzzer)."""
    import time
    start = time.perf_counter()
    line = one_error_line(cli("goodput", GOODPUT, "--trials", "3", *how))
    assert "expects more than 200,000 interruptions on average" in line and \
        "does not finish" not in line and "reliability.checkpoint.interval_s" in line
    assert time.perf_counter() - start < 10


def test_the_bound_is_below_what_a_finishing_run_expects():
    """The refusal's bound against the Monte Carlo: a run it lets through has at most a few
    failures per stretch, and the example's default plan is far from the bound."""
    import math

    from trainsim.reliability.montecarlo import expected_interruptions_lower_bound as bound
    from trainsim.reliability.plan import RunPlan
    plan = RunPlan(mode_names=("x",), mode_rates=(1 / 3600,), mode_planned=(False,),
                   recovery_s=((0.0,) * 6,), interval_s=3600.0)
    assert bound(plan, 36000.0) == pytest.approx(10 * math.expm1(1.0))
    assert bound(plan.with_interval(math.inf), 36000.0) == pytest.approx(math.expm1(10.0))
    assert bound(plan, math.inf) == 0.0


# ---------------------------------------------------------------------------- measurements

def _layers(tmp_path, **change) -> Path:
    recs = [json.loads(x) for x in LAYERS.read_text().splitlines() if x.strip()][:2]
    recs[0].update(change)
    path = tmp_path / "layers.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return path


@pytest.mark.parametrize("key", ["saved_activation_bytes", "fwd_bwd_ms", "fwd_ms"])
def test_a_measurement_too_small_for_a_relative_error_is_refused(tmp_path, key):
    """A measured 1e-300 made the error relative to it infinite: ``Infinity`` in the JSON."""
    line = one_error_line(cli("validate", str(_layers(tmp_path, **{key: 1e-300})),
                              "--compute-db", "none"))
    assert f"{key}=1e-300" in line and ">= 1e-100" in line


@pytest.mark.parametrize("column", ["measured_iteration_s", "measured_peak_memory_gib"])
def test_a_training_row_measured_below_the_floor_fails_its_row(tmp_path, column):
    """(It refused the whole file until fuzz35: the README has a row that cannot be predicted
    fail alone, with its reason.)"""
    cells = {"measured_iteration_s": "1.0", "measured_peak_memory_gib": "40"}
    cells[column] = "1e-300"
    path = tmp_path / "t.csv"
    path.write_text("id,model,gpu,num_gpus,gpus_per_node,tp,pp,global_batch_size,seq_length,"
                    f"{','.join(cells)}\nbad,llama3-8b,h100-sxm-80gb,8,8,1,1,8,2048,"
                    f"{','.join(cells.values())}\n")
    result = cli("validate", str(path), "--compute-db", "none", "--format", "json")
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)["rows"][0]
    assert f"{column}='1e-300'" in row["error"] and row["predicted"] is None


def test_a_layer_record_dtype_that_is_no_text_stays_finite_json(tmp_path):
    """A record's dtype Infinity was echoed into the row as ``Infinity`` (not JSON)."""
    result = cli("validate", str(_layers(tmp_path, dtype=float("inf"))), "--format", "json",
                 "--compute-db", "none")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout, parse_constant=lambda c: pytest.fail(c))["rows"]
    assert rows[0]["dtype"] == "inf" and "dtype" in rows[0]["error"]
    assert rows[1]["error"] is None and rows[1]["predicted"] > 0


# ---------------------------------------------------------------------------- the sweep

def _module():
    spec = importlib.util.spec_from_file_location("fuzz_struct", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SURFACES = ["yaml", "text", "gpu", "csv", "jsonl", "flags", "http", "hf", "failures",
            "kernel-db", "search-opts", "sweep-odd", "reliability"]


def test_a_few_inputs_of_every_surface_are_handled(tmp_path):
    """At n = 3 every surface still runs at least one input (the slow sweep below runs 300)."""
    out = _module().sweep(0, 3, set(), tmp_path)
    assert not out["failures"], dict(out["failures"])
    assert set(out["counts"]) == set(SURFACES) and min(out["counts"].values()) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("surface", SURFACES)
def test_the_seeded_structural_sweep_finds_nothing_slow(tmp_path, surface):
    out = _module().sweep(0, 300, {surface}, tmp_path)
    assert not out["failures"], dict(out["failures"])
