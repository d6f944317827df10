"""Training hyper-parameters that change the work of one iteration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from trainsim.config._build import require_positive


@dataclass(frozen=True)
class TrainingConfig:
    global_batch_size: int = 512
    """Sequences per optimizer step (across all data-parallel ranks)."""
    micro_batch_size: int = 1
    """Sequences per forward/backward pass on one rank."""
    seq_length: int = 2048
    """Tokens per sequence."""
    dtype: Literal["fp16", "bf16", "fp8"] = "bf16"
    """Compute precision of GEMMs; fp8 as Transformer Engine (fp8 GEMMs, bf16 elsewhere)."""
    optimizer: Literal["adam", "sgd"] = "adam"
    grad_reduce_in_fp32: bool = True
    """Accumulate and reduce gradients in fp32 (Megatron's default for bf16/fp16 training)."""
    attention: Literal["flash", "unfused"] = "flash"
    """flash: FlashAttention (no s*s tensors, causal blocks skipped); unfused: QK^T/softmax/V."""
    train_tokens: float | None = None
    """Tokens of the whole run, for days/cost (None: per-iteration results only)."""

    def __post_init__(self) -> None:
        require_positive("training", global_batch_size=self.global_batch_size,
                         micro_batch_size=self.micro_batch_size, seq_length=self.seq_length,
                         train_tokens=self.train_tokens)

    @property
    def compute_dtype_bytes(self) -> int:
        """Bytes of an activation element (fp8 runs keep bf16 activations, as TE does)."""
        return 2
