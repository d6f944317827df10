"""Reliability over a long run: failures, detection and recovery, checkpoints, goodput.

``goodput(cfg, ReliabilityConfig(...), tokens=15e12)`` runs a seeded, vectorized Monte Carlo
of the whole run and returns the expected and P90 wall-clock days, the effective training time
ratio and where the time went. Failure rates come from profiles in ``catalog/failures/``.
"""

from trainsim.reliability.config import (
    CheckpointConfig,
    FailureMode,
    FailureProfile,
    RecoveryConfig,
    ReliabilityConfig,
    StragglerConfig,
    component_counts,
    load_profile,
    profile_names,
    reliability_config_from_dict,
)
from trainsim.reliability.goodput import GoodputResult, goodput
from trainsim.reliability.montecarlo import CAUSES, Outcome, Sweep, run, sweep_interval
from trainsim.reliability.plan import (
    RECOVERY_CAUSES,
    CheckpointCosts,
    RunPlan,
    build_plan,
    checkpoint_costs,
    daly_interval,
    expected_interruptions,
    young_interval,
)

__all__ = ["CAUSES", "RECOVERY_CAUSES", "CheckpointConfig", "CheckpointCosts", "FailureMode",
           "FailureProfile", "GoodputResult", "Outcome", "RecoveryConfig", "ReliabilityConfig",
           "RunPlan", "StragglerConfig", "Sweep", "build_plan", "checkpoint_costs",
           "component_counts", "daly_interval", "expected_interruptions", "goodput",
           "load_profile", "profile_names", "reliability_config_from_dict", "run",
           "sweep_interval", "young_interval"]
