"""benchmarks/training_nemotron3.csv states what each row's Megatron-Bridge performance recipe
sets beyond its graphs: the selective recompute of the workload config (else the model recipe's
none), sequence parallelism as TP > 1, the HybridEP flex dispatcher and the distributed
optimizer (``bridge_archive_rows.HYBRID_RECOMPUTE``, ``HYBRID_SETTINGS_NOTE``; Megatron-Bridge
v0.4.2 / v0.5.0 scripts/performance/configs/nemotronh/nemotron_3_workload_base_configs.py)."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

from trainsim.validate.training import row_config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bridge_archive_rows as gen
import mirror_rows


def _rows() -> dict[str, dict[str, str]]:
    with open(ROOT / "benchmarks/training_nemotron3.csv", newline="") as f:
        return {r["id"]: r for r in csv.DictReader(f)}


def test_the_file_is_the_generator_output():
    with open(ROOT / "benchmarks/training_nemotron3.csv", newline="") as f:
        assert list(csv.DictReader(f)) == [
            {k: str(v) for k, v in r.items()} for r in gen.rows(hybrid=True)]


def test_selective_recompute_exactly_where_a_workload_config_names_modules():
    """Five rows recompute (the H100 Nano FP8_CS pair, the B300 Super NVFP4 pair, the 26.04.01
    B200 Super MXFP8 row); every other row states none (Nano's recipe sets
    ``recompute_granularity = None``, Super's none, Megatron-core's default)."""
    rows = _rows()
    selective = {k: r["recompute_modules"] for k, r in rows.items()
                 if r["recompute"] == "selective"}
    assert selective == {
        "bridgearch2606-nemotron-3-nano-30b-a3b-h100-16-fp8": "moe;layernorm;core_attn;moe_act",
        "bridgearch2604p1-nemotron-3-nano-30b-a3b-h100-16-fp8": "moe;layernorm;core_attn;moe_act",
        "bridgearch2606-nemotron-3-super-120b-a12b-b300-64-nvfp4": "moe_act;layernorm",
        "bridgearch2604p1-nemotron-3-super-120b-a12b-b300-64-nvfp4": "moe_act;layernorm",
        "bridgearch2604p1-nemotron-3-super-120b-a12b-b200-64-mxfp8": "moe_act;layernorm"}
    assert all(r["recompute"] == "none" and r["recompute_modules"] == ""
               for k, r in rows.items() if k not in selective)


def test_sequence_parallel_dispatcher_and_optimizer_are_the_recipes():
    for r in _rows().values():
        assert r["sequence_parallel"] == ("1" if r["tp"] != "1" else "0"), r["id"]
        assert (r["moe_dispatcher"], r["distributed_optimizer"]) == ("hybridep", "1"), r["id"]


def test_the_cells_reach_the_run():
    cfg = row_config(_rows()["bridgearch2606-nemotron-3-nano-30b-a3b-h100-16-fp8"])
    p = cfg.parallel
    assert p.recompute == "selective"
    assert p.recompute_modules == ("moe", "layernorm", "core_attn", "moe_act")
    assert p.moe_token_dispatcher_type == "hybridep" and p.sequence_parallel is False


def test_the_typed_recompute_is_the_recipe_files(monkeypatch):
    if not mirror_rows.mirror(gen.REPO_DIR).exists():
        pytest.skip("no Megatron-Bridge mirror")
    assert gen.recipe_scope_differences() == []
    wrong = {**gen.HYBRID_RECOMPUTE,
             "Nemotron_3_Super": {**gen.HYBRID_RECOMPUTE["Nemotron_3_Super"],
                                  "DGX-B200 MXFP8": ""}}
    monkeypatch.setattr(gen, "HYBRID_RECOMPUTE", wrong)
    bad = gen.recipe_scope_differences()
    assert len(bad) == 1 and "HYBRID_RECOMPUTE ''" in bad[0]
