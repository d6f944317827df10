"""The RoPE kind of a Hugging Face ``config.json`` (``rope_scaling`` / ``rope_parameters``), as
transformers reads it; split from ``catalog.hf_config``."""

from __future__ import annotations

import difflib
import warnings
from typing import Any

from trainsim.catalog import hf_families
from trainsim.catalog.hf_values import model_type as _model_type
from trainsim.errors import ConfigError, TrainsimWarning

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")
"""The RoPE kinds transformers 5.24.0 builds for every rotary family (modeling_rope_utils.py
``ROPE_INIT_FUNCTIONS`` and ``default``); a model looks its kind up by the exact name
(modeling_llama.py ``LlamaRotaryEmbedding``: ``ROPE_INIT_FUNCTIONS[self.rope_type]``)."""
FAMILY_ROPE_TYPES = ("su", "mrope", "ntk_alpha", "xdrope", "axial")
"""Kinds that only some families read (transformers 5.24.0): ``su`` (configuration_phi3.py
L100-103, phi4_multimodal alike: read as longrope), ``mrope`` (configuration_qwen2_vl.py L130:
default), ``ntk_alpha`` (modeling_hunyuan_v1_dense.py L301), ``xdrope``
(configuration_hunyuan_vl.py L217) and ``axial`` (``_validate_axial_rope_parameters``, the
vision towers)."""
LONGROPE_YARN_MODEL_TYPES = ("phi3", "phi4_multimodal")
"""Families whose config reads an old file's ``yarn`` (or ``su``) as longrope
(configuration_phi3.py L100-103: "For backward compatibility if previous version used 'su' or
'yarn'"): not YaRN's scaling."""


def rope_type(cfg: dict[str, Any], where: str = "config.json", field: str = "rope_scaling"
               ) -> str:
    """config.json's ``rope_scaling`` kind: ``rope_type``, or ``type`` as files written before
    transformers 4.45 name it (DeepSeek-V3's and Qwen2.5's long-context ``{"type": "yarn"}``);
    transformers reads both (v4.48 modeling_llama.py LlamaRotaryEmbedding: "BC: rope_type was
    originally type"). fuzz17: ``type`` was read as no scaling. A kind no family builds is
    refused where it spells a known one (fuzz46: ``YaRN``; robust47: ``yarm``, ``llama_3``)
    unless the file names remote code (``auto_map``), else read as plain RoPE with a warning that names the known kinds: of every kind only
    ``yarn`` moves a price (Megatron-Bridge's unfused kernel), so a remote-code kind's is
    plain RoPE's (robust47: ``bogus`` was read so in silence)."""
    scaling = cfg.get("rope_scaling") or {}
    if not scaling and field == "rope_scaling":
        nested = _per_layer_type_rope(cfg, where)
        if nested is not None:
            return nested
    kind = str(scaling.get("rope_type", scaling.get("type", "")))
    known = ROPE_TYPES + FAMILY_ROPE_TYPES
    if kind in known or not kind:
        if kind in ("yarn", "su") and _model_type(cfg, where) in LONGROPE_YARN_MODEL_TYPES:
            return "longrope"
        return kind
    # a native family looks its kind up by exact name; a remote-code model (``auto_map``)
    # may define its own
    near = [] if cfg.get("auto_map") else (
        [kind.strip().lower()] if kind.strip().lower() in known else
        difflib.get_close_matches(kind.strip().lower(), ROPE_TYPES, 1, 0.75))
    listed = (f"every rotary family builds {', '.join(ROPE_TYPES)}; some "
              + ", ".join(FAMILY_ROPE_TYPES))
    if near:
        raise ConfigError(f"{where}: {field} rope_type {kind!r} is no RoPE kind: transformers "
                          f"looks kinds up by their exact name (did you mean '{near[0]}'?); "
                          + listed)
    warnings.warn(f"{where}: {field} rope_type {kind!r} is no RoPE kind transformers "
                  f"{hf_families.TRANSFORMERS_VERSION} builds ({listed}); priced as plain RoPE, as "
                  "every kind but 'yarn' is", TrainsimWarning, stacklevel=2)
    return kind


def _per_layer_type_rope(cfg: dict[str, Any], where: str) -> str | None:
    """The kind priced for ``rope_parameters`` keyed by layer type (transformers v5's Gemma 3:
    ``{"full_attention": {...}, "sliding_attention": {...}}``), or None for a flat mapping.
    transformers 5.24.0 modeling_rope_utils.py ``nested_rope_parameter_keys``: the keys that
    name a layer type the config declares (``layer_types``; here, where the file lists none,
    the attention layer types) are per-layer-type entries, each validated as a flat one and a
    None entry a layer without RoPE (``validate_rope``). Each kind is checked as ``rope_type``
    checks a flat one (robust48: a misspelt nested kind was read as plain RoPE in silence);
    trainsim's ``rope_scaling`` is model-wide, so YaRN on some layer types prices every
    layer's rotary embedding as YaRN's, with a warning naming the others."""
    params = cfg.get("rope_parameters")
    types = cfg.get("layer_types")
    labels = set(types) if isinstance(types, list) and all(isinstance(t, str) for t in types) \
        else hf_families.ATTENTION_LAYER_TYPES
    keys = [k for k in params if k in labels] if isinstance(params, dict) else []
    if not keys:
        return None
    kinds: dict[str, str] = {}
    for key in keys:
        entry = params[key]
        if entry is None:  # a layer type without rotary positions (transformers skips it)
            continue
        if not isinstance(entry, dict):
            from trainsim.catalog.units import _kind
            raise ConfigError(f"{where}: rope_parameters.{key} must be a mapping (rope_type, "
                              f"rope_theta, ...) or null, got {_kind(entry)}")
        kinds[key] = rope_type({**cfg, "rope_scaling": entry}, where, f"rope_parameters.{key}")
    others = [k for k, kind in kinds.items() if kind != "yarn"]
    if len(others) == len(kinds):
        return ""
    if others:
        warnings.warn(f"{where}: rope_parameters scale {', '.join(sorted(set(kinds) - set(others)))}"
                      f" by YaRN but not {', '.join(others)}; trainsim's rope_scaling is "
                      "model-wide: every layer's rotary embedding is priced as YaRN's",
                      TrainsimWarning, stacklevel=2)
    return "yarn"
