"""The check files' output-layer weight-gradient deferral cells (benchmarks/deferral_cells.py):
each row whose recipe sets Megatron-core's ``defer_embedding_wgrad_compute`` /
``wgrad_deferral_limit`` (NeMo Launcher YAML, NeMo 2 performance recipes, MLPerf v5.0 CoreWeave
configs) states it, the cited lines are the mirrors', the cells reach the simulation, and the
profiles carry no rule (the setting is per recipe)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import load_script
from helpers_files import mirror_git

from trainsim.catalog.frameworks import framework_feature
from trainsim.validate.training import predict_training_row

ROOT = Path(__file__).resolve().parents[1]
CELLS = load_script(ROOT / "benchmarks" / "deferral_cells.py")
# file -> rows whose recipe defers (the Launcher / NeMo 2 Llama 70B / 405B, GPT-3 175B and
# Nemotron-4 340B recipes; GPT-3 on the Launcher, 8B / 15B, Mixtral and DeepSeek-V3 do not)
FILES = {"dgxc": 24, "dgxc2502": 8, "dgxc2505": 20, "dgxc_llama31_2505": 2, "nemo_perf": 8,
         "mlperf5": 5}


def _rows(name: str) -> list[dict]:
    with open(ROOT / "benchmarks" / f"training_{name}.csv", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("name", sorted(FILES))
def test_each_row_states_what_its_recipe_sets(name):
    rows = _rows(name)
    stated = [r for r in rows if r["defer_embedding_wgrad_compute"]]
    assert len(stated) == FILES[name]
    for r in rows:
        src = CELLS.source_of(r["id"])
        if src is None:
            assert r["defer_embedding_wgrad_compute"] == r["wgrad_deferral_limit"] == "", r["id"]
            continue
        limit, cite, _ = src
        assert (r["defer_embedding_wgrad_compute"], r["wgrad_deferral_limit"]) == ("1", str(limit))
        assert int(r["pp"]) > 1, r["id"]  # Megatron-core refuses it without pipelining
        assert CELLS.clause(limit, cite) in r["note"], r["id"]  # nvls_cells may follow


def test_the_limits_are_the_recipes_50_and_22():
    limits = {v[0] for v in CELLS.STATED.values()}
    assert limits == {22, 50}
    # the 70B and 340B recipes defer 22, the 175B and 405B ones 50
    for prefix, (limit, _, _) in CELLS.STATED.items():
        assert limit == (22 if ("70b" in prefix or "340b" in prefix) else 50), prefix


def test_no_prefix_claims_another_ones_rows():
    for a in CELLS.STATED:
        assert not any(b != a and b.startswith(a) for b in CELLS.STATED), a


def test_cited_lines_are_the_mirrors():
    for repo in ("NVIDIA+NeMo", "NVIDIA+dgxc-benchmarking", "mlcommons+training_results_v5.0",
                 "NVIDIA-NeMo+Megatron-Bridge", "NVIDIA+NeMo-Framework-Launcher"):
        if not (mirror_git(repo) / "HEAD").exists():
            pytest.skip(f"no {repo.replace('+', '/')} mirror")
    assert CELLS.check() == []


def test_no_bridge_pretraining_row_defers():
    """Megatron-Bridge's pre-training recipes set no deferral from v0.2.0 (25.11) on."""
    for path in (ROOT / "benchmarks").glob("training_*.csv"):
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                if r.get("framework") == "megatron-bridge":
                    assert not r.get("defer_embedding_wgrad_compute"), r["id"]


@pytest.mark.parametrize("framework,version", [("nemo", "24.09"), ("nemo", "25.04"),
                                               ("megatron-bridge", "25.11"),
                                               ("megatron-bridge", "26.04")])
def test_nemo_and_bridge_profiles_have_no_rule(framework, version):
    assert framework_feature(framework, version, "embedding_wgrad_deferral") is None


@pytest.mark.parametrize("row_id,every", [
    ("dgxc2505-nemotron4-340b-fp8-h100-256", True),   # 8 micro-batches, limit 22: all defer
    ("dgxc2411-llama3.1-70b-bf16-2048", False),       # 64 micro-batches, limit 22: the first 22
])
def test_the_cells_reach_the_simulation(row_id, every):
    name = "dgxc2505" if row_id.startswith("dgxc2505") else "dgxc"
    row = next(r for r in _rows(name) if r["id"] == row_id)
    off = dict(row, defer_embedding_wgrad_compute="", wgrad_deferral_limit="")
    on, without = predict_training_row(row), predict_training_row(off)
    assert on.error is None and without.error is None
    assert on.predicted != pytest.approx(without.predicted, rel=1e-6)
    if every:  # the drain hides in the last stage's cool-down: faster than the unsplit backward
        assert on.predicted < without.predicted


def test_bridge_2509_deferral_is_the_llama_recipes_and_not_fsdp():
    """25.09 (v0.1.0rc3) ran the Llama pre-training recipes' own CommOverlapConfig: 405B 50,
    70B 22; the Megatron-FSDP workload's helper switched it off, so it has no entry."""
    releases = load_script(ROOT / "benchmarks" / "bridge_releases.py")
    points = {rid for rid, rel, *_ in releases.RELEASES if rel == "25.09"}
    assert set(CELLS.BRIDGE_2509) == points - {releases.FSDP}
    for rid, (limit, _, _) in CELLS.BRIDGE_2509.items():
        assert limit == (22 if "70b" in rid else 50), rid
        assert releases.release_cells(rid, "25.09") == {
            "defer_embedding_wgrad_compute": "1", "wgrad_deferral_limit": str(limit)}
        assert releases.release_cells(rid, "25.11") == {}
    assert releases.release_cells(releases.FSDP, "25.09") == {}


def test_launcher_rows_leave_the_deferral_unset():
    """No Launcher recipe the rows ran sets the keys (``launcher_silent``, read by ``check``)
    and NeMo reads them with default False: the rows' cells stay empty (the nemo profile has
    no rule, so empty is no deferral)."""
    assert len(CELLS.launcher_silent()) >= 8
    for r in _rows("nemo_launcher"):
        assert not r.get("defer_embedding_wgrad_compute"), r["id"]
