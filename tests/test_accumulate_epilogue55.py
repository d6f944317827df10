"""A GEMM that adds into an existing buffer pays its epilogue's extra bytes after its main loops
(compute.epilogue; 55th session, fp8moe55)."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from trainsim.catalog import gpu as get_gpu
from trainsim.compute import epilogue, roofline
from trainsim.workload.ops import Gemm

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
H100 = get_gpu("h100-sxm-80gb")


def test_a_fresh_output_pays_nothing_more():
    op = Gemm("w", 4096, 4096, 2048, "bf16")
    assert epilogue.accumulate_epilogue_s(H100, op, roofline.HBM_EFFICIENCY) == 0.0


def test_the_extra_bytes_are_the_read_and_the_wider_write_beyond_the_16_bit_store():
    """fp32 main_grad: read 4 + write 4 - the 2 the fitted tile cost holds = 6 bytes an element;
    bf16: 2 + 2 - 2 = 2; at the HBM rate, times the groups."""
    op = Gemm("w", 6144, 8192, 2048, "bf16", batch=4, accumulate_bytes=4)
    bw = H100.hbm_bw_Bps * roofline.HBM_EFFICIENCY
    assert epilogue.accumulate_epilogue_s(H100, op, roofline.HBM_EFFICIENCY) == \
        pytest.approx(4 * 6144 * 8192 * 6 / bw)
    half = replace(op, accumulate_bytes=2)
    assert epilogue.accumulate_epilogue_s(H100, half, roofline.HBM_EFFICIENCY) == \
        pytest.approx(4 * 6144 * 8192 * 2 / bw)


def test_a_compute_bound_weight_gradient_slows_by_its_epilogue_and_fp8_gains_less():
    """A short-k expert wgrad (k = its 2,048 tokens) runs its main loop, then the epilogue: the
    same seconds in fp8 and bf16, so fp8's gain over bf16 shrinks."""
    model = roofline.RooflineModel(H100)
    bf16 = Gemm("w", 6144, 65536, 2048, "bf16", accumulate_bytes=2)
    fp8 = replace(bf16, dtype="fp8")
    extra = epilogue.accumulate_epilogue_s(H100, bf16, roofline.HBM_EFFICIENCY)
    assert model.time(bf16) == pytest.approx(model.time(replace(bf16, accumulate_bytes=0)) + extra,
                                             rel=1e-6)
    fresh_ratio = model.time(replace(fp8, accumulate_bytes=0)) / \
        model.time(replace(bf16, accumulate_bytes=0))
    assert model.time(fp8) / model.time(bf16) > fresh_ratio + 0.02


def test_a_memory_bound_accumulation_is_not_counted_twice():
    """Where the bytes already set the time (max with the HBM time), the epilogue only counts
    when the main loop plus it passes them."""
    model = roofline.RooflineModel(H100)
    op = Gemm("w", 4096, 4096, 64, "bf16", accumulate_bytes=4)
    bw = H100.hbm_bw_Bps * roofline.HBM_EFFICIENCY
    assert model.time(op) <= op.bytes / bw + \
        epilogue.accumulate_epilogue_s(H100, op, roofline.HBM_EFFICIENCY) + 5 * roofline.LAUNCH_S


@pytest.fixture()
def pairs_script():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("fp8moe55_pairs", BENCH / "fp8moe55_pairs.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.path.remove(str(BENCH))


def test_simumax_b200_wgrads_into_fp32_pay_most_of_their_extra_bytes(pairs_script):
    """The kernel-level check: the same weight gradients timed into fp32 and bf16 main_grad on a
    B200; the fp32 run's extra time is most of its extra bytes at the HBM rate (serialized: 1;
    hidden under the main loops: 0)."""
    import statistics

    shares = pairs_script.kernel_epilogue_shares()
    assert len(shares["gemm"]) == 82 and len(shares["gemm_grouped"]) == 16
    assert 0.6 < statistics.median(shares["gemm"]) < 1.2
    assert 0.7 < statistics.median(shares["gemm_grouped"]) < 1.1
