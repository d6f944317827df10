"""Time of one kernel on one GPU: a chain of models behind one protocol."""

from trainsim.compute.chain import ChainModel, compute_model_for
from trainsim.compute.database import KernelDatabase, cross_gpu_scale
from trainsim.compute.roofline import ComputeModel, RooflineModel

__all__ = ["ChainModel", "ComputeModel", "KernelDatabase", "RooflineModel", "compute_model_for",
           "cross_gpu_scale"]
