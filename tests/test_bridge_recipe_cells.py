"""training_bridge_archive.csv's 26.06 and 26.04.01 rows state their Megatron-Bridge v0.5.0 /
v0.4.2 recipes' options, CUDA-graph scopes, dispatcher, recompute, sequence parallel and layout,
and its 26.x "FP8" rows the current-scaling recipe (benchmarks/bridge_recipe_cells.py, checked against the Megatron-Bridge mirror)."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

from trainsim.validate.training import row_config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bridge_archive_rows as gen
import bridge_recipe_cells as cells
import mirror_rows

FILE = ROOT / "benchmarks" / "training_bridge_archive.csv"


def _rows() -> dict[str, dict[str, str]]:
    with open(FILE, newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh)}


def test_the_file_is_the_generator_output():
    with open(FILE, newline="") as fh:
        assert list(csv.DictReader(fh)) == [{k: str(v) for k, v in r.items()} for r in gen.rows()]


def test_every_26x_row_states_its_recipe_and_no_other_row_does():
    rows = _rows()
    assert set(cells.ROWS_2606) == {k for k in rows if k.startswith("bridgearch2606-")}
    assert set(cells.ROWS_2604) == {k for k in rows if k.startswith("bridgearch2604p1-")}
    read = {**cells.ROWS_2606, **cells.ROWS_2604}
    for rid, r in rows.items():
        stated = cells.cells(rid, r["tp"])
        for col, value in stated.items():
            assert r[col] == value, (rid, col)
        if rid in read:
            assert r["sequence_parallel"] == ("1" if int(r["tp"]) > 1 else "0"), rid
        else:
            assert r["cuda_graph_scope"] == "" and r["options"] == "", rid
            assert r["sequence_parallel"] == "", rid


def test_the_options_follow_the_recipes_rules():
    """pp_overlap exactly where PP > 1 and VP > 1, dp_overlap everywhere, tp_overlap only on the
    Llama rows with TP > 1 and not NVFP4, cuda_graphs exactly where a scope is stated."""
    rows = _rows()
    for rid, c in {**cells.ROWS_2606, **cells.ROWS_2604}.items():
        r, opts = rows[rid], c["options"].split(";")
        assert ("pp_overlap" in opts) == (int(r["pp"]) > 1 and int(r["vpp"] or 1) > 1), rid
        assert "dp_overlap" in opts
        assert ("tp_overlap" in opts) == (int(r["tp"]) > 1 and "nvfp4" not in rid), rid
        assert ("cuda_graphs" in opts) == bool(c["cuda_graph_scope"]), rid


def test_fp8_rows_of_26x_are_current_scaling():
    rows = _rows()
    fp8 = {k for k, r in rows.items() if k.endswith("-fp8") and r["framework_version"] != "25.11"}
    assert fp8 == set(cells.FP8_CS)
    assert all(rows[k]["fp8_recipe"] == "current" for k in fp8)


def test_the_cells_reach_the_run():
    cfg = row_config(_rows()["bridgearch2606-qwen3-30b-a3b-b300-8-mxfp8"])
    assert cfg.training.cuda_graph_scope == ("full_iteration",)
    assert cfg.parallel.moe_token_dispatcher_type == "hybridep"
    cfg = row_config(_rows()["bridgearch2606-deepseek-v3-b300-256-mxfp8"],
                     {"pipeline_model_parallel_layout": "filled"})  # the tuner's: PP 8, 61 layers
    assert cfg.training.cuda_graph_scope == ("attn", "moe_router", "moe_preprocess")
    assert cfg.parallel.recompute == "selective"
    assert cfg.parallel.recompute_modules == ("mla_up_proj",)
    cfg = row_config(_rows()["bridgearch2604p1-gpt-oss-120b-gb200-64-bf16"])
    assert cfg.parallel.moe_token_dispatcher_type == "alltoall"
    assert cfg.parallel.moe_overlap_ep_comm and not cfg.training.cuda_graphs
    assert cfg.parallel.recompute_modules == ("layernorm", "moe_act")
    cfg = row_config(_rows()["bridgearch2604p1-llama3.1-405b-gb300-256-mxfp8"],
                     {"pipeline_model_parallel_layout": "balanced"})  # the tuner's: 126 on PP 8
    assert cfg.parallel.sequence_parallel and cfg.parallel.tp_comm_overlap
    cfg = row_config(_rows()["bridgearch2604p1-qwen3-30b-a3b-gb200-8-mxfp8"])
    assert cfg.training.cuda_graph_scope == ("moe_router", "moe_preprocess")


def test_the_typed_cells_are_the_mirrors(monkeypatch):
    if not mirror_rows.mirror(cells.REPO_DIR).exists():
        pytest.skip("no Megatron-Bridge mirror")
    rows = {r["id"]: r for r in gen.rows()}
    assert cells.check(rows) == []
    rid = "bridgearch2606-gpt-oss-120b-b300-64-mxfp8"
    wrong = {**cells.ROWS_2606, rid: {**cells.ROWS_2606[rid], "cuda_graph_scope": "full_iteration"}}
    monkeypatch.setattr(cells, "RELEASES", {**cells.RELEASES, "26.06": (cells.TAG, wrong)})
    assert [b for b in cells.check(rows) if rid in b]
    monkeypatch.setattr(cells, "RELEASES", {"26.04": cells.RELEASES["26.04"]})
    for rid, col, value in (("bridgearch2604p1-gpt-oss-120b-gb200-64-bf16", "moe_dispatcher", ""),
                            ("bridgearch2604p1-qwen3-30b-a3b-b300-8-mxfp8", "cuda_graph_scope",
                             cells.TE_SCOPES),
                            ("bridgearch2604p1-deepseek-v3-gb300-256-mxfp8", "options",
                             "pp_overlap;dp_overlap;cuda_graphs")):
        wrong = {**cells.ROWS_2604, rid: {**cells.ROWS_2604[rid], col: value}}
        monkeypatch.setattr(cells, "RELEASES", {"26.04": ("v0.4.2", wrong)})
        assert [b for b in cells.check(rows) if rid in b], (rid, col)


def test_heldout_fp8_rows_of_26x_are_current_scaling():
    """The held-out file's Bridge "FP8" rows state the current-scaling recipe (and nothing else
    of their recipes: benchmarks/recipe_cells.csv audits those cells as the tuner's)."""
    with open(cells.HELDOUT, newline="") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh) if r["framework"] == "megatron-bridge"}
    fp8 = {k for k, r in rows.items() if k.endswith("-fp8")}
    assert fp8 == set(cells.HELDOUT_FP8_CS)
    assert all(rows[k]["fp8_recipe"] == "current" for k in fp8)
    assert all(r["options"] == "" for r in rows.values())


def test_the_heldout_cells_are_the_mirrors(monkeypatch, tmp_path):
    if not mirror_rows.mirror(cells.REPO_DIR).exists():
        pytest.skip("no Megatron-Bridge mirror")
    rows = {r["id"]: r for r in gen.rows()}
    held = tmp_path / "held.csv"
    held.write_text(cells.HELDOUT.read_text().replace(",megatron-bridge,26.06,,,,,,current,",
                                                      ",megatron-bridge,26.06,,,,,,,"))
    monkeypatch.setattr(cells, "HELDOUT", held)
    bad = cells.check(rows)
    assert len(bad) == 3 and all("does not state fp8_recipe current" in b for b in bad)
