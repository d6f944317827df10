"""fuzz32: config.json structures trainsim would misread, refused in one line naming the field
(Laguna's per-element attention gate and per-layer heads, Mllama's cross-attention layers, the
composite and repaired types ``benchmarks/hf_survey.py`` now surveys), and the input fuzzing
round's fixes."""

from __future__ import annotations

import pytest
from helpers import hf_config_read

from trainsim.errors import ConfigError

CORE = {"hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 32000, "intermediate_size": 4096}
LAGUNA = {"model_type": "laguna", **CORE, "head_dim": 64, "num_experts": 8,
          "num_experts_per_tok": 2, "moe_intermediate_size": 512,
          "shared_expert_intermediate_size": 512,
          "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"]}


@pytest.mark.parametrize("gating", [True, "per-head"])
def test_laguna_per_head_gate_read(tmp_path, gating):
    model, _ = hf_config_read(tmp_path, {**LAGUNA, "gating": gating,
                                         "num_attention_heads_per_layer": [32] * 4})
    assert model.num_attention_heads == 32 and model.moe_first_dense_layers == 1


@pytest.mark.parametrize(("extra", "field"), [
    ({"gating": "per-element"}, "gating='per-element'"),
    ({"gating": False}, "gating=False"),  # LagunaAttention: not True -> per element
    ({"num_attention_heads_per_layer": [32, 16, 16, 32]}, "num_attention_heads_per_layer"),
])
def test_laguna_attention_misread_refused(tmp_path, extra, field):
    with pytest.raises(ConfigError, match=field) as err:
        hf_config_read(tmp_path, {**LAGUNA, **extra})
    assert "\n" not in str(err.value)


def test_mllama_cross_attention_layers_refused(tmp_path):
    text = {"model_type": "mllama_text_model", **CORE, "cross_attention_layers": [1, 3]}
    with pytest.raises(ConfigError, match="cross_attention_layers=.*cross-attention"):
        hf_config_read(tmp_path, {"model_type": "mllama", "text_config": text,
                                  "vision_config": {}})


@pytest.mark.parametrize(("cfg", "what"), [
    # composite: its text_config is a qwen3 one, the outer type is the one listed
    ({"model_type": "moss_transcribe_diarize", "text_config": {"model_type": "qwen3", **CORE},
      "audio_config": {}}, "tied to the embedding"),
    ({"model_type": "moshi", **CORE, "ffn_dim": 8192}, "depth decoder"),
    ({"model_type": "hunyuan_v1_moe", **CORE, "num_experts": 8, "moe_topk": 2}, "moe_topk"),
])
def test_surveyed_composite_and_repaired_types_refused(tmp_path, cfg, what):
    with pytest.raises(ConfigError, match=f"model_type '{cfg['model_type']}' is not modelled"
                       ) as err:
        hf_config_read(tmp_path, cfg)
    assert what in str(err.value)


LLAMA = {"model_type": "llama", **CORE}


@pytest.mark.parametrize(("extra", "message"), [
    ({"num_key_value_heads": ""}, "num_key_value_heads is an empty string"),  # read as MHA
    ({"intermediate_size": " "}, "intermediate_size is an empty string"),
    ({"layer_types": "full_attention"}, "layer_types must be a list"),  # ignored before
    ({"model_type": "llava", "text_config": [LLAMA]}, "text_config must be a mapping"),
])
def test_config_json_blank_and_mistyped_fields_refused(tmp_path, extra, message):
    with pytest.raises(ConfigError, match=message):
        hf_config_read(tmp_path, {**LLAMA, **extra})


@pytest.mark.parametrize(("types", "message"), [
    (["dense"], "has 1 entries for num_hidden_layers=4"),  # read as 1 dense layer before
    (["dense", "moe", "moe", "moe"], "holds 'moe'"),  # "a dense layer after a sparse one"
])
def test_mlp_layer_types_length_and_words(tmp_path, types, message):
    with pytest.raises(ConfigError, match=message):
        hf_config_read(tmp_path, {**LAGUNA, "mlp_layer_types": types})


def test_switch_cell_shown_as_written(tmp_path):
    from trainsim.validate.vocab import normalized_training_row

    row, _ = normalized_training_row({"sequence_parallel": "-1", "distributed_optimizer": " No "})
    assert row["sequence_parallel"] == "-1" and row["distributed_optimizer"] == "no"  # was '_1'


@pytest.mark.parametrize(("extra", "warned"), [
    ({}, True), ({"hidden_act": "silu"}, False), ({"model_type": "llama"}, False)])
def test_no_model_type_nor_activation_warns_of_the_two_matrix_mlp(tmp_path, extra, warned):
    """tidy32 (fuzz32 lead c): a file naming neither its family nor its activation is read as
    a two-matrix GELU MLP, as before, but says so once."""
    model, said = hf_config_read(tmp_path, {**CORE, **extra})
    named = [m for m in said if "no model_type and no hidden_act" in m]
    assert len(named) == (1 if warned else 0)
    assert (model.activation == "gelu") == warned
