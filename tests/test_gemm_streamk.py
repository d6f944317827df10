"""benchmarks/gemm_streamk.py: the stream-K partial-wave experiment reduces to the shipped model
where it does not apply, and leaves the model as it found it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.catalog import gpu
from trainsim.compute import RooflineModel, roofline, split_k
from trainsim.workload.ops import Gemm

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def streamk():
    return load_script(ROOT / "benchmarks" / "gemm_streamk.py")


def test_a_whole_or_many_wave_grid_is_priced_as_shipped(streamk):
    # 2 x 132 tiles: whole waves; 10 x 132 + 5: past SPLIT_K_MAX_WAVES, whole waves of whole tiles
    for m, n in ((2 * 128, 132 * 128), (128 * 1325, 128)):
        op = Gemm("g", m, n, 4096, "bf16")
        assert streamk.streamk_grid_efficiency(132, op, 128, 128, 250.0, 1.0) == \
            roofline.tile_grid_efficiency(132, op, 128, 128, 250.0, 1.0)


def test_the_partial_wave_shared_by_every_sm_by_hand(streamk):
    """96 tiles on 148 SMs: shipped, one unsplit part (148 // 96 = 1) on 96 SMs; stream-K,
    96 x 4096 / 148 k-steps on each SM plus the tile cost and two parts' fix-up."""
    op = Gemm("g", 256, 6144, 4096, "bf16")
    shipped = roofline.tile_grid_efficiency(148, op, 128, 128, 250.0, 1.0)
    assert shipped == pytest.approx(96 * 4096 / 148 / (4096 + 250))
    steps = 96 * 4096 / 148 + 250 * (1 + (math.ceil(148 / 96) - 1) * split_k.SPLIT_K_FIXUP)
    assert streamk.streamk_grid_efficiency(148, op, 128, 128, 250.0, 1.0) == \
        pytest.approx(96 * 4096 / 148 / steps)
    assert streamk.streamk_grid_efficiency(148, op, 128, 128, 250.0, 1.0) > 1.4 * shipped


def test_the_variants_price_only_their_gpus_and_restore_the_model(streamk):
    op = Gemm("g", 256, 6144, 4096, "bf16")

    def times() -> tuple[float, float]:
        return (RooflineModel(gpu("b200-sxm-180gb")).time(op),
                RooflineModel(gpu("h100-sxm-80gb")).time(Gemm("g", 1280, 2560, 8192, "bf16")))

    before = times()
    with streamk.variant("blackwell"):
        b200, h100 = times()
    assert b200 < 0.8 * before[0] and h100 == before[1]
    with streamk.variant("all"):
        assert times()[1] < before[1]
    assert times() == before
    assert roofline.tile_grid_efficiency is streamk.SHIPPED_GRID


def test_the_unchosen_b200_source_moves_only_where_a_partial_wave_is_split(streamk):
    """pytorch/ao #2427's squares: only 2,048^3 (256 tiles, 1.7 waves on 148 SMs) has a
    partial wave the stream-K share beats; 1,024^3 keeps its 2-part split, the rest are
    whole-wave grids or past SPLIT_K_MAX_WAVES."""
    shipped = streamk.torchao_b200()
    with streamk.variant("blackwell"):
        moved = streamk.torchao_b200()
    assert [n for n in shipped if moved[n] != shipped[n]] == [2048]
    assert moved[2048] < shipped[2048]
