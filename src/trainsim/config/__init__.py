"""Frozen, typed configuration: model, parallel strategy, training, cluster."""

from trainsim.config._build import ascii_float
from trainsim.config.cluster import ClusterConfig, GPUSpec
from trainsim.config.model import ModelConfig
from trainsim.config.parallel import ParallelConfig
from trainsim.config.run import RunConfig
from trainsim.config.training import TrainingConfig

__all__ = ["ClusterConfig", "GPUSpec", "ModelConfig", "ParallelConfig", "RunConfig", "TrainingConfig",
           "ascii_float"]
