"""Norm weights as Hugging Face transformers 5.24.0 builds them: full-width q/k norms (OLMo 2,
OLMoE, Command R+), one bias-free norm in a Cohere parallel block, one LayerNorm in Falcon-7B's.
The totals are transformers' own counts on the meta device (``AutoModelForCausalLM.from_config``
under ``torch.device("meta")``, summing each parameter once)."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest

from trainsim.catalog import model, model_from_hf_config
from trainsim.errors import ConfigError, TrainsimWarning
from trainsim.model import total_params
from trainsim.model.counts import layer_params, layer_tensors, qk_norm_params

OLMO2_7B = {  # allenai/OLMo-2-1124-7B config.json (fields read)
    "model_type": "olmo2", "hidden_size": 4096, "intermediate_size": 11008,
    "num_attention_heads": 32, "num_key_value_heads": 32, "num_hidden_layers": 32,
    "vocab_size": 100352, "max_position_embeddings": 4096, "tie_word_embeddings": False,
    "rms_norm_eps": 1e-6, "hidden_act": "silu", "attention_bias": False}
COMMAND_R_PLUS = {  # CohereForAI/c4ai-command-r-plus config.json (fields read)
    "model_type": "cohere", "hidden_size": 12288, "intermediate_size": 33792,
    "num_attention_heads": 96, "num_key_value_heads": 8, "num_hidden_layers": 64,
    "vocab_size": 256000, "use_qk_norm": True, "layer_norm_eps": 1e-5,
    "max_position_embeddings": 8192, "hidden_act": "silu", "rope_theta": 75000000.0}


def _read(tmp_path, data):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrainsimWarning)
        return model_from_hf_config(path)


@pytest.mark.parametrize("name, count", [("olmo2-7b", 7_298_617_344),
                                         ("olmo2-13b", 13_716_198_400),
                                         ("olmoe-1b-7b", 6_919_161_856)])
def test_olmo_presets_count_full_width_qk_norms(name, count):
    """Olmo2RMSNorm(heads x head_dim) and (kv_heads x head_dim): 2 x (4096 - 128) weights a
    layer more than per-head norms on OLMo 2 7B (was 7,298,363,392)."""
    m = model(name)
    assert m.qk_norm_span == "full"
    assert qk_norm_params(m) == m.q_size + m.kv_size
    assert total_params(m) == count


def test_olmo2_config_json_has_full_qk_norms(tmp_path):
    """olmo2's config.json names no q/k norm: the model type does (was: none counted)."""
    m = _read(tmp_path, OLMO2_7B)
    assert m.qk_layernorm and m.qk_norm_span == "full"
    assert total_params(m) == 7_298_617_344
    for kind in ("olmo3", "olmoe"):
        assert _read(tmp_path, {**OLMO2_7B, "model_type": kind}).qk_norm_span == "full"
    assert _read(tmp_path, {**OLMO2_7B, "model_type": "qwen3"}).qk_norm_span == "head"


def test_command_r_plus_qk_norms_weigh_every_head_without_bias(tmp_path):
    """CohereLayerNorm((96, 128)) and ((8, 128)): (96 + 8) x 128 weights, no bias, a layer
    (was 4 x 128, a shared LayerNorm's weight and bias); one input_layernorm a layer, no
    bias; tied: 103,810,674,688 as transformers counts CohereForCausalLM."""
    m = _read(tmp_path, COMMAND_R_PLUS)
    assert m.qk_layernorm and not m.norm_bias and m.parallel_block_norms == 1
    assert m.tied_embeddings
    assert qk_norm_params(m) == (96 + 8) * 128
    assert total_params(m) == 103_810_674_688


def test_layer_tensors_sum_to_layer_params(tmp_path):
    """Every tensor of the layer listed once: the full-width q/k norms as two tensors, a
    bias-free LayerNorm as one."""
    for m in (model("olmo2-7b"), model("falcon-7b"), model("gpt-neox-20b"),
              _read(tmp_path, COMMAND_R_PLUS)):
        assert sum(n for n, _ in layer_tensors(m)) == layer_params(m)
    tensors = layer_tensors(_read(tmp_path, COMMAND_R_PLUS))
    assert (8 * 128, False) in tensors
    # the one input_layernorm's weight and the q_norm's 96 x 128 = 12288
    assert tensors.count((12288, False)) == 2


def test_parallel_block_norms_one_or_two():
    """GPT-NeoX keeps two norms a parallel block (input_layernorm, post_attention_layernorm);
    one, without a parallel block, or three is refused."""
    neox, f7 = model("gpt-neox-20b"), model("falcon-7b")
    assert neox.parallel_block_norms == 2 and f7.parallel_block_norms == 1
    assert layer_params(neox) - layer_params(dataclasses.replace(neox, parallel_block_norms=1)) \
        == 2 * neox.hidden_size
    with pytest.raises(ConfigError, match="parallel_block_norms=3"):
        dataclasses.replace(neox, parallel_block_norms=3)
    with pytest.raises(ConfigError, match="needs model.parallel_block"):
        dataclasses.replace(model("llama-7b"), parallel_block_norms=1)


FALCON_7B = {"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71,
             "num_hidden_layers": 32, "vocab_size": 65024, "multi_query": True,
             "new_decoder_architecture": False, "parallel_attn": True, "bias": False,
             "alibi": False}  # tiiuae/falcon-7b config.json (fields read)


def test_falcon_config_json_is_a_parallel_block_with_rotary_positions(tmp_path):
    """parallel_attn: one input_layernorm (Falcon-7B), ln_attn and ln_mlp under
    new_decoder_architecture (Falcon-40B); rotary unless alibi; exact HF counts (was a
    sequential block with learned positions: 6,931,317,632 for Falcon-7B)."""
    f7 = _read(tmp_path, FALCON_7B)
    assert (f7.parallel_block, f7.parallel_block_norms, f7.position_embedding) == \
        (True, 1, "rope")
    assert total_params(f7) == 6_921_720_704
    f40 = _read(tmp_path, {**FALCON_7B, "new_decoder_architecture": True, "num_kv_heads": 8,
                           "num_attention_heads": 128, "hidden_size": 8192,
                           "num_hidden_layers": 60})
    assert f40.parallel_block_norms == 2 and total_params(f40) == 41_303_293_952
    assert not _read(tmp_path, {**FALCON_7B, "parallel_attn": False}).parallel_block
    assert _read(tmp_path, {**FALCON_7B, "alibi": True}).position_embedding == "alibi"


MPT_QK_LN = {  # an llm-foundry MPT with q/k LayerNorms and grouped-query attention
    "model_type": "mpt", "d_model": 1024, "n_heads": 8, "n_layers": 4, "vocab_size": 1000,
    "max_seq_len": 2048, "expansion_ratio": 4, "no_bias": True,
    "attn_config": {"attn_type": "grouped_query_attention", "kv_n_heads": 2, "qk_ln": True}}


def test_mpt_qk_ln_norms_span_the_whole_widths(tmp_path):
    """llm-foundry's qk_ln: ``q_ln`` over d_model and ``k_ln`` over head_dim x kv_n_heads
    (mosaicml/llm-foundry llmfoundry/models/layers/attention.py
    ``GroupedQueryAttention.__init__``): 1024 + 2 x 128 weights a layer (was 2 x 128, a
    per-head norm); ``no_bias`` drops their biases (MPTModel.__init__ sets every module's
    bias None, q_ln/k_ln included; was counted with bias, 2 x (1024 + 256)); qk_gn normalizes
    per head (``norm_size = self.head_dim``)."""
    m = _read(tmp_path, MPT_QK_LN)
    assert m.qk_layernorm and m.qk_norm_span == "full" and not m.norm_bias
    assert qk_norm_params(m) == 1024 + 2 * 128
    gn = _read(tmp_path, {**MPT_QK_LN, "attn_config": {**MPT_QK_LN["attn_config"],
                                                       "qk_ln": False, "qk_gn": True}})
    assert gn.qk_layernorm and gn.qk_norm_span == "head"
    assert qk_norm_params(gn) == 2 * 128
    with_bias = _read(tmp_path, {**MPT_QK_LN, "no_bias": False})
    assert with_bias.norm_bias and qk_norm_params(with_bias) == 2 * (1024 + 2 * 128)


def test_mpt_no_bias_norms_match_transformers_count(tmp_path):
    """transformers' MptBlock sets ``norm_1.bias``/``norm_2.bias`` None and MptModel
    ``norm_f.bias`` None (models/mpt/modeling_mpt.py): an ALiBi MPT (no position table) of
    d_model 1024, 4 layers, vocab 1000 holds 51,364,864 parameters as MptForCausalLM built
    on the meta device counts them (transformers 5.24.0; was 51,374,080 with the norms'
    biases: 9 norms x 1024)."""
    m = _read(tmp_path, {"model_type": "mpt", "d_model": 1024, "n_heads": 8, "n_layers": 4,
                         "vocab_size": 1000, "max_seq_len": 2048, "expansion_ratio": 4,
                         "no_bias": True, "attn_config": {"alibi": True}})
    assert not m.norm_bias and total_params(m) == 51_364_864
