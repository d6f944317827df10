"""Model architecture: the shape of a dense decoder-only transformer (Megatron naming)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from trainsim.config._build import require_positive
from trainsim.errors import ConfigError


@dataclass(frozen=True)
class ModelConfig:
    """A decoder-only transformer. Field names follow Megatron-LM's arguments."""

    name: str = "custom"
    hidden_size: int = 4096
    """Model width h."""
    num_layers: int = 32
    """Transformer layers l."""
    num_attention_heads: int = 32
    """Query heads a."""
    num_kv_heads: int | None = None
    """Key/value heads (GQA); None means MHA (= num_attention_heads)."""
    head_dim: int | None = None
    """Per-head width; None means hidden_size / num_attention_heads."""
    ffn_hidden_size: int | None = None
    """MLP inner width; None means 4h (gelu) or Llama's 8h/3 rounded to 256 (swiglu)."""
    vocab_size: int = 32000
    max_position_embeddings: int = 4096
    activation: Literal["gelu", "swiglu"] = "gelu"
    """`gelu`: 2-matrix MLP; `swiglu`: gated MLP with 3 matrices."""
    normalization: Literal["layernorm", "rmsnorm"] = "layernorm"
    position_embedding: Literal["learned", "rope"] = "learned"
    tied_embeddings: bool = True
    """Share the input embedding with the output projection."""
    add_bias_linear: bool = True
    attention_dropout: float = 0.0
    hidden_dropout: float = 0.0
    parallel_block: bool = False
    """Attention and MLP computed from the same input (GPT-J/PaLM/MegaScale); later issue."""
    sliding_window: int | None = None
    """Sliding-window attention span in tokens; None = full causal attention."""

    def __post_init__(self) -> None:
        require_positive("model", hidden_size=self.hidden_size, num_layers=self.num_layers,
                         num_attention_heads=self.num_attention_heads, vocab_size=self.vocab_size,
                         num_kv_heads=self.num_kv_heads, head_dim=self.head_dim,
                         ffn_hidden_size=self.ffn_hidden_size,
                         max_position_embeddings=self.max_position_embeddings,
                         sliding_window=self.sliding_window)
        if self.head_dim is None and self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"model.num_attention_heads={self.num_attention_heads} does not divide "
                f"model.hidden_size={self.hidden_size}; set model.head_dim explicitly")
        if self.num_attention_heads % self.kv_heads:
            raise ConfigError(
                f"model.num_kv_heads={self.kv_heads} must divide "
                f"model.num_attention_heads={self.num_attention_heads}")
        for name in ("attention_dropout", "hidden_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"model.{name}={getattr(self, name)} must be in [0, 1)")

    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads or self.num_attention_heads

    @property
    def kv_channels(self) -> int:
        """Per-head width d (Megatron's --kv-channels)."""
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def ffn_size(self) -> int:
        if self.ffn_hidden_size is not None:
            return self.ffn_hidden_size
        if self.activation == "gelu":
            return 4 * self.hidden_size
        return 256 * ((int(8 * self.hidden_size / 3) + 255) // 256)

    @property
    def q_size(self) -> int:
        return self.num_attention_heads * self.kv_channels

    @property
    def kv_size(self) -> int:
        return self.kv_heads * self.kv_channels
