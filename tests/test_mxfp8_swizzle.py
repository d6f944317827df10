"""MXFP8 scale swizzles (issue 17): Transformer Engine's GEMM call copies each MXFP8 operand's
compact E8M0 scales into cuBLASLt's tiled layout, one small kernel per operand not already in
it (TE v2.9 csrc/extensions/gemm.cpp ``swizzle_scaling_factors``; v2.16 swizzle.cpp
``swizzle_scales_for_gemm`` skips swizzled ones). From TE 2.12 the quantizers write activations
and gradients swizzled, except those sequence parallelism all-gathers; weights stay compact
until 2.18 (``workload.shard.mxfp8_swizzle``)."""

from __future__ import annotations

import pytest
from helpers import FP8_SLICE, fp8_slice_cfg, layer_ops

from trainsim.workload.ops import Elementwise, Gemm
from trainsim.workload.shard import MXFP8_SCALE_BYTES


def _swizzles(version: str, recipe: str = "mxfp8", framework: str | None = "megatron-bridge",
              sp: bool = True) -> dict[str, Elementwise]:
    cfg = fp8_slice_cfg(recipe, framework, version, gpu_name="b200-sxm-180gb", sp=sp)
    fwd, bwd = layer_ops(cfg)
    ops = list(fwd.values()) + bwd
    for i, op in enumerate(ops):  # each swizzle comes right before the GEMM it feeds
        if op.name.endswith(".mxfp8_swizzle"):
            assert isinstance(ops[i + 1], Gemm)
            assert ops[i + 1].name == op.name.removesuffix(".mxfp8_swizzle")
    return {op.name.removesuffix(".mxfp8_swizzle"): op for op in ops
            if op.name.endswith(".mxfp8_swizzle")}


def test_te_2_9_swizzles_both_operands_of_every_gemm():
    """Bridge 25.11 (TE release_v2.9): 12 GEMMs a layer, two swizzles each, reading and
    writing one scale byte per 32 elements of both operands (qkv fprop by hand: 2048 gathered
    tokens x 4096 input, 3072 x 4096 weight at TP 4)."""
    sw = _swizzles("25.11")
    assert len(sw) == 12 and all(op.kernels == 2 for op in sw.values())
    h, _, t, tp = FP8_SLICE
    qkv = sw["qkv_proj"]
    assert qkv.bytes == pytest.approx(2 * MXFP8_SCALE_BYTES * (t * h + 3 * h // tp * h))
    assert qkv.kernel == "mxfp8_swizzle"


def test_te_2_12_on_swizzles_the_weights_and_the_sp_gathered_operands():
    """Bridge 26.06 (TE v2.16): the column-parallel inputs and the row-parallel output
    gradients that SP gathers, and every weight; the rest arrive swizzled."""
    sw = _swizzles("26.06")
    kernels = {name: op.kernels for name, op in sw.items()}
    assert kernels == {
        "qkv_proj": 2, "fc1": 2,  # gathered input + weight
        "out_proj": 1, "fc2": 1,  # weight (the input is the rank's own)
        "out_proj.dgrad": 2, "fc2.dgrad": 2,  # gathered output gradient + weight
        "qkv_proj.dgrad": 1, "fc1.dgrad": 1,  # weight
        "out_proj.wgrad": 1, "fc2.wgrad": 1,  # gathered output gradient
        "qkv_proj.wgrad": 1, "fc1.wgrad": 1,  # gathered input
    }
    h, f, _, tp = FP8_SLICE
    assert sw["fc2"].bytes == pytest.approx(2 * MXFP8_SCALE_BYTES * h * (f // tp))
    # without sequence parallelism nothing is gathered: only the weights
    assert {op.kernels for op in _swizzles("26.06", sp=False).values()} == {1}
    assert set(_swizzles("26.06", sp=False)) == {
        "qkv_proj", "out_proj", "fc1", "fc2",
        "qkv_proj.dgrad", "out_proj.dgrad", "fc1.dgrad", "fc2.dgrad"}


@pytest.mark.parametrize("recipe,framework", [("current", "megatron-bridge"),
                                              ("delayed", "megatron-bridge"),
                                              ("mxfp8", None)])
def test_no_swizzles_without_mxfp8_on_te(recipe, framework):
    """Per-tensor scales need no swizzle; a run with no framework profile names no TE."""
    assert _swizzles("25.11" if framework else None, recipe, framework) == {}


def test_grouped_experts_swizzle_each_operand_list_in_one_launch():
    """TE's grouped GEMM swizzles every expert's scales of an operand in one multi-tensor
    kernel (v2.9 gemm.cpp 489-491 ``multi_tensor_swizzle_scaling_factors``): two launches
    for the experts' fc1, whatever their number, bytes for all of them."""
    import dataclasses

    from helpers import moe_layer_cfg, moe_layer_ops

    cfg = moe_layer_cfg(ep=1, framework="megatron-bridge", version="25.11", experts=8, topk=2,
                        gpus=1, dtype="fp8")
    from trainsim.catalog import gpu

    cfg = dataclasses.replace(  # MXFP8 needs block-scaled tensor cores (Blackwell)
        cfg, training=dataclasses.replace(cfg.training, fp8_recipe="mxfp8"),
        cluster=dataclasses.replace(cfg.cluster, gpu=gpu("b200-sxm-180gb")))
    fwd, _ = moe_layer_ops(cfg)
    (fc1,) = [op for op in fwd if isinstance(op, Gemm) and op.name == "expert_fc1"]
    (sw,) = [op for op in fwd if op.name == "expert_fc1.mxfp8_swizzle"]
    assert fc1.batch == 8 and sw.kernels == 2
    assert sw.bytes == pytest.approx(2 * MXFP8_SCALE_BYTES * 8 * (fc1.m * fc1.k + fc1.n * fc1.k))


@pytest.mark.parametrize("framework,before,after", [("megatron-core", "0.15", "0.16"),
                                                    ("megatron-lm", "2025-12-01", "2026-02-11")])
def test_megatron_swizzles_follow_its_te_pin(framework, before, after):
    """Megatron-core and Megatron-LM take MXFP8 on TE too: both operands swizzled at every GEMM
    under TE before 2.12 (core_v0.15.0 pins release_v2.9), weights and SP-gathered operands
    only once the pin reaches 2.12 (core_v0.16.0, main from 2026-02-11: 5671fd3)."""
    assert {op.kernels for op in _swizzles(before, framework=framework).values()} == {2}
    assert len(_swizzles(before, framework=framework)) == 12
    assert _swizzles(after, framework=framework).keys() == _swizzles("26.06").keys()
    assert {n: op.kernels for n, op in _swizzles(after, framework=framework).items()} == \
        {n: op.kernels for n, op in _swizzles("26.06").items()}


def test_forward_and_backward_read_the_same_sp_side_without_a_local_cast():
    """Whether an operand is SP-gathered comes from ``Gemm.seq_parallel`` in both passes, so a
    shard that casts after the gather (no ``fp8_local_cast``) swizzles the same operands as
    one that casts before it, and prices no local-cast ops in the backward."""
    import dataclasses

    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.shard import shard_of

    cfg = fp8_slice_cfg("mxfp8", "megatron-bridge", "26.06", gpu_name="b200-sxm-180gb")
    sh = shard_of(cfg)
    assert sh.fp8_local_cast
    late = dataclasses.replace(sh, fp8_local_cast=False)
    swz = {}
    for s in (sh, late):
        fwd = layer_forward(cfg, s)
        ops = fwd + backward_of(fwd, s)
        swz[s.fp8_local_cast] = {op.name: op.kernels for op in ops
                                 if op.name.endswith(".mxfp8_swizzle")}
        if not s.fp8_local_cast:
            assert not [op for op in ops if op.name.endswith(("grad_fp8_cast",
                                                              "input_fp8_transpose"))]
    assert swz[False] == swz[True] and swz[True]["out_proj.wgrad.mxfp8_swizzle"] == 1
    assert swz[True]["fc2.dgrad.mxfp8_swizzle"] == 2
