"""A lower bound on the simulated iteration time, from the priced passes alone (no event loop).

A tuner comparing settings asks "is this one faster than the best so far?"; where the bound
already says no, the simulation can be skipped without changing the answer (branch and
bound; ``validate.training.tune``). The bound follows the simulator's own task graph: every
task lasts at least its duration (contention only stretches it) and tasks on one stream run one
at a time, so stage ``s`` of a Megatron pipeline cannot start before its first pass's
micro-batch has gone forward through the virtual stages before it, then runs the forward and
backward of every micro-batch of its chunks, and the backward of its last pass still has to go
back through the virtual stages before that one:

    T >= sum_{u < v_first} F_u + m * sum_{v on s} (F_v + B_v) + sum_{u < v_last} B_u

(Narayanan et al. 2021 §2.2: the pipeline fill and drain of 1F1B and its interleaved form).
Sends, collectives, the optimizer step and data loading only add to it.
"""

from __future__ import annotations

from trainsim.config import RunConfig
from trainsim.pricing import Pricer
from trainsim.workload.schedule import _passes

SAFETY = 1 - 1e-9
"""The same durations summed in another order differ in their last bits: the bound is scaled
by this so that it never exceeds the simulation it bounds."""


def lower_bound_s(cfg: RunConfig, pricer: Pricer | None = None) -> float:
    """A lower bound on ``simulate(cfg).iteration_time_s``; 0.0 where none is derived (other
    pipeline schedules, stages that overlap consecutive iterations)."""
    p = cfg.parallel
    if p.pipeline_schedule not in (None, "1f1b", "interleaved_1f1b") or \
            p.optimizer_post_validation:
        return 0.0
    from trainsim.simulator import _TaskGraph

    graph = _TaskGraph(cfg, pricer or Pricer(cfg), None)
    pp, vpp, m = p.pp, p.vpp, cfg.num_microbatches
    fwd = [graph.work[v][0].duration_s for v in range(pp * vpp)]
    bwd = [graph.work[v][1].duration_s for v in range(pp * vpp)]
    # every stage's order starts with the first forward and ends with the last backward
    # (Megatron's warm-up, steady pairs, cool-down: workload.schedule)
    first_fwd, last_bwd = (passes[k] for passes, k in zip(_passes(pp, vpp, m), (0, -1)))
    best = 0.0
    for s in range(pp):
        v_first, v_last = first_fwd.chunk * pp + s, last_bwd.chunk * pp + s
        busy = m * sum(fwd[v] + bwd[v] for v in range(s, pp * vpp, pp))
        best = max(best, sum(fwd[:v_first]) + busy + sum(bwd[:v_last]))
    return SAFETY * best


__all__ = ["SAFETY", "lower_bound_s"]
