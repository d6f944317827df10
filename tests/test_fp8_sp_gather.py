"""Transformer Engine under sequence parallelism casts the rank's own rows of an fp8 GEMM
operand, then all-gathers the 1-byte data: a column-parallel GEMM's input in the forward
(module/linear.py, layernorm_linear.py, layernorm_mlp.py) and a row-parallel GEMM's output
gradient in the backward (module/base.py ``grad_output_preprocess``). Per-tensor scaled fp8
gathers row-wise data only, so the cast writes no transpose and the gathered tensor is
transposed for wgrad (``tex.fp8_transpose``) where fp8 GEMMs are TN-only (before Blackwell).

The slice: h 4096, ffn 16384 (GeLU), TP 4 with SP, one sequence of 2048 tokens: 512 rows
per rank before the gather, 2048 after."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import FP8_SLICE, fp8_slice_cfg, layer_ops

from trainsim.pricing import Pricer

H, F, T, TP = FP8_SLICE
LOCAL = T // TP


def test_gathered_input_is_cast_on_local_rows_without_transpose():
    """Delayed scaling: the norm of LayerNormLinear / LayerNormMLP writes the 512 x 4096 local
    rows in fp8 itself, so no cast runs before the gather (``Shard.fp8_norm_quantize``); the
    all-gather moves 2048 x 4096 bytes; the row-parallel GEMMs' local inputs are cast alone
    under this TE 1.6 (read 2, write 1: ``shard.te_row_cast_only``), in one cast-transpose
    from TE 2.0."""
    fwd, _ = layer_ops(fp8_slice_cfg())
    for gemm in ("qkv_proj", "fc1"):
        assert f"{gemm}.cast_transpose" not in fwd
        assert f"{gemm}.fp8_cast" not in fwd
    assert fwd["attn.all_gather"].bytes == T * H
    assert fwd["out_proj.fp8_cast"].bytes == T * (H // TP) * 3  # read 2, write 1
    assert fwd["fc2.fp8_cast"].bytes == T * (F // TP) * 3
    fwd, _ = layer_ops(fp8_slice_cfg(framework="megatron-core", version="0.12"))  # TE 2.2
    assert fwd["out_proj.cast_transpose"].bytes == T * (H // TP) * 4  # read 2, write 1 + 1
    assert fwd["fc2.cast_transpose"].bytes == T * (F // TP) * 4


def test_current_scaling_casts_the_local_rows_with_the_norms_amax():
    """Current scaling: the norm writes 16 bits and their amax; the cast reads 2 and writes 1
    byte on the local rows, after the scale is computed (two kernels, no amax pass)."""
    fwd, _ = layer_ops(fp8_slice_cfg("current"))
    assert fwd["qkv_proj.fp8_cast"].bytes == LOCAL * H * (2 + 1)
    assert fwd["qkv_proj.fp8_cast"].kernels == 2  # scale, cast


def test_backward_transposes_the_gathered_input_and_gathers_the_gradient_in_fp8():
    """fc1's wgrad reads the re-gathered input's transpose (read 1, write 1 byte on 2048 x
    4096), made after the re-gather and before the wgrad; fc2's output gradient is cast on
    its 512 local rows (3 bytes), gathered, and transposed on all 2048 (2 bytes)."""
    _, bwd = layer_ops(fp8_slice_cfg())
    names = [op.name for op in bwd]
    by = {op.name: op for op in bwd}
    assert by["fc1.input_fp8_transpose"].bytes == T * H * 2
    at = names.index("fc1.input_fp8_transpose")
    assert names.index("mlp.all_gather.bwd_regather") < at < names.index("fc1.wgrad")
    assert by["mlp.all_gather.bwd_regather"].bytes == T * H
    assert "fc2.grad_cast_transpose" not in by
    assert by["fc2.grad_fp8_cast"].bytes == LOCAL * H * 3
    assert by["fc2.grad_fp8_transpose"].bytes == T * H * 2
    assert by["mlp.reduce_scatter.bwd"].bytes == T * H  # the gradient gathered in fp8
    # a column-parallel GEMM's output gradient is local: cast and transposed in one pass
    assert by["fc1.grad_cast_transpose"].bytes == T * (F // TP) * 4


def test_blackwell_gemms_read_either_layout_so_nothing_is_transposed():
    """TE >= 2.0 (Megatron-Bridge) on Blackwell: no transposes; TE 1.x (MLPerf 4.1's NeMo)
    has no such check, and transposes the gathered operands as on Hopper."""
    fwd, bwd = layer_ops(fp8_slice_cfg("current", framework="megatron-bridge", version="25.11",
                                       gpu_name="b200-sxm-180gb"))
    assert fwd["fc1.fp8_cast"].bytes == LOCAL * H * 3
    assert not [op.name for op in bwd if "fp8_transpose" in op.name]
    _, bwd = layer_ops(fp8_slice_cfg(version="4.1", gpu_name="b200-sxm-180gb"))
    assert {op.name for op in bwd if "fp8_transpose" in op.name} >= {
        "fc1.input_fp8_transpose", "fc2.grad_fp8_transpose"}


def test_mxfp8_casts_both_layouts_on_local_rows():
    """MXFP8 gathers column-wise data too: the local cast writes both layouts and their
    8-bit scales (one per 32 elements each), and no transpose follows (on Blackwell: TE
    refuses MXFP8 below compute capability 10.0)."""
    fwd, bwd = layer_ops(fp8_slice_cfg("mxfp8", gpu_name="b200-sxm-180gb"))
    assert fwd["fc1.fp8_cast"].bytes == LOCAL * H * (2 + 2 + 2 / 32)
    assert not [op.name for op in bwd if "fp8_transpose" in op.name]


def test_frameworks_without_the_mechanism_cast_the_gathered_rows():
    """A run naming no framework keeps the full-rows cast-transpose after the gather."""
    fwd, bwd = layer_ops(fp8_slice_cfg(framework=None, version=None))
    assert "fc1.fp8_cast" not in fwd
    assert fwd["fc1.cast_transpose"].bytes == T * H * 4
    assert not [op.name for op in bwd if "fp8_" in op.name and "transpose" in op.name
                and "cast" not in op.name]


def test_current_scaling_reduces_each_gathered_operands_amax_over_tp():
    """Current scaling: the four gathered operands of a layer (qkv's and fc1's inputs, the
    out-projection's and fc2's output gradients) each all-reduce one fp32 amax over TP; the
    row-parallel inputs are local and keep their own amax; delayed scaling reduces none."""
    fwd, bwd = layer_ops(fp8_slice_cfg("current"))
    amax = [op for op in [*fwd.values(), *bwd] if "amax_all_reduce" in op.name]
    assert sorted(op.name for op in amax) == [
        "fc1.amax_all_reduce", "fc2.grad_amax_all_reduce", "out_proj.grad_amax_all_reduce",
        "qkv_proj.amax_all_reduce"]
    assert all(op.kind == "all_reduce" and op.group == "tp" and op.bytes == 4 for op in amax)
    fwd, bwd = layer_ops(fp8_slice_cfg("delayed"))
    assert not [op for op in [*fwd.values(), *bwd] if "amax" in op.name]


def test_the_amax_all_reduce_is_not_hidden_by_the_tp_overlap():
    """The stream waits on it (``->wait()`` before the scale): under tp_comm_overlap it costs
    its whole network time after the compute before it, as without the overlap."""
    base = fp8_slice_cfg("current")
    cfg = replace(base, parallel=replace(base.parallel, tp_comm_overlap=True))
    fwd, _ = layer_ops(cfg)
    amax = fwd["fc1.amax_all_reduce"]
    pricer = Pricer(cfg)
    norm = fwd["mlp_norm"]

    def charged(op) -> float:  # the collective's own segment, after the norm
        return {name: t for _, t, name in pricer.price([norm, op]).segments}[op.name]
    assert charged(amax) == pytest.approx(pricer.comm_time(amax), rel=1e-12)
    hidden = replace(amax, waited=False)  # what another TP collective there would cost
    assert charged(hidden) < pricer.comm_time(amax)


def test_a_waited_amax_reduction_is_no_tp_exit_to_pipeline():
    """Under userbuffers a GEMM followed by a TP reduce-scatter runs in chunks overlapped with
    it; a current-scaling amax all-reduce the stream waits on is not such an exit: the GEMM
    before it stays whole, and the Chakra export does not overlap it either."""
    from trainsim.interop.chakra import _is_overlapped
    from trainsim.workload.ops import Comm, Gemm

    cfg = fp8_slice_cfg("current")
    cfg = replace(cfg, parallel=replace(cfg.parallel, tp_comm_overlap=True,
                                        tp_comm_overlap_method="userbuffers"))
    pricer = Pricer(cfg)
    gemm = Gemm("fc1", LOCAL, F // TP, H)
    amax = Comm("amax", "all_reduce", 4, "tp", waited=True)
    scatter = Comm("rs", "reduce_scatter", LOCAL * H * 2, "tp")
    assert pricer._overlap_splits([gemm, amax]) == {}
    assert pricer._overlap_splits([gemm, scatter]) == {0: 4}  # TE_PIPELINE_SPLITS
    assert not _is_overlapped(amax, cfg)
    assert _is_overlapped(scatter, cfg)
