"""Per-rank memory: weights, gradients, optimizer state, activations, buffers."""

from trainsim.memory.estimate import (
    MemoryBreakdown,
    activation_bytes_per_layer,
    cache_clear,
    estimate_stage_memory,
)
from trainsim.memory.params import stage_param_split, stage_params

__all__ = ["MemoryBreakdown", "activation_bytes_per_layer", "cache_clear", "estimate_stage_memory",
           "stage_param_split", "stage_params"]
