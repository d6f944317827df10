"""Sliding-window models on unfused attention: refused where the framework's local attention
takes no window (Megatron-core's DotProductAttention asserts ``config.window_size is None``,
NVIDIA/Megatron-LM megatron/core/transformer/dot_product_attention.py line 51 at core_v0.5.0
to core_v0.8.0), masked after the full score matrix where its eager attention adds the window
to the mask (Hugging Face's eager_attention_forward, Automodel)."""

from __future__ import annotations

import pytest
from helpers import dgx_h100_run

from trainsim.errors import ConfigError
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Attention
from trainsim.workload.shard import shard_of


def _cfg(framework, attention=None, name="mistral-7b", **model_changes):
    return dgx_h100_run(framework, attention, name, 8192, **model_changes)


@pytest.mark.parametrize("framework", ["megatron-core", "megatron-lm"])
def test_megatron_unfused_attention_refuses_a_sliding_window(framework):
    """One ``error:`` line naming the assert; a fused kernel, a model without a window and
    the Gemma 2 spec of Megatron-Bridge (its own masked unfused attention) are kept."""
    with pytest.raises(ConfigError, match=r"training.attention=unfused: .*takes no sliding "
                                          r"window \(model.sliding_window=4096"):
        _cfg(framework, "unfused", sliding_window=4096)
    assert _cfg(framework, "unfused", sliding_window=None).training.attention == "unfused"
    if framework == "megatron-core":
        assert _cfg(framework, "cudnn", sliding_window=4096).training.attention == "cudnn"
    assert _cfg("megatron-bridge", "unfused", sliding_window=4096).training.attention \
        == "unfused"


def test_refusal_names_the_kernels_that_take_a_window():
    with pytest.raises(ConfigError, match="set training.attention to flash2 or cudnn"):
        _cfg("megatron-core", "unfused", sliding_window=4096)


def _pairs(framework):
    cfg = _cfg(framework, "unfused", sliding_window=4096)
    return [op.pairs for op in layer_forward(cfg, shard_of(cfg)) if isinstance(op, Attention)]


def test_automodel_unfused_windowed_pairs_are_q_by_kv():
    """Automodel's Hugging Face eager attention masks the window after the full QK^T: every
    q x kv pair (8192 x 8192) is computed, not the window's 8192 x 4096 (was: the window's,
    as a kernel that skips the keys outside it, which MegaScale keeps)."""
    assert _pairs("automodel") == [8192 * 8192]
    assert _pairs("megascale") == [8192 * 4096]
