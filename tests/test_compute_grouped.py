"""compute.grouped: grouped-GEMM pricing apart from the dense roofline, which hands it the
dense tile, the tile's fixed cost and the block-scale promotion."""

import ast
from dataclasses import replace
from pathlib import Path

import pytest

from trainsim.catalog import gpu as get_gpu
from trainsim.compute import grouped, roofline
from trainsim.workload.ops import Gemm

GROUPED_SRC = Path(grouped.__file__)


def _experts(m: int, impl: str, dtype: str = "bf16", ragged: bool = False) -> Gemm:
    return Gemm("experts", m, 1536, 2048, dtype, 128, grouped=impl, ragged=ragged)


def test_grouped_imports_nothing_from_the_roofline():
    """Imports flow one way: roofline calls into grouped, never the reverse."""
    tree = ast.parse(GROUPED_SRC.read_text())
    imported = {f"{node.module}.{a.name}" for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) for a in node.names}
    imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for a in node.names}
    assert "trainsim.workload.ops.Gemm" in imported  # the walk sees the module's imports
    assert not any(name and "roofline" in name for name in imported), imported


@pytest.mark.parametrize("impl", ["cutlass", "triton", "deepgemm", "multi_stream", "loop"])
@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_the_roofline_prices_grouped_gemms_with_its_own_dense_tile(impl, dtype):
    """The model's grouped efficiency is grouped.grouped_efficiency at the roofline's tile and
    tile overhead scaled to the op's rate (the split-k floor is split_k's, read by both)."""
    gpu = get_gpu("h100-sxm-80gb")
    op = _experts(512, impl, dtype)
    rate = roofline.gemm_rate(gpu, op)
    expected = grouped.grouped_efficiency(
        gpu, op, tile=roofline.TILE,
        overhead_k=roofline.GEMM_TILE_OVERHEAD_K * rate / gpu.gemm_ceiling("bf16"),
        stretch=1.0 + roofline.block_promotion_k(gpu, op), hopper_tiles=True,
        small_tile_rate=roofline.SMALL_TILE_RATE)
    assert roofline.RooflineModel(gpu).gemm_efficiency(op) == pytest.approx(expected)


def test_one_kernel_grouped_gemms_never_pass_their_implementation_fraction():
    """Row tiles, waves and the tile overhead only take away from GROUPED_OF_GEMM."""
    gpu = get_gpu("h100-sxm-80gb")
    for impl, frac in grouped.GROUPED_OF_GEMM.items():
        for m in (1, 100, 512, 4096):
            eff = roofline.grouped_efficiency(gpu, _experts(m, impl))
            assert 0.0 < eff <= frac


def test_cutlass_grouped_fp8_without_fast_accum_promotes_between_k_tiles():
    """torch._scaled_grouped_mm's default (use_fast_accum=False) runs CUTLASS's ptr-array FP8
    mainloop, which adds each k tile's tensor-core sums into fp32 on the CUDA cores with the
    tensor cores drained (GmmaFP8Accumulation::promote_core): the 16-bit fraction of the fp8
    peak stretched as a serial block-scaled kernel, not cuBLAS's split-accumulator MAMF. Fast
    accumulation drops the stretch; Blackwell's tensor cores accumulate in fp32 (no stretch);
    16-bit, DeepGEMM and per-expert cuBLAS grouped GEMMs are untouched."""
    h100 = get_gpu("h100-sxm-80gb")
    slow = _experts(512, "cutlass", "fp8")
    fast = Gemm("experts", 512, 1536, 2048, "fp8", 128, grouped="cutlass", fp8_fast_accum=True)
    assert roofline.grouped_serial_promotion(slow)
    assert not roofline.grouped_serial_promotion(fast)
    assert roofline.gemm_rate(h100, slow) == roofline.gemm_rate(h100, fast)
    assert roofline.block_promotion_k(h100, slow) == pytest.approx(
        h100.mamf_fraction * h100.flops("fp8") / h100.peak_flops["fp32"] / 128)
    assert roofline.block_promotion_k(h100, fast) == 0.0
    model = roofline.RooflineModel(h100)
    # PyTorch's large shapes run the slow kernel on 128x128 tiles, which do not spill: the
    # promotion alone (the 512-row groups' 128x256 tile spills: test_fp8_spill55.py)
    big_slow = Gemm("experts", 2048, 4096, 7168, "fp8", 32, grouped="cutlass")
    big_fast = replace(big_slow, fp8_fast_accum=True)
    assert 1.0 < model.time(big_slow) / model.time(big_fast) < 1.35
    for other in (_experts(512, "cutlass"), _experts(512, "deepgemm", "fp8"),
                  _experts(512, "multi_stream", "fp8"), _experts(512, "triton", "fp8")):
        assert not roofline.grouped_serial_promotion(other)
        assert roofline.block_promotion_k(h100, other) == 0.0
    b200 = get_gpu("b200-sxm-180gb")
    assert roofline.block_promotion_k(b200, slow) == 0.0
