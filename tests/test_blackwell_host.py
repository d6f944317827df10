"""benchmarks/blackwell_host.py: a Grace host factor on every host constant, its refit with one
framework left out, and the sliding-window backward against cuDNN's measured ratios."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import blackwell_host as bh

from trainsim import pricing
from trainsim.compute import host


def test_the_grace_ratio_is_te2053s_torch_linear_figures():
    # GB200 37.08 us, GH200 33.17 us, H100 DGX (Xeon 8480C) 13.48 us a bf16 Linear forward
    assert bh.GRACE_TORCH_RATIO == pytest.approx(2.7507, abs=1e-4)
    assert bh.GH200_TORCH_RATIO == pytest.approx(2.4607, abs=1e-4)


def test_the_factor_is_switched_off_again():
    exposed, init = host.exposed_s, pricing.Pricer.__init__
    bh.grace_factor(2.0)
    assert host.exposed_s is not exposed and pricing.Pricer.__init__ is not init
    bh.grace_factor(1.0)
    assert host.exposed_s is exposed and pricing.Pricer.__init__ is init


def test_the_factor_scales_the_measured_constants_with_the_per_kernel_cost():
    seen = {}

    def spy(ops, gpu_s, per_kernel_s, *a, **k):
        seen.update({n: getattr(host, n) for n in bh.SCALED})
        return 0.0

    kept = bh._exposed
    bh._exposed = spy
    try:
        bh._scaled_exposed([], [], 3 * host.HOST_S_PER_KERNEL)
    finally:
        bh._exposed = kept
    assert seen["CPP_LAUNCH_S"] == pytest.approx(3 * bh._BASE["CPP_LAUNCH_S"])
    assert seen["NODE_PASS_S"] == pytest.approx(3 * bh._BASE["NODE_PASS_S"])
    assert host.CPP_LAUNCH_S == bh._BASE["CPP_LAUNCH_S"]  # restored after the call


def _row(rid: str) -> dict[str, str]:
    for _, r in bh.grace_rows():
        if r["id"] == rid:
            return r
    with bh.PUBLIC.open(newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == rid)


def test_a_slower_grace_host_slows_an_eager_grace_row_and_no_x86_row():
    # the zoo's GB300 EP 64 row runs scoped graphs, its experts eager: host-sensitive
    grace = _row("mzoo2605-qwen3-235b-a22b-gb300-64-mxfp8-tp1pp1ep64")
    assert bh._err((2.0, grace)) > bh._err((1.0, grace)) + 0.05
    x86 = _row("bridge2604p1-qwen3-30b-a3b-h100-16-ep16")
    assert bh._err((2.0, x86)) == bh._err((1.0, x86))


def test_the_recipe_variants_carry_their_graph_scopes():
    rows = [r for g, r in bh.grace_rows() if g == "public, recipe"]
    assert {r["id"] for r in rows} == {k + "+recipe" for k in bh.RECIPE}
    assert all("cuda_graphs" in r["options"] and r["cuda_graph_scope"] ==
               "attn;moe_router;moe_preprocess" for r in rows)


def test_implied_factor_interpolates_the_zero_crossing():
    assert bh.implied({1.0: -0.10, 2.0: 0.10}) == pytest.approx(1.5)
    assert bh.implied({1.0: -0.10, 1.5: -0.05, 2.0: 0.15}) == pytest.approx(1.625)
    assert bh.implied({1.0: 0.10, 2.0: 0.20}) is None  # too slow already


def test_leave_one_out_refits_on_the_other_frameworks():
    rows = [("a", "r1", {f: (f - 2.0) / 10 for f in bh.GRID}),   # meets at F 2
            ("b", "r2", {f: (f - 2.0) / 10 for f in bh.GRID}),
            ("c", "r3", {f: (f - 1.0) / 10 for f in bh.GRID})]   # meets at F 1
    out = {fw: (n, refit, m, m1) for fw, n, refit, m, m1 in bh.leave_one_out(rows)}
    assert out["c"][1] == 2.0 and out["c"][2] == pytest.approx(10.0)  # a, b choose 2: c off
    # b and c split: every F between their optima ties, the smallest wins (the shipped model)
    assert out["a"][1] == 1.0 and out["a"][2] == pytest.approx(10.0)
    assert out["c"][3] == pytest.approx(0.0)


def test_trainsim_prices_a_window_no_cheaper_than_cudnn_measured():
    # cudnn-frontend#505 (SM120, cuDNN backend): W512 / causal backward 0.306 at 4k, 0.123 at
    # 16k; a window priced below that would make gpt-oss too fast, the price sits above it
    for seq, window, ours, theirs in bh.swa_ratios():
        assert ours >= theirs * 0.95, (seq, window)
        assert ours <= theirs * 1.5, (seq, window)


def test_the_b200_what_if_slows_only_the_named_host():
    row = _row("bridge2604p1-qwen3-30b-a3b-b200-8")
    assert bh._err((1.25, row)) == bh._err((1.0, row))  # Grace only: no B200 row moves
    assert bh._err((1.25, row, ("b200-sxm-180gb",))) > bh._err((1.0, row)) + 0.05
