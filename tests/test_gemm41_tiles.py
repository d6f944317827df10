"""GEMM records read against the tiles their own cuBLAS ran (``compute.database.TRACED_TILES``,
off as shipped; benchmarks/gemm41_tiles.py)."""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import gemm41_tiles as g41

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import chain, database, roofline
from trainsim.compute.roofline import GEMM_TILE_OVERHEAD_K, RooflineModel
from trainsim.validate import kernels as vk
from trainsim.workload.ops import Gemm

QKV_FWD = Gemm("qkv", 2048, 4608, 12288, "bf16")  # GPT-3 175B, TP 8, 2,048 tokens


def test_traced_tiles_read_from_kernel_names():
    """A cuBLAS Hopper kernel's name gives its output tile, in both orientations; tiles the
    roofline already has, tiles narrower than 128x256 and other kernels add nothing."""
    names = ["nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT",
             "nvjet_sm90_tst_192x192_64x3_1x2_h_bz_coopB_NTN",
             "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",  # shipped already
             "nvjet_sm90_tst_128x192_64x4_1x2_h_bz_coopA_NNT",  # narrower than 128x256
             "flash_fwd_kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64"]
    assert roofline.traced_tiles(names) == ((128, 320, 1.0), (192, 192, 1.0), (320, 128, 1.0))
    assert roofline.traced_tiles([]) == ()


def test_bundled_databases_trace_the_census_tiles():
    """Both bundled databases' layer traces (torch 2.11 + CUDA 13) name 320x128 and 192x192
    kernels, as the 37th session's census found."""
    for name in ("h100-sxm-80gb", "h200-sxm-141gb"):
        path = chain.bundled_database(catalog_gpu(name))
        layers = database._read_json(path)["layers"]
        assert database.layer_tiles(layers) == ((128, 320, 1.0), (192, 192, 1.0), (320, 128, 1.0))


def test_qkv_forward_fills_two_waves_of_192x192_tiles():
    """Hand count on the H200's 132 SMs: 16 x 18 = 288 tiles of 128x256 (2.18 waves, run as 3),
    16 x 36 = 576 of 128x128 (4.36, run as 5), 11 x 24 = 264 of 192x192: exactly 2 waves, each
    tile's k loop 12,288 + 219 k-steps, 2,048 of its 2,112 padded rows useful."""
    spec = catalog_gpu("h200-sxm-141gb")
    k, oh = QKV_FWD.k, GEMM_TILE_OVERHEAD_K
    eff = roofline.tile_grid_efficiency(spec.num_sms, QKV_FWD, 192, 192, oh, 1.0)
    assert math.isclose(eff, (2048 / 2112) * (264 / 264) * k / (k + oh), rel_tol=1e-12)
    shipped = RooflineModel(spec).gemm_efficiency(QKV_FWD)
    wide = roofline.tile_grid_efficiency(spec.num_sms, QKV_FWD, 128, 256, oh, 1.0)
    assert math.isclose(wide, 288 / 132 / 3 * k / (k + oh), rel_tol=1e-12)
    traced = RooflineModel(spec, tiles=((192, 192, 1.0),)).gemm_efficiency(QKV_FWD)
    assert shipped < 0.84 and traced > 0.95 and math.isclose(traced, eff, rel_tol=1e-12)


def test_extra_tiles_only_on_hopper():
    """Tiles traced on Hopper never reach a GPU whose MMA is not fed from shared memory."""
    a100 = catalog_gpu("a100-sxm-80gb")
    assert RooflineModel(a100, tiles=((192, 192, 1.0),)).extra_tiles == ()


def test_shipped_off_and_chain_unchanged():
    """As shipped the flag is off: a loaded database carries no traced tile and the chain prices
    a database GEMM against the plain roofline's tiles (its roofline differs only by FA2's
    backward tail, ``database.RECORD_BWD_TAIL``)."""
    assert database.TRACED_TILES is False
    spec = catalog_gpu("h200-sxm-141gb")
    with g41.traced(False):
        model = chain.compute_model_for(spec, "auto", catalog_gpu)
        assert model.db is not None and model.db.tiles == ()
        assert model.db_roofline.extra_tiles == model.roofline.extra_tiles == ()
        assert model.db_roofline.bwd_tail is database.RECORD_BWD_TAIL


def test_traced_reading_prices_the_measured_qkv_row():
    """With the flag on, the H200's measured qkv forward (792.7 TFLOP/s, never fitted) is priced
    within 5 % instead of 14.5 % slow, and every GEMM row of that file within 8 %."""
    with open(g41.S41, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["kind"] == "gemm"]
    qkv = next(r for r in rows if r["id"] == "dc41-h200-gpt3tp8-qkv-fwd-bf16")
    with g41.traced(False):
        off = vk.predict_kernel_row(qkv)
    with g41.traced(True):
        on = vk.predict_kernel_row(qkv)
        worst = max(vk.predict_kernel_row(r).ape for r in rows)
    assert off.predicted < 0.87 * off.measured
    assert abs(on.predicted / on.measured - 1) < 0.05 and worst < 0.08
    assert database.TRACED_TILES is False


@pytest.mark.slow
def test_left_out_spread():
    """Priced without its own record, the TP 8 rows' shape spread shrinks under the traced
    tiles while the 377-shape files' stays within 0.001; fractional waves widen it there."""
    shipped, traced, frac = (g41.left_out(r) for r in ("shipped", "traced", "fractional"))
    key = ("h200-sxm-141gb", "kernels_h200_s41.csv", "bf16")
    assert traced[key]["sd"] < 0.5 * shipped[key]["sd"]
    for gpu, name in (("h100-sxm-80gb", "kernels_h100_measured.csv"),
                      ("h200-sxm-141gb", "kernels_h200_measured.csv")):
        k = (gpu, name, "bf16")
        assert abs(traced[k]["sd"] - shipped[k]["sd"]) < 0.001 < frac[k]["sd"] - shipped[k]["sd"]
