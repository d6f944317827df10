"""Capacity planning, hardware sweeps and the search/plan/sweep commands."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from helpers import TINY_MODEL, make_base

from trainsim.errors import ConfigError
from trainsim.search import EnergyModel, Vary, evaluate, plan, run_cost, sweep, write_sweep
from trainsim.search.capacity import gpu_ladder
from trainsim.search.cli import COMMANDS
from trainsim.search.space import Candidate, MemoryKey, SearchSpace
from trainsim.search.whatif import parse_number

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SPACE = SearchSpace(recompute=("none",), zero=(1,), max_micro_batch=2, max_cp=1, max_vpp=2,
                    overlap="on")


@pytest.fixture(scope="module")
def cli() -> click.Group:
    """The commands on a group of their own (the lead registers them on trainsim's main)."""
    group = click.Group("trainsim")
    for c in COMMANDS:
        group.add_command(c)
    return group


# --------------------------------------------------------------------------------- plan

def test_run_cost_arithmetic():
    """Days, GPU-hours, dollars, power, energy and CO2 follow from the simulated throughput."""
    b = make_base()
    e = evaluate(Candidate(MemoryKey(16, 1, 1, 1, 1, 2, "none", False, 1), True, True), b)
    c = run_cost(e, b, 1e12, EnergyModel(0.1, 0.5, 1.25, 500.0), price_per_gpu_hour=2.0)
    assert c.seconds == pytest.approx(1e12 / e.tokens_per_s)
    assert c.gpu_hours == pytest.approx(c.seconds / 3600 * 16)
    assert c.cost_usd == pytest.approx(2 * c.gpu_hours)
    u = (e.breakdown["compute_s"] + e.breakdown["optimizer_s"]) / e.iteration_time_s
    assert c.utilization == pytest.approx(u)
    tdp = b.cluster.gpu.tdp_w
    assert c.gpu_power_w == pytest.approx(tdp * (0.1 + 0.9 * u))
    assert c.facility_power_w == pytest.approx((c.gpu_power_w + 0.5 * tdp) * 16 * 1.25)
    assert c.energy_mwh == pytest.approx(c.facility_power_w * c.seconds / 3.6e9)
    assert c.co2_tonnes == pytest.approx(c.energy_mwh * 1000 * 500 / 1e6)
    assert run_cost(e, b, 1e12).price_per_gpu_hour == b.cluster.gpu.price_per_hour


def test_plan_picks_the_smallest_gpu_count_that_meets_the_deadline():
    """Fewer GPUs miss the deadline, the chosen count meets it."""
    b = make_base(gpus=8, batch=64)
    # 64 GPUs take about 0.95 days for these tokens and 32 about 1.25 (1.2e12 tokens put 64
    # GPUs at 0.9998 days, one per mille from the deadline, until Megatron's DDP zeroed its
    # whole gradient buffer each iteration: +2 % on this small model; 1.15e12 at 0.998 until
    # its second gradient bucket was ready only at the end of the backward: +4 %)
    tokens = 1.05e12
    r = plan(b, tokens, 1.0, space=SPACE, max_gpus=64)
    assert r.best is not None and r.cost is not None
    assert r.cost.days <= 1.0
    smaller = [s for s in r.steps if s.num_gpus < r.num_gpus and s.best is not None]
    assert smaller and all(not s.meets_deadline for s in smaller)
    assert r.num_gpus in gpu_ladder(8, 64)


def test_plan_reports_an_impossible_deadline():
    r = plan(make_base(gpus=8, batch=16), 1e15, 0.01, space=SPACE, max_gpus=16)
    assert r.best is None and r.cost is None and r.closest is not None


def test_gpu_ladder_is_whole_nodes():
    assert gpu_ladder(8, 200) == [8, 16, 24, 32, 48, 64, 96, 128, 192]


@pytest.mark.parametrize("kwargs, field", [
    ({"gpu_idle_fraction": 1.5}, "gpu_idle_fraction"), ({"pue": 0.9}, "pue"),
    ({"grid_gco2_per_kwh": -1.0}, "grid_gco2_per_kwh"),
])
def test_bad_energy_model_names_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        EnergyModel(**kwargs)


def test_plan_rejects_bad_tokens_and_days():
    b = make_base()
    with pytest.raises(ConfigError, match="--tokens"):
        plan(b, -1, 10)
    with pytest.raises(ConfigError, match="--days"):
        plan(b, 1e9, 0)


# -------------------------------------------------------------------------------- sweep

def test_vary_parses_ranges_lists_and_suffixes():
    assert Vary.parse("cluster.nvlink_gbps=300:1800", 4).values == (300, 800, 1300, 1800)
    assert Vary.parse("cluster.nic_bw_Bps=25G:100G:4").values == (25e9, 50e9, 75e9, 100e9)
    assert Vary.parse("parallel.recompute=none,full").values == ("none", "full")
    assert parse_number("15T", "x") == 15e12


@pytest.mark.parametrize("text, match", [
    ("nvlink=1:2", "section"), ("cluster.nvlink_gbps", "expected"),
    ("cluster.nvlink_gbps=a:b", "not a number"), ("cluster.nvlink_gbps=1:2:0", "steps"),
])
def test_bad_vary_is_a_config_error(text, match):
    with pytest.raises(ConfigError, match=match):
        Vary.parse(text)


def tiny_raw() -> dict:
    return {"model": dict(TINY_MODEL), "parallel": {"tp": 2, "pp": 2, "sequence_parallel": True},
            "training": {"global_batch_size": 32, "seq_length": 2048},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8}}


def test_more_bandwidth_is_never_slower():
    """A what-if GPU from gpu_overrides: more HBM and NVLink bandwidth never slow the step."""
    r = sweep(tiny_raw(), [Vary.parse("cluster.gpu_overrides.hbm_bw_gbps=1000:5000", 3),
                           Vary.parse("cluster.nvlink_gbps=100,900")])
    times = {p.values: p.result.iteration_time_s for p in r.points}
    assert times[(1000, 100)] >= times[(3000, 100)] >= times[(5000, 100)]
    assert times[(5000, 100)] > times[(5000, 900)]
    assert len(r.series()) == 2


def test_a_new_gpu_in_yaml_needs_no_code(tmp_path):
    """cluster.gpu as a mapping (catalog units) is simulated and varied like a catalog GPU."""
    raw = tiny_raw()
    raw["cluster"]["gpu"] = {"name": "new", "peak_tflops": {"bf16": 2000}, "hbm_gib": 128,
                             "hbm_bw_gbps": 6000, "nvlink_gbps": 900, "num_sms": 160}
    r = sweep(raw, [Vary.parse("cluster.gpu.peak_tflops.bf16=1000,2000")])
    assert r.points[0].result.iteration_time_s > r.points[1].result.iteration_time_s
    r = sweep(raw, [Vary.parse("cluster.gpu=new-name-unknown,h100-sxm-80gb")])
    assert r.points[0].result is None and "unknown GPU" in r.points[0].error
    assert r.points[1].result is not None


def test_write_sweep_files(tmp_path):
    r = sweep(tiny_raw(), [Vary.parse("cluster.nvlink_gbps=300:900", 3), Vary.parse("parallel.tp=2,3")])
    files = write_sweep(r, tmp_path)
    names = {f.name for f in files}
    assert names == {"sweep.csv", "sweep.json", "sweep.png", "sweep.html", "breakdown.png"}
    rows = list(csv.DictReader(io.StringIO((tmp_path / "sweep.csv").read_text())))
    assert len(rows) == 6 and sum(1 for x in rows if x["error"]) == 3  # tp=3 is invalid
    assert (tmp_path / "sweep.png").stat().st_size > 10_000


def test_sweep_with_every_point_invalid_is_an_error():
    with pytest.raises(ConfigError, match="no point"):
        sweep(tiny_raw(), [Vary.parse("parallel.tp=3,5")])


# ---------------------------------------------------------------------------- commands

def test_search_command_table_json_csv(cli, tmp_path):
    """search prints the ranking, the reference's rank and the counts; json and csv too."""
    args = ["search", "llama3-8b", "--gpus", "8", "--global-batch", "16", "--seq", "4096",
            "--recompute", "none", "--zero", "0,1", "--max-micro-batch", "2", "--top", "3",
            "--workers", "1", "--reference", "tp=2,sp=1,mb=1,distopt=1"]
    r = CliRunner().invoke(cli, args + ["--plot", str(tmp_path / "s.png")])
    assert r.exit_code == 0, r.output
    assert "why each is slower than #1" in r.output and "rank as given" in r.output
    assert "candidates enumerated" in r.output and (tmp_path / "s.png").stat().st_size > 10_000
    d = json.loads(CliRunner().invoke(cli, args + ["--format", "json"]).output)
    st = d["stats"]  # the second run in this process takes its simulations from the cache
    assert len(d["top"]) == 3 and st["enumerated"] >= st["simulated"] + st["cache_hits"] > 0
    assert d["reference"]["config"]["tp"] == 2
    rows = list(csv.DictReader(io.StringIO(CliRunner().invoke(cli, args + ["--format", "csv"])
                                           .output)))
    assert [x["rank"] for x in rows] == ["1", "2", "3", "reference"]


def test_search_command_errors_are_one_line(cli):
    r = CliRunner().invoke(cli, ["search", "llama3-8b", "--gpus", "12", "--global-batch", "16",
                                 "--seq", "4096"])
    assert r.exit_code == 2 and "error:" in r.output and "gpus_per_node" in r.output
    assert "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["search", "nosuchmodel", "--gpus", "8", "--global-batch", "16",
                                 "--seq", "4096"])
    assert r.exit_code == 2 and "unknown model" in r.output


def test_plan_command_json(cli):
    r = CliRunner().invoke(cli, ["plan", "llama3-8b", "--tokens", "20G", "--days", "1",
                                 "--seq", "4096", "--global-batch", "64", "--max-gpus", "64",
                                 "--recompute", "none", "--zero", "1", "--overlap", "on",
                                 "--max-micro-batch", "2", "--cp", "1", "--workers", "1",
                                 "--price", "3", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["cost"]["days"] <= 1 and d["cost"]["price_per_gpu_hour"] == 3
    assert d["num_gpus"] == d["best"]["config"]["num_gpus"]


def test_sweep_command_writes_files(cli, tmp_path):
    r = CliRunner().invoke(cli, ["sweep", str(EXAMPLES / "llama3-8b-h100.yaml"),
                                 "--vary", "cluster.nvlink_gbps=300:900", "--steps", "2",
                                 "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "nvlink_gbps" in r.output and (tmp_path / "sweep.html").exists()
