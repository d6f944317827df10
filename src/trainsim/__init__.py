"""trainsim: simulate large-scale LLM training before renting a GPU."""

from trainsim.catalog import load_run_config, run_config_from_dict
from trainsim.config import (
           ClusterConfig,
           GPUSpec,
           ModelConfig,
           ParallelConfig,
           RunConfig,
           TrainingConfig,
)
from trainsim.errors import ConfigError, TrainsimError
from trainsim.result import Result
from trainsim.simulator import simulate

__version__ = "0.1.0"

__all__ = ["ClusterConfig", "ConfigError", "GPUSpec", "ModelConfig", "ParallelConfig", "Result",
           "RunConfig", "TrainingConfig", "TrainsimError", "load_run_config",
           "run_config_from_dict", "simulate"]
