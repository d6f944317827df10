"""Design-space exploration: search, capacity planning and hardware what-ifs.

* :func:`search` — enumerate the parallel configurations of a model on N GPUs, prune what does
  not fit in memory, simulate the rest in parallel (branch and bound on a lower bound of the
  iteration time), rank them with why each loses to the best, and give the Pareto front of
  throughput, memory headroom and GPU count.
* :func:`plan` — GPUs needed to train N tokens in D days; cost, energy and CO2 of the run.
* :func:`sweep` — one config over a grid of varied fields (NVLink, NIC, HBM, a new GPU...).

Executors (local processes by default, Ray on request) only decide where simulations run;
results do not depend on them.
"""

from typing import TYPE_CHECKING

from trainsim.lazy import lazy_getattr

if TYPE_CHECKING:
    from trainsim.search.capacity import EnergyModel, PlanResult, RunCost, plan, run_cost
    from trainsim.search.core import (
        EvaluationCache,
        Ranked,
        ReferenceRank,
        SearchResult,
        SearchStats,
        search,
    )
    from trainsim.search.evaluation import Evaluation, evaluate
    from trainsim.search.executors import LocalExecutor, RayExecutor, SerialExecutor, make_executor
    from trainsim.search.explain import pareto_front, why_slower
    from trainsim.search.lower_bounds import Bounds, lower_bound_s
    from trainsim.search.space import Base, Candidate, MemoryKey, SearchSpace
    from trainsim.search.whatif import SweepResult, Vary, sweep, write_sweep

_LAZY = {
    "Base": "trainsim.search.space",
    "Bounds": "trainsim.search.lower_bounds",
    "Candidate": "trainsim.search.space",
    "EnergyModel": "trainsim.search.capacity",
    "Evaluation": "trainsim.search.evaluation",
    "EvaluationCache": "trainsim.search.core",
    "LocalExecutor": "trainsim.search.executors",
    "MemoryKey": "trainsim.search.space",
    "PlanResult": "trainsim.search.capacity",
    "Ranked": "trainsim.search.core",
    "RayExecutor": "trainsim.search.executors",
    "ReferenceRank": "trainsim.search.core",
    "RunCost": "trainsim.search.capacity",
    "SearchResult": "trainsim.search.core",
    "SearchSpace": "trainsim.search.space",
    "SearchStats": "trainsim.search.core",
    "SerialExecutor": "trainsim.search.executors",
    "SweepResult": "trainsim.search.whatif",
    "Vary": "trainsim.search.whatif",
    "evaluate": "trainsim.search.evaluation",
    "lower_bound_s": "trainsim.search.lower_bounds",
    "make_executor": "trainsim.search.executors",
    "pareto_front": "trainsim.search.explain",
    "plan": "trainsim.search.capacity",
    "run_cost": "trainsim.search.capacity",
    "search": "trainsim.search.core",
    "sweep": "trainsim.search.whatif",
    "why_slower": "trainsim.search.explain",
    "write_sweep": "trainsim.search.whatif",
}
"""Where each public name is defined: imported when first read (PEP 562), so that a caller of
one submodule (``validate`` reads ``search.rules``) does not import the search engine, its
executors and the what-if sweeps (~0.1 s of every ``trainsim validate`` start, serial)."""


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
           "Base",
           "Bounds",
           "Candidate",
           "EnergyModel",
           "Evaluation",
           "EvaluationCache",
           "LocalExecutor",
           "MemoryKey",
           "PlanResult",
           "Ranked",
           "RayExecutor",
           "ReferenceRank",
           "RunCost",
           "SearchResult",
           "SearchSpace",
           "SearchStats",
           "SerialExecutor",
           "SweepResult",
           "Vary",
           "evaluate",
           "lower_bound_s",
           "make_executor",
           "pareto_front",
           "plan",
           "run_cost",
           "search",
           "sweep",
           "why_slower",
           "write_sweep",
]
