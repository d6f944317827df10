"""Time of one kernel on one GPU: a chain of models behind one protocol."""

from trainsim.compute.chain import ChainModel, bundled_database, compute_model_for
from trainsim.compute.database import KernelDatabase, physical_violation
from trainsim.compute.roofline import ComputeModel, RooflineModel

__all__ = ["ChainModel", "ComputeModel", "KernelDatabase", "RooflineModel", "bundled_database",
           "compute_model_for", "physical_violation"]
