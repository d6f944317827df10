"""Training hyper-parameters that change the work of one iteration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from trainsim.config._build import require_positive
from trainsim.errors import ConfigError


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
    optimizer: Literal["adam", "lamb", "sgd"] = "adam"
    """adam; lamb (layer-wise adaptive, You et al. 2020, as MegaScale trains with at 3x the
    batch): Adam's state plus per-tensor norms; sgd: with momentum."""
    grad_reduce_in_fp32: bool = True
    """Accumulate and reduce gradients in fp32 (Megatron-LM's default for bf16; its fp16 default
    and NeMo's distributed Adam with grad_sync_dtype=bf16 keep them in 16 bits)."""
    attention: Literal["flash", "flash1", "unfused"] = "flash"
    """flash: FlashAttention-2 (no s*s tensors, causal blocks skipped); flash1: the first
    FlashAttention (Megatron-LM's --use-flash-attn from January 2023), same work at about half
    the speed; unfused: Megatron's QK^T / fused softmax / V with the score matrix in memory."""
    train_tokens: float | None = None
    """Tokens of the whole run, for days/cost (None: per-iteration results only)."""
    # --- data loading (MegaScale §3.5): reading token files and collating micro-batches
    data_read_bw_Bps: float | None = None
    """Storage read bandwidth one node gets for training data, bytes/s (None: free reads)."""
    data_prep_s_per_sample: float = 0.0
    """CPU time of a loader worker to fetch and collate one sequence."""
    num_workers: int = 2
    """Loader worker processes per rank (Megatron --num-workers)."""
    data_loader_async: bool = True
    """Workers prefetch the next step's batches while this one computes; only what does not
    fit in a step is exposed. False: loading blocks the step's start."""
    data_loader_per_node: bool = False
    """One shared loader per node whose GPUs take their slices from shared memory (MegaScale's
    redundant-dataloader elimination); False: every rank reads its own copy, so the tensor-
    and context-parallel ranks of a node read the same samples again."""

    def __post_init__(self) -> None:
        require_positive("training", global_batch_size=self.global_batch_size,
                         micro_batch_size=self.micro_batch_size, seq_length=self.seq_length,
                         train_tokens=self.train_tokens, data_read_bw_Bps=self.data_read_bw_Bps,
                         num_workers=self.num_workers)
        if self.data_prep_s_per_sample < 0:
            raise ConfigError(f"training.data_prep_s_per_sample={self.data_prep_s_per_sample} "
                              "must be >= 0")

    @property
    def compute_dtype_bytes(self) -> int:
        """Bytes of an activation element (fp8 runs keep bf16 activations, as TE does)."""
        return 2
