"""MPT (``models/mpt/configuration_mpt.py``; mosaicml/llm-foundry ``MPTConfig``): ``d_model``,
``n_heads``, ``n_layers``, ``max_seq_len``, an MLP ``expansion_ratio`` x ``d_model`` wide
(transformers' ``MptMLP`` builds 4 x, the default ratio), ``no_bias``, ALiBi or RoPE
positions where ``attn_config`` says so, else llm-foundry's learned table
(``learned_pos_emb``), ``attn_config.attn_type`` multi-query / grouped-query with
``kv_n_heads``.

DBRX (``models/dbrx/configuration_dbrx.py``, ``modeling_dbrx.py``): the MPT names plus
``attn_config.kv_n_heads``, ``attn_config.rope_theta`` and ``ffn_config``'s experts
(``moe_num_experts``, ``moe_top_k``, ``ffn_hidden_size``; ``DbrxExpertGLU``'s w1, v1, w2: a
gated MLP), no biases (``Wqkv``/``out_proj`` ``bias=False``).

Split out of ``hf_families``, which calls :func:`mpt_names` for both types.
"""

from __future__ import annotations

from typing import Any

from trainsim.catalog.hf_defaults import TRANSFORMERS_VERSION
from trainsim.catalog.hf_values import flag
from trainsim.config._build import type_name
from trainsim.errors import ConfigError


def _dbrx_value(sub: dict[str, Any], key: str, default: int, where: str, within: str) -> Any:
    """A DBRX ``attn_config`` / ``ffn_config`` count: the class default where absent
    (``DbrxAttentionConfig.kv_n_heads`` 1, ``DbrxFFNConfig`` ``moe_num_experts`` 4,
    ``moe_top_k`` 1, ``ffn_hidden_size`` 3584; transformers 5.24.0
    models/dbrx/configuration_dbrx.py, typed ``int``), refused where null (read as MHA
    before: ``kv_n_heads: null`` +7.7 % parameters)."""
    if key not in sub:
        return default
    if sub[key] is None:
        raise ConfigError(f"{where}: {within}{key} is null, which transformers "
                          f"{TRANSFORMERS_VERSION} refuses (an int); leave it out for the class "
                          f"default {default} or give a value")
    return sub[key]


def _sub(cfg: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    sub = cfg.get(key)
    if sub is None:
        return {}
    if not isinstance(sub, dict):  # 0 or [] was read as the empty mapping, silently
        raise ConfigError(f"{where}: {key} must be a mapping, got {type_name(sub)}")
    return sub


def mpt_names(cfg: dict[str, Any], where: str, fields: dict[str, Any]) -> dict[str, Any]:
    """MPT and DBRX names as Llama's (module docstring)."""
    out = dict(cfg)
    for theirs, ours in (("d_model", "hidden_size"), ("n_heads", "num_attention_heads"),
                         ("n_layers", "num_hidden_layers"),
                         ("max_seq_len", "max_position_embeddings")):
        if theirs in cfg and ours not in cfg:
            out[ours] = cfg[theirs]
    attn = _sub(cfg, "attn_config", where)
    heads = out.get("num_attention_heads")
    if cfg.get("model_type") == "dbrx":
        ffn = _sub(cfg, "ffn_config", where)
        act = _sub(ffn, "ffn_act_fn", where).get("name", "silu")
        width = _dbrx_value(ffn, "ffn_hidden_size", 3584, where, "ffn_config.")
        out.update(num_key_value_heads=_dbrx_value(attn, "kv_n_heads", 1, where, "attn_config."),
                   attention_bias=False, hidden_act=act,
                   num_local_experts=_dbrx_value(ffn, "moe_num_experts", 4, where, "ffn_config."),
                   num_experts_per_tok=_dbrx_value(ffn, "moe_top_k", 1, where, "ffn_config."),
                   moe_intermediate_size=width, intermediate_size=width)
        if attn.get("rope_theta") is not None and "rope_theta" not in cfg:
            out["rope_theta"] = attn["rope_theta"]
        fields["position_embedding"] = "rope"
        return out
    attn_type = attn.get("attn_type", "multihead_attention")
    if attn_type == "multiquery_attention":
        out["num_key_value_heads"] = 1
    elif attn_type == "grouped_query_attention":
        out["num_key_value_heads"] = attn.get("kv_n_heads", heads)
    elif attn_type != "multihead_attention":
        raise ConfigError(f"{where}: attn_config.attn_type={attn_type!r} is not read; "
                          "multihead_attention, multiquery_attention or "
                          "grouped_query_attention")
    ratio, hidden = cfg.get("expansion_ratio", 4), out.get("hidden_size")
    if "intermediate_size" not in cfg and isinstance(ratio, (int, float)) \
            and not isinstance(ratio, bool) and isinstance(hidden, int):
        out["intermediate_size"] = ratio * hidden
    no_bias = flag(cfg, "no_bias", True, where)
    out.setdefault("attention_bias", not no_bias)
    # no_bias drops the norms' biases too: llm-foundry MPTModel.__init__ (mosaicml/llm-foundry
    # llmfoundry/models/mpt/modeling_mpt.py, ``if config.no_bias:``) sets ``bias`` None on
    # every module holding one, q_ln/k_ln included; transformers' MptBlock.__init__
    # (models/mpt/modeling_mpt.py) sets ``norm_1.bias = None`` and ``norm_2.bias = None``
    fields["norm_bias"] = not no_bias
    out.setdefault("hidden_act", "gelu")
    # llm-foundry MPTConfig.__init__: alibi or rope turns learned_pos_emb off; MPTModel builds
    # the wpe table ``if self.learned_pos_emb`` (default true). transformers' MptModel always
    # adds ALiBi (modeling_mpt.py ``build_mpt_alibi_tensor``), the MPT checkpoints' setting.
    # a missing alibi takes MptAttentionConfig's default, true (transformers 5.24.0
    # configuration_mpt.py), unless llm-foundry's rope is on; llm-foundry's own default, false,
    # made a file without attn_config a learned position table (fuzz31)
    rope = flag(attn, "rope", False, where, "attn_config.")
    alibi = flag(attn, "alibi", not rope, where, "attn_config.")
    learned = flag(cfg, "learned_pos_emb", True, where)
    if alibi:
        fields["position_embedding"] = "alibi"
    elif rope:
        fields["position_embedding"] = "rope"
    elif learned:
        fields["position_embedding"] = "learned"
    else:
        raise ConfigError(f"{where}: no position embedding (attn_config alibi and rope false, "
                          "learned_pos_emb false) is not modelled")
    # llm-foundry's q/k norms (mosaicml/llm-foundry llmfoundry/models/layers/attention.py
    # ``GroupedQueryAttention.__init__``): ``qk_ln`` builds ``q_ln`` over ``d_model`` and
    # ``k_ln`` over ``head_dim * kv_n_heads``, the whole widths (qk_norm_span "full");
    # ``qk_gn`` ``norm_size = self.head_dim``, per head
    qk_ln = flag(attn, "qk_ln", False, where, "attn_config.")
    qk_gn = flag(attn, "qk_gn", False, where, "attn_config.")
    if qk_ln or qk_gn:
        out["use_qk_norm"] = True
        fields["qk_norm_span"] = "full" if qk_ln else "head"
    return out


__all__ = ["mpt_names"]
