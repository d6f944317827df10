"""MLA layers' norms under Megatron-core's selective recompute (issue 17 item 2).

The Transformer Engine spec's MLA layer keeps a ``TENorm`` as its input norm (the two
down-projections are plain ``TELinear``), but a dense layer's pre-MLP norm is an ``IdentityOp``
fused into ``linear_fc1`` as in every TE spec (NVIDIA/Megatron-LM core_v0.14.0
megatron/core/models/gpt/gpt_layer_specs.py L123-155: ``input_layernorm=backend.layer_norm()``,
``pre_mlp_layernorm=backend.layer_norm() if num_experts else IdentityOp``; core_r0.10.0 L81-102
and core_r0.18.0 d0b3b775 L157 the same). ``layernorm`` checkpoints only non-IdentityOp
``input_layernorm`` / ``pre_mlp_layernorm`` (transformer_layer.py core_v0.14.0 L402-420), so in a
dense MLA layer it re-runs and frees the input norm only; ``mlp`` checkpoints ``self.mlp`` whole,
the fused norm included, and frees its saved output. The latents' norms (``q_layernorm``,
``kv_layernorm``) run inside ``qkv_up_proj_and_rope_apply`` (multi_latent_attention.py
L654-677), which ``mla_up_proj`` checkpoints, not ``layernorm``.
"""

from __future__ import annotations

import pytest

import trainsim
from trainsim.memory.layer_activations import activation_bytes_per_layer
from trainsim.workload.layers import layer_forward
from trainsim.workload.recompute import input_norm_fused, layer_recompute, pre_mlp_norm_fused
from trainsim.workload.shard import shard_of

H, SEQ, TP = 7168, 4096, 2  # deepseek-v3


def _cfg(modules, te_spec=True, dtype="bf16", preset="deepseek-v3"):
    training = {"global_batch_size": 64, "seq_length": SEQ, "dtype": dtype}
    if te_spec:
        training["framework"], training["framework_version"] = "megatron-core", "0.16"
    return trainsim.run_config_from_dict({
        "model": {"preset": preset},
        "parallel": {"tensor_model_parallel_size": TP, "sequence_parallel": True,
                     "expert_model_parallel_size": 8, "recompute": "selective",
                     "recompute_modules": list(modules)},
        "training": training,
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})


def _redo(cfg, moe):
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=moe)
    return [op.name.removeprefix("recompute.") for op in layer_recompute(cfg, sh, fwd)]


def test_rules():
    assert not input_norm_fused(_cfg(("mlp",)))  # MLA's input norm: a TENorm
    assert pre_mlp_norm_fused(_cfg(("mlp",)))  # a dense layer's pre-MLP norm: fused
    assert not pre_mlp_norm_fused(_cfg(("mlp",), te_spec=False))


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_layernorm_reruns_the_input_norm_and_only_an_moe_layers_pre_mlp_norm(dtype):
    cfg = _cfg(("layernorm",), dtype=dtype)
    assert _redo(cfg, moe=False) == ["attn_norm"]
    assert _redo(cfg, moe=True) == ["attn_norm", "mlp_norm"]
    # the local spec keeps both norms separate modules
    assert _redo(_cfg(("layernorm",), te_spec=False, dtype=dtype), moe=False) == \
        ["attn_norm", "mlp_norm"]


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_mlp_reruns_the_fused_pre_mlp_norm_of_a_dense_mla_layer(dtype):
    sh_cfg = _cfg(("mlp",), dtype=dtype)
    sh = shard_of(sh_cfg)
    names = [op.name for op in layer_forward(sh_cfg, sh, moe=False)]
    block = names[names.index("attn_bias_dropout_add") + 1:names.index("mlp_bias_dropout_add")]
    assert block[0] == "mlp_norm"
    assert _redo(sh_cfg, moe=False) == block
    assert _redo(sh_cfg, moe=True) == []  # an MoE layer's mlp is not checkpointed


def test_mla_up_proj_reruns_the_latent_norms_and_layernorm_does_not():
    up = _redo(_cfg(("mla_up_proj",)), moe=False)
    assert {"q_norm", "kv_norm", "q_up_proj", "kv_up_proj", "rope"} <= set(up)
    assert up.index("q_norm") < up.index("q_up_proj")
    assert up.index("kv_norm") < up.index("kv_up_proj")
    for te_spec in (True, False):
        assert not {"q_norm", "kv_norm"} & set(_redo(_cfg(("layernorm",), te_spec), moe=True))


def _freed(cfg, base):
    return activation_bytes_per_layer(base) - activation_bytes_per_layer(cfg)


F = 18432  # deepseek-v3's dense layers' FFN


@pytest.mark.parametrize("dtype,x", [("bf16", 2), ("fp8", 1)])
def test_dense_mla_layer_memory_under_the_te_spec(dtype, x):
    """``layernorm`` frees the input norm's output (the down-projections' input; under fp8
    the second down-projection's own cast too) and not the fused FC1 input; ``mlp`` frees the
    MLP's inner tensors and that FC1 input (LayerNormLinear's ``ln_out``)."""
    per_h = SEQ * H * x / TP  # micro-batch 1, sequence parallel
    base = _cfg(("shared_experts",), dtype=dtype)  # frees nothing in a dense layer
    assert _freed(_cfg(("layernorm",), dtype=dtype), base) == \
        pytest.approx(per_h * (1 if dtype == "bf16" else 2))
    inner = SEQ * (2 * 2 * F + x * F) / TP  # SwiGLU's 16-bit input (both halves), FC2's input
    assert _freed(_cfg(("mlp",), dtype=dtype), base) == pytest.approx(inner + per_h)


def test_dense_mla_layer_memory_against_the_local_spec():
    """The local spec's separate pre-MLP norm: ``layernorm`` frees its output, ``mlp`` keeps
    it (the checkpoint's input)."""
    fc1_input = SEQ * H * 2 / TP
    base, base_local = _cfg(("shared_experts",)), _cfg(("shared_experts",), te_spec=False)
    for mods, sign in ((("layernorm",), 1), (("mlp",), -1)):
        te = _freed(_cfg(mods), base)
        local = _freed(_cfg(mods, te_spec=False), base_local)
        assert local - te == pytest.approx(sign * fc1_input)
