"""Hugging Face config.json of families named otherwise (hfread, 21st session): parallel
attention + MLP blocks read as parallel (GPT-NeoX, StableLM, GPT-J, CodeGen, Phi-1/2,
Falcon), rotary positions under transformers v5's ``rope_parameters`` or ``rotary_dim``, MPT
and DBRX configs, GLM-4.5-MoE without ``head_dim``, BitNet's gated MLP. Each parameter count
is checked against the model transformers 5.24 builds from the same config on the meta
device (within 0.05 %), and the names against a hand reading of the file."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import pytest

from trainsim.catalog import model_from_hf_config
from trainsim.errors import ConfigError
from trainsim.model.counts import total_params

TOLERANCE = 5e-4


def _write(tmp_path: Path, cfg: dict) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return path


def _reference(model_type: str, **kw):
    """(config.json mapping, transformers' parameter count) of ``model_type``'s config."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = transformers.AutoConfig.for_model(model_type, **kw)
        data = cfg.to_dict()
        if model_type == "dbrx":  # 5.24's DbrxAttentionConfig keeps rope_theta outside
            cfg.attn_config.rope_theta = data["rope_parameters"]["rope_theta"]
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(cfg)
    return data, sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("model_type,kw,parallel", [
    ("gpt_neox", {}, True),
    ("gpt_neox", {"use_parallel_residual": False}, False),
    ("stablelm", {"use_parallel_residual": True}, True),
    ("stablelm", {}, False),
    ("gptj", {}, True),
    ("codegen", {}, True),
    ("phi", {}, True),
    ("falcon", {}, True),
    ("falcon", {"parallel_attn": False}, False),
    ("falcon", {"alibi": True}, True),
    # an explicit null is false in transformers (truth tests, nn.Linear(bias=None)): MHA,
    # no bias, a sequential block (read as MQA, biases, a parallel block before)
    ("falcon", {"multi_query": None}, True),
    ("falcon", {"bias": None, "multi_query": False}, True),
    ("falcon", {"parallel_attn": None}, False),
    ("mpt", {}, False),
    ("mpt", {"d_model": 1024, "n_heads": 8, "n_layers": 4}, False),
    ("dbrx", {}, False),
    ("dbrx", {"d_model": 1024, "n_heads": 8, "n_layers": 4, "attn_config": {"kv_n_heads": 2},
              "ffn_config": {"moe_num_experts": 8, "moe_top_k": 2, "ffn_hidden_size": 2816}},
     False),
    ("bitnet", {}, False),
    ("glm4_moe", {}, False),
    ("starcoder2", {}, False),
])
def test_parameter_counts_agree_with_transformers(tmp_path, model_type, kw, parallel):
    data, ref = _reference(model_type, **kw)
    m = model_from_hf_config(_write(tmp_path, data))
    assert m.parallel_block is parallel
    # transformers builds no multi-token-prediction layer (GLM-4.5's num_nextn_predict_layers)
    got = total_params(dataclasses.replace(m, mtp_num_layers=0))
    assert abs(got / ref - 1) < TOLERANCE, (model_type, got, ref)


def test_rotary_positions_add_no_position_table(tmp_path):
    # GPT-NeoX-20B read as learned positions was +2048 x 6144 parameters (+0.06 %)
    cfg = {"model_type": "gpt_neox", "hidden_size": 1024, "num_hidden_layers": 2,
           "num_attention_heads": 8, "vocab_size": 1000, "hidden_act": "gelu",
           "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"}}
    assert model_from_hf_config(_write(tmp_path, cfg)).position_embedding == "rope"
    gptj = {"model_type": "gptj", "n_embd": 1024, "n_layer": 2, "n_head": 8, "vocab_size": 1000,
            "rotary_dim": 64, "activation_function": "gelu_new"}
    assert model_from_hf_config(_write(tmp_path, gptj)).position_embedding == "rope"
    yarn = {**cfg, "rope_parameters": {"rope_theta": 1e4, "rope_type": "yarn", "factor": 4.0}}
    assert model_from_hf_config(_write(tmp_path, yarn)).rope_scaling == "yarn"


def test_mpt_fields_by_hand(tmp_path):
    cfg = {"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32,
           "expansion_ratio": 4, "max_seq_len": 2048, "vocab_size": 50432, "no_bias": True,
           "attn_config": {"alibi": True, "attn_type": "multihead_attention"}}
    m = model_from_hf_config(_write(tmp_path, cfg))
    assert (m.hidden_size, m.num_attention_heads, m.num_layers, m.ffn_hidden_size) == \
        (4096, 32, 32, 16384)
    assert m.position_embedding == "alibi" and not m.add_bias_linear
    assert m.activation == "gelu" and m.max_position_embeddings == 2048
    # llm-foundry: alibi or rope turn learned_pos_emb off; without them MPTModel builds wpe
    learned = {**cfg, "attn_config": {"alibi": False}, "learned_pos_emb": True}
    assert model_from_hf_config(_write(tmp_path, learned)).position_embedding == "learned"
    rope = {**cfg, "attn_config": {"rope": True}, "learned_pos_emb": True}
    assert model_from_hf_config(_write(tmp_path, rope)).position_embedding == "rope"
    gqa = {**cfg, "attn_config": {"attn_type": "grouped_query_attention", "kv_n_heads": 8}}
    assert model_from_hf_config(_write(tmp_path, gqa)).num_kv_heads == 8
    bad = {**cfg, "attn_config": {"attn_type": "sliding"}}
    with pytest.raises(ConfigError, match="attn_type"):
        model_from_hf_config(_write(tmp_path, bad))


def test_dbrx_experts_by_hand(tmp_path):
    # databricks/dbrx-base config.json: 16 experts, top 4, 10752 wide, 8 KV heads, 40 layers
    cfg = {"model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40,
           "max_seq_len": 32768, "vocab_size": 100352,
           "attn_config": {"kv_n_heads": 8, "rope_theta": 500000, "clip_qkv": 8},
           "ffn_config": {"ffn_hidden_size": 10752, "moe_num_experts": 16, "moe_top_k": 4,
                          "ffn_act_fn": {"name": "silu"}}}
    m = model_from_hf_config(_write(tmp_path, cfg))
    assert (m.num_experts, m.moe_router_topk, m.moe_ffn_hidden_size, m.num_kv_heads) == \
        (16, 4, 10752, 8)
    assert m.activation == "swiglu" and m.position_embedding == "rope"
    # 132B total parameters (Databricks' announcement): 3 x 6144 x 10752 x 16 x 40 experts
    assert abs(total_params(m) / 132e9 - 1) < 0.01


def test_glm4_moe_head_dim_is_the_floor_of_the_division(tmp_path):
    cfg = {"model_type": "glm4_moe", "hidden_size": 4096, "num_attention_heads": 96,
           "num_key_value_heads": 8, "num_hidden_layers": 2, "vocab_size": 1000,
           "hidden_act": "silu", "rms_norm_eps": 1e-5, "intermediate_size": 10944}
    assert model_from_hf_config(_write(tmp_path, cfg)).head_dim == 42  # 4096 // 96
    given = {**cfg, "head_dim": 128}  # GLM-4.5's config.json names it
    assert model_from_hf_config(_write(tmp_path, given)).head_dim == 128


def test_gptj_bias_gap_is_exactly_the_lm_head_bias(tmp_path):
    """A documented gap, not a fit: GPT-J's attention projections carry no bias
    (``GPTJAttention``: q/k/v/out_proj ``bias=False``), its MLP does (``GPTJMLP`` fc_in,
    fc_out) and so does its untied LM head (``GPTJForCausalLM.lm_head = nn.Linear(n_embd,
    vocab_size)``), transformers 5.24.0 modeling_gptj.py. trainsim reads the attention without
    and the MLP with biases (mem30; before, one ``add_bias_linear`` switch counted the
    attention's 28 x 4 x 4096 too) and holds no head bias: 50,400 under transformers'."""
    data, ref = _reference("gptj")
    m = model_from_hf_config(_write(tmp_path, data))
    assert (m.qkv_bias, m.proj_bias, m.mlp_bias) == (False, False, True)
    assert not m.tied_embeddings
    assert total_params(m) - ref == -m.vocab_size == -50_400


def test_phi3_small_gegelu_is_refused_with_what_it_lacks(tmp_path):
    """Phi-3-small's config.json (microsoft/Phi-3-small-8k-instruct: hidden_act gegelu,
    ff_intermediate_size 14336, dense_attention_every_n_layers 2): its gegelu is a gated
    quick-GELU, but the FFN width and the block-sparse layers are fields trainsim does not read,
    so the reader refuses it in one line naming them rather than pricing a 2-matrix GELU MLP."""
    cfg = {"model_type": "phi3small", "hidden_act": "gegelu", "gegelu_limit": 20.0,
           "hidden_size": 4096, "ff_intermediate_size": 14336, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 100352,
           "dense_attention_every_n_layers": 2, "layer_norm_epsilon": 1e-5}
    with pytest.raises(ConfigError, match="gegelu.*ff_intermediate_size.*block-sparse"):
        model_from_hf_config(_write(tmp_path, cfg))


@pytest.mark.parametrize(("key", "field", "off"), [
    ("bias", "add_bias_linear", False), ("multi_query", "num_kv_heads", 8),
    ("parallel_attn", "parallel_block", False)])
def test_a_null_falcon_switch_reads_as_false(tmp_path, key, field, off):
    # FalconConfig types them bool | None; modeling_falcon.py (transformers 5.24.0) tests
    # their truth or builds FalconLinear(bias=None): no bias, MHA, a sequential block
    cfg = {"model_type": "falcon", "hidden_size": 1024, "num_hidden_layers": 2,
           "num_attention_heads": 8, "vocab_size": 1000, key: None}
    assert getattr(model_from_hf_config(_write(tmp_path, cfg)), field) == off
