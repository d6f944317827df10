"""The memory verdict of a search's memory group: its peak over pipeline stages against the
GPU's HBM, the two end stages first (the first holds the most micro-batches in flight, the last
the logits), the middle ones only where both ends fit."""

from __future__ import annotations

from dataclasses import dataclass

from trainsim import steady_state
from trainsim.config import RunConfig
from trainsim.errors import ConfigError
from trainsim.limits import limit
from trainsim.memo import stage_memory
from trainsim.search.space import Base, Candidate, MemoryKey


@dataclass(frozen=True)
class MemoryCheck:
    """The memory verdict of one memory group."""

    fits: bool
    peak_bytes: float
    """Peak over pipeline stages (or over stages 0 and pp-1 when those already do not fit)."""
    headroom_bytes: float


def check_memory(key: MemoryKey, base: Base, cfg: RunConfig | None = None
                 ) -> MemoryCheck | None:
    """Memory of a memory group; None if RunConfig rejects the combination or its iteration
    is over the task limit (trainsim.limits: it could not be simulated). ``cfg``: the group's
    config, ``Candidate(key).to_config(base)``, where the caller has built it already."""
    if cfg is None:
        try:
            cfg = Candidate(key).to_config(base)
        except ConfigError:
            return None
    # the tasks the simulator runs (the steady-state shortcut's truncated runs where it
    # applies: ``simulator.simulate``'s own check), not the full iteration's
    if steady_state.simulated_tasks(cfg) > limit("TRAINSIM_MAX_TASKS"):
        return None
    hbm = cfg.cluster.gpu.hbm_bytes
    pp = cfg.parallel.pp
    # The first stage holds the most micro-batches in flight and the last one the logits:
    # check those two first and skip the middle stages when one already does not fit.
    ends = {0, pp - 1}
    peak = max(stage_memory(cfg, s).total for s in ends)
    if peak <= hbm:
        peak = max([peak] + [stage_memory(cfg, s).total for s in range(pp) if s not in ends])
    return MemoryCheck(peak <= hbm, peak, hbm - peak)


__all__ = ["MemoryCheck", "check_memory"]
