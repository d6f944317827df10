"""``trainsim profile``: measure kernels and layers on a GPU into a versioned JSON database.

The database (:mod:`trainsim.profile.schema`) is what ``trainsim.compute.database`` reads.
What is measured comes from the simulator's own op lists (:mod:`trainsim.profile.shapes`);
how is in :mod:`~trainsim.profile.device` (CUDA events or a CPU clock behind one protocol),
:mod:`~trainsim.profile.kernels` and :mod:`~trainsim.profile.layer`; the pipeline is
:mod:`~trainsim.profile.run` and the command :mod:`~trainsim.profile.cli`. Only the
measuring modules import torch, and only when a profile runs.
"""

from trainsim.profile.schema import FORMAT, ProfileError, validate_db

__all__ = ["FORMAT", "ProfileError", "validate_db"]
