"""benchmarks/harness_floor.py: the fixed cost per timed call each harness shows (RESULTS.md,
25th session membound block)."""

from __future__ import annotations

from pathlib import Path

from helpers import load_script

floor = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "harness_floor.py")


def test_do_bench_series_carry_a_fixed_cost_that_graph_batches_do_not():
    """Liger's one-pass Triton kernels timed by do_bench (a 256 MiB memset, then events around
    one call) sit ~6-11 us above their bytes at HBM rate; the H100 file's CUDA-graph copies
    and adds sit at ~0. The validator prices both with one LAUNCH_S; this is the disagreement
    no global constant removes."""
    rows = {(how, gpu, key): (a_us, frac)
            for how, gpu, key, _n, _lo, _hi, a_us, frac in floor.series_table()}
    for gpu, key in (("h100-sxm-80gb", "liger-rmsnorm-liger"), ("h100-sxm-80gb", "liger-swiglu-liger"),
                     ("a100-sxm-80gb", "liger-rmsnorm-liger")):
        a_us, frac = rows[("do_bench", gpu, key)]
        assert 5.0 < a_us < 12.0 and 0.7 < frac < 0.95
    for key in ("mem-copy", "mem-residual-add", "mem-gelu"):
        a_us, frac = rows[("cuda-graph batch", "h100-sxm-80gb", key)]
        assert abs(a_us) < 2.5 and 0.85 < frac < 0.95


def test_sweep_adds_only_to_do_bench_rows():
    table = floor.sweep()
    assert table[0.0][("h100-sxm-80gb", "kineto")] == table[7.0][("h100-sxm-80gb", "kineto")]
    assert table[3.0][("a100-sxm-80gb", "do_bench")] < table[0.0][("a100-sxm-80gb", "do_bench")]
