"""Hugging Face config.json fields of families whose names differ from Llama's, read before
``hf_config.model_from_hf_config``; and the structures trainsim does not model, refused in one
line instead of simulated as something else.

Each rule cites the transformers source (huggingface/transformers v5.24.0, the version the
tests build models with to count their parameters):

- Falcon (``models/falcon/configuration_falcon.py``, ``modeling_falcon.py`` ``FalconAttention``):
  ``new_decoder_architecture`` takes ``num_kv_heads`` key/value heads, else ``multi_query``
  takes one, else one per head; ``bias`` is the linear layers' bias (a Llama config's
  ``attention_bias``). Before, Falcon-7B read as 71 key/value heads with biases: +19 % params.
- Layers that are not softmax attention (Mamba / state-space, linear attention, convolution,
  recurrent blocks): named by ``layer_types`` (Qwen3-Next, MiniMax, Kimi-Linear, LFM2,
  GraniteMoeHybrid), ``layers_block_type`` (Zamba, Nemotron-H), ``block_types``
  (RecurrentGemma), or a ``mamba_*`` / ``ssm_*`` field (Jamba, Falcon-H1, Bamba). trainsim's
  layer is attention plus MLP: Jamba read as 32 attention layers was +79 % params.
- Mixture-of-experts fields under names ``model_from_hf_config`` does not read (ERNIE 4.5's
  ``moe_num_experts``, Kimi-Linear's ``num_experts_per_token``, Qwen-MoE's ``mlp_only_layers``,
  AFMoE/LFM2-MoE's ``num_dense_layers``, ...): read as a dense model or with the default top-2,
  silently (ERNIE-4.5-MoE: -85 % params); refused, naming the field.
"""

from __future__ import annotations

from typing import Any

from trainsim.errors import ConfigError

ATTENTION_LAYER_TYPES = frozenset({"full_attention", "sliding_attention", "chunked_attention",
                                   "indexed_attention", "attention"})
"""Per-layer type names that are softmax attention: over a window (``sliding_attention``),
chunks (Llama 4's ``chunked_attention``) or the keys an indexer picks (DeepSeek-V3.2's
``indexed_attention``). How each prices is ``hf_config``'s reading, not judged here."""
LAYER_TYPE_KEYS = ("layer_types", "layers_block_type", "block_types")
STATE_SPACE_PREFIXES = ("mamba_", "ssm_")
UNREAD_MOE_KEYS = ("moe_num_experts", "num_experts_per_token", "moe_k", "num_shared_experts",
                   "moe_num_shared_experts", "num_dense_layers", "moe_layer_start_index",
                   "moe_layer_interval", "expert_layer_period", "expert_ffn_hidden_size",
                   "zero_expert_num")
"""MoE fields of other families (ERNIE 4.5, Kimi-Linear, AFMoE, LFM2-MoE, Jamba, LongCat)
that change the experts, their top-k or which layers have them; trainsim reads the Mixtral /
Qwen-MoE / DeepSeek names only."""
NO_OP_WHEN_ONE = ("moe_layer_interval", "expert_layer_period")
"""Of those, the ones whose value 1 (every layer) changes nothing."""


def _falcon(cfg: dict[str, Any]) -> dict[str, Any]:
    """A Falcon config with its key/value heads and bias under the names trainsim reads."""
    out = dict(cfg)
    heads = cfg.get("num_attention_heads", cfg.get("n_head"))
    if "num_key_value_heads" not in cfg:
        if cfg.get("new_decoder_architecture"):
            kv = cfg.get("num_kv_heads", heads)
        else:
            kv = 1 if cfg.get("multi_query", True) else heads
        if kv is not None:
            out["num_key_value_heads"] = kv
    if "attention_bias" not in cfg and "bias" in cfg:
        out["attention_bias"] = cfg["bias"]
    return out


def _not_modelled(cfg: dict[str, Any], where: str) -> None:
    for key in LAYER_TYPE_KEYS:
        types = cfg.get(key)
        if isinstance(types, list):
            other = sorted({str(t) for t in types} - ATTENTION_LAYER_TYPES)
            if other:
                raise ConfigError(f"{where}: {key} holds {', '.join(repr(t) for t in other)} "
                                  "layers; trainsim models softmax-attention layers only (no "
                                  "state-space, linear-attention, convolution or recurrent "
                                  "layers)")
    ssm = sorted(k for k in cfg if k.startswith(STATE_SPACE_PREFIXES))
    if ssm:
        raise ConfigError(f"{where}: {ssm[0]} describes state-space (Mamba) layers; trainsim "
                          "models softmax-attention layers only")
    unread = [k for k in (*UNREAD_MOE_KEYS, "mlp_only_layers")
              if cfg.get(k) not in (None, False, 0, []) and not (k in NO_OP_WHEN_ONE
                                                                and cfg.get(k) == 1)]
    if unread:
        raise ConfigError(f"{where}: {unread[0]} is a mixture-of-experts field trainsim does not "
                          "read; write the model as a run config (num_experts, moe_router_topk, "
                          "moe_ffn_hidden_size, moe_shared_expert_intermediate_size, "
                          "moe_first_dense_layers)")


def normalized(cfg: dict[str, Any], where: str) -> dict[str, Any]:
    """``cfg`` with a family's fields under the names ``model_from_hf_config`` reads, after
    refusing the structures it does not model (ConfigError naming the field)."""
    _not_modelled(cfg, where)
    if cfg.get("model_type") == "falcon":
        return _falcon(cfg)
    return cfg


__all__ = ["ATTENTION_LAYER_TYPES", "UNREAD_MOE_KEYS", "normalized"]
