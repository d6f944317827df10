"""Hugging Face config.json imports of Llama 4 (text_config, interleaved MoE, chunked
attention), Qwen2.5-VL (flat or text_config) and Cohere2 (parallel block, windows every 4th
layer global), against transformers 5.24.0's config classes and the published sizes."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest

from trainsim import run_config_from_dict
from trainsim.catalog import model_from_hf_config
from trainsim.errors import ConfigError, TrainsimWarning
from trainsim.model import active_params, total_params

SCOUT_TEXT = {  # meta-llama/Llama-4-Scout-17B-16E config.json text_config (fields read)
    "attention_bias": False, "attention_chunk_size": 8192, "attention_dropout": 0.0,
    "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "interleave_moe_layer_step": 1,
    "intermediate_size": 8192, "intermediate_size_mlp": 16384,
    "max_position_embeddings": 10485760, "model_type": "llama4_text",
    "moe_layers": list(range(48)), "no_rope_layers": [int((i + 1) % 4 != 0) for i in range(48)],
    "num_attention_heads": 40, "num_experts_per_tok": 1, "num_hidden_layers": 48,
    "num_key_value_heads": 8, "num_local_experts": 16, "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0, "use_qk_norm": True, "vocab_size": 202048}
MAVERICK_TEXT = {**SCOUT_TEXT, "interleave_moe_layer_step": 2,
                 "moe_layers": list(range(1, 48, 2)), "num_local_experts": 128,
                 "use_qk_norm": False}


def _read(tmp_path, data, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrainsimWarning)
        return model_from_hf_config(path)


def _llama4(text):
    return {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
            "text_config": text, "vision_config": {"model_type": "llama4_vision_model"}}


def test_llama4_scout_every_layer_moe_with_a_shared_expert(tmp_path):
    """Scout: 16 experts of 8192 and one shared expert of 8192 on all 48 layers, top-1:
    17B activated (model card); its 109B total counts the vision encoder too (text: 107.8B)."""
    m = _read(tmp_path, _llama4(SCOUT_TEXT))
    assert (m.num_experts, m.moe_router_topk, m.expert_ffn_size) == (16, 1, 8192)
    assert m.moe_shared_expert_intermediate_size == 8192 and m.num_moe_layers == 48
    assert active_params(m) == pytest.approx(17e9, rel=0.02)
    # the text model as transformers 5.24.0 counts Llama4ForCausalLM(text_config) on the
    # meta device: 107,769,861,120 (the 109B total counts the vision encoder too)
    assert total_params(m) == 107_769_861_120
    # the weightless L2 q/k norm has no weights to count (Llama4TextL2Norm)
    assert not m.qk_layernorm


def test_llama4_maverick_interleaves_dense_and_moe_layers(tmp_path):
    """Maverick: interleave_moe_layer_step 2, moe_layers 1, 3, ..., 47 (Llama4TextConfig's
    default range(step - 1, layers, step)); the 24 dense layers are intermediate_size_mlp
    16384 wide: 400B total, 17B activated (model card)."""
    m = _read(tmp_path, _llama4(MAVERICK_TEXT))
    assert [m.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    assert m.num_moe_layers == 24 and m.ffn_size == 16384 and m.expert_ffn_size == 8192
    assert total_params(m) == 400_711_848_960  # transformers' count on the meta device
    assert active_params(m) == pytest.approx(17e9, rel=0.02)
    # a sparse text_config takes Llama4TextConfig's defaults (16 experts, step 1, ...)
    sparse = _read(tmp_path, _llama4({"num_hidden_layers": 48}))
    assert (sparse.num_experts, sparse.num_moe_layers, sparse.hidden_size) == (16, 48, 5120)


def test_llama4_moe_layers_off_the_pattern_is_refused(tmp_path):
    text = {**MAVERICK_TEXT, "moe_layers": [1, 3, 7]}
    with pytest.raises(ConfigError, match="moe_layers must list every "
                                          "interleave_moe_layer_step-th layer from layer 1"):
        _read(tmp_path, _llama4(text))


def _run(model, seq):
    return run_config_from_dict({
        "model": model, "parallel": {"tp": 8, "sequence_parallel": True},
        "training": {"global_batch_size": 8, "seq_length": seq},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})


def test_llama4_chunked_attention_runs_within_one_chunk_and_is_refused_beyond(tmp_path):
    """A sequence within attention_chunk_size is one chunk (full causal attention); beyond it
    the chunked layers attend within 8192-token chunks, which trainsim does not model: one
    line naming the field. With no RoPE layer (no chunked layer) or a null chunk: no check."""
    m = _read(tmp_path, _llama4(SCOUT_TEXT))
    assert m.attention_chunk_size == 8192
    model = {k: v for k, v in m.__dict__.items()}
    assert _run(model, 8192).training.seq_length == 8192
    with pytest.raises(ConfigError, match=r"training.seq_length=16384 exceeds model."
                                          r"attention_chunk_size=8192: chunked attention"):
        _run(model, 16384)
    nope = _read(tmp_path, _llama4({**SCOUT_TEXT, "no_rope_layers": [0] * 48}))
    assert nope.attention_chunk_size is None
    assert _read(tmp_path, _llama4({**SCOUT_TEXT, "attention_chunk_size": None})) \
        .attention_chunk_size is None


QWEN25_VL_7B = {  # Qwen/Qwen2.5-VL-7B-Instruct config.json, flat (transformers 4.41 save)
    "architectures": ["Qwen2_5_VLForConditionalGeneration"], "attention_dropout": 0.0,
    "hidden_act": "silu", "hidden_size": 3584, "intermediate_size": 18944,
    "max_position_embeddings": 128000, "max_window_layers": 28, "model_type": "qwen2_5_vl",
    "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
    "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 152064,
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vision_config": {"depth": 32, "hidden_size": 1280}}
TEXT_KEYS = ("attention_dropout", "hidden_act", "hidden_size", "intermediate_size",
             "max_position_embeddings", "max_window_layers", "num_attention_heads",
             "num_hidden_layers", "num_key_value_heads", "rms_norm_eps", "rope_theta",
             "sliding_window", "use_sliding_window", "vocab_size", "rope_scaling")


def test_qwen25_vl_flat_and_text_config_read_the_same_language_model(tmp_path):
    """The flat file (text fields at the top level) and the same fields under text_config
    give one model, with a warning that the vision encoder is not simulated."""
    flat_path = tmp_path / "flat.json"
    flat_path.write_text(json.dumps(QWEN25_VL_7B))
    with pytest.warns(TrainsimWarning, match="vision_config encoder are not simulated"):
        flat = model_from_hf_config(flat_path)
    nested = {k: v for k, v in QWEN25_VL_7B.items() if k not in TEXT_KEYS}
    nested["text_config"] = {k: QWEN25_VL_7B[k] for k in TEXT_KEYS}
    # one model, named by the composite's model_type or its text config's
    assert dataclasses.replace(_read(tmp_path, nested, "nested.json"), name=flat.name) == flat
    assert (flat.hidden_size, flat.num_layers, flat.kv_heads, flat.sliding_window) == \
        (3584, 28, 4, None)
    assert flat.activation == "swiglu" and not flat.tied_embeddings


def test_qwen25_vl_text_config_wins_over_stale_top_level_fields(tmp_path):
    """Qwen2_5_VLConfig reads top-level text fields only when there is no text_config; a file
    with both (4.5x saves) is read from text_config, missing fields from
    Qwen2_5_VLTextConfig's defaults; the outer tie_word_embeddings is kept (v5 ties by it)."""
    both = {**QWEN25_VL_7B, "tie_word_embeddings": True,
            "text_config": {"hidden_size": 2048, "intermediate_size": 11008,
                            "num_hidden_layers": 36, "num_attention_heads": 16,
                            "num_key_value_heads": 2, "vocab_size": 151936}}
    m = _read(tmp_path, both)
    assert (m.hidden_size, m.num_layers, m.kv_heads, m.vocab_size) == (2048, 36, 2, 151936)
    assert m.tied_embeddings and m.max_position_embeddings == 32768  # the class default


@pytest.mark.parametrize("limit, window", [(28, None), (0, 32768)])
def test_qwen_max_window_layers_windows_layers_from_it(tmp_path, limit, window):
    """Layer i slides where i >= max_window_layers (Qwen2_5_VLTextConfig, Qwen2Config): none
    from 28 of 28 layers, all from 0; a split between is refused naming the field."""
    data = {**QWEN25_VL_7B, "use_sliding_window": True, "max_window_layers": limit}
    assert _read(tmp_path, data).sliding_window == window
    with pytest.raises(ConfigError, match="max_window_layers=20 windows layers 20 to 27"):
        _read(tmp_path, {**data, "max_window_layers": 20})


COMMAND_R7B = {  # CohereForAI/c4ai-command-r7b-12-2024 config.json (fields read)
    "architectures": ["Cohere2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
    "layer_norm_eps": 1e-05, "max_position_embeddings": 132096, "model_type": "cohere2",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rope_theta": 50000, "sliding_window": 4096, "sliding_window_pattern": 4,
    "vocab_size": 256000}


@pytest.mark.parametrize("changes, every", [
    ({}, 4), ({"sliding_window_pattern": None}, 4),  # Cohere2Config's default pattern 4
    ({"sliding_window_pattern": 2}, 2),
    ({"layer_types": ["sliding_attention"] * 3 + ["full_attention"]}, 4)])
def test_cohere2_is_a_parallel_block_with_every_4th_layer_global(tmp_path, changes, every):
    """Cohere2DecoderLayer adds attention and MLP of one norm's output to the residual; its
    layers slide over 4096 tokens but every sliding_window_pattern-th (default 4); was: a
    sequential block windowed on every layer."""
    data = {**COMMAND_R7B, **changes}
    if "layer_types" in changes:
        data["layer_types"] = changes["layer_types"] * 8
    data = {k: v for k, v in data.items() if v is not None}
    m = _read(tmp_path, data)
    assert m.parallel_block and m.normalization == "layernorm"
    assert (m.sliding_window, m.window_attn_skip_freq) == (4096, every)
    assert m.layer_window(0) == 4096 and m.layer_window(every - 1) is None
    # Cohere2Config ties unless told (tie_word_embeddings: bool = True), one bias-free
    # Cohere2LayerNorm a layer: transformers 5.24.0 counts Cohere2ForCausalLM at
    # 8,028,033,024 on the meta device (was read untied with two biased norms: 9,077,006,336)
    assert m.tied_embeddings and m.parallel_block_norms == 1 and not m.norm_bias
    assert total_params(m) == 8_028_033_024
    assert not _read(tmp_path, {**data, "tie_word_embeddings": False}).tied_embeddings
