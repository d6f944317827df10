"""Pricing one candidate: the full simulation, alone or in batches that share their pricing
(the cheap lower bounds that let a search skip simulations are ``search.lower_bounds``).

The simulation is :func:`trainsim.simulate`, unchanged, so a search reports exactly what
``trainsim simulate`` would for the same configuration.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, NamedTuple

from trainsim.engine import gc_paused
from trainsim.engine import loop as engine_loop
from trainsim.engine.loop import runs_shared
from trainsim.errors import ConfigError
from trainsim.limits import WorkLimitError
from trainsim.network.forced_algo import forces_algo
from trainsim.pricing import shared
from trainsim.search.lower_bounds import Bounds, lower_bound_s, peak_gemm_rate
from trainsim.search.space import Base, Candidate, drop_parallels
from trainsim.simulator import simulate


@dataclass(frozen=True)
class Evaluation:
    """The simulated outcome of one candidate."""

    candidate: Candidate
    iteration_time_s: float
    tokens_per_s: float
    mfu: float
    peak_memory_bytes: float
    memory_headroom_bytes: float
    breakdown: dict[str, float]
    """compute_s, exposed_comm_s, pipeline_bubble_s, optimizer_s, other_s (as Result)."""
    exposed_comm: dict[str, float]
    """Exposed communication by group: tp, cp, pp, dp."""
    num_microbatches: int
    lower_bound_s: float = 0.0

    @property
    def num_gpus(self) -> int:
        return self.candidate.mem.num_gpus

    @property
    def fits(self) -> bool:
        return self.memory_headroom_bytes >= 0

    @property
    def label(self) -> str:
        return self.candidate.label()

    def to_dict(self, base: Base | None = None) -> dict[str, Any]:
        """Its figures and configuration; with the search's ``base``, also ``parallel``: the
        parallel section that reproduces it under ``simulate`` (``Candidate.simulate_parallel``:
        the --set fields and an uneven layout included), and the layout in ``config``."""
        as_stage = base is not None and base.zero1_as_stage
        config = self.candidate.to_dict(as_stage)
        extra: dict[str, Any] = {}
        if base is not None:
            config["pipeline_model_parallel_layout"] = self.candidate.run_layout(base)
            extra["parallel"] = self.candidate.simulate_parallel(base)
        return {"config": config, **extra, "label": self.candidate.label(as_stage),
                "iteration_time_s": self.iteration_time_s, "tokens_per_s": self.tokens_per_s,
                "tokens_per_s_per_gpu": self.tokens_per_s / self.num_gpus, "mfu": self.mfu,
                "peak_memory_bytes": self.peak_memory_bytes,
                "memory_headroom_bytes": self.memory_headroom_bytes,
                "num_microbatches": self.num_microbatches,
                "breakdown": dict(self.breakdown), "exposed_comm": dict(self.exposed_comm)}


def refined_bound_s(candidate: Candidate, base: Base) -> float:
    """The refined lower bound of one candidate (see :class:`Bounds`; no cache kept)."""
    return Bounds(base).refined(candidate)


def evaluate(candidate: Candidate, base: Base) -> Evaluation:
    """Simulate one candidate (in this process)."""
    cfg = candidate.to_config(base)
    r = simulate(cfg)
    return Evaluation(candidate, r.iteration_time_s, r.tokens_per_s, r.mfu, r.peak_memory_bytes,
                      cfg.cluster.gpu.hbm_bytes - r.peak_memory_bytes, dict(r.breakdown),
                      dict(r.exposed_comm), cfg.num_microbatches,
                      lower_bound_s(candidate.mem, base, _peak_rate(base)))


class Skipped(NamedTuple):
    """A candidate whose simulation is over a work limit (:func:`evaluate_runnable`) and why."""

    candidate: Candidate
    why: str


def evaluate_runnable(candidate: Candidate, base: Base) -> Evaluation | Skipped:
    """:func:`evaluate`, or :class:`Skipped` where its simulation is refused for its work
    (``limits.WorkLimitError``): a candidate the search's up-front check passes
    (``memory_check.check_memory`` counts the steady-state shortcut's truncated runs) can still
    go over the task limit in the full simulation it falls back to where the period is not
    proven (``simulator._simulate``'s second ``check_simulation``: ``plan llama3-8b --seq 1``'s
    TP1 PP1 DP8 mb2, 262,144 micro-batches, 524,353 tasks), or over another limit the up-front
    check does not count (a schedule's positions, the flow backend's flow-steps). Such a
    candidate cannot be simulated: the search skips it as it skips one over the limit up front,
    instead of ending with its error (edge48). So is one whose simulation refuses a forced
    ``cluster.nccl_algo`` on a collective the config alone does not show it runs (robust62
    Lead 2: a broadcast, a sharded optimizer's parameter gather; ``network.forced_algo``):
    the search goes on to the candidates the algorithm can run."""
    try:
        return evaluate(candidate, base)
    except WorkLimitError as exc:
        return Skipped(candidate, str(exc))
    except ConfigError as exc:
        if forces_algo(base.cluster) and str(exc).startswith("cluster.nccl_algo="):
            return Skipped(candidate, str(exc))
        raise


_RATE: list[tuple[Base, float]] = []


def _peak_rate(base: Base) -> float:
    """:func:`peak_gemm_rate` of ``base``, kept for the last base object asked (a search's
    worker gets one base for all its batches, ``_one_base``): the roofline's rates of two
    GEMMs were worked out again for every evaluation (~1 % of a worker's time)."""
    if not _RATE or _RATE[0][0] is not base:
        _RATE[:] = [(base, peak_gemm_rate(base))]
    return _RATE[0][1]


_BASES: dict[str, Base] = {}


def _one_base(base: Base) -> Base:
    """The first base of this process equal to ``base`` (by ``repr``, which spells every float
    exactly: ``EvaluationCache``'s key). A worker unpickles a new copy of the search's base with
    every batch; the prices ``shared`` keeps are keyed by the cluster's identity (and the twin
    graphs by the model's and the training's), so without this each batch priced its passes
    anew (the 22B search's workers: 2,125 op lists priced instead of 560)."""
    key = repr(base)
    hit = _BASES.get(key)
    if hit is None:
        if len(_BASES) >= 8:
            _BASES.clear()
        hit = _BASES[key] = base
    return hit


class SearchToken(NamedTuple):
    """One search's token (``search.core``): what its batches share in a process is keyed by
    it (``pricing.shared``, :func:`_runs_of`), and ``workers`` (the executor's) shares out the
    tasks a worker keeps (:func:`share`)."""

    pid: int
    search: int
    time_ns: int
    workers: int = 1


def evaluate_batch(base: Base, candidates: list[Candidate], token: Hashable = None
                   ) -> list[Evaluation | Skipped]:
    """The unit of work an executor runs on a worker: one batch of candidates, each evaluated
    or skipped where its simulation is over a work limit (:func:`evaluate_runnable`). ``token``:
    the search's (its batches price the passes they share once per process:
    :func:`trainsim.pricing.shared`); None prices each candidate on its own."""
    if token is None:
        return [evaluate_runnable(c, base) for c in candidates]
    base = _one_base(base)
    # the collector paused as simulate() pauses it, here over the configs and results too; a
    # task graph equal to one of the search's earlier candidates' in this process runs the
    # loop once (a search's candidates in pairs: selective recompute where FlashAttention's
    # backward recomputes the scores anyway leaves recompute none's passes, at the same
    # bound), and a twin's graph is built once (``trainsim.twin_graphs``)
    with shared(token), gc_paused(), runs_shared(_runs_of(token, base), share(token)):
        return [evaluate_runnable(c, base) for c in candidates]


SHARE_FLOOR_TASKS = 200_000
"""The least tasks one worker keeps, however many workers share ``SHARED_TASKS``: a graph is
kept whole or not at all (``engine.loop.run``), so a worker must be able to keep the graph of
the largest configuration its search builds, or a share below it keeps no timelines at all
(64 workers' even share of 10^6 is 15,625). A graph's tasks grow with the pipeline's stages,
virtual stages and layers' ops, not with the micro-batches (a 126-layer model on 14 stages of
9 chunks, 128 or 448 micro-batches: 14,377 tasks, measured 2026-11-25), and the largest
simulation measured keeps 176,456 tasks in all its graphs; 200,000 keeps either. The cost: up
to ~67 MB of timelines a worker (~335 bytes a task) beyond the even share, and twin graphs of
as many tasks again."""


def share(token: Hashable) -> int:
    """The tasks one worker of the search ``token`` keeps at most (timelines, and twin graphs
    as many tasks again): ``engine.loop.SHARED_TASKS`` shared out evenly among its executor's
    workers, but never less than ``SHARE_FLOOR_TASKS`` (one large graph) where the cap allows
    it. A search so keeps at most ``workers * max(SHARED_TASKS // workers,
    min(SHARE_FLOOR_TASKS, SHARED_TASKS))`` tasks in all: one validation question's 10^6 up
    to 5 workers, 64 workers' floors 12.8 M (~4.3 GB of timelines, twin graphs as many tasks
    again), where 64 workers with the whole cap each could hold 64 M (~21 GB and as much
    again; the 22B search's serial process keeps 329,250 timeline and 399,510 twin tasks, peak
    RSS 36 -> 292 MB)."""
    cap = engine_loop.SHARED_TASKS
    even = cap // max(1, getattr(token, "workers", None) or 1)
    return max(even, min(SHARE_FLOOR_TASKS, cap))


_RUNS: list[tuple[Hashable, Base, tuple[dict, dict]]] = []
"""The token and base of the last search that ran a batch in this process, and what its
batches' ``runs_shared`` kept (timelines, twin graphs and summaries)."""


def _runs_of(token: Hashable, base: Base) -> tuple[dict, dict]:
    """What the earlier batches of the search ``token`` kept in this process (its task graphs
    and timelines: 1,216 simulations of the 22B search built 529 graphs and ran the loop 534
    times with one store per batch, 449 and 456 with one per search), within :func:`share`;
    the first batch of a new search's token drops the last one's, as ``pricing.shared`` does
    its prices, so a long-lived worker (Ray's, a pool kept across searches) holds at most one
    search's store, until its next search (its main process cannot tell it that a search has
    ended: :func:`drop_runs` runs there). Their keys hold identities
    (``twin_graphs.graph_key``) of objects the kept entries keep alive, and of ``base``'s,
    kept here with them."""
    if not _RUNS or _RUNS[0][0] != token or _RUNS[0][1] is not base:
        if _RUNS and _RUNS[0][0] != token:  # the last search's configs too (a worker's)
            drop_parallels()
        _RUNS[:] = [(token, base, ({}, {}))]
    return _RUNS[0][2]


def drop_runs(token: Hashable) -> None:
    """Forget what the batches of the search ``token`` kept in this process (its end)."""
    if _RUNS and _RUNS[0][0] == token:
        _RUNS.clear()


__all__ = ["Bounds", "Evaluation", "SearchToken", "Skipped", "drop_runs", "evaluate", "evaluate_batch",
           "evaluate_runnable", "lower_bound_s", "refined_bound_s", "share"]
