"""Megatron-core's MoE permutation without Transformer Engine's fusion (``moe_permute_fusion``
false): PyTorch ops, each ``masked_select`` making the host wait (core_v0.16.0 moe_utils.py
``permute``/``unpermute``/``sort_chunks_by_idxs``). Expectations counted by hand from that source."""

from __future__ import annotations

import pytest
from helpers import moe_layer_cfg, moe_layer_ops

from trainsim.errors import ConfigError

# moe_layer_cfg: h 1024, 64 experts, top 8, seq 1024, EP 16 -> 4 local experts (chunks sorted)
H, TOKENS, TOPK = 1024, 1024, 8
ROUTED = TOKENS * TOPK


def _ops(dispatcher: str, fusion: bool | None):
    return moe_layer_ops(moe_layer_cfg(dispatcher, moe_permute_fusion=fusion))


def _permute_family(ops, prefix: str) -> list:
    return [op for op in ops if op.name.split(".")[0] == prefix]


def _syncs(ops) -> int:
    return sum(1 for op in ops if getattr(op, "host_sync", False))


@pytest.mark.parametrize("dispatcher, masked_selects", [
    ("alltoall", 3),   # permute: token ids and probs; unpermute: probs
    ("deepep", 2),     # the manager permutes with probs, unpermutes without
    ("allgather", 1),  # permute without probs, unpermute without
])
def test_each_masked_select_is_one_more_host_wait_in_the_forward_only(dispatcher, masked_selects):
    fwd_fused, bwd_fused = _ops(dispatcher, None)
    fwd, bwd = _ops(dispatcher, False)
    assert _syncs(fwd) - _syncs(fwd_fused) == masked_selects
    assert _syncs(bwd) == _syncs(bwd_fused)


def test_alltoall_kernels_as_counted_from_moe_utils():
    fwd, bwd = _ops("alltoall", False)
    # permute: map transpose + arange, masked_select (4), probs transpose, masked_select (4),
    # index_select, and the chunk sort's cat of tokens and of probs
    assert sum(op.kernels for op in _permute_family(fwd, "permute")) == 2 + 4 + 1 + 4 + 1 + 2
    # unpermute: map and probs transposes, masked_select (4), tokens x probs, zeros,
    # scatter_add_, and the chunk unsort's cat
    assert sum(op.kernels for op in _permute_family(fwd, "unpermute")) == 2 + 4 + 1 + 1 + 1 + 1
    # backward: zeros + index_add_, split's backward (tokens, probs), masked_scatter (3)
    assert sum(op.kernels for op in _permute_family(bwd, "permute")) == 2 + 2 + 3
    # gather, split's backward, the product's (2 products + a sum), masked_scatter (3)
    assert sum(op.kernels for op in _permute_family(bwd, "unpermute")) == 1 + 1 + 3 + 3


def test_index_select_moves_each_routed_row_once_each_way():
    fwd, _ = _ops("alltoall", False)
    permute = next(op for op in fwd if op.name == "permute")
    assert permute.bytes == 2 * ROUTED * H * 2 + ROUTED * 8  # bf16 rows read and written, int64 ids


def test_the_combines_masked_select_waits_after_the_exchange():
    fwd, _ = _ops("alltoall", False)
    names = [op.name for op in fwd]
    assert names.index("permute.masked_select_probs") < names.index("moe.dispatch_all_to_all")
    assert names.index("moe.combine_all_to_all") < names.index("unpermute.masked_select_probs")


def test_fused_is_the_default_and_unchanged():
    assert [repr(op) for op in _ops("alltoall", None)[0]] == \
        [repr(op) for op in _ops("alltoall", True)[0]]


def test_hybridep_has_no_unfused_path():
    with pytest.raises(ConfigError):
        moe_layer_cfg("hybridep", moe_permute_fusion=False)
