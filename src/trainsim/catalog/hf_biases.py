"""The linear layers' biases of a Hugging Face config.json's model (``hf_config``): which of
the query/key/value projections, the attention output projection and the MLP carry biases, as
each family's transformers 5.24.0 modeling file builds them."""

from __future__ import annotations

from typing import Any

from trainsim.catalog import hf_families

QKV_BIAS_MODEL_TYPES = ("qwen2", "qwen2_moe", "qwen2_vl", "qwen2_vl_text", "qwen2_5_vl",
                        "qwen2_5_vl_text")
"""Families whose Q, K and V projections have biases and whose output projection and MLP have
none, whatever ``attention_bias`` says (their configs name none): ``Qwen2Attention`` builds
q/k/v_proj with ``bias=True`` and o_proj with ``bias=False``, ``Qwen2MLP`` its three
projections with ``bias=False`` (transformers 5.24.0 models/qwen2/modeling_qwen2.py lines 41-43,
181-184; the same in qwen2_vl/modeling_qwen2_vl.py 461-463, 504-507 and qwen2_5_vl 556-558,
625-628); Qwen2-MoE's q/k/v follow ``qkv_bias`` (``Qwen2MoeConfig.qkv_bias: bool = True``,
modeling_qwen2_moe.py 222-225)."""


UNBIASED_OUT_MODEL_TYPES = ("glm", "glm4", "glm4_moe", "glm4v_moe_text")
"""Families whose ``attention_bias`` switches the Q, K and V projections only: GLM, GLM-4,
GLM-4.5 and GLM-4.5V's text model build o_proj with ``bias=False`` (transformers 5.24.0
modeling_glm.py line 220, modeling_glm4.py line 220, modeling_glm4_moe.py line 197,
modeling_glm4v_moe.py line 222)."""


MLP_BIAS_MODEL_TYPES = ("gpt_neox", "gpt_oss")
"""Families whose MLP carries biases whatever the file says, their config class having no
``mlp_bias``: ``GPTNeoXMLP`` builds dense_h_to_4h and dense_4h_to_h as ``nn.Linear`` with its
default bias (transformers 5.24.0 modeling_gpt_neox.py lines 41-42), ``GptOssExperts`` holds
``gate_up_proj_bias`` and ``down_proj_bias`` beside its weights (modeling_gpt_oss.py). Read
without them since ``attention_bias`` beside a missing ``mlp_bias`` means off (a4d0318):
GPT-NeoX -26,624 parameters a layer of the 2048-wide default, gpt-oss-120b -39.8 M."""


def linear_biases(cfg: dict[str, Any], default: bool, where: str) -> dict[str, bool]:
    """The model's bias fields from ``attention_bias`` (Q, K, V and the output projection:
    transformers' Llama, Mistral, Gemma ... build all four with ``bias=config.attention_bias``)
    and ``mlp_bias`` (Llama's ``LlamaMLP`` gate/up/down_proj ``bias=config.mlp_bias``), or the
    family's fixed biases (``QKV_BIAS_MODEL_TYPES``, ``UNBIASED_OUT_MODEL_TYPES``); a key the
    file leaves out takes ``default``, except ``mlp_bias`` beside an ``attention_bias``, which
    is off as transformers reads it. ``add_bias_linear`` is set when all three groups agree,
    else off with the groups that have biases switched on one by one (``add_qkv_bias``, ``add_proj_bias``,
    ``add_mlp_bias``)."""
    kind = str(cfg.get("model_type") or "")
    if kind in QKV_BIAS_MODEL_TYPES:
        qkv = hf_families.flag(cfg, "qkv_bias", True, where) if kind == "qwen2_moe" else True
        attention, proj, mlp = qkv, False, False
    else:
        attention = hf_families.flag(cfg, "attention_bias", default, where)
        proj = attention and kind not in UNBIASED_OUT_MODEL_TYPES
        # a family that reads attention_bias builds its MLP from mlp_bias alone (LlamaConfig
        # mlp_bias=False; Qwen3, Gemma, OLMo, GLM: no MLP bias), whatever attention_bias says
        mlp = kind in MLP_BIAS_MODEL_TYPES or hf_families.flag(
            cfg, "mlp_bias", False if cfg.get("attention_bias") is not None else default, where)
        # Seed-OSS switches o_proj apart (SeedOssConfig.attention_out_bias, default False:
        # modeling_seed_oss.py ``SeedOssAttention`` o_proj ``bias=config.attention_out_bias``)
        if "attention_out_bias" in cfg:
            proj = hf_families.flag(cfg, "attention_out_bias", False, where)
    if attention == proj == mlp:
        return {"add_bias_linear": attention}
    groups = {"add_qkv_bias": attention, "add_proj_bias": proj, "add_mlp_bias": mlp}
    return {"add_bias_linear": False, **{k: True for k, v in groups.items() if v}}


__all__ = ["MLP_BIAS_MODEL_TYPES", "QKV_BIAS_MODEL_TYPES", "UNBIASED_OUT_MODEL_TYPES",
           "linear_biases"]
