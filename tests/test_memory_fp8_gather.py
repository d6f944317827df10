"""FSDP2 units gathered in fp8 keep one byte per matmul weight (issue 16, held-out tt2412 rows).

torchao's float8 all-gather (torchtitan ``enable_fsdp_float8_all_gather``) makes each gathered
Float8Linear weight a ``Float8Tensor`` over the all-gathered uint8 data, with no 16-bit copy
(pytorch/ao@eab345c torchao/float8/fsdp_utils.py L226-L276); torchtitan asks for it only where
the data-parallel ranks shard the model (torchtitan/float8.py @ 9dec370a L51-54,
``parallel_dims.dp_shard_enabled``). Hand calculations for Llama 3 8B's layer:
wq 4096x4096, wk and wv 4096x1024, wo 4096x4096, w1 and w3 4096x14336, w2 14336x4096.
"""

from __future__ import annotations

import pytest

from tests.helpers import mirror_source
from trainsim.catalog import run_config_from_dict
from trainsim.memory.estimate import estimate_stage_memory
from trainsim.memory.state import model_state
from trainsim.workload.fp8_gather import fp8_weights_gathered

LAYER_MATMUL = 4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336  # 218,103,808
"""Llama 3 8B: matmul weight elements of one transformer block."""


def _cfg(*, pp: int = 2, cp: int = 1, gather: bool = True, dtype: str = "fp8", layers: int = 8):
    return run_config_from_dict({
        "model": {"preset": "llama3-8b", "num_layers": layers},
        "parallel": {"tp": 1, "pp": pp, "cp": cp, "zero_stage": 3,
                     "data_parallel_impl": "fsdp2", "recompute": "full"},
        "training": {"global_batch_size": 16, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": dtype, "fp8_param_gather": gather, "framework": "torchtitan",
                     "framework_version": "2024-12"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8},
    })


def test_pipelined_units_keep_their_matmul_weights_in_one_byte():
    # pp 2 over 8 layers: each stage holds 4 blocks, gathered for the whole step
    # (fsdp_pp_unsharded); fp8 all-gather drops one byte of each of their matmul weights
    for stage in (0, 1):
        bf16 = model_state(_cfg(gather=False), stage).weights
        fp8 = model_state(_cfg(gather=True), stage).weights
        assert bf16 - fp8 == pytest.approx(4 * LAYER_MATMUL, rel=1e-3)


def test_gathered_layers_without_pipelining_are_two_fp8_units():
    # no PP: the current and the prefetched unit, one byte per matmul weight, no cast copy;
    # without the fp8 all-gather two 16-bit units plus the fp8 casts of one (a row-wise and a
    # column-wise byte per element on H100: memory.state FP8_WEIGHT_LAYOUT_BYTES, unchanged)
    def gathered(c):
        return dict(model_state(c, 0).backward)["gathered layer parameters (current + prefetched)"]
    fp8 = gathered(_cfg(pp=1, gather=True))
    bf16 = gathered(_cfg(pp=1, gather=False))
    norms = 2 * 4096
    assert fp8 == pytest.approx(2 * (LAYER_MATMUL + 2 * norms), rel=1e-6)  # norms 16-bit
    assert bf16 == pytest.approx((2 * 2 + 2) * (LAYER_MATMUL + norms), rel=1e-6)


def test_no_fp8_gather_where_only_context_parallelism_shards():
    # 8 GPUs, pp 1: cp 8 leaves dp_shard 1, so torchtitan turns the fp8 all-gather off
    assert fp8_weights_gathered(_cfg(pp=1, cp=4))
    assert not fp8_weights_gathered(_cfg(pp=1, cp=8))
    assert not fp8_weights_gathered(_cfg(pp=1, dtype="bf16"))
    sharded_cp = estimate_stage_memory(_cfg(pp=1, cp=8, gather=True), 0)
    bf16_cp = estimate_stage_memory(_cfg(pp=1, cp=8, gather=False), 0)
    assert sharded_cp.allocated == bf16_cp.allocated


@pytest.mark.parametrize("rev", ["9dec370a", "2a25f4d78"])
def test_the_source_gates_the_fp8_gather_on_dp_shard(rev):
    text = mirror_source("pytorch+torchtitan", rev, "torchtitan/float8.py")
    assert "parallel_dims.dp_shard_enabled\n            and float8_config.enable_fsdp_float8_all_gather" in text


def test_the_source_gathers_the_weight_as_fp8_data():
    text = mirror_source("pytorch+ao", "eab345c", "torchao/float8/fsdp_utils.py")
    assert "return (float8_tensor._data,), (float8_tensor._scale,)" in text
    assert "        ), (data,)" in text
