"""benchmarks/fp8moe55_pairs.py: the accumulating-epilogue what-if and its kernel-level check
(55th session, fp8moe55; not trainsim's pricing: RESULTS.md, Leads)."""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.catalog import gpu as get_gpu
from trainsim.compute import roofline
from trainsim.workload.ops import Gemm

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture()
def pairs_script():
    return load_script(BENCH / "fp8moe55_pairs.py")


def test_simumax_b200_wgrads_into_fp32_pay_most_of_their_extra_bytes(pairs_script):
    """The same weight gradients timed into fp32 and bf16 main_grad on a B200: the fp32 run's
    extra time is most of its 4 extra bytes an element at the HBM rate (an epilogue after the
    main loops: 1; hidden under them, as trainsim prices it: 0)."""
    shares = pairs_script.kernel_epilogue_shares()
    assert len(shares["gemm"]) == 82 and len(shares["gemm_grouped"]) == 16
    assert 0.6 < statistics.median(shares["gemm"]) < 1.2
    assert 0.7 < statistics.median(shares["gemm_grouped"]) < 1.1


def test_the_what_if_adds_the_epilogue_bytes_to_accumulating_gemms_only(pairs_script):
    h100 = get_gpu("h100-sxm-80gb")
    op = Gemm("w", 6144, 65536, 2048, "bf16", accumulate_bytes=4)
    fresh = replace(op, accumulate_bytes=0)
    before = (roofline.RooflineModel(h100).time(op), roofline.RooflineModel(h100).time(fresh))
    plain = roofline.RooflineModel._time
    try:
        pairs_script.epilogue_what_if()
        model = roofline.RooflineModel(h100)
        bw = h100.hbm_bw_Bps * roofline.HBM_EFFICIENCY
        assert model.time(op) == pytest.approx(before[0] + op.m * op.n * 6 / bw, rel=1e-6)
        assert model.time(fresh) == before[1]
    finally:
        roofline.RooflineModel._time = plain  # type: ignore[method-assign]
    assert roofline.RooflineModel(h100).time(op) == before[0]
