"""Parallel strategy (Megatron-core naming): how one model is split over GPUs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from trainsim.config._build import require_positive
from trainsim.errors import ConfigError


@dataclass(frozen=True)
class ParallelConfig:
    """Sizes of each parallel dimension and the switches that change what runs.

    Rank order is Megatron's default ``tp-cp-ep-dp-pp``: tensor-parallel ranks are adjacent
    (inside a node when tp <= GPUs per node), pipeline stages are the outermost dimension.
    The data-parallel size is derived: num_gpus / (tp * pp * cp).
    """

    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    context_parallel_size: int = 1
    cp_comm_type: Literal["p2p", "a2a", "all_gather"] = "p2p"
    """How context-parallel attention gets the keys it needs (Megatron-core --cp-comm-type):
    ``p2p`` ring attention, KV blocks passed around the CP ring behind the attention compute;
    ``a2a`` DeepSpeed-Ulysses, all-to-alls re-shard Q/K/V from sequence to heads and back;
    ``all_gather`` (Llama 3) all-gathers K/V over the CP group before attention."""
    expert_model_parallel_size: int = 1
    expert_tensor_parallel_size: int | None = None
    """Tensor parallelism inside each expert; None = 1 (Megatron-core's usual MoE setting)."""
    virtual_pipeline_model_parallel_size: int | None = None
    """Model chunks per pipeline rank (interleaved 1F1B); None or 1 = plain 1F1B."""
    sequence_parallel: bool = False
    """Shard LayerNorm/dropout activations over TP ranks (Korthikanti et al. 2022)."""
    recompute: Literal["none", "selective", "full"] = "none"
    """Activation recomputation: Megatron's --recompute-granularity (full = uniform, all layers)."""
    zero_stage: int = 0
    """ZeRO stage 0-3 (DeepSpeed). 1 is equivalent to Megatron's distributed optimizer."""
    distributed_optimizer: bool = False
    """Megatron --use-distributed-optimizer: optimizer state sharded over data-parallel ranks."""
    overlap_grad_reduce: bool = False
    """Overlap the data-parallel gradient reduction with backward (bucketed)."""
    overlap_param_gather: bool = False
    """Overlap the distributed optimizer's parameter all-gather with the next forward."""
    tp_comm_overlap: bool = False
    """Overlap TP communication with GEMMs (Transformer Engine userbuffers)."""
    overlap_p2p_comm: bool = False
    """Pipeline send/recv on a separate stream, not blocking compute."""
    moe_overlap_ep_comm: bool = False
    """Hide expert-parallel all-to-alls behind compute of another micro-batch (Megatron-core
    --overlap-moe-expert-parallel-comm; DeepSeek-V3's DualPipe does the same)."""
    moe_dispatch_fp8: bool = False
    """Send dispatched tokens in fp8 (DeepSeek-V3 §3.3); the combine stays 16-bit."""
    decoder_first_pipeline_num_layers: int | None = None
    """Layers on the first pipeline stage (uneven split); None = even split."""
    decoder_last_pipeline_num_layers: int | None = None
    """Layers on the last pipeline stage (uneven split); None = even split."""
    ddp_bucket_size: int | None = None
    """Parameters per gradient bucket; None = Megatron's max(40M, 1M * dp)."""

    def __post_init__(self) -> None:
        require_positive("parallel", tp=self.tp, pp=self.pp, cp=self.cp, ep=self.ep,
                         vpp=self.virtual_pipeline_model_parallel_size,
                         ddp_bucket_size=self.ddp_bucket_size)
        if self.cp_comm_type not in ("p2p", "a2a", "all_gather"):
            raise ConfigError(f"parallel.cp_comm_type='{self.cp_comm_type}' is unknown; "
                              "use p2p (ring attention), a2a (Ulysses) or all_gather")
        if self.zero_stage not in (0, 1, 2, 3):
            raise ConfigError(f"parallel.zero_stage={self.zero_stage} must be 0, 1, 2 or 3")
        if self.sequence_parallel and self.tp == 1:
            # Megatron silently disables it; we follow and keep it False in the resolved config.
            object.__setattr__(self, "sequence_parallel", False)
        if self.vpp > 1 and self.pp == 1:
            raise ConfigError("parallel.virtual_pipeline_model_parallel_size > 1 needs "
                              "pipeline_model_parallel_size > 1")
        for name in ("decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise ConfigError(f"parallel.{name}={v} must be >= 0")

    # Short names used throughout the code (the Megatron names stay the config keys).
    @property
    def tp(self) -> int:
        return self.tensor_model_parallel_size

    @property
    def pp(self) -> int:
        return self.pipeline_model_parallel_size

    @property
    def cp(self) -> int:
        return self.context_parallel_size

    @property
    def ep(self) -> int:
        return self.expert_model_parallel_size

    @property
    def etp(self) -> int:
        return self.expert_tensor_parallel_size or 1

    @property
    def vpp(self) -> int:
        return self.virtual_pipeline_model_parallel_size or 1

    @property
    def shards_optimizer(self) -> bool:
        return self.distributed_optimizer or self.zero_stage >= 1


# Accepted short aliases in YAML and --set (tp=..., pp=..., ...).
ALIASES = {
    "tp": "tensor_model_parallel_size",
    "pp": "pipeline_model_parallel_size",
    "cp": "context_parallel_size",
    "ep": "expert_model_parallel_size",
    "etp": "expert_tensor_parallel_size",
    "vpp": "virtual_pipeline_model_parallel_size",
}
