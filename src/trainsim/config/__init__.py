"""Frozen, typed configuration: model, parallel strategy, training, cluster."""

from trainsim.config._build import as_written, ascii_float, build
from trainsim.config.cluster import ClusterConfig, GPUSpec
from trainsim.config.model import ModelConfig
from trainsim.config.parallel import ParallelConfig
from trainsim.config.run import RunConfig
from trainsim.config.training import TrainingConfig

__all__ = ["ClusterConfig", "GPUSpec", "ModelConfig", "ParallelConfig", "RunConfig", "TrainingConfig",
           "as_written", "ascii_float", "build"]
# build(cls, data, where): a frozen config section from a raw mapping, with the loader's checks
# and one-line errors; as_written: such an error with its field names as the user wrote them
