"""Transformer Engine's fp8 quantizers beyond the sequence-parallel gather
(tests/test_fp8_sp_gather.py): no transposes where fp8 GEMMs take non-TN layouts (Blackwell,
TE >= 2.0), the norm of LayerNormLinear / LayerNormMLP quantizing its own output, and MXFP8's
all-gathers moving their scales and, for an output gradient, both layouts.

The slice: h 4096, ffn 16384 (GeLU), TP 4, one sequence of 2048 tokens."""

from __future__ import annotations

import dataclasses

from helpers import FP8_SLICE, fp8_slice_cfg

from trainsim.catalog import gpu
from trainsim.catalog.defaults import gpu_arch
from trainsim.config import RunConfig
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of

H, F, T, TP = FP8_SLICE
LOCAL = T // TP


def _cfg(recipe: str, framework: str | None = "megatron-bridge", version: str | None = "26.04",
         gpu_name: str = "h100-sxm-80gb", sp: bool = True) -> RunConfig:
    return fp8_slice_cfg(recipe, framework, version, gpu_name, sp)


def _ops(cfg: RunConfig) -> dict:
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    return {op.name: op for op in [*fwd, *backward_of(fwd, sh)]}


def test_blackwell_local_casts_write_no_transpose():
    """A row-parallel GEMM's local input (out_proj: 2048 x 1024) under current scaling: read
    2 for the amax, read 2, write 1, plus the fp8 transpose's 1 below Blackwell."""
    hopper = _ops(_cfg("current", version="25.11"))
    blackwell = _ops(_cfg("current", version="25.11", gpu_name="b200-sxm-180gb"))
    assert hopper["out_proj.cast_transpose"].bytes == T * (H // TP) * (2 + 2 + 1 + 1)
    assert blackwell["out_proj.cast_transpose"].bytes == T * (H // TP) * (2 + 2 + 1)
    # its output gradient, cast on the 2048 x 1024 rows of fc1's (column-parallel) gradient
    assert blackwell["fc1.grad_cast_transpose"].bytes == T * (F // TP) * (2 + 2 + 1)


def _on(spec, recipe: str = "current") -> dict:
    cfg = _cfg(recipe, version="25.11")
    return _ops(dataclasses.replace(cfg, cluster=dataclasses.replace(cfg.cluster, gpu=spec)))


def test_sm120_has_fp4_cores_but_keeps_the_transpose():
    """TE's non-TN check is by compute capability (v2.8 nvte_is_non_tn_fp8_gemm_supported:
    100-119 or >= 130), not by fp4 cores: an sm120 GPU (B200's peaks, capability 120) writes
    the fp8 transpose as Hopper does; one at 103 or 130 does not."""
    b200 = gpu("b200-sxm-180gb")
    assert b200.compute_capability == 100
    transposed = T * (H // TP) * (2 + 2 + 1 + 1)
    sm120 = dataclasses.replace(b200, name="sm120", compute_capability=120)
    assert _on(sm120)["out_proj.cast_transpose"].bytes == transposed
    for cc in (103, 130):
        spec = dataclasses.replace(b200, name=f"sm{cc}", compute_capability=cc)
        assert _on(spec)["out_proj.cast_transpose"].bytes == transposed - T * (H // TP)
    # a GPU file that states no capability keeps the rule it had: fp4 cores are sm100
    unstated = dataclasses.replace(b200, name="mine", compute_capability=None)
    assert unstated.sm_arch == 100 and unstated.fp8_any_layout
    assert gpu_arch("b200-sxm-180gb") == "sm100" and gpu_arch("h100-sxm-80gb") == "sm90"
    assert gpu_arch("a100-sxm-80gb") == "sm80" and gpu_arch("mi300x") == "amd"  # ROCm builds choose by vendor


def test_te1_on_blackwell_keeps_the_transpose():
    """TE 1.x (MLPerf 4.1's NeMo 24.09) has no non-TN check: cast_transpose writes both."""
    ops = _ops(_cfg("delayed", framework="mlperf-nemo", version="4.1",
                    gpu_name="b200-sxm-180gb"))
    assert ops["out_proj.cast_transpose"].bytes == T * (H // TP) * (2 + 1 + 1)


def test_mxfp8_keeps_both_layouts_on_blackwell():
    ops = _ops(_cfg("mxfp8", gpu_name="b200-sxm-180gb"))
    assert ops["out_proj.cast_transpose"].bytes == T * (H // TP) * (2 + 2 + 2 / 32)


def test_norm_writes_fp8_and_its_transpose_follows_without_sp():
    """Delayed scaling, TP without SP: no cast of qkv's or fc1's input (2048 x 4096): the
    norm wrote fp8; the transpose reads and writes one byte each; none on Blackwell."""
    ops = _ops(_cfg("delayed", framework="mlperf-nemo", version="4.0", sp=False))
    for gemm in ("qkv_proj", "fc1"):
        assert f"{gemm}.cast_transpose" not in ops
        assert ops[f"{gemm}.norm_fp8_transpose"].bytes == T * H * 2
        assert f"{gemm}.norm_fp8_transpose.bwd" not in ops
    assert ops["out_proj.cast_transpose"].bytes == T * (H // TP) * 4  # no norm before it
    ops = _ops(_cfg("delayed", version="25.11", gpu_name="b200-sxm-180gb", sp=False))
    assert not [name for name in ops if name.startswith(("qkv_proj.", "fc1.")) and
                ("cast" in name or "transpose" in name) and ".grad_" not in name]


def test_current_scaling_norm_skips_the_amax_pass_without_sp():
    ops = _ops(_cfg("current", version="25.11", sp=False))
    assert ops["qkv_proj.cast_transpose"].bytes == T * H * (2 + 1 + 1)
    assert ops["qkv_proj.cast_transpose"].kernels == 2
    assert ops["out_proj.cast_transpose"].kernels == 3  # amax, scale, cast


def test_mxfp8_norm_then_cast():
    """MXFP8 runs the norm unfused: the local rows are cast to both layouts with scales
    (on Blackwell: TE refuses MXFP8 below compute capability 10.0)."""
    ops = _ops(_cfg("mxfp8", gpu_name="b200-sxm-180gb"))
    assert ops["fc1.fp8_cast"].bytes == LOCAL * H * (2 + 2 + 2 / 32)


def test_mxfp8_gathers_scales_and_the_gradient_in_both_layouts():
    """Forward input row-wise: 1 byte and a 1-byte scale per 32; the row-parallel output
    gradient both layouts: twice that; the input re-gather for wgrad column-wise: once
    (on Blackwell: TE refuses MXFP8 below compute capability 10.0)."""
    ops = _ops(_cfg("mxfp8", gpu_name="b200-sxm-180gb"))
    assert ops["attn.all_gather"].bytes == T * H * (1 + 1 / 32)
    assert ops["mlp.all_gather.bwd_regather"].bytes == T * H * (1 + 1 / 32)
    assert ops["mlp.reduce_scatter.bwd"].bytes == T * H * 2 * (1 + 1 / 32)
    delayed = _ops(_cfg("delayed", version="25.11"))
    assert delayed["mlp.reduce_scatter.bwd"].bytes == T * H
    assert delayed["attn.all_gather"].bytes == T * H
