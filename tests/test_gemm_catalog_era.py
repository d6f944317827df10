"""benchmarks/gemm_catalog_era.py: the GEMM ceiling's software era per GPU, the H100 / H200 rate
under one harness, and cuBLAS 13's Hopper tiles in the bundled kernel databases."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import roofline, split_k

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def era():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("gemm_catalog_era",
                                                  ROOT / "benchmarks" / "gemm_catalog_era.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["gemm_catalog_era"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("gemm_catalog_era", None)


def test_each_mamf_row_is_listed_with_its_table_software_and_fraction(era):
    rows = {(g, d, t): (soft, tf, frac, cat) for g, d, t, soft, tf, frac, cat in era.eras()}
    soft, tf, frac, cat = rows[("h100-sxm-80gb", "bf16", "v1")]
    assert (soft, tf, cat) == ("CUDA-12.1", 792.1, 0.801)
    assert frac == pytest.approx(792.1 / 989.4, rel=1e-3)
    assert rows[("h100-sxm-80gb", "bf16", "v2")][0] == "torch 2.7.0+cu126"
    assert rows[("h200-sxm-141gb", "bf16", "fast")][:2] == ("torch 2.13.0+cu130", 841.9)
    assert rows[("mi300x", "bf16", "v1")][0] == "ROCm-6.2"
    assert len(rows) == 18


def test_one_harness_runs_the_h200_at_the_h100s_gemm_rate(era):
    """The two measured files (torch 2.11, CUDA 13, one script, the same shapes): H200 / H100
    0.991 bf16, 0.985 fp8, and neither file's best rate above the other's by 3 %."""
    table = era.same_harness()
    assert table["bf16"][:2] == (377, pytest.approx(0.991, abs=0.002))
    assert table["fp8"][:2] == (374, pytest.approx(0.985, abs=0.002))
    for _, _, h100, h200 in table.values():
        assert abs(h200 / h100 - 1.0) < 0.03


def test_the_h200_carries_the_h100s_gemm_ceiling():
    """Same compute silicon and one harness's rates within 1.5 %: the catalog prices both GPUs'
    GEMMs (and attention, which reads the same ceiling) at one fraction of the same peaks."""
    h100, h200 = catalog_gpu("h100-sxm-80gb"), catalog_gpu("h200-sxm-141gb")
    assert h200.peak_flops == h100.peak_flops
    for dtype in ("bf16", "fp8"):
        assert h200.gemm_ceiling(dtype) / h100.gemm_ceiling(dtype) == pytest.approx(1.0)


def test_cublas_13_runs_most_of_a_llama_layer_on_tiles_the_model_lacks(era):
    """cuBLAS's nvjet kernels in the bundled H100 database's layer traces: 320x128 and 192x192
    carry most of the GEMM time, and neither is in ``roofline.gemm_tiles`` (the tile-set variants
    that add them, ``--tiles``, fit no better: RESULTS.md, gemm37)."""
    h100_db = next(p for p in era.DATABASES if p.name.startswith("h100"))
    calls, share, soft = era.census(h100_db)
    assert calls["256x128"] > calls["320x128"]  # more calls, less time: the smaller GEMMs
    assert soft == "torch 2.11.0+cu130, CUDA 13.0"
    assert share["320x128"] + share["192x192"] > 0.6
    assert sum(share.values()) == pytest.approx(1.0)
    model = {(r, c) for r, c, _ in roofline.gemm_tiles(catalog_gpu("h100-sxm-80gb"))}
    assert (320, 128) not in model and (192, 192) not in model and (256, 128) in model


def test_a_tile_variant_adds_tiles_on_hopper_only_and_restores_every_constant(era):
    before = [getattr(m, n) for m, n in era.GEMM_CONSTANTS]
    with era.tile_variant(((192, 192, 1.0),)):
        roofline.GEMM_TILE_OVERHEAD_K = 1.0
        split_k.SPLIT_K_FIXUP = 0.0
        assert (192, 192, 1.0) in roofline.gemm_tiles(catalog_gpu("h100-sxm-80gb"))
        assert roofline.gemm_tiles(catalog_gpu("a100-sxm-80gb")) == ((128, 128, 1.0),)
    assert [getattr(m, n) for m, n in era.GEMM_CONSTANTS] == before
