"""Separate Q, K and V projections (framework profile ``separate_qkv``): with RoPE the layer
keeps the rotated Q and K and the V projection's output, not a fused QKV buffer beside them."""

from __future__ import annotations

import pytest

import trainsim
from trainsim.catalog.frameworks import framework_profile
from trainsim.memory.estimate import activation_bytes_per_layer


def _cfg(framework: str, version: str, *, tp: int = 8, sp: bool = True, model=None):
    return trainsim.run_config_from_dict({
        "model": model or {"preset": "llama3-70b"},
        "parallel": {"tp": tp, "pp": 1, "sequence_parallel": sp, "recompute": "none"},
        "training": {"global_batch_size": 1, "micro_batch_size": 1, "seq_length": 8192,
                     "attention": "flash2", "dtype": "bf16", "framework": framework,
                     "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": tp, "gpus_per_node": 8},
    })


def test_meta_llama3_profile_has_separate_qkv_and_no_pipelining_buffers():
    """The Llama 3 profile records the released model's three projections and that stage
    inputs and outputs are freed (arXiv:2407.21783 Section 3.3.2)."""
    p = framework_profile("meta-llama3", "2024-07")
    assert p.supports("separate_qkv") is True
    assert p.supports("pipelining_buffers") is False
    assert framework_profile("megatron-core", "0.13").supports("separate_qkv") is None


@pytest.mark.parametrize("tp", [1, 8])
def test_separate_projections_drop_the_unrotated_q_and_k(tp):
    """Under RoPE a layer with separate projections keeps T * 2 (q + kv) / t bytes less than
    a fused QKV layer whose attention keeps V as a view of the fused output, all else equal
    (the unrotated Q and K); as many as Megatron-core's TE layer, whose attention copies Q, K
    and V (tests/test_memory_te_spec.py)."""
    fused = _cfg("megatron-core", "0.5", tp=tp)
    separate = _cfg("meta-llama3", "2024-07", tp=tp)
    te = _cfg("megatron-core", "0.13", tp=tp)
    assert activation_bytes_per_layer(te) == activation_bytes_per_layer(separate)
    m = fused.model
    tokens = 8192
    expected = tokens * 2 * (m.q_size / tp + max(m.kv_size / tp, m.kv_channels))
    diff = activation_bytes_per_layer(fused) - activation_bytes_per_layer(separate)
    assert diff == pytest.approx(expected, rel=1e-12)


def test_without_rope_the_projections_keep_the_same_bytes():
    """Without rotary embeddings Q, K and V are the projections' outputs either way."""
    model = {"preset": "gpt-22b"}
    fused = _cfg("megatron-core", "0.13", model=model)
    separate = _cfg("meta-llama3", "2024-07", model=model)
    assert fused.model.position_embedding != "rope"
    assert activation_bytes_per_layer(fused) == activation_bytes_per_layer(separate)
