"""benchmarks/deepseek_v3_kernels.py: DeepSeek's profiled DualPipe pair by kernel class (the
kept figures of deepseek-ai/profile-data's train.json), the fixed fp8 GEMM grid
(``parallel.fp8_gemm_grid_excludes_exchange``, ``gemm_overlap.fixed_grid_scale``) and the
example's attention against the trace's FlashAttention-3 kernels."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import trainsim
from trainsim.pricing import COMPUTE, EP, Pricer
from trainsim.workload.layers import E5M6_CAST_BYTES, backward_of, layer_forward
from trainsim.workload.moe_dispatch import EXCHANGE_SMS
from trainsim.workload.shard import shard_of

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
try:
    import deepseek_v3_kernels as k
finally:
    sys.path.remove(str(BENCH))

KEPT = json.loads(k.KEPT.read_text())


def test_kernel_classes_by_name():
    """DeepEP's kernels by their ``::ep::`` namespace, FA3's forward and backward by ``flash::``
    (the backward's helpers with it), DeepSeek's fp8 GEMM kernels by their GemmKernel and fp8
    in the name, cuBLAS's 16-bit xmma kernels apart; casts and norms are families of the rest."""
    assert k.kernel_class("void dpsk::ep::internode::combine<false, 8>(int4*)") == "deepep"
    assert k.kernel_class("void flash::compute_attn_ws<Flash_fwd_kernel_traits<192, 128>>"
                          ) == "attention_fwd"
    assert k.kernel_class("cutlass::device_kernel<flash::FlashAttnBwdPreprocess<>>"
                          ) == "attention_bwd"
    assert k.kernel_class("cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::"
                          "GemmKernel>") == "gemm_fp8"
    assert k.kernel_class("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64"
                          ) == "gemm_16bit"
    assert k.kernel_class("void cuda::per_token_cast_to_fp8_with_channels<bf16>") == "other"
    assert k.other_family("void cuda::per_channel_cast_and_transpose<256>") == "casts"
    assert k.other_family("void layer_norm::ln_fwd_kernel<>") == "norms"
    assert k.other_family("rotary_kernel") == "rest"


def test_kept_trace_figures():
    """The kept pair: an H800's 132 SMs, every fp8 GEMM launch on 132 - DeepEP's 20 = 112 CTAs
    (the same grid where no exchange kernel runs: 10.0 of 74.5 ms, wgrad39's 13.4 %), all five
    FA3 kernel families there (four forward launches, one per layer; three backward kernels per
    layer), the compute streams' other kernels split into their families without remainder,
    and the span above the compute streams' union."""
    assert KEPT["gpu"] == "NVIDIA H800" and KEPT["num_sms"] == 132
    assert KEPT["fp8_gemm_ctas"] == [KEPT["num_sms"] - EXCHANGE_SMS["deepep"]]
    assert KEPT["fp8_gemm_without_exchange_s"] / KEPT["fp8_gemm_s"] == pytest.approx(0.134,
                                                                                     abs=0.01)
    assert KEPT["fa3_families_present"] == list(k.FA3_FAMILIES)
    assert KEPT["attention_launches"] == {"attention_fwd": 4, "attention_bwd": 12}
    other = sum(c.get("other", 0.0) for s, c in KEPT["by_stream_s"].items()
                if s not in KEPT["exchange_streams"])
    assert sum(KEPT["other_on_compute_streams_s"].values()) == pytest.approx(other, rel=1e-9)
    assert KEPT["compute_union_s"] < KEPT["span_s"] == pytest.approx(0.129012)
    tot = k.totals(KEPT)
    assert tot["gemm_fp8"] == pytest.approx(KEPT["fp8_gemm_s"], rel=1e-9)


@pytest.fixture(scope="module")
def moe_layer():
    cfg = trainsim.load_run_config(k.dsv3.CONFIG, k.DUALPIPE)
    pc = replace(cfg, parallel=replace(cfg.parallel, moe_overlap_ep_comm=True))
    return pc, layer_forward(pc, shard_of(pc), moe=True)


def _no_grid(cfg):
    return replace(cfg, parallel=replace(cfg.parallel, fp8_gemm_grid_excludes_exchange=False))


def test_the_fixed_grid_puts_fp8_gemms_on_the_exchange_left_sms(moe_layer):
    """One MoE layer of the example as a DualPipe pair prices it: each fp8 GEMM takes 132/112
    of its time on the fixed grid, every other compute op (the 16-bit router GEMM, attention,
    elementwise) the same; each pooled all-to-all's SM charge is the all-SM pricing's times the
    share of the layer's compute off the fixed grid, the full-wave norms' extra wave apart
    (``roofline.full_wave_extra``, one wave beside DeepEP's 20 SMs; both hidden in full)."""
    cfg, ops = moe_layer
    assert cfg.parallel.fp8_gemm_grid_excludes_exchange  # the example's setting
    base, order = Pricer(_no_grid(cfg)).price_ops(ops)
    grid, order_g = Pricer(cfg).price_ops(ops)
    assert [o.name for o in order] == [o.name for o in order_g]
    scale = 132 / 112
    fixed = 0.0
    for (c, t, n), (cg, tg, _), op in zip(base.segments, grid.segments, order):
        if c == COMPUTE and k.on_grid(op):
            assert tg == pytest.approx(t * scale, rel=1e-12)
            fixed += tg
        elif c == COMPUTE:
            assert tg == t
    compute = sum(t for c, t, _ in grid.segments if c == COMPUTE)
    compute_b = sum(t for c, t, _ in base.segments if c == COMPUTE)
    wave = sum(t for (c, t, _), op in zip(grid.segments, order)
               if c == COMPUTE and getattr(op, "full_wave", False))
    assert 0.0 < wave < 0.05 * compute  # the layer's norms
    off = 1 - fixed / compute
    assert 0.2 < off < 0.8
    held = EXCHANGE_SMS["deepep"] / 132
    ratio = (held * (1 - (fixed + wave) / compute) + wave / compute) \
        / (held * (1 - wave / compute_b) + wave / compute_b)
    eps = [(t, tg) for (c, t, _), (_, tg, _) in zip(base.segments, grid.segments) if c == EP]
    assert len(eps) >= 2
    for t, tg in eps:
        assert tg == pytest.approx(t * ratio, rel=1e-9)


def test_the_fixed_grid_holds_in_the_lone_passes_too():
    """DeepGEMM's SM count is process-wide: under the DualPipe settings the lone passes
    (blocking all-to-alls, no exchange beside them) run their fp8 GEMMs on 112 SMs as well,
    and an NCCL all-to-all, holding no SMs of its own, leaves the grid all SMs."""
    cfg = trainsim.load_run_config(k.dsv3.CONFIG, k.DUALPIPE)
    assert not cfg.parallel.moe_overlap_ep_comm
    ops = layer_forward(cfg, shard_of(cfg), moe=True)
    base, order = Pricer(_no_grid(cfg)).price_ops(ops)
    grid, _ = Pricer(cfg).price_ops(ops)
    for (c, t, _), (_, tg, _), op in zip(base.segments, grid.segments, order):
        assert tg == pytest.approx(t * (132 / 112 if c == COMPUTE and k.on_grid(op) else 1.0),
                                   rel=1e-12)
    nccl = trainsim.load_run_config(k.dsv3.CONFIG, ["parallel.moe_token_dispatcher_type=alltoall"])
    assert nccl.parallel.fp8_gemm_grid_excludes_exchange and Pricer(nccl).grid_scale == 1.0


def test_flash3_prices_the_traces_attention_and_the_stand_in_does_not():
    """The middle pair's attention (4 layers' forward beside 4 layers' backward): FA3, the
    example's kernel, as trainsim prices it within 10 % of the trace's FA3 forward kernels and
    within 30 % of its backward (+26 % since bwd43 paced FA3's hd192 backward matmuls by shared
    memory, 1.20; +7 % before: a lead, DeepSeek's H800 trace against bwd43's H200 cuDNN rows);
    the FA2 stand-in the example priced until dsv3k43 at more than 1.5x both (2.1x, 1.9x)."""
    tot = k.totals(KEPT)
    fa3 = k.pair(trainsim.load_run_config(k.dsv3.CONFIG, k.DUALPIPE))
    fa2 = k.pair(trainsim.load_run_config(k.dsv3.CONFIG, k.DUALPIPE + k.FLASH2))
    for part, band in (("attention_fwd", 0.10), ("attention_bwd", 0.30)):
        assert fa3["middle_by_class_s"][part] == pytest.approx(tot[part], rel=band)
        assert fa2["middle_by_class_s"][part] > 1.5 * tot[part]


@pytest.mark.slow
def test_the_step_under_the_traces_kernels():
    """The DualPipe step: the FA2 stand-in adds ~2.1 s to the example (its attention), the
    fixed grid 0.76 s (the lone passes' fp8 GEMMs on 112 SMs too); the example is 12.4 % under
    DeepSeek's measured 19.926 s, where the stand-in on all SMs sits 6.1 % under it; the middle
    pair within 6 % of the profiled 129.0 ms with both, outside it with the stand-in."""
    res = k.run(KEPT)["variants"]
    ex, all_sms = res["example (flash3, fp8 GEMMs on 112 SMs)"], res["flash3, fp8 GEMMs on all SMs"]
    fa2, old = res["FA2 stand-in, fp8 GEMMs on 112 SMs"], \
        res["FA2 stand-in, all SMs (the example before dsv3k43)"]
    assert fa2["iteration_time_s"] - ex["iteration_time_s"] == pytest.approx(2.07, abs=0.2)
    assert ex["iteration_time_s"] - all_sms["iteration_time_s"] == pytest.approx(0.76, abs=0.1)
    assert -0.14 < ex["vs_measured_step"] < -0.11
    assert old["vs_measured_step"] == pytest.approx(-0.061, abs=0.005)  # 18.70 s
    assert ex["middle_pair_s"] == pytest.approx(0.129, rel=0.06)
    assert fa2["middle_pair_s"] > 0.129 * 1.06


def test_the_e5m6_copy_of_the_attention_output_costs_a_cast_each_way(moe_layer):
    """``training.attention_output_e5m6`` (DeepSeek-V3 §3.3.3; the trace's
    ``per_token_cast_to_fp8_with_fp8_special_fmt`` forward and ``per_token_cast_back_special_fmt``
    backward, one each a layer): one cast of the attention output before the out-projection's
    fp8 cast, 16 bits read, 12 bits and a scale per 128 written, its cast back in the backward;
    without the setting, or in bf16, no such op, and the grid off by default."""
    cfg, ops = moe_layer
    sh = shard_of(cfg)
    names = [o.name for o in ops]
    i = names.index("attn_out.e5m6_cast")
    assert names[i + 1] == "out_proj.cast_transpose"
    elems = cfg.training.seq_length * cfg.model.v_dim
    assert ops[i].bytes == pytest.approx(elems * (2 + 1.5 + 4 / 128)) \
        == pytest.approx(elems * E5M6_CAST_BYTES)
    back = [o for o in backward_of(ops, sh) if o.name == "attn_out.e5m6_cast.bwd"]
    assert len(back) == 1 and back[0].bytes == pytest.approx(ops[i].bytes)
    for change in ({"attention_output_e5m6": False}, {"dtype": "bf16"}):
        c = replace(cfg, training=replace(cfg.training, **change))
        assert "attn_out.e5m6_cast" not in [o.name for o in layer_forward(c, shard_of(c), True)]
    assert not trainsim.ParallelConfig().fp8_gemm_grid_excludes_exchange
