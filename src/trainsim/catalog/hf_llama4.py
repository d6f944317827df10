"""Llama 4's layout in a Hugging Face config.json: its MoE layers and its chunked attention
(split out of ``hf_config``, robust49)."""

from __future__ import annotations

from typing import Any

from trainsim.catalog.hf_values import positive_int
from trainsim.errors import ConfigError


def moe_layout(cfg: dict[str, Any], layers: Any, where: str) -> dict[str, Any]:
    """Llama 4's MoE layout (transformers 5.24.0 configuration_llama4.py, modeling_llama4.py):
    ``moe_layers`` defaults to ``range(interleave_moe_layer_step - 1, num_hidden_layers,
    interleave_moe_layer_step)`` (Scout 1: every layer; Maverick 2: every second, from the
    second), Megatron's ``moe_first_dense_layers`` step - 1 and ``moe_layer_freq`` step; the
    dense layers' MLP is ``intermediate_size_mlp`` wide (``Llama4TextMLP(config,
    intermediate_size=config.intermediate_size_mlp)``), each expert and the one shared expert
    ``intermediate_size`` (``Llama4TextMoe.shared_expert = Llama4TextMLP(config)``). An
    explicit ``moe_layers`` that is not such a pattern is refused."""
    step = positive_int(cfg.get("interleave_moe_layer_step", 1),
                         f"{where}: interleave_moe_layer_step")
    width = cfg.get("intermediate_size")
    out = {"moe_layer_freq": step, "moe_first_dense_layers": step - 1,
           "moe_ffn_hidden_size": width, "moe_shared_expert_intermediate_size": width}
    if cfg.get("intermediate_size_mlp") is not None:
        out["ffn_hidden_size"] = cfg["intermediate_size_mlp"]
    listed = cfg.get("moe_layers")
    if listed is not None and isinstance(layers, int) and (
            not isinstance(listed, list) or listed != list(range(step - 1, layers, step))):
        raise ConfigError(f"{where}: moe_layers must list every interleave_moe_layer_step-th "
                          f"layer from layer {step - 1} ({list(range(step - 1, layers, step))[:4]}"
                          " ...); trainsim models a first dense stretch, then every N-th layer "
                          "MoE, only")
    return out


def chunk_size(cfg: dict[str, Any], where: str) -> int | None:
    """Llama 4's ``attention_chunk_size`` where some layer is chunked: its RoPE layers
    (``no_rope_layers[i]`` 1) are "chunked_attention" (Llama4TextConfig ``layer_types``), or
    the file's ``layer_types`` says so; None without a chunk or a chunked layer."""
    chunk = cfg.get("attention_chunk_size")
    if chunk is None:
        return None
    types = cfg.get("layer_types")
    if isinstance(types, list):
        chunked = "chunked_attention" in types
    else:
        rope = cfg.get("no_rope_layers")
        chunked = not isinstance(rope, list) or not rope or any(rope)
    return positive_int(chunk, f"{where}: attention_chunk_size") if chunked else None
