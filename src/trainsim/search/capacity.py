"""Capacity planning: how many GPUs to train on N tokens in D days, and what it costs.

For a GPU count the fastest configuration comes from :func:`~trainsim.search.core.search`;
the plan walks a ladder of whole-node GPU counts from a first estimate (6·N·tokens at 45 %
MFU) down while the deadline is still met and up until it is, assuming more GPUs are never
slower at their best configuration. The cost of the chosen run follows from its simulated
throughput:

* time: ``tokens / tokens_per_s``; GPU-hours: time x GPUs; cost: GPU-hours x $/GPU-hour
  (``GPUSpec.price_per_hour`` in the catalog, ``cluster.price_per_gpu_hour`` or ``--price``).
* energy, see :class:`EnergyModel`: GPU board power that follows utilisation, the rest of the
  node, and the datacenter's PUE; CO2 at a grid carbon intensity.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainsim.config.training import check_run_tokens
from trainsim.errors import ConfigError
from trainsim.model.counts import model_flops_per_token
from trainsim.search.core import Progress, search
from trainsim.search.evaluation import Evaluation
from trainsim.search.executors import Executor
from trainsim.search.space import Base, SearchSpace

FIRST_GUESS_MFU = 0.45
"""MFU for the first GPU-count estimate only (the plan then simulates): typical of tuned
Megatron runs on A100/H100 (Narayanan et al. 2021; Llama 3, Dubey et al. 2024, Table 4: 38-43%)."""
NODE_STEPS = (1, 1.5)
"""GPU-count ladder: 1x and 1.5x powers of two of whole nodes (8, 12, 16, 24, 32, ... nodes)."""


@dataclass(frozen=True)
class EnergyModel:
    """Average power of one GPU's share of the cluster, and the carbon of its energy.

    ``gpu_w = tdp * (idle + (1 - idle) * u)`` where ``u`` is the fraction of the iteration the
    GPU computes (compute + optimizer step; exposed communication and pipeline bubbles count
    as idle). A training GPU that computes runs power-saturated at its TDP (the premise of
    ``config.cluster.SUSTAINED_OF_BURST``).
    """

    gpu_idle_fraction: float = 0.15
    """Idle board power over TDP: nvidia-smi reads ~60-100 W idle on 400 W A100 and 700 W
    H100 SXM boards (0.1-0.2)."""
    node_overhead_fraction: float = 0.5
    """Power of the rest of the node (CPUs, memory, NICs, NVSwitches, fans) per GPU, over the
    GPU's TDP: Latif et al. 2024 (arXiv:2412.08602) measured at most 8.4 kW on an 8 x H100
    HGX node training Llama 2 13B with the GPUs near full use, (8.4 - 8 x 0.7) / 5.6 = 0.5."""
    pue: float | None = None
    """Datacenter power usage effectiveness; None = ``cluster.pue`` (default 1.2)."""
    grid_gco2_per_kwh: float = 400.0
    """Grid carbon intensity, g CO2e per kWh: about the 2023 US average (EIA, 0.37-0.39
    kg/kWh) and below the world average (Ember, Global Electricity Review 2024: 480 g/kWh)."""

    def __post_init__(self) -> None:
        for name in ("gpu_idle_fraction", "node_overhead_fraction", "grid_gco2_per_kwh"):
            v = getattr(self, name)
            if not (v >= 0 and math.isfinite(v)):
                raise ConfigError(f"energy.{name}={v} must be a finite number >= 0")
        if self.gpu_idle_fraction > 1:
            raise ConfigError(f"energy.gpu_idle_fraction={self.gpu_idle_fraction} must be <= 1")
        if self.pue is not None and not self.pue >= 1:
            raise ConfigError(f"energy.pue={self.pue} must be >= 1")


@dataclass(frozen=True)
class RunCost:
    """Days, GPU-hours, dollars, energy and CO2 of a whole run at one configuration."""

    num_gpus: int
    tokens: float
    seconds: float
    gpu_hours: float
    price_per_gpu_hour: float
    cost_usd: float
    utilization: float
    gpu_power_w: float
    """Average board power of one GPU."""
    facility_power_w: float
    """Whole cluster from the grid: GPUs + node overhead, times PUE."""
    energy_mwh: float
    co2_tonnes: float
    pue: float
    grid_gco2_per_kwh: float

    @property
    def days(self) -> float:
        return self.seconds / 86400

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["days"] = self.days
        return d


def run_cost(e: Evaluation, base: Base, tokens: float, energy: EnergyModel | None = None,
             price_per_gpu_hour: float | None = None) -> RunCost:
    """Cost and energy of training ``tokens`` tokens at the evaluated configuration."""
    energy = energy or EnergyModel()
    if not tokens > 0:
        raise ConfigError(f"tokens={tokens} must be positive")
    cluster = base.cluster_for(e.num_gpus)
    price = cluster.gpu_price_per_hour if price_per_gpu_hour is None else price_per_gpu_hour
    if not price >= 0:
        raise ConfigError(f"price per GPU-hour {price} must be >= 0")
    pue = energy.pue if energy.pue is not None else cluster.pue
    seconds = tokens / e.tokens_per_s
    gpu_hours = seconds / 3600 * e.num_gpus
    busy = e.breakdown.get("compute_s", 0.0) + e.breakdown.get("optimizer_s", 0.0)
    u = min(1.0, busy / e.iteration_time_s)
    tdp = cluster.gpu.tdp_w
    gpu_w = tdp * (energy.gpu_idle_fraction + (1 - energy.gpu_idle_fraction) * u)
    facility_w = (gpu_w + energy.node_overhead_fraction * tdp) * e.num_gpus * pue
    energy_kwh = facility_w * seconds / 3.6e6
    return RunCost(e.num_gpus, tokens, seconds, gpu_hours, price, gpu_hours * price, u, gpu_w,
                   facility_w, energy_kwh / 1000, energy_kwh * energy.grid_gco2_per_kwh / 1e6,
                   pue, energy.grid_gco2_per_kwh)


@dataclass(frozen=True)
class PlanStep:
    num_gpus: int
    best: Evaluation | None
    """None: no valid configuration fits on this many GPUs (e.g. the batch cannot be split)."""
    days: float | None
    meets_deadline: bool
    simulated: int


@dataclass(frozen=True)
class PlanResult:
    tokens: float
    deadline_days: float
    required_tokens_per_s: float
    steps: tuple[PlanStep, ...]
    best: Evaluation | None
    """Fastest configuration on the smallest GPU count that meets the deadline (None: none does)."""
    cost: RunCost | None
    closest: Evaluation | None = None
    """When no count meets the deadline: the fastest configuration found."""
    base: Base | None = dataclasses.field(default=None, repr=False, compare=False)
    """The searches' base: with it, ``best`` and ``closest`` print the ``parallel`` section
    that reproduces them under ``simulate``, as ``trainsim search --format json`` does
    (``Evaluation.to_dict``)."""

    @property
    def num_gpus(self) -> int | None:
        return self.best.num_gpus if self.best else None

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "deadline_days": self.deadline_days,
                "required_tokens_per_s": self.required_tokens_per_s,
                "num_gpus": self.num_gpus,
                "best": self.best.to_dict(self.base) if self.best else None,
                "cost": self.cost.to_dict() if self.cost else None,
                "closest": self.closest.to_dict(self.base) if self.closest else None,
                "steps": [{"num_gpus": s.num_gpus, "days": s.days,
                           "meets_deadline": s.meets_deadline, "simulated": s.simulated,
                           "best": s.best.label if s.best else None} for s in self.steps]}


def gpu_ladder(gpus_per_node: int, max_gpus: int) -> list[int]:
    """Whole-node GPU counts, 1x and 1.5x powers of two of nodes, up to max_gpus (below one
    node: each count up to max_gpus; fuzz17: up to the node's, past --max-gpus)."""
    out = set(range(1, max_gpus + 1)) if max_gpus < gpus_per_node else set()
    k = 0
    while gpus_per_node * 2**k <= max_gpus:
        for f in NODE_STEPS:
            nodes = f * 2**k
            if nodes == int(nodes) and gpus_per_node * int(nodes) <= max_gpus:
                out.add(gpus_per_node * int(nodes))
        k += 1
    return sorted(out)


def plan(base: Base, tokens: float, days: float, *, space: SearchSpace | None = None,
         executor: Executor | None = None, max_gpus: int = 65536,
         energy: EnergyModel | None = None, price_per_gpu_hour: float | None = None,
         progress: Progress | None = None, gpu_counts: Sequence[int] | None = None) -> PlanResult:
    """Smallest GPU count (on the ladder, or among ``gpu_counts``) that trains ``tokens``
    tokens within ``days`` days, its fastest configuration, and the run's cost."""
    if not tokens > 0 or not math.isfinite(tokens):
        raise ConfigError(f"--tokens={tokens} must be a positive number")
    if not days > 0 or not math.isfinite(days):
        raise ConfigError(f"--days={days} must be a positive number")
    check_run_tokens(base.training, tokens, "--tokens")  # the batch is fixed before the search
    needed = tokens / (days * 86400)
    ladder = sorted(set(gpu_counts)) if gpu_counts else gpu_ladder(base.cluster.gpus_per_node,
                                                                 max_gpus)
    if not ladder:
        raise ConfigError(f"no GPU count to try up to --max-gpus={max_gpus}")
    flops = model_flops_per_token(base.model, base.training.seq_length)
    guess = needed * flops / (base.cluster.gpu.flops("bf16") * FIRST_GUESS_MFU)
    i = next((k for k, n in enumerate(ladder) if n >= guess), len(ladder) - 1)
    steps: dict[int, PlanStep] = {}

    def step(k: int) -> PlanStep:
        n = ladder[k]
        if n not in steps:
            r = search(base, [n], space, top_k=1, executor=executor, pareto_slowdown=1.0,
                       progress=progress)
            best = r.best
            d = tokens / best.tokens_per_s / 86400 if best else None
            steps[n] = PlanStep(n, best, d, best is not None and d is not None and d <= days,
                                r.stats.simulated)
        return steps[n]

    # the first count at or above the guess that meets the deadline, then down while smaller
    # counts still meet it (a count with no valid configuration says nothing either way)
    while i + 1 < len(ladder) and not step(i).meets_deadline:
        i += 1
    if step(i).meets_deadline:
        k = i - 1
        while k >= 0 and (step(k).meets_deadline or step(k).best is None):
            if step(k).meets_deadline:
                i = k
            k -= 1
    chosen = step(i)
    ordered = tuple(steps[n] for n in sorted(steps))
    if not chosen.meets_deadline:
        found = [s.best for s in ordered if s.best is not None]
        closest = max(found, key=lambda e: e.tokens_per_s, default=None)
        return PlanResult(tokens, days, needed, ordered, None, None, closest, base=base)
    assert chosen.best is not None
    cost = run_cost(chosen.best, base, tokens, energy, price_per_gpu_hour)
    return PlanResult(tokens, days, needed, ordered, chosen.best, cost, base=base)


__all__ = ["EnergyModel", "PlanResult", "PlanStep", "RunCost", "gpu_ladder", "plan", "run_cost"]
