"""benchmarks/wgrad39_parts.py: DeepSeek's profiled W pass (deepseek-ai/profile-data@4496024
train.json) split kernel by kernel, checked against figures read off the trace by hand, and
trainsim's W ops for the same chunk."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def parts():
    sys.path.insert(0, str(BENCH))
    try:
        import wgrad39_parts as wp
    finally:
        sys.path.remove(str(BENCH))
    return wp


@pytest.fixture(scope="module")
def measured(parts):
    """The trace's figures as the script keeps them (``--write``; the slow test below parses
    the fetched trace again and finds the same)."""
    if not parts.KEPT.exists():
        pytest.skip("benchmarks/wgrad39_parts.json is not here")
    return json.loads(parts.KEPT.read_text())


@pytest.mark.slow
def test_the_kept_figures_are_the_traces(parts, measured):
    """A fresh parse of the fetched trace (~1.5 s) gives the kept figures exactly."""
    if not parts.MIRROR.exists():
        pytest.skip("the deepseek-ai/profile-data mirror is not fetched")
    assert json.loads(json.dumps(parts.measure(parts.load_trace(None)))) == measured


def test_the_w_kernels_as_read_by_hand(measured):
    """Each MoE layer's mlp(W) range launches ten fp8_dptp128c_acc GEMMs and two
    per_channel_cast_and_transpose kernels; read off the trace by hand (microseconds, the four
    layers in launch order): the shared fc2 174 + 174 + 187 + 189, the shared fc1 362 + 369 +
    388 + 362; the routed experts' fc2 (351 + 702 + 665 + 657) + (363 + 624 + 554 + 637) +
    (327 + 330 + 243 + 514) + (338 + 315 + 274 + 273), fc1 (741 + 730 + 684 + 756) + (751 + 557
    + 628 + 805) + (675 + 1374 + 1227 + 1412) + (676 + 626 + 1145 + 1043); the first attn(W)'s
    out_proj GEMM 1,466."""
    us = {k: round(v * 1e6) for k, v in measured["wgrad_s"].items()}
    assert measured["moe_layers"] == 4
    assert us["shared_fc2"] == 174 + 174 + 187 + 189
    assert us["shared_fc1"] == 362 + 369 + 388 + 362
    assert us["expert_fc2"] == 2375 + 2178 + 1414 + 1200
    assert us["expert_fc1"] == 2911 + 2741 + 4688 + 3490
    assert sorted(round(c * 1e6) for c in measured["cast_transpose_s"]) == \
        sorted([276, 322, 259, 302, 320, 275, 278, 279])
    assert measured["wgrad_kernels"] == {
        "shared_fc2": 4, "shared_fc1": 4, "expert_fc2": 16, "expert_fc1": 16, "out_proj": 4,
        "kv_up_proj": 4, "q_up_proj": 4, "kv_down_proj": 4, "q_down_proj": 4}
    assert us["out_proj"] > 1466  # the first of its four
    assert measured["gemm_ctas"] == [112]  # 132 SMs less DeepEP's 20, throughout the pair


def test_the_split_adds_up_to_dualpipe39s_w_ranges(measured):
    """The categories and casts add up to the attn(W) + mlp(W) kernel time that
    benchmarks/dualpipe39_profile.py keeps for the same trace (35.07 ms); the W pass's wall
    (the union of its kernels' spans, 29.8 ms) is shorter, as the experts' GEMMs run on two
    streams."""
    pair = json.loads((BENCH / "dualpipe39_profile_pair.json").read_text())
    w = pair["compute_by_part_s"]["attn(W)"] + pair["compute_by_part_s"]["mlp(W)"]
    total = sum(measured["wgrad_s"].values()) + sum(measured["cast_transpose_s"])
    assert total == pytest.approx(w, abs=1e-6)
    assert measured["w_kernel_sum_s"] == pytest.approx(w, abs=1e-6)
    assert 0.0285 < measured["w_wall_s"] < 0.031
    assert measured["w_streams"] == [7, 23]
    walls = measured["wgrad_wall_s"]
    for op, s in measured["wgrad_s"].items():
        assert walls[op] <= s + 1e-9


def test_trainsims_w_ops_are_all_in_the_table(parts, measured):
    """Every op trainsim puts in the example's W pass falls in one of the table's categories
    (so the priced column misses none), the chunk holds the trace's four MoE layers, and the
    priced W pass is 28.6 ms: the 24.3 dualpipe39 reports on all SMs, its fp8 GEMMs on the
    112 SMs DeepGEMM's grid keeps since dsv3k43 (x 132/112; 18.0 before the 40th session
    priced the weight gradients' 1x128-by-1x128 promotion, ``outer``, 21.5 before the 41st
    counted its column-scale loads); the measured W wall is 1.04 times it (1.2-1.3 on all
    SMs)."""
    sim = parts.simulated()
    named = {op for _, ops in parts.CATEGORIES for op in ops}
    assert {op.removesuffix(".wgrad") for op in sim["wgrad_ops"]} == named
    assert sim["stage_layers"] == measured["moe_layers"] == 4
    w = sim["stage_layers"] * sim["w_pass_s"]
    assert w == pytest.approx(sum(r[3] for r in parts.rows(measured, sim)), rel=1e-9)
    assert 0.0285 < w < 0.0286
    assert 1.0 < measured["w_wall_s"] / w < 1.1
