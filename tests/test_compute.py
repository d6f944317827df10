"""Compute model against published per-layer times (Korthikanti et al. 2022, Table 4)."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict
from trainsim.catalog import gpu
from trainsim.compute import RooflineModel
from trainsim.simulator import Pricer
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Gemm
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of


def layer_ms(sp: bool, recompute: str) -> tuple[float, float]:
    cfg = run_config_from_dict({
        "model": "gpt-22b",
        "parallel": {"tp": 8, "sequence_parallel": sp, "recompute": recompute},
        "training": {"global_batch_size": 4, "micro_batch_size": 4, "seq_length": 2048,
                     "dtype": "bf16", "attention": "unfused"},
        "cluster": {"node": "dgx-a100", "num_gpus": 8}})
    pricer, sh = Pricer(cfg), shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    bwd = layer_recompute(cfg, sh, fwd) + backward_of(fwd, sh)
    return pricer.price(fwd).duration_s * 1e3, pricer.price(bwd).duration_s * 1e3


@pytest.mark.parametrize("sp,recompute,fwd_ms,bwd_ms", [
    (False, "none", 7.7, 11.9),
    (True, "selective", 7.2, 13.1),
    (False, "full", 7.7, 19.5),
])
def test_korthikanti_table4_layer_times_within_10_percent(sp, recompute, fwd_ms, bwd_ms):
    """The 22B layer (A100, TP8, micro-batch 4) matches the published forward/backward times."""
    f, b = layer_ms(sp, recompute)
    assert f == pytest.approx(fwd_ms, rel=0.10)
    assert b == pytest.approx(bwd_ms, rel=0.10)


def test_large_gemm_runs_near_the_sustained_ceiling():
    """A big square GEMM runs at the GPU's sustained matmul rate, not the datasheet peak."""
    m = RooflineModel(gpu("h100-sxm-80gb"))
    op = Gemm("big", 8192, 8192, 8192)
    achieved = op.flops / m.time(op)
    assert 0.6 * 989.4e12 < achieved < 0.75 * 989.4e12


def test_skinny_gemm_is_less_efficient_than_a_big_one():
    """Wave quantization and memory traffic make a skinny GEMM reach a lower FLOP rate."""
    m = RooflineModel(gpu("a100-sxm-80gb"))
    big, skinny = Gemm("big", 8192, 8192, 8192), Gemm("skinny", 64, 8192, 8192)
    assert skinny.flops / m.time(skinny) < 0.5 * big.flops / m.time(big)


def test_a_partial_second_wave_is_split_along_k():
    """A GEMM with 1.2 waves of 128x128 tiles shares its last wave's tiles out by k over the
    SMs that wave leaves idle (stream-K's hybrid, cuBLAS split-k): it runs near its tiles'
    rate (less the split's serial fix-ups, ``compute.split_k``), not at 1.2/2 of it; a grid
    of 5.2 waves still runs whole waves."""
    h100 = gpu("h100-sxm-80gb")
    m = RooflineModel(h100)
    one = Gemm("one-wave", 128 * 12, 128 * 11, 8192)  # 132 tiles: exactly one wave
    partial = Gemm("1.2-waves", 128 * 12, 128 * 13, 8192)  # 156 tiles
    many = Gemm("5.2-waves", 128 * 52, 128 * 13, 8192)  # 676 tiles
    assert m.gemm_efficiency(partial) > 0.9 * m.gemm_efficiency(one)
    assert m.gemm_efficiency(many) < 0.9 * m.gemm_efficiency(one)  # 676 / 792 of it


def test_hopper_gemms_choose_the_faster_of_a_small_and_a_big_output_tile():
    """On Hopper the library runs whichever tile is faster: a many-wave grid runs 128x256
    tiles at the full rate; a grid whose 128x128 tiles leave a partial third wave
    (1024 x 4608: 288 tiles, 2.2 waves) runs 144 big tiles in one wave plus a k-split
    remainder; where neither helps, 128x128 at ``SMALL_TILE_RATE``. Ampere (register-fed
    tensor cores) and Blackwell (tensor-memory accumulators) keep the one 128x128 tile at the
    full rate."""
    from trainsim.compute import roofline

    h100, a100 = gpu("h100-sxm-80gb"), gpu("a100-sxm-80gb")
    m = RooflineModel(h100)
    overhead = roofline.GEMM_TILE_OVERHEAD_K
    big = Gemm("big", 128 * 66, 256 * 8, 8192)  # 528 big tiles: 4 whole waves, no padding
    assert m.gemm_efficiency(big) == pytest.approx(8192 / (8192 + overhead))
    odd = Gemm("odd", 1024, 4608, 12288)
    small_only = roofline.SMALL_TILE_RATE * 288 / 132 / 3 * 12288 / (12288 + overhead)
    assert m.gemm_efficiency(odd) > 1.2 * small_only
    assert [t[:2] for t in roofline.gemm_tiles(a100)] == [(128, 128)]
    assert roofline.gemm_tiles(a100)[0][2] == 1.0
    assert len(roofline.gemm_tiles(gpu("h200-sxm-141gb"))) == 3
    assert len(roofline.gemm_tiles(gpu("b200-sxm-180gb"))) == 1


def test_fp8_gemm_is_faster_than_bf16_on_hopper():
    """An fp8 GEMM on H100 is faster than the same bf16 GEMM, but less than twice as fast."""
    m = RooflineModel(gpu("h100-sxm-80gb"))
    t16 = m.time(Gemm("g", 8192, 8192, 8192, "bf16"))
    t8 = m.time(Gemm("g", 8192, 8192, 8192, "fp8"))
    assert t16 / 2 < t8 < t16


def test_sliding_window_limits_attention_work():
    """A causal window of w tokens computes s*w - w(w-1)/2 query-key pairs, full causal s(s+1)/2."""
    from trainsim.workload.ops import Attention

    full = Attention("a", 1, 8, 8, 8192, 8192, 128)
    window = Attention("a", 1, 8, 8, 8192, 8192, 128, window=1024)
    assert full.pairs == 8192 * 8193 / 2
    assert window.pairs == 8192 * 1024 - 1024 * 1023 / 2
    m = RooflineModel(gpu("h100-sxm-80gb"))
    assert m.time(window) < 0.3 * m.time(full)
