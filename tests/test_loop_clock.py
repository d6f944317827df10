"""A kernel benchmark's loop clock (``roofline.loop_clock_factor``): GEMMs timed back to back
slow from the burst toward the sustained clock the longer each call runs; rows naming the MAMF
finder (idle between calls) keep the burst clock, MSMF rows the sustained one, database records
their own times, and training never sees it."""

from __future__ import annotations

import dataclasses

import pytest

from trainsim.catalog import gpu
from trainsim.compute import RooflineModel, compute_model_for, roofline
from trainsim.validate.kernels import BURST, predict_kernel_row
from trainsim.workload.ops import Elementwise, Gemm


def test_factor_runs_from_one_to_the_sustained_clock():
    tau = roofline.LOOP_CLOCK_TAU_S
    f = [roofline.loop_clock_factor(t, 0.85) for t in (0.0, 1e-6, tau, 100 * tau, 1e4)]
    assert f[0] == 1.0 and f == sorted(f) and f[1] < 1.0001
    assert f[2] == pytest.approx(1 + (1 / 0.85 - 1) / 2)
    assert f[-1] == pytest.approx(1 / 0.85, rel=1e-6)


def test_roofline_slows_only_gemm_compute_of_a_loop():
    """A long GEMM in a loop slows by the factor of its compute time; a short one hardly; a
    memory-bound kernel not at all; without a loop (training, a database's comparison) the
    price is the burst roofline's."""
    h100 = gpu("h100-sxm-80gb")
    alone = dataclasses.replace(h100, sustained_of_burst=1.0)
    burst, loop = RooflineModel(alone), RooflineModel(alone, h100.sustained_of_burst)
    long = Gemm("g", 16384, 16384, 16384, "bf16")
    t = burst.time(long) - roofline.LAUNCH_S
    assert loop.time(long) - roofline.LAUNCH_S == pytest.approx(
        t * roofline.loop_clock_factor(t, h100.sustained_of_burst))
    short = Gemm("g", 1024, 1024, 1024, "bf16")
    assert burst.time(short) < loop.time(short) < 1.001 * burst.time(short)
    norm = Elementwise("add", 1 << 28, kernels=1)
    assert loop.time(norm) == burst.time(norm)
    assert RooflineModel(h100).loop_toward is None


def _row(**cells) -> dict[str, str]:
    row = {"id": "r", "source": "somebody's benchmark", "gpu": "a100-sxm-80gb", "kind": "gemm",
           "implementation": "cublas", "dtype": "bf16", "m": "8192", "n": "8192", "k": "16384",
           "measured_value": "250", "measured_unit": "TFLOP/s", "note": ""}
    return {**row, **cells}


def test_the_validator_reads_the_loop_off_the_row():
    """The same long GEMM: slowest at the power limit (MSMF), then in a plain loop, fastest as
    the MAMF finder times it (the board idle between calls)."""
    plain = predict_kernel_row(_row()).predicted
    mamf = predict_kernel_row(_row(source="stas00 (MAMF comparison table, v2)")).predicted
    msmf = predict_kernel_row(_row(note="MSMF (sustained)")).predicted
    assert msmf < plain < mamf
    a100 = gpu("a100-sxm-80gb")
    t = 2 * 8192 * 8192 * 16384 / (mamf * 1e12) - roofline.LAUNCH_S
    assert 2 * 8192 * 8192 * 16384 / (plain * 1e12) - roofline.LAUNCH_S == pytest.approx(
        t * roofline.loop_clock_factor(t, a100.sustained_of_burst), rel=1e-6)
    assert BURST.search("MAMF (boost burst) ~176 W @ 1980 MHz")
    assert not BURST.search("older 'v1' table that did not reset the cache")


def test_a_database_record_slows_as_the_loop_slows_the_roofline():
    """On the H100 a bundled database record prices a GEMM as measured with the board idle, and
    a looped GEMM as that record times the loop's slowdown of the roofline; a memory-bound
    record is the same in both."""
    h100 = gpu("h100-sxm-80gb")
    alone = dataclasses.replace(h100, sustained_of_burst=1.0)
    op = Gemm("g", 8192, 8192, 8192, "bf16")
    plain = compute_model_for(alone, "auto", gpu)
    loop = compute_model_for(alone, "auto", gpu, h100.sustained_of_burst)
    t, how = plain.explain(op)
    assert how.startswith("database") and "loop" not in how
    slow = RooflineModel(alone, h100.sustained_of_burst).time(op) / RooflineModel(alone).time(op)
    assert slow > 1.03
    t_loop, how_loop = loop.explain(op)
    assert t_loop == pytest.approx(t * slow) and how_loop.endswith("benchmark loop)")
    norm = Elementwise("rmsnorm", 1 << 28, kernel="rmsnorm", impl="fused")
    assert loop.explain(norm) == plain.explain(norm)
