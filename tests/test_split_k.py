"""Split-k's serial fix-up (compute.split_k): each part of a split tile beyond the first adds
its sum into the tile in turn, so the library splits no deeper than pays."""

import itertools

from trainsim.catalog import gpu
from trainsim.compute import roofline, split_k
from trainsim.compute.roofline import RooflineModel
from trainsim.workload.ops import Gemm


def test_the_split_chosen_is_the_fastest_allowed():
    """best_split returns the part count with the fewest k-steps among 1..most."""
    for k, most, overhead in itertools.product((512, 2048, 7168, 28672), (1, 2, 5, 16, 132),
                                               (100.0, 250.0, 460.0)):
        steps = {s: split_k.tile_steps(k, s, overhead) for s in range(1, most + 1)}
        assert steps[split_k.best_split(k, most, overhead)] == min(steps.values())


def test_a_split_stops_where_another_fixup_costs_more_than_it_saves(monkeypatch):
    """With the fix-up a 4,096-deep tile over 16 idle SMs splits about sqrt(k / fix-up) ways,
    not 16; without it (the model before the fix-up) as deep as the SMs allow."""
    assert 1 < split_k.best_split(4096, 16, 250.0) < 16
    monkeypatch.setattr(split_k, "SPLIT_K_FIXUP", 0.0)
    assert split_k.best_split(4096, 16, 250.0) == 16


def test_the_fixup_slows_a_split_gemm_and_no_other(monkeypatch):
    """A 17-tile GEMM (split over idle SMs) is slower with the serial fix-up than without; a
    many-wave GEMM (no split) is priced the same either way."""
    h100 = gpu("h100-sxm-80gb")
    few, many = Gemm("few", 128, 2112, 7168), Gemm("many", 8192, 8192, 7168)
    with_fixup = [RooflineModel(h100).gemm_efficiency(g) for g in (few, many)]
    monkeypatch.setattr(split_k, "SPLIT_K_FIXUP", 0.0)
    without = [RooflineModel(h100).gemm_efficiency(g) for g in (few, many)]
    assert with_fixup[0] < without[0] and with_fixup[1] == without[1]


def test_per_expert_gemms_pay_the_same_fixup(monkeypatch):
    """Transformer Engine's per-expert cuBLAS GEMMs (multi_stream) split k like a dense GEMM,
    so they pay the fix-up too."""
    h100 = gpu("h100-sxm-80gb")
    op = Gemm("experts", 128, 1024, 8192, batch=8, grouped="multi_stream")  # 32 tiles a round
    with_fixup = roofline.grouped_efficiency(h100, op)
    monkeypatch.setattr(split_k, "SPLIT_K_FIXUP", 0.0)
    assert with_fixup < roofline.grouped_efficiency(h100, op)
