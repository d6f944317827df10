"""Architecture math: parameter counts and FLOPs of a dense decoder transformer."""

from trainsim.model.counts import (
    embedding_params,
    hardware_flops_per_iteration,
    layer_params,
    model_flops_per_token,
    output_layer_params,
    total_params,
)

__all__ = ["embedding_params", "hardware_flops_per_iteration", "layer_params",
           "model_flops_per_token", "output_layer_params", "total_params"]
