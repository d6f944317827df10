"""NVFP4 weights under Megatron-core's distributed optimizer (``fp4_param_gather``): kept packed two
per byte in the parameter buffer and all-gathered so where the framework does (profile
``nvfp4_param_buffer``: Megatron-LM #4005, core_v0.18.0; Megatron-Bridge 26.06), the 16 x 16 tile
amaxes all-reduced after the step, the column-wise copy made after each gather; Megatron-Bridge's
NVFP4 recipe turns the gather on from 26.06 only (v0.4.x: off)."""

from __future__ import annotations

import csv
import io

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.memory.params import stage_layer_params
from trainsim.validate.training import row_config
from trainsim.workload.fp8_gather import (
    AMAX_BYTES,
    NVFP4_PACKED_BYTES,
    NVFP4_TILE,
    amax_all_reduce_bytes,
    fp8_weight_shapes,
    param_gather_width,
)
from trainsim.workload.ops import NVFP4_ELEMENT_BYTES
from trainsim.workload.te_weight_cache import WEIGHT_QUANTIZE, WEIGHT_TRANSPOSE, weight_quantization


def _run(version="26.06", recipe="nvfp4", gather=None, framework="megatron-bridge"):
    training = {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 4096,
                "dtype": "fp8", "fp8_recipe": recipe, "framework": framework,
                "framework_version": version}
    if gather is not None:
        training["fp8_param_gather"] = gather
    return run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tp": 2, "distributed_optimizer": True},
        "training": training,
        "cluster": {"gpu": "gb200", "num_gpus": 16, "gpus_per_node": 16}})


def test_bridge_gathers_nvfp4_weights_from_26_06_only():
    """v0.4.x bf16_with_nvfp4_mixed: fp8_param_gather False, no fp4_param_gather; v0.5.0: on."""
    assert not _run("26.04").training.fp8_param_gather
    assert _run("26.06").training.fp8_param_gather
    assert not _run("26.06", gather=False).training.fp8_param_gather


def test_packed_nvfp4_weights_gather_at_half_a_byte_the_rest_16_bit():
    cfg = _run()
    layers = stage_layer_params(cfg, 0)
    assert param_gather_width(cfg, layers, layers) == pytest.approx(NVFP4_PACKED_BYTES) == 0.5
    assert param_gather_width(cfg, 2 * layers, layers) == pytest.approx((0.5 + 2) / 2)
    # without the packed buffer (Megatron-core before core_v0.18.0) or the gather: 16-bit
    assert param_gather_width(_run("26.04", gather=True), layers, layers) == 2.0
    assert param_gather_width(_run(gather=False), layers, layers) == 2.0
    # per-tensor fp8 weights gather at one byte, as before
    assert param_gather_width(_run(recipe="current"), layers, layers) == 1.0


def test_nvfp4_amaxes_are_one_per_16x16_tile_and_one_per_weight():
    cfg = _run()
    dense, experts = amax_all_reduce_bytes(cfg, [0])
    want = sum(n * (-(-r // NVFP4_TILE) * -(-c // NVFP4_TILE) + 1)
               for r, c, n, _ in fp8_weight_shapes(cfg, 0))
    assert experts == 0.0 and dense == pytest.approx(want * AMAX_BYTES)
    # about 4 bytes per 256 weight elements
    elements = sum(r * c * n for r, c, n, _ in fp8_weight_shapes(cfg, 0))
    assert dense / elements == pytest.approx(AMAX_BYTES / NVFP4_TILE**2, rel=0.01)
    assert amax_all_reduce_bytes(_run("26.04", gather=True), [0]) == (0.0, 0.0)


def test_gathered_nvfp4_weights_get_one_transpose_per_step_not_a_cast():
    """After each gather TE's post_all_gather_processing makes the column-wise copies in one
    batched kernel (reading and writing 4.5 bits an element); without the gather the 16-bit
    weights are cast at the first micro-batch."""
    cfg = _run()
    ops = weight_quantization(cfg, [0, 1])
    elements = sum(r * c * n for i in (0, 1) for r, c, n, _ in fp8_weight_shapes(cfg, i))
    assert [(op.name, op.kernels) for op in ops] == [(WEIGHT_TRANSPOSE, 1)]
    assert ops[0].bytes == pytest.approx(elements * 2 * NVFP4_ELEMENT_BYTES)
    assert [op.name for op in weight_quantization(_run("26.04"), [0])] == [WEIGHT_QUANTIZE]


def test_the_column_states_the_gather():
    text = ("id,model,gpu,num_gpus,gpus_per_node,tp,pp,global_batch_size,micro_batch_size,"
            "seq_length,dtype,fp8_recipe,fp8_param_gather,framework,framework_version,"
            "measured_iteration_s\n"
            "r,llama3-8b,gb200,16,16,2,1,64,1,4096,fp8,nvfp4,{},megatron-bridge,26.06,1.0\n")
    for cell, want in (("0", False), ("1", True), ("", True)):
        row = next(csv.DictReader(io.StringIO(text.format(cell))))
        assert row_config(row).training.fp8_param_gather is want
