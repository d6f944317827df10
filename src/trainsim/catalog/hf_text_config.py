"""The language model of a multimodal Hugging Face ``config.json`` (split out of ``hf_config``):
a composite config holds it in ``text_config``, written as a diff from its text config class's
defaults (``text_model``, ``TEXT_CONFIG_DEFAULTS``), and the hint a refusal of a missing field
gives there (``missing_hint``)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from trainsim.errors import TrainsimWarning

LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
"""config.json keys of the layer count; a config with none of them at its top level and a
``text_config`` mapping is multimodal (``text_model``)."""


def text_model(cfg: dict[str, Any], path: Path) -> tuple[dict[str, Any], str]:
    """The fields of the language model a config.json describes, and how errors name them.

    A multimodal config (transformers' composite configs: ``Llama4Config``, ``Gemma3Config``,
    ``Qwen2_5_VLConfig``, ``Mistral3Config``, ``LlavaConfig``) holds its language model's fields
    in ``text_config`` and its image encoder's in ``vision_config``: ``sub_configs =
    {"text_config": Llama4TextConfig, "vision_config": Llama4VisionConfig}`` and
    ``self.text_config = Llama4TextConfig(**self.text_config)``
    (huggingface/transformers@008e5743 src/transformers/models/llama4/configuration_llama4.py,
    class Llama4Config). When the top level has no layer count but a ``text_config`` mapping,
    trainsim reads that mapping alone, the fields it leaves out taken from its text config
    class's defaults (``TEXT_CONFIG_DEFAULTS``; not the composite's keys), and says so in a
    warning: the vision encoder and projector are not simulated."""
    text = cfg.get("text_config")
    kind = cfg.get("model_type") or "multimodal"
    if not isinstance(text, dict) or (any(k in cfg for k in LAYER_KEYS)
                                      and kind not in TEXT_CONFIG_WINS):
        if isinstance(cfg.get("vision_config"), dict):  # a flat composite (older Qwen2.5-VL)
            warnings.warn(f"{path}: a multimodal {kind} config; trainsim simulates its language "
                          "model, read from the top level (its image tokens and its "
                          "vision_config encoder are not simulated)", TrainsimWarning,
                          stacklevel=3)
        return cfg, str(path)
    text = {**TEXT_CONFIG_DEFAULTS.get(str(kind), {}), **text}
    if "tie_word_embeddings" not in text and "tie_word_embeddings" in cfg:
        # transformers v5 ties by the outer config (Qwen2_5_VLConfig.tie_word_embeddings,
        # Llama4Config's own field)
        text["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    if not text.get("_name_or_path") and cfg.get("_name_or_path"):
        text["_name_or_path"] = cfg["_name_or_path"]
    if "model_type" not in text and "model_type" in cfg:  # gemma3: GATED_MODEL_TYPES
        text["model_type"] = cfg["model_type"]
    encoder = " and its vision_config encoder" if "vision_config" in cfg else ""
    warnings.warn(f"{path}: a multimodal {kind} config; trainsim simulates its language model, "
                  f"read from text_config (its image tokens{encoder} are not simulated)",
                  TrainsimWarning, stacklevel=3)
    return text, f"{path} text_config"


TEXT_CONFIG_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3": {"model_type": "gemma3_text", "vocab_size": 262_208, "hidden_size": 2304,
               "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
               "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131_072,
               "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "attention_bias": False,
               "attention_dropout": 0.0, "sliding_window": 4096},
    "llama4": {"model_type": "llama4_text", "vocab_size": 202_048, "hidden_size": 5120,
               "intermediate_size": 8192, "intermediate_size_mlp": 16_384,
               "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
               "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 131_072,
               "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "attention_dropout": 0.0,
               "num_experts_per_tok": 1, "num_local_experts": 16,
               "interleave_moe_layer_step": 1, "attention_chunk_size": 8192,
               "attention_bias": False},
    "qwen2_5_vl": {"model_type": "qwen2_5_vl_text", "vocab_size": 152_064, "hidden_size": 8192,
                   "intermediate_size": 29_568, "num_hidden_layers": 80,
                   "num_attention_heads": 64, "num_key_value_heads": 8, "hidden_act": "silu",
                   "max_position_embeddings": 32_768, "rms_norm_eps": 1e-5,
                   "use_sliding_window": False, "sliding_window": 4096,
                   "max_window_layers": 80, "attention_dropout": 0.0},
}
"""A composite config.json writes its ``text_config`` as a diff: ``PretrainedConfig.to_diff_dict``
drops every field equal to the text config class's default, so the file leaves out what the
class supplies (gemma-3's text_config names no vocab_size, rms_norm_eps nor
max_position_embeddings). The fields trainsim reads, per composite ``model_type``, as the text
config class defaults them: Gemma3TextConfig (transformers 5.24.0 from PyPI,
src/transformers/models/gemma3/configuration_gemma3.py lines 73-93: vocab_size 262_208 ...
sliding_window 4096; ``Gemma3Config.sub_configs`` text_config = Gemma3TextConfig);
Llama4TextConfig (configuration_llama4.py, the class fields ``vocab_size: int = 202048`` ...
``attention_bias: bool = False``); Qwen2_5_VLTextConfig (configuration_qwen2_5_vl.py,
``vocab_size: int = 152064`` ... ``attention_dropout = 0.0``). A composite not in this table is
read from what its text_config names; a missing field is refused with a hint (``missing_hint``)."""


TEXT_CONFIG_WINS = ("qwen2_5_vl", "qwen2_vl")
"""Composites whose language model is read from ``text_config`` whenever the file has one,
even beside text fields at the top level: Qwen2_5_VLConfig pops the top-level text fields into
a text config only ``if self.text_config is None`` ("Hub configs are saved as flat dicts",
transformers 5.24.0 configuration_qwen2_5_vl.py ``Qwen2_5_VLConfig.__post_init__``; Qwen2-VL
the same). Older Qwen2.5-VL files are flat and read from the top level."""


def missing_hint(where: str) -> str:
    """For a composite's text_config: why a field may be missing and what to do."""
    if not where.endswith("text_config"):
        return ""
    return ("; a composite config.json writes text_config as a diff from its text config "
            "class's defaults, which trainsim knows for "
            f"{', '.join(sorted(TEXT_CONFIG_DEFAULTS))} only: add the field to text_config")
