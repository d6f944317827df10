"""Each job kind gives exactly what its CLI command prints with --format json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from trainsim.cli import main
from trainsim.errors import TrainsimError
from trainsim.service import Settings, jobs, jobs_search

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llama3-8b-h100.yaml"
SETTINGS = Settings(db_url="sqlite://", workers=0)
SMALL_SPACE = ["--tp", "2", "--pp", "1", "--cp", "1", "--recompute", "none", "--zero", "1",
               "--overlap", "on", "--max-micro-batch", "1", "--workers", "1"]
SMALL_OPTIONS = {"tp": "2", "pp": "1", "cp": "1", "recompute": "none", "zero": "1",
                 "overlap": "on", "max_micro_batch": 1}


def cli(*args: str) -> str:
    """The CLI's stdout, as a fresh process prints it (no search evaluations cached)."""
    from trainsim.search.core import DEFAULT_CACHE

    DEFAULT_CACHE.__init__(DEFAULT_CACHE.max_entries)
    res = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.stderr
    return res.stdout


def example() -> dict:
    return yaml.safe_load(EXAMPLE.read_text())


def test_simulate_result_is_the_cli_output_byte_for_byte():
    out = jobs.run("simulate", example(), {"set": ["parallel.tp=4"]}, SETTINGS)
    assert out.result == cli("simulate", str(EXAMPLE), "--set", "parallel.tp=4",
                             "--format", "json")
    assert out.trace is None


def test_simulate_with_trace_keeps_a_perfetto_trace():
    out = jobs.run("simulate", example(), {"trace": True}, SETTINGS)
    events = json.loads(out.trace)["traceEvents"]
    assert any(e.get("ph") == "X" for e in events)
    assert out.result == cli("simulate", str(EXAMPLE), "--format", "json")


def test_sweep_result_is_the_cli_output():
    vary = "cluster.nic_gbps_per_gpu=200,400"
    out = jobs.run("sweep", example(), {"vary": [vary]}, SETTINGS)
    assert out.result == cli("sweep", str(EXAMPLE), "--vary", vary, "--format", "json")
    assert json.loads(out.result)["warnings"] == []


def test_sweep_job_carries_the_note_of_dropped_repeats():
    # the CLI says it on stderr and in its JSON; the job's result said nothing before
    vary = "cluster.nic_gbps_per_gpu=200,400,200,200"
    out = jobs.run("sweep", example(), {"vary": [vary]}, SETTINGS)
    data = json.loads(out.result)
    assert data["warnings"] == ["--vary cluster.nic_gbps_per_gpu: 2 repeated values dropped"]
    assert [r["cluster.nic_gbps_per_gpu"] for r in data["rows"]] == [200, 400]
    assert data["varied"] == ["cluster.nic_gbps_per_gpu"]
    assert out.result == cli("sweep", str(EXAMPLE), "--vary", vary, "--format", "json")


def test_sweep_out_file_is_the_json_the_cli_prints(tmp_path):
    # sweep.json lacked the warnings key that --format json and a sweep job carry
    vary = "cluster.nic_gbps_per_gpu=200,400,200"
    printed = cli("sweep", str(EXAMPLE), "--vary", vary, "--format", "json",
                  "--out", str(tmp_path))
    written = (tmp_path / "sweep.json").read_text()
    assert written == printed
    assert json.loads(written)["warnings"] == [
        "--vary cluster.nic_gbps_per_gpu: 1 repeated value dropped"]


def test_goodput_result_is_the_cli_output():
    path = ROOT / "examples" / "goodput-gpt3-175b-1k.yaml"
    out = jobs.run("goodput", yaml.safe_load(path.read_text()),
                   {"trials": 40, "seed": 3, "interval": "30m"}, SETTINGS)
    assert out.result == cli("goodput", str(path), "--trials", "40", "--seed", "3",
                             "--interval", "30m", "--format", "json")


def test_goodput_with_plot_sweeps_the_interval_as_the_cli_does(tmp_path, monkeypatch):
    import trainsim.reliability.plot as plot_module

    path = ROOT / "examples" / "goodput-gpt3-175b-1k.yaml"
    seen = {}

    def fake_plot(result, out):  # the JSON is the point here; the API test draws a real PNG
        seen["result"] = result
        Path(out).write_bytes(b"\x89PNG fake")
        return Path(out)

    monkeypatch.setattr(plot_module, "plot_goodput", fake_plot)
    out = jobs.run("goodput", yaml.safe_load(path.read_text()), {"trials": 20, "plot": True},
                   SETTINGS)
    want = cli("goodput", str(path), "--trials", "20", "--plot", str(tmp_path / "g.png"),
               "--format", "json")
    assert out.result == want and "interval_sweep" in json.loads(out.result)
    assert out.plot == b"\x89PNG fake" and seen["result"].sweep is not None


def test_validate_result_is_the_cli_output(tmp_path):
    from trainsim.validate import BUNDLED_DIR

    lines = (BUNDLED_DIR / "training_public.csv").read_text().splitlines(keepends=True)[:3]
    csv = tmp_path / "few.csv"
    csv.write_text("".join(lines))
    out = jobs.run("validate", {}, {"csv": csv.read_text()}, SETTINGS)
    assert out.result == cli("validate", str(csv), "--format", "json")


def _without_clock(text: str) -> dict:
    """The search stats that the CLI itself changes from run to run (wall-clock rates)."""
    data = json.loads(text)
    for key in ("elapsed_s", "candidates_per_s", "simulated_per_s"):
        data["stats"].pop(key)
    return data


def test_search_result_is_the_cli_output_but_for_its_clock():
    seen: list[tuple[float, str]] = []
    out = jobs.run("search", {"model": "llama3-8b"},
                   {"gpus": 8, "global_batch": 32, "seq": 2048, **SMALL_OPTIONS}, SETTINGS,
                   progress=lambda f, p: seen.append((f, p)))
    want = cli("search", "llama3-8b", "--gpus", "8", "--global-batch", "32", "--seq", "2048",
               *SMALL_SPACE, "--format", "json")
    assert _without_clock(out.result) == _without_clock(want)
    assert seen and all(0 <= f <= 1 for f, _ in seen)


def test_search_takes_its_defaults_from_the_run_config():
    cfg = example()
    cfg["training"]["global_batch_size"], cfg["training"]["seq_length"] = 32, 2048
    out = jobs.run("search", cfg, SMALL_OPTIONS, SETTINGS)
    data = json.loads(out.result)
    assert data["gpu_counts"] == [8] and data["seq_length"] == 2048
    assert data["global_batch_size"] == 32 and data["gpu"] == "h100-sxm-80gb"


def test_plan_result_is_the_cli_output():
    out = jobs.run("plan", {"model": "llama3-8b"},
                   {"tokens": "1T", "days": 30, "seq": 2048, **SMALL_OPTIONS}, SETTINGS)
    assert out.result == cli("plan", "llama3-8b", "--tokens", "1T", "--days", "30", "--seq",
                             "2048", *SMALL_SPACE, "--format", "json")


def test_an_invalid_config_raises_the_cli_message():
    cfg = example()
    cfg["parallel"]["tp"] = 3
    with pytest.raises(TrainsimError) as exc:
        jobs.check("simulate", cfg, {}, SETTINGS)
    res = CliRunner().invoke(main, ["simulate", str(EXAMPLE), "--set", "parallel.tp=3"])
    assert res.exit_code == 2 and str(exc.value) in res.stderr


@pytest.mark.parametrize(("kind", "config", "options", "field"), [
    ("simulate", {"model": "llama3-8b"}, {"bogus": 1}, "options.bogus"),
    ("simulate", {"model": {"hf_config": "/etc/passwd"}}, {}, "config.model.hf_config"),
    ("goodput", {}, {"failures": "../../x.yaml"}, "options.failures"),
    ("validate", {}, {"file": "nope.csv"}, "options.file"),
    ("sweep", {"model": "llama3-8b"}, {"vary": []}, "options.vary"),
    ("nope", {}, {}, "kind"),
    ("simulate", [], {}, "config"),
])
def test_a_bad_request_names_its_field(kind, config, options, field):
    with pytest.raises(jobs.RequestError) as exc:
        jobs.check(kind, config, options, SETTINGS)
    assert exc.value.field == field and field in str(exc.value)


def test_work_over_the_server_bounds_is_refused():
    tight = SETTINGS.with_limits(max_gpus=4, max_trials=10, max_sweep_points=2,
                                 max_candidates=1)
    with pytest.raises(jobs.RequestError, match="max_gpus") as exc:
        jobs.check("simulate", example(), {}, tight)
    assert exc.value.field == "config.cluster.num_gpus"
    with pytest.raises(jobs.RequestError, match="max_trials"):
        jobs.check("goodput", example(), {"trials": 11}, tight)
    with pytest.raises(jobs.RequestError, match="max_sweep_points"):
        jobs.check("sweep", example(), {"vary": ["cluster.nic_gbps_per_gpu=100,200,400"]}, tight)
    with pytest.raises(jobs.RequestError, match="max_candidates"):
        jobs.check("search", {"model": "llama3-8b"},
                   {"gpus": 8, "global_batch": 32, "seq": 2048}, tight.with_limits(max_gpus=8))


def test_the_candidate_bound_counts_what_the_search_enumerates():
    """For a framework that sends blocking without interleaving (Megatron-core), the search
    enumerates no overlap_p2p_comm variant of a non-interleaved pipeline; the service's
    max_candidates check counts the same candidates, not more (it refused searches within
    the bound)."""
    import dataclasses

    from helpers import make_base

    from trainsim.search import SearchSpace, search

    plain = make_base()
    base = dataclasses.replace(plain, training=dataclasses.replace(
        plain.training, framework="megatron-core", framework_version="0.14"))
    assert base.sends_block_alone and not plain.sends_block_alone
    space = SearchSpace(recompute=("none",), zero=(0,), max_micro_batch=1)
    enumerated = search(base, [16], space).stats.enumerated  # what the search itself counted
    keys = list(space.memory_keys(base, 16))
    assert enumerated < sum(len(space.variants(k)) for k in keys)  # the flag matters here
    limits = SETTINGS.with_limits(max_candidates=enumerated).limits
    jobs_search._bound_candidates(base, (16,), space, limits)
    with pytest.raises(jobs.RequestError, match="max_candidates"):
        jobs_search._bound_candidates(base, (16,), space,
                                      SETTINGS.with_limits(max_candidates=enumerated - 1).limits)
