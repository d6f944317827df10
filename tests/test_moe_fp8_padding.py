"""fp8 experts pad each expert's rows to the fp8 alignment: Megatron-core's TEGroupedMLP copies
the routed tokens in (Fp8Padding) and out (Fp8Unpadding) unless the dispatcher padded them."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import moe_layer_cfg, moe_layer_ops

PADS = {"expert_fp8_pad", "expert_fp8_unpad"}


def _names(dispatcher: str, version: str, dtype: str = "fp8", framework: str = "megatron-bridge"):
    fwd, bwd = moe_layer_ops(moe_layer_cfg(dispatcher, 16, framework, version, dtype=dtype))
    return [op.name for op in fwd], [op.name for op in bwd]


@pytest.mark.parametrize("dispatcher", ["alltoall", "deepep"])
def test_fp8_experts_copy_the_tokens_in_and_out_before_core_0_17(dispatcher):
    """Megatron-Bridge 25.11 (Megatron-core 0.15): every dispatcher leaves the counts unaligned;
    the pad sits before the first expert GEMM, the unpad after the last, each with a backward."""
    fwd, bwd = _names(dispatcher, "25.11")
    assert PADS <= set(fwd) and PADS <= {n.split(".")[0] for n in bwd}
    assert fwd.index("expert_fp8_pad") < fwd.index("expert_fc1")
    assert fwd.index("expert_fc2") < fwd.index("expert_fp8_unpad")


def test_deepeps_permute_pads_from_core_0_17_the_all_to_all_permute_does_not():
    assert not PADS & set(_names("deepep", "26.04")[0])
    assert PADS <= set(_names("alltoall", "26.04")[0])
    assert not PADS & set(_names("deepep", "0.17", framework="megatron-core")[0])
    assert PADS <= set(_names("deepep", "0.16", framework="megatron-core")[0])


def test_no_copies_in_bf16_with_hybridep_or_without_a_framework():
    assert not PADS & set(_names("alltoall", "25.11", dtype="bf16")[0])
    assert not PADS & set(_names("hybridep", "25.11")[0])
    fwd, _ = moe_layer_ops(moe_layer_cfg("alltoall", 16, None, None, dtype="fp8"))
    assert not PADS & {op.name for op in fwd}


def test_token_dropping_pads_to_the_capacity_instead():
    cfg = moe_layer_cfg("alltoall", 16, "megatron-bridge", "25.11", dtype="fp8")
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, moe_capacity_factor=1.0,
                                                         moe_pad_expert_input_to_capacity=True))
    assert not PADS & {op.name for op in moe_layer_ops(cfg)[0]}


def test_token_dropping_without_padding_still_pads_for_fp8():
    """A capacity factor alone drops tokens; the counts stay dynamic and unaligned (core_v0.14.0
    token_dispatcher.py: ``drop_and_pad`` only with moe_pad_expert_input_to_capacity)."""
    cfg = moe_layer_cfg("alltoall", 16, "megatron-bridge", "25.11", dtype="fp8")
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, moe_capacity_factor=1.0))
    assert PADS <= {op.name for op in moe_layer_ops(cfg)[0]}


def test_each_copy_reads_and_writes_every_routed_row():
    cfg = moe_layer_cfg("alltoall", 16, "megatron-bridge", "25.11", dtype="fp8")
    fwd, _ = moe_layer_ops(cfg)
    gemm = next(op for op in fwd if op.name == "expert_fc1" and hasattr(op, "batch"))
    pad = next(op for op in fwd if op.name == "expert_fp8_pad")
    assert pad.bytes == gemm.m * gemm.batch * cfg.model.hidden_size * 2 * 2


def test_fp8_padding_arrived_with_megatron_core_0_10():
    """TEGroupedMLP builds Fp8Padding / Fp8Unpadding under config.fp8 from core_v0.10.0
    (megatron/core/transformer/moe/experts.py); core_v0.9.0's has neither."""
    assert PADS <= set(_names("alltoall", "0.10", framework="megatron-core")[0])
    assert not PADS & set(_names("alltoall", "0.9", framework="megatron-core")[0])
