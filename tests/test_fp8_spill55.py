"""PyTorch's fp8 grouped GEMM without fast accumulation spills its fp32 accumulator on the
128 x 256 tile (compute.grouped.accumulator_spill_k; 55th session, fp8moe55)."""

from __future__ import annotations

import csv
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.catalog import gpu as get_gpu
from trainsim.compute import grouped, roofline
from trainsim.validate.kernels import kernel_ops, predict_kernel_row
from trainsim.workload.ops import Gemm

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
FILE = BENCH / "kernels_h200_grouped54.csv"
H200 = get_gpu("h200-sxm-141gb")


def _rows() -> list[dict[str, str]]:
    with open(FILE, newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["dtype"] == "fp8"]


def _spills(r: dict[str, str]) -> bool:
    op = kernel_ops(r)[0][-1]
    return not op.fp8_fast_accum and grouped.torch_sm90_tile(op, 1.0)[:2] == (128, 256)


def test_only_the_two_fragment_tile_over_the_register_budget_spills():
    """Two fp32 fragments of a 128x256 tile over 256 math threads are 256 registers a thread,
    over the cooperative kernel's 232; 128x128 (128) and ping-pong 64x128 (128) fit, and fast
    accumulation keeps one fragment."""
    slow = Gemm("e", 512, 1536, 2048, "fp8", 32, grouped="cutlass")
    assert grouped.accumulator_spill_k(H200, slow, 128, 256) > 1.0
    for rows, cols in ((128, 128), (64, 128)):
        assert grouped.accumulator_spill_k(H200, slow, rows, cols) == 0.0
    assert grouped.accumulator_spill_k(H200, replace(slow, fp8_fast_accum=True), 128, 256) == 0.0
    assert grouped.accumulator_spill_k(H200, replace(slow, dtype="bf16"), 128, 256) == 0.0


def test_the_spill_costs_the_same_per_output_element_whatever_the_tile():
    """The whole fragment is stored and reloaded at each promotion: its bytes and the MMA work
    between promotions both grow with the tile's elements, so the stretch does not."""
    op = Gemm("e", 512, 2048, 768, "fp8", 32, grouped="cutlass")
    a = grouped.accumulator_spill_k(H200, op, 128, 256)
    assert grouped.accumulator_spill_k(H200, op, 256, 256) == pytest.approx(a)


def test_slow_over_fast_accumulation_is_priced_as_measured_on_both_tiles():
    """Measured fast0 / fast1 on the H200 (kernel rows, eager): 2.6-3.1x at Qwen3-30B-A3B's
    512-row groups (128x256, spilling), 1.06-1.34x on the large shapes' 128x128 tile (the
    promotion alone): those pairs' priced ratios within 20 % of the measured ones, the spilling
    pairs' 2.2-3.8x."""
    by_id = {r["id"]: r for r in _rows()}
    pairs = 0
    for rid, slow in by_id.items():
        fast = by_id.get(rid.replace("-fast0", "-fast1"))
        if not rid.endswith("-fast0") or fast is None:
            continue
        ps, pf = (predict_kernel_row(r, compute_db=None) for r in (slow, fast))
        measured = ps.measured and pf.measured / ps.measured  # rates: fast over slow
        priced = pf.predicted / ps.predicted
        if _spills(slow):  # the fast twin is priced 9-29 % fast on its own (RESULTS.md, grouped54
            assert 2.2 < priced < 3.8, rid  # lead 2), which this ratio carries
            pairs += 1
        else:
            assert priced == pytest.approx(measured, rel=0.20), rid
    assert pairs == 3


def test_blackwell_accumulates_in_tensor_memory_and_spills_nothing():
    b200 = get_gpu("b200-sxm-180gb")
    op = Gemm("e", 512, 1536, 2048, "fp8", 32, grouped="cutlass")
    eff = roofline.grouped_efficiency(b200, op)
    saved = grouped.LOCAL_BYTES_PER_SM_CLOCK
    try:
        grouped.LOCAL_BYTES_PER_SM_CLOCK = 1.0
        assert roofline.grouped_efficiency(b200, op) == eff
    finally:
        grouped.LOCAL_BYTES_PER_SM_CLOCK = saved


@pytest.fixture()
def spill_fit():
    try:
        yield load_script(BENCH / "fp8spill55_fit.py")
    finally:
        sys.modules.pop("fit_kernels", None)


def test_the_spilling_rows_are_priced_within_ten_percent_and_no_other_row_moves(spill_fit):
    """The five rows were 65.9 % MAPE before the spill was priced; every other row of the
    file is priced as it was with the spill at no cost."""
    rows = spill_fit.rows()
    spilling = [spill_fit.spilling(r) for r in rows]
    assert sum(spilling) == 5
    now = spill_fit.fk.predict(rows)
    saved = grouped.LOCAL_BYTES_PER_SM_CLOCK
    try:
        grouped.LOCAL_BYTES_PER_SM_CLOCK = 1e12
        free = spill_fit.fk.predict(rows)
    finally:
        grouped.LOCAL_BYTES_PER_SM_CLOCK = saved
    errs = [abs(t / r.measured_s - 1.0) for r, t, s in zip(rows, now, spilling, strict=True) if s]
    assert sum(errs) / len(errs) < 0.10
    for t, f, s in zip(now, free, spilling, strict=True):
        assert (t > 2.0 * f) if s else t == pytest.approx(f)


def test_the_shipped_rate_is_the_fit_and_lies_between_the_l2_share_and_the_l1_port(spill_fit):
    rows = [r for r in spill_fit.rows() if spill_fit.spilling(r)]
    assert len(rows) == 5
    rate = spill_fit.fit(rows)
    assert rate == pytest.approx(grouped.LOCAL_BYTES_PER_SM_CLOCK, abs=1.0)
    assert 7e12 / 132 / 1.98e9 < rate < 128
    assert spill_fit.main(["--check"]) == 0
