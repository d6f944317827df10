"""Architecture math: parameter counts and FLOPs of a dense decoder transformer."""

from trainsim.model.counts import (
    active_params,
    embedding_params,
    expert_params,
    hardware_flops_per_iteration,
    layer_expert_params,
    layer_params,
    model_flops_per_token,
    mtp_params,
    output_layer_params,
    total_params,
)

__all__ = ["active_params", "embedding_params", "expert_params", "hardware_flops_per_iteration", "layer_expert_params", "layer_params",
           "model_flops_per_token", "mtp_params", "output_layer_params", "total_params"]
