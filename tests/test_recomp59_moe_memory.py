"""What Megatron-core's ``--recompute-modules moe`` (with and without ``layernorm``) keeps of an
MoE layer, by hand (issue 17; Megatron-LM core_r0.18.0 d0b3b775).

``moe`` checkpoints the MoE layer's ``custom_forward`` (moe_layer.py L642-703): its forward runs
under no_grad, so the layer keeps only the checkpoint's input, the pre-MLP norm's 16-bit output,
beside the norm's own saved input. ``layernorm`` wraps that norm in ``CheckpointWithoutOutput``
and frees its output's storage after the layer (transformer_layer.py
``discard_output_and_register_recompute``), the very tensor the ``moe`` checkpoint saved.
"""

from __future__ import annotations

import pytest

import trainsim
from trainsim.memory.layer_activations import _moe_block_bytes, activation_bytes_per_layer

T = 4096


def cfg_of(modules, model="qwen3-30b-a3b", **training):
    return trainsim.run_config_from_dict({
        "model": {"preset": model},
        "parallel": {"recompute": "selective", "recompute_modules": list(modules)},
        "training": {"global_batch_size": 64, "seq_length": T, **training},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8},
    })


def kept(modules, **kw):
    return activation_bytes_per_layer(cfg_of(modules, **kw), moe=True)


def test_moe_keeps_the_norms_input_and_the_layers_input():
    cfg = cfg_of(("core_attn",))
    h = cfg.model.hidden_size
    freed = kept(("core_attn",)) - kept(("core_attn", "moe"))
    assert freed == pytest.approx(_moe_block_bytes(cfg) - T * h * (2 + 2))


@pytest.mark.parametrize("framework, qkv_input", [(None, 2), ("megatron-core", 0)])
def test_layernorm_beside_moe_frees_the_moe_input(framework, qkv_input):
    """Without a framework the input norm is its own module (its output, the QKV input, is
    freed too); under Megatron-core's TE spec it is fused into the QKV linear and stays, while
    an MoE layer's pre-MLP norm is always a separate TENorm: its 16-bit output goes."""
    fw = {"framework": framework} if framework else {}
    h = cfg_of(("moe",), **fw).model.hidden_size
    freed = kept(("core_attn", "moe"), **fw) - kept(("core_attn", "moe", "layernorm"), **fw)
    assert freed == pytest.approx(T * h * (qkv_input + 2))


def test_a_hybrid_moe_layer_under_the_nano_recipe_keeps_the_norms_input_only():
    """Nemotron 3 Nano's ``E`` layer (no attention of its own) under its H100 recipe's modules:
    of the expert block only the pre-MLP norm's input stays (2 bytes a token and hidden unit)."""
    base = cfg_of(("core_attn",), "nemotron-3-nano-30b-a3b", framework="megatron-bridge",
                  framework_version="26.06")
    h = base.model.hidden_size
    nano = cfg_of(("moe", "layernorm", "core_attn", "moe_act"), "nemotron-3-nano-30b-a3b",
                  framework="megatron-bridge", framework_version="26.06")
    full = activation_bytes_per_layer(base, moe="E")
    left = activation_bytes_per_layer(nano, moe="E")
    assert full - left == pytest.approx(_moe_block_bytes(base) - T * h * 2)
