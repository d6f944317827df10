"""edge49: robust49's three small input edges (its Leads 3 and 4), one test each."""

from __future__ import annotations

import json

import pytest

from trainsim.catalog.hf_config import model_from_hf_config
from trainsim.config.parallel import ParallelConfig, schedule_name
from trainsim.errors import ConfigError
from trainsim.model.counts import mtp_params, total_params

# transformers 5.24.0 ``Glm4vMoeTextConfig()``'s fields, cut to 8 layers: 96 heads on a 4096
# width and no head_dim (GLM-4.5V's text model)
GLM4V_MOE_TEXT = {
    "model_type": "glm4v_moe_text", "vocab_size": 151424, "hidden_size": 4096,
    "intermediate_size": 10944, "num_hidden_layers": 8, "num_attention_heads": 96,
    "num_key_value_heads": 8, "hidden_act": "silu", "max_position_embeddings": 65536,
    "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "attention_bias": True,
    "moe_intermediate_size": 1408, "num_experts_per_tok": 8, "n_shared_experts": 1,
    "n_routed_experts": 128, "routed_scaling_factor": 1.0, "n_group": 1, "topk_group": 1,
    "first_k_dense_replace": 1, "norm_topk_prob": True,
    "rope_parameters": {"rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                        "rope_type": "default"}}

GLM4V_PARAMS = 17_288_241_920
"""``sum(p.numel())`` of ``AutoModel.from_config(Glm4vMoeTextConfig(num_hidden_layers=8))`` on
the meta device plus its untied head (151,424 x 4,096), transformers 5.24.0."""


def _hf(tmp_path, cfg: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def test_glm45v_text_without_head_dim_floors_the_division_as_transformers(tmp_path):
    """robust49 lead 3: main refused it ("set model.head_dim"); Glm4vMoeTextAttention takes
    ``getattr(config, "head_dim", hidden_size // num_attention_heads)`` = 42 and builds o_proj
    without a bias (modeling_glm4v_moe.py lines 207, 222): the count is transformers'."""
    model = model_from_hf_config(_hf(tmp_path, GLM4V_MOE_TEXT))
    assert model.head_dim == 4096 // 96
    assert total_params(model) - mtp_params(model) == GLM4V_PARAMS


def test_a_head_count_that_does_not_divide_names_the_files_key(tmp_path):
    """Other families refuse it, naming the key a config.json holds (head_dim), not the YAML
    field model.head_dim the user of a hub file cannot set there; a given head_dim is read."""
    llama = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 2,
             "num_attention_heads": 96, "num_key_value_heads": 8, "intermediate_size": 8192,
             "vocab_size": 32000, "hidden_act": "silu", "rms_norm_eps": 1e-5}
    with pytest.raises(ConfigError) as refused:
        model_from_hf_config(_hf(tmp_path, llama))
    said = str(refused.value)
    assert "set head_dim" in said and "model.head_dim" not in said
    llama["head_dim"] = 64
    assert model_from_hf_config(_hf(tmp_path, llama)).head_dim == 64


@pytest.mark.parametrize("layout", ["balanced,filled", "balanced, front_loaded",
                                    "filled|balanced"])
def test_a_list_of_layout_rules_is_refused_as_a_list(layout):
    """robust49 lead 4: main said "unknown slot(s) ['a', 'b', 'c', ...]"."""
    with pytest.raises(ConfigError) as refused:
        ParallelConfig(pipeline_model_parallel_size=2, pipeline_model_parallel_layout=layout)
    said = str(refused.value)
    assert "unknown slot" not in said and "in a list" in said and "one rule" in said


@pytest.mark.parametrize("layout, meant", [("Balanced", "balanced"),
                                           ("front-loaded", "front_loaded"),
                                           ("FILLED", "filled")])
def test_a_miscased_layout_rule_is_suggested(layout, meant):
    with pytest.raises(ConfigError, match=f"did you mean '{meant}'"):
        ParallelConfig(pipeline_model_parallel_size=2, pipeline_model_parallel_layout=layout)


def test_a_spelt_layout_keeps_its_slot_message():
    with pytest.raises(ConfigError, match=r"unknown slot\(s\) \['x'\]"):
        ParallelConfig(pipeline_model_parallel_size=2, pipeline_model_parallel_layout="Etx|tL")


@pytest.mark.parametrize("text, name", [("ＺＢ_Ｈ1", "zb_h1"), ("ZB-H1", "zb_h1"),
                                        ("ＤｕａｌＰｉｐｅＶ", "dualpipe_v"),
                                        (" interleaved_1f1b ", "interleaved_1f1b")])
def test_full_width_and_padded_schedule_names_are_read(text, name):
    """robust49 lead 4: NFKC folds the full-width forms (main: unknown, no suggestion)."""
    assert schedule_name(text) == name


@pytest.mark.parametrize("text, near", [("ＺＢ_Ｈ3", "zb_h"), ("ZB-H3", "zb_h"),
                                        ("ZBVZeroBubbl", "zb_v")])
def test_an_unknown_schedule_in_another_form_gets_the_nearest(text, near):
    with pytest.raises(ConfigError, match=f"did you mean '{near}"):
        schedule_name(text)


# transformers 5.24.0 ``Lfm2Config()``'s fields, cut to 8 (all attention) layers
LFM2 = {"model_type": "lfm2", "vocab_size": 65536, "hidden_size": 2560,
        "intermediate_size": 12288, "num_hidden_layers": 8, "num_attention_heads": 32,
        "num_key_value_heads": 8, "max_position_embeddings": 128000, "norm_eps": 1e-5,
        "tie_word_embeddings": True, "conv_bias": False, "conv_L_cache": 3,
        "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
        "block_multiple_of": 256, "block_ffn_dim_multiplier": 1.0,
        "block_auto_adjust_ff_dim": True, "layer_types": ["full_attention"] * 8}


@pytest.mark.parametrize("edit, width, params", [
    ({}, 8192, 802_205_440),
    ({"block_auto_adjust_ff_dim": False}, 12288, 1_053_863_680),
    ({"block_ffn_dim_multiplier": 1.5, "intermediate_size": 10000}, 10240, 928_034_560),
    ({"intermediate_size": 10000, "block_multiple_of": 100}, 6700, 710_536_960)])
def test_lfm2_counts_what_transformers_builds(tmp_path, edit, width, params):
    """robust49 lead 2: main read LFM2 as a biased GELU / LayerNorm model (+212,224 at 8
    layers). ``params``: ``sum(p.numel())`` of ``AutoModelForCausalLM.from_config(
    Lfm2Config(**fields))`` on the meta device, transformers 5.24.0."""
    model = model_from_hf_config(_hf(tmp_path, {**LFM2, **edit}))
    assert model.ffn_hidden_size == width and model.activation == "swiglu"
    assert total_params(model) - mtp_params(model) == params
