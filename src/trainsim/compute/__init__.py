"""Time of one kernel on one GPU."""

from trainsim.compute.roofline import ComputeModel, RooflineModel

__all__ = ["ComputeModel", "RooflineModel"]
