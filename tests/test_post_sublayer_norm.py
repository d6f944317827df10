"""Gemma 2 / 3's four norms per layer (``model.post_sublayer_norm``) and per-head q/k norm
weights: parameter counts against keras-hub's published counts, the config.json reader, the
norm kernels in the layer's op list, and the activations they keep."""

from __future__ import annotations

import dataclasses
import json

import pytest

from trainsim import run_config_from_dict, simulate
from trainsim.catalog import model, model_from_hf_config
from trainsim.config import ModelConfig
from trainsim.errors import ConfigError
from trainsim.memory.estimate import activation_bytes_per_layer
from trainsim.model import total_params
from trainsim.model.counts import layer_params, layer_tensors, qk_norm_params
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of

KERAS_HUB = {  # exact "params" of keras-team/keras-hub@cf8818bc
    # keras_hub/src/models/gemma/gemma_presets.py and @00d9f10a .../gemma3/gemma3_presets.py
    "gemma-2-2b": 2_614_341_888, "gemma-2-9b": 9_241_705_984, "gemma-2-27b": 27_227_128_320,
    "gemma-3-1b": 999_885_952, "qwen3-8b": 8_190_735_360, "qwen3-0.6b": 596_049_920,
}


@pytest.mark.parametrize("name", sorted(KERAS_HUB))
def test_presets_count_exactly_the_published_parameters(name):
    """Gemma 2 and Gemma 3 1B to the parameter (four norms a layer, Gemma 3's and Qwen3's
    q/k norms); the brief's 0.05 % is met with room."""
    assert total_params(model(name)) == KERAS_HUB[name]


def test_two_norms_a_layer_leave_gemma_2_9b_301_056_short():
    """The count before: two hidden-size norms per layer, 2 x 3584 x 42 fewer weights."""
    m = model("gemma-2-9b")
    two = dataclasses.replace(m, post_sublayer_norm=False)
    assert KERAS_HUB["gemma-2-9b"] - total_params(two) == 2 * 3584 * 42 == 301_056


def test_hand_count_of_a_gemma_2_layer():
    """gemma-2-2b by hand: q 2304x2048, k and v 2304x1024, o 2048x2304, gate/up/down
    3 x 2304 x 9216, four RMSNorm weights of 2304; the tensors sum to it, four of them norms."""
    m = model("gemma-2-2b")
    expected = 2304 * 2048 + 2 * 2304 * 1024 + 2048 * 2304 + 3 * 2304 * 9216 + 4 * 2304
    assert layer_params(m) == expected
    assert sum(n for n, _ in layer_tensors(m)) == expected
    assert sum(1 for n, _ in layer_tensors(m) if n == 2304) == 4


def test_qk_norms_are_two_head_widths_a_layer():
    """q_norm and k_norm: one weight of head_dim each (two with LayerNorm's bias); none without
    qk_layernorm, and MLA's latent norms are counted with its attention."""
    m = model("gemma-3-1b")
    assert qk_norm_params(m) == 2 * 256
    assert sum(1 for n, _ in layer_tensors(m) if n == 256) == 2
    assert sum(n for n, _ in layer_tensors(m)) == layer_params(m)
    assert qk_norm_params(dataclasses.replace(m, normalization="layernorm")) == 4 * 256
    assert qk_norm_params(dataclasses.replace(m, qk_layernorm=False)) == 0
    assert qk_norm_params(model("deepseek-v2-lite")) == 0


def test_a_parallel_block_with_post_sublayer_norms_is_refused():
    with pytest.raises(ConfigError, match="post_sublayer_norm.*parallel_block"):
        ModelConfig(parallel_block=True, post_sublayer_norm=True)


GEMMA2_9B = {"architectures": ["Gemma2ForCausalLM"], "head_dim": 256,
             "hidden_act": "gelu_pytorch_tanh", "hidden_size": 3584,
             "intermediate_size": 14336, "max_position_embeddings": 8192,
             "model_type": "gemma2", "num_attention_heads": 16, "num_hidden_layers": 42,
             "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
             "sliding_window": 4096, "vocab_size": 256000}
"""google/gemma-2-9b's config.json (the fields trainsim reads)."""


@pytest.mark.parametrize("changes, post, qk", [
    ({}, True, False),
    ({"model_type": "gemma3_text"}, True, True),
    ({"model_type": "qwen3", "hidden_act": "silu"}, False, True),
    ({"model_type": "llama", "hidden_act": "silu"}, False, False),
    ({"model_type": "glm4_moe", "hidden_act": "silu", "use_qk_norm": True}, False, True)])
def test_config_json_model_types_carry_their_norms(tmp_path, changes, post, qk):
    """The norms an architecture has though its config.json names none: Gemma 2/3's post
    norms, Gemma 3's and Qwen3's q/k norms; GLM-4.5 says use_qk_norm."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**GEMMA2_9B, **changes}))
    m = model_from_hf_config(path)
    assert (m.post_sublayer_norm, m.qk_layernorm) == (post, qk)
    if not changes:
        assert total_params(m) == KERAS_HUB["gemma-2-9b"]


def _cfg(post=True, tp=2, sp=True, modules="fused", recompute="none"):
    return run_config_from_dict({
        "model": {"preset": "gemma-2-2b", "num_layers": 4, "post_sublayer_norm": post},
        "parallel": {"tp": tp, "pp": 1, "sequence_parallel": sp, "recompute": recompute},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 4096,
                     "modules": modules},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})


def test_the_layer_runs_two_more_norms_on_the_ranks_rows():
    """post_attn_norm and post_mlp_norm after each sublayer's reduction, before its residual
    add, over the rank's sequence-parallel rows (4096 / tp x 2304), with a backward each; a
    model without them runs neither."""
    cfg = _cfg()
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    names = [op.name for op in fwd]
    for post, add in (("post_attn_norm", "attn_bias_dropout_add"),
                      ("post_mlp_norm", "mlp_bias_dropout_add")):
        assert names.index(post) == names.index(add) - 1
    by = {op.name: op for op in fwd}
    assert by["post_attn_norm"].kernel == by["attn_norm"].kernel == "rmsnorm"
    assert by["post_mlp_norm"].bytes == pytest.approx(by["mlp_norm"].bytes)
    back = {op.name for op in backward_of(fwd, sh)}
    assert {"post_attn_norm.bwd", "post_mlp_norm.bwd"} <= back
    plain = _cfg(post=False)
    assert not any("post_" in op.name for op in layer_forward(plain, shard_of(plain)))


@pytest.mark.parametrize("tp, sp", [(2, True), (2, False), (1, False)])
def test_each_post_norm_keeps_its_16_bit_input(tp, sp):
    """Megatron layout: 2 bytes per hidden element per post norm, on the rank's rows under
    sequence parallelism (replicated without it); full recompute keeps the layer input only."""
    tokens, h = 4096, 2304
    extra = activation_bytes_per_layer(_cfg(tp=tp, sp=sp)) - \
        activation_bytes_per_layer(_cfg(post=False, tp=tp, sp=sp))
    assert extra == pytest.approx(2 * 2 * tokens * h / (tp if sp else 1))
    assert activation_bytes_per_layer(_cfg(recompute="full")) == \
        activation_bytes_per_layer(_cfg(post=False, recompute="full"))


def test_hf_eager_gemma_norms_keep_their_fp32_input_and_normed_tensor():
    """Hugging Face eager modules: each Gemma 2 norm keeps 8 bytes a hidden element, its fp32
    input and fp32 normed tensor (Gemma2RMSNorm.forward weighs in fp32 before its cast,
    modeling_gemma2.py lines 58-63), not the 6 of Llama's or Qwen3's norms (16-bit normed):
    the two post norms 2 x 8, the input and pre-feedforward norms 2 x (8 - 6) more than a
    Llama-style layer's (was 2 x 8 alone)."""
    extra = activation_bytes_per_layer(_cfg(tp=1, sp=False, modules="eager")) - \
        activation_bytes_per_layer(_cfg(post=False, tp=1, sp=False, modules="eager"))
    assert extra == pytest.approx((2 * 8 + 2 * 2) * 4096 * 2304)


def test_hf_eager_gemma_3_qk_norms_keep_8_bytes_an_element():
    """Gemma 3's q_norm/k_norm are Gemma3RMSNorm (modeling_gemma3.py lines 310-311), 8 bytes
    an element of the rank's queries and keys under eager modules where Qwen3's keep 6 (was 6
    for both); compiled, 2 either way."""
    def cfg(qk, compile_=False):
        return run_config_from_dict({
            "model": {"preset": "gemma-3-1b", "num_layers": 2, "qk_layernorm": qk},
            "parallel": {"tp": 1, "pp": 1},
            "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 2048,
                         "modules": "eager", "compile": compile_},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
    m = model("gemma-3-1b")
    for compile_, per in ((False, 8), (True, 2)):
        extra = activation_bytes_per_layer(cfg(True, compile_)) - \
            activation_bytes_per_layer(cfg(False, compile_))
        assert extra == pytest.approx(per * 2048 * (m.q_size + m.kv_size))


def test_gemma_2_runs_slower_and_holds_more_with_its_post_norms():
    """Two more norm kernels per layer (and their backwards) cost time; their weights and saved
    inputs cost memory."""
    with_post, without = simulate(_cfg()), simulate(_cfg(post=False))
    assert with_post.iteration_time_s > without.iteration_time_s
    assert with_post.peak_memory_bytes > without.peak_memory_bytes
