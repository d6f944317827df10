"""Hybrid Hugging Face configs read into a hybrid ModelConfig (``config.hybrid``): Nemotron-H
and Nemotron 3 (``model_type`` ``nemotron_h``), whose layers are Mamba-2, attention, MLP or MoE.

Field names and class defaults from transformers 5.24.0
src/transformers/models/nemotron_h/configuration_nemotron_h.py (``NemotronHConfig``): the layer
list is ``layers_block_type`` (``linear_attention`` / legacy ``mamba``, ``full_attention`` /
legacy ``attention``, ``mlp``, ``moe``; legacy names remapped by configuration_utils.py
``_LEGACY_LAYER_TYPE_REMAP``) or, where absent, ``hybrid_override_pattern`` (M, *, -, E); its
length is the layer count (``num_hidden_layers`` is deprecated there and only warned about).
The modeling (modeling_nemotron_h.py): ``NemotronHMamba2Mixer`` (d_inner = mamba_num_heads x
mamba_head_dim, whatever ``expand`` says; lines 405-448), ``NemotronHMLP`` and each expert an
up / down pair around ``mlp_hidden_act`` (never gated: two matrices, trainsim's ``gelu``
shape), ``NemotronHMoE`` one shared MLP of ``moe_shared_expert_intermediate_size`` and a
router of ``n_routed_experts x hidden_size`` (lines 715-765), one ``NemotronHRMSNorm`` per
block and ``norm_f``. Megatron-Bridge maps the same names (NVIDIA-NeMo/Megatron-Bridge@067f987d
src/megatron/bridge/models/nemotronh/nemotron_h_bridge.py ``CONFIG_MAPPING``: ``n_groups`` ->
``mamba_num_groups``, ``ssm_state_size`` -> ``mamba_state_dim``, ``chunk_size`` ->
``mamba_chunk_size``, ``hybrid_override_pattern`` -> ``hybrid_layer_pattern``; lines 282-326:
``moe_latent_size`` as it is, ``num_nextn_predict_layers`` MTP depths of
``mtp_hybrid_override_pattern``'s layers, which trainsim writes as Megatron-core's unified
pattern, ``<main>/<mtp>/<mtp>...``).
"""

from __future__ import annotations

from typing import Any

from trainsim.config import ModelConfig
from trainsim.config._build import build
from trainsim.errors import ConfigError

HYBRID_TYPES = frozenset({"nemotron_h"})
LAYER_SYMBOLS = {"linear_attention": "M", "mamba": "M", "full_attention": "*", "attention": "*",
                 "mlp": "-", "moe": "E"}
DEFAULTS = {"vocab_size": 131072, "hidden_size": 4096, "num_attention_heads": 32,
            "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 4096,
            "intermediate_size": 21504, "ssm_state_size": 128, "mamba_num_heads": 128,
            "mamba_head_dim": 64, "n_groups": 8, "conv_kernel": 4, "chunk_size": 128,
            "n_routed_experts": 8, "moe_intermediate_size": 7688,
            "moe_shared_expert_intermediate_size": 7688, "num_experts_per_tok": 2}
"""``NemotronHConfig``'s class defaults for the fields read here."""
LEGACY_NAMES = {"mamba_n_groups": "n_groups", "mamba_d_conv": "conv_kernel",
                "mamba_chunk_size": "chunk_size"}
"""Older spellings ``NemotronHConfig.__post_init__`` still takes."""
REFUSED = {
    "sliding_window": "sliding-window attention layers",
    "use_bias": "biases on the Mamba projections (Megatron-core's MambaMixer asserts none)",
}
"""Fields whose non-default value builds something trainsim's hybrid layers do not hold."""


def is_hybrid(cfg: Any) -> bool:
    """Whether a parsed config.json is one this module reads."""
    kind = cfg.get("model_type") if isinstance(cfg, dict) else None
    return isinstance(kind, str) and kind in HYBRID_TYPES  # a list there is refused later


def hybrid_model(cfg: dict[str, Any], where: str) -> ModelConfig:
    """The ModelConfig of a ``nemotron_h`` config.json (module docstring), or a ConfigError
    naming the field trainsim does not model."""
    cfg = {LEGACY_NAMES.get(k, k): v for k, v in cfg.items()}
    for key, what in REFUSED.items():
        if cfg.get(key) not in (None, 0, False):
            raise ConfigError(f"{where}: {key}={cfg[key]!r} describes {what}; trainsim's "
                              "hybrid layers do not model it")
    if cfg.get("use_conv_bias") is False:
        raise ConfigError(f"{where}: use_conv_bias=false; Megatron-core's MambaMixer asserts a "
                          "conv1d bias (trainsim counts one)")
    get = lambda key: cfg[key] if cfg.get(key) is not None else DEFAULTS.get(key)
    pattern = _pattern(cfg, where)
    depths = cfg.get("num_nextn_predict_layers") or 0
    if isinstance(depths, bool) or not isinstance(depths, int) or not 0 <= depths <= len(pattern):
        raise ConfigError(f"{where}: num_nextn_predict_layers={depths!r} must be a whole number "
                          f"of MTP depths from 0 to the {len(pattern)} main layers")
    if depths:  # Megatron-Bridge's nemotron_h_bridge.py lines 282-326: the MTP depths' layers
        mtp = cfg.get("mtp_hybrid_override_pattern")
        if not isinstance(mtp, str) or not mtp or set(mtp) - set("M*-E"):
            raise ConfigError(f"{where}: num_nextn_predict_layers={depths!r} needs "
                              "mtp_hybrid_override_pattern (M * - E, one per MTP layer)")
    experts = "E" in pattern
    if experts and cfg.get("n_group") not in (None, 1):
        raise ConfigError(f"{where}: n_group={cfg['n_group']!r} limits each token's experts to "
                          "groups; trainsim reads nemotron_h routing without groups")
    attention_bias, mlp_bias = bool(cfg.get("attention_bias")), bool(cfg.get("mlp_bias"))
    fields: dict[str, Any] = dict(  # noqa: C408 - keyword names mirror the config fields
        name=str(cfg.get("_name_or_path") or "nemotron_h"),
        hidden_size=get("hidden_size"), num_layers=len(pattern),
        num_attention_heads=get("num_attention_heads"),
        # None: one per query head (NemotronHConfig.__post_init__)
        num_kv_heads=cfg.get("num_key_value_heads", DEFAULTS["num_key_value_heads"]),
        head_dim=cfg.get("head_dim") or cfg.get("attention_head_dim") or DEFAULTS["head_dim"],
        ffn_hidden_size=get("intermediate_size"), vocab_size=get("vocab_size"),
        max_position_embeddings=get("max_position_embeddings"),
        activation="gelu", normalization="rmsnorm", position_embedding="none",
        tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        add_bias_linear=False, add_qkv_bias=attention_bias, add_proj_bias=attention_bias,
        add_mlp_bias=mlp_bias,
        attention_dropout=cfg.get("attention_dropout") or 0.0,
        hidden_dropout=cfg.get("hidden_dropout") or 0.0,
        hybrid_layer_pattern=pattern + ("/" + cfg["mtp_hybrid_override_pattern"]) * depths
        if depths else pattern, mtp_num_layers=depths,
        mamba_num_heads=get("mamba_num_heads"), mamba_head_dim=get("mamba_head_dim"),
        mamba_state_dim=get("ssm_state_size"), mamba_num_groups=get("n_groups"),
        mamba_conv_kernel=get("conv_kernel"), mamba_chunk_size=get("chunk_size"))
    if experts:
        fields.update(num_experts=get("n_routed_experts"),
                      moe_router_topk=get("num_experts_per_tok"),
                      moe_ffn_hidden_size=get("moe_intermediate_size"),
                      moe_shared_expert_intermediate_size=get(
                          "moe_shared_expert_intermediate_size"),
                      moe_latent_size=cfg.get("moe_latent_size"))
    if "M" not in pattern:  # the Mamba fields are read only with Mamba layers
        for key in [k for k in fields if k.startswith("mamba_")]:
            del fields[key]
    try:
        return build(ModelConfig, fields, "model")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _pattern(cfg: dict[str, Any], where: str) -> str:
    """The layers as M * - E: ``layers_block_type`` (or its alias ``layer_types``) where
    given, else ``hybrid_override_pattern``, as ``NemotronHConfig.__post_init__`` picks."""
    types = cfg.get("layers_block_type", cfg.get("layer_types"))
    if types is not None:
        if not isinstance(types, list) or not types or \
                any(not isinstance(t, str) or t not in LAYER_SYMBOLS for t in types):
            raise ConfigError(f"{where}: layers_block_type must list one of "
                              f"{', '.join(sorted(LAYER_SYMBOLS))} per layer, got {types!r}")
        return "".join(LAYER_SYMBOLS[t] for t in types)
    pattern = cfg.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError(f"{where}: a nemotron_h config names its layers in layers_block_type "
                          "or hybrid_override_pattern (M Mamba, * attention, - MLP, E MoE); "
                          "neither is given")
    bad = sorted(set(pattern) - set("M*-E"))
    if bad:
        raise ConfigError(f"{where}: hybrid_override_pattern holds {bad[0]!r}; its symbols are "
                          "M (Mamba), * (attention), - (MLP) and E (MoE)")
    return pattern
