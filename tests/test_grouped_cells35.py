"""The 35th session's grouped-GEMM / MoE-block diagnostics: VeOmni #460's Triton grid
(``benchmarks/veomni_grid.py``) and DeepGEMM's CUTLASS 3.6 comparison
(``benchmarks/cutlass36_check.py``), and the kernels erratum that labels VeOmni's
``torch._grouped_mm`` rows."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

from trainsim.validate import BUNDLED_DIR

ROOT = Path(__file__).resolve().parent.parent


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def grid():
    yield _module("veomni_grid")
    sys.modules.pop("veomni_grid", None)


@pytest.fixture(scope="module")
def cutlass36():
    yield _module("cutlass36_check")
    sys.modules.pop("cutlass36_check", None)


def test_veomni_grid_counts_every_experts_row_blocks_over_all_routed_rows(grid):
    """group_gemm.py (VeOmni bfe4b650): cdiv(max_M, 128) x cdiv(N, 128) programs an expert,
    max_M = every routed row. 32768 tokens x top-8 = 262,144 rows: 2,048 row blocks; gate and
    up have 6 column blocks (N = 768), down 16 (N = 2048); 128 experts."""
    g = grid.veomni_grid(tokens=32768, top_k=8, hidden=2048, ffn=768, experts=128)
    assert g.launched == 2048 * (6 + 6 + 16) * 128 == 7_340_032
    # 2,048 rows an expert: 16 row blocks, the last of a ragged group half full on average
    assert g.real == pytest.approx(16.5 * (6 + 6 + 16) * 128)
    g512 = grid.veomni_grid(tokens=32768, top_k=10, hidden=2048, ffn=512, experts=512)
    assert g512.launched == 2560 * (4 + 4 + 16) * 512 == 31_457_280


def test_the_cost_interval_is_where_the_cell_passes(grid):
    """Hand-made rows: a torch row 10 % fast and a Triton row that misses 1 ms over 1e6 empty
    programs. The cell (two rows) is at 15 % while the Triton row is within 20 %."""
    torch_row = grid.RowCheck("t", False, 1e-2, 0.9e-2, None)
    triton = grid.RowCheck("x", True, 5e-3, 4e-3, grid.Grid(1_000_000, 0.0))
    checks = [torch_row, triton]
    assert grid.cell_mape(checks) == pytest.approx(0.15)  # (0.1 + 0.2) / 2
    lo, hi = grid.passing_costs(checks, top_s=4e-9, steps=4000)
    assert lo == pytest.approx(0.0, abs=1e-12)
    # (0.1 + |4e-3 + c 1e6 - 5e-3| / 5e-3) / 2 <= 0.15  ->  0 <= c <= 2 ns
    assert hi == pytest.approx(2e-9, abs=2e-12)
    assert grid.cell_mape(checks, hi + 1e-11) > 0.15


def test_veomni_rows_are_read_from_the_published_file(grid):
    """Four rows: two ``torch._grouped_mm`` (no grid) and two Triton ones, each with its
    grid, priced by the shipped validator (a time per row)."""
    checks = grid.rows()
    assert len(checks) == 4
    assert sorted(c.triton for c in checks) == [False, False, True, True]
    assert all(c.measured_s > 0 and c.predicted_s > 0 for c in checks)
    assert all((c.grid is not None) == c.triton for c in checks)


def test_deepgemm_rates_match_the_published_rows(cutlass36):
    """The script's DeepGEMM column is the README table the kernels file already holds:
    every shape there, at the same rate."""
    with (BUNDLED_DIR / "kernels_published.csv").open(newline="") as f:
        published = {r["id"]: float(r["measured_value"]) for r in csv.DictReader(f)
                     if r["id"].startswith("deepgemm-h800")}
    for m, n, k, tf, _ in cutlass36.DENSE:
        assert published[f"deepgemm-h800-fp8-m{m}-n{n}-k{k}"] == tf
    for layout, g, mg, n, k, tf, _ in cutlass36.GROUPED:
        tag = "contig" if layout == "contiguous" else "masked"
        assert published[f"deepgemm-h800-fp8-{tag}-g{g}-m{mg}-n{n}-k{k}"] == tf
    assert len(cutlass36.DENSE) + len(cutlass36.GROUPED) == len(published) == 28


def test_cutlass_rate_is_deepgemm_over_the_speedup(cutlass36):
    """M = 4096, N = 2112, K = 7168: 1127 TFLOPS at 1.2x -> 939 TFLOP/s for CUTLASS 3.6; a
    prediction of that rate has no time error."""
    rows = cutlass36.checks()
    c = next(r for r in rows if r.kind == "gemm" and r.label == "4096 x 2112 x 7168")
    assert c.cutlass == pytest.approx(1127 / 1.2)
    same = cutlass36.Check("x", "gemm", 1127, 939.0, 939.0)
    assert same.time_error == 0.0
    assert cutlass36.Check("x", "gemm", 1, 900.0, 1000.0).time_error == pytest.approx(-0.1)
    assert len(rows) == 28 and all(r.predicted > 0 for r in rows)


def test_veomni_torch_rows_are_labelled_torch_by_erratum():
    """The two ``torch._grouped_mm`` rows of VeOmni #460 carry ``implementation = triton`` in
    the file; the erratum relabels them ``torch`` (their note already prices them as PyTorch's
    CUTLASS grouped GEMM)."""
    with (ROOT / "benchmarks" / "kernels_errata.csv").open(newline="") as f:
        errata = list(csv.DictReader(f))
    fixes = {(e["id"], e["field"]): e for e in errata}
    with (BUNDLED_DIR / "kernels_published.csv").open(newline="") as f:
        published = {r["id"]: r for r in csv.DictReader(f)}
    for rid in ("veomni460-h100-moe-s32768-h2048-f768-e128-k8-torch",
                "veomni460-h100-moe-s32768-h2048-f512-e512-k10-torch"):
        e = fixes[(rid, "implementation")]
        assert "torch._grouped_mm" in published[rid]["note"]
        assert published[rid]["implementation"] == e["file_value"] == "triton"
        assert e["corrected_value"] == "torch"


def test_the_probe_plan_launches_veomni_grids(grid):
    """``empty_program_probe.py --dry-run`` (GPU-free): its VeOmni-grid launches add up to the
    programs ``veomni_grid`` counts for the same shapes, and its real-row grids hold only the
    row blocks of evenly spread rows."""
    probe = _module("empty_program_probe")
    try:
        items = probe.plan()
        for tokens, top_k, hidden, ffn, experts in probe.VEOMNI:
            mine = [x for x in items if x["part"] == f"veomni-{experts}e-veomni"]
            g = grid.veomni_grid(tokens, top_k, hidden, ffn, experts)
            assert sum(x["programs"] for x in mine) == g.launched
            real = [x for x in items if x["part"] == f"veomni-{experts}e-real"]
            assert all(x["max_m"] == -(-tokens * top_k // experts) for x in real)
        empty = [x["programs"] for x in items if x["part"] == "empty"]
        assert min(empty) < 100_000 and max(empty) > 20_000_000
        assert probe.main(["--dry-run"]) == 0
    finally:
        sys.modules.pop("empty_program_probe", None)
