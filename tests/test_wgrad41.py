"""The 1x128-by-1x128 weight gradient's promotion counted with its column-scale loads (41st
session, wgrad41): ``compute.roofline.PROMOTION_OPS["outer"]`` = FMUL + FFMA + one shared-memory
request per four elements a thread, checked against the H200's cuBLASLt pairs and DeepSeek's
DeepGEMM trace (``benchmarks/wgrad41_promotion.py``)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

from trainsim.compute.roofline import PROMOTION_OPS

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def wp():
    sys.path.insert(0, str(BENCH))
    try:
        import wgrad41_promotion
    finally:
        sys.path.remove(str(BENCH))
    return wgrad41_promotion


def test_outer_count_by_hand():
    """DeepGEMM's 1D1D kernel (deepseek-ai/DeepGEMM@54e22612 sm90_fp8_gemm_1d1d.cuh) on a 128 x N
    tile: two math warpgroups of 64 rows, so a thread holds kNumAccum = 64 x N / 128 elements and
    loads kNumAccum / 4 ``float2`` B scales per k block (L255, L279-281). Per k block the SM's
    128 fp32 lanes take 2 x 128 x N / 128 clocks for the FMUL and FFMA of every element, and
    its shared-memory port, one warp request a clock, 8 warps x kNumAccum / 4 clocks: the loads
    cost one fp32 slot an element, three in all."""
    for n in (64, 128, 160):
        elements = 128 * n
        per_thread = 64 * n // 128
        fp32_clocks = 2 * elements / 128
        smem_clocks = 8 * per_thread / 4
        assert (fp32_clocks + smem_clocks) / (elements / 128) == PROMOTION_OPS["outer"] == 3
    assert PROMOTION_OPS["serial"] == 1


def test_h200_block_over_tensor_ratios_at_the_derived_count(wp):
    """The H200's measured block-over-per-tensor rate of 1x128-by-1x128 weight gradients, median
    per run (run 5's k sweep 0.673, the 41st session's output shapes 0.658, runs 1 / 2's nine
    DeepSeek-V3 linears 0.657 / 0.674), lies within 2.5 % of the model's median at 3 slots
    (0.662 / 0.658 / 0.669 / 0.669); at the 40th session's 2 the model was 11-14 % high."""
    sets = wp.ratio_sets()
    assert [len(p) for p in sets.values()] == [18, 12, 9, 9]
    for name, pts in sets.items():
        measured = statistics.median(r for *_, r in pts)
        model = statistics.median(wp.model_ratio(m, n, k) for m, n, k, _ in pts)
        assert model == pytest.approx(measured, rel=0.025), name


@pytest.mark.slow
def test_fits_on_either_set_bracket_the_derived_count(wp, capsys):
    """One count fitted to each set with the other held out (the script's figures): the H200's
    nine rows 2.64, its 48 block/tensor pairs 3.19, DeepSeek's seven one-stream W families 3.23;
    the derived 3 leaves DeepSeek's W GEMMs within 4 % (15 % at 2) and the H200 rows at 8.2 %
    MAPE (12.0 % at 2). The count in src is restored afterwards."""
    import json

    argv, sys.argv = sys.argv, ["wgrad41_promotion.py", "--format", "json"]
    sys.path.insert(0, str(BENCH))  # the trace's reader (dualpipe39_profile)
    try:
        wp.main()
    finally:
        sys.argv = argv
        sys.path.remove(str(BENCH))
    out = json.loads(capsys.readouterr().out)
    assert PROMOTION_OPS["outer"] == 3
    fits = out["fits"]
    assert 2.5 < fits["h200"] < 2.8
    assert 3.1 < fits["h200_ratios"] < 3.3
    assert 3.1 < fits["deepseek"] < 3.35
    rows = {r["count"]: r for r in out["rows"]}
    derived, before = rows["derived (+ B-scale loads)"], rows["40th session (FMUL + FFMA)"]
    assert abs(derived["trace_measured_over_priced"] - 1) < 0.04
    assert before["trace_measured_over_priced"] > 1.14
    assert derived["h200_mape"] < 0.085
    assert before["h200_mape"] > 0.115
