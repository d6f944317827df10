"""search(): enumerate, prune by memory, simulate in parallel, rank, Pareto front.

1. Every canonical candidate of the space is enumerated, grouped by what memory depends on;
   each group is checked once (``estimate_stage_memory``, no simulation) and a group that does
   not fit prunes all its overlap variants.
2. The survivors are sorted by a lower bound on their iteration time
   (:func:`~trainsim.search.evaluate.lower_bound_s`) and simulated in fixed-size waves.
   After each wave a candidate is skipped when it can neither enter the top k (its bound is
   above the k-th best time found) nor the Pareto front (an evaluated configuration is at
   least as fast as its bound, with as much memory headroom, on no more GPUs). Branch and
   bound: the top k and the front are exactly those of simulating everything
   (``exhaustive=True`` does). Waves do not depend on the executor or the number of workers,
   so local processes and Ray give the same answer.
3. Evaluations are cached by (base, candidate): a plan or a repeated search does not simulate
   a configuration twice.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from trainsim.errors import ConfigError
from trainsim.search.evaluate import Evaluation, evaluate, lower_bound_s
from trainsim.search.executors import Executor, SerialExecutor
from trainsim.search.explain import pareto_front, why_slower
from trainsim.search.space import Base, Candidate, SearchSpace, check_memory

Progress = Callable[[str, int, int], None]
"""progress(phase, done, total): phase is 'memory' or 'simulate'."""

WAVE = 64
BATCH = 8


class EvaluationCache:
    """Evaluations by (base, candidate), shared by the searches of one process."""

    def __init__(self, max_entries: int = 500_000) -> None:
        self._data: dict[tuple[str, Candidate], Evaluation] = {}
        self.max_entries = max_entries
        self.hits = 0

    @staticmethod
    def base_key(base: Base) -> str:
        return repr(base)

    def get(self, key: str, c: Candidate) -> Evaluation | None:
        e = self._data.get((key, c))
        if e is not None:
            self.hits += 1
        return e

    def put(self, key: str, e: Evaluation) -> None:
        if len(self._data) >= self.max_entries:
            self._data.clear()
        self._data[(key, e.candidate)] = e


DEFAULT_CACHE = EvaluationCache()


@dataclass(frozen=True)
class SearchStats:
    enumerated: int
    """Valid canonical candidates (memory-pruned ones included)."""
    memory_groups: int
    memory_pruned: int
    bound_pruned: int
    simulated: int
    cache_hits: int
    elapsed_s: float
    executor: str
    workers: int

    @property
    def candidates_per_s(self) -> float:
        return self.enumerated / self.elapsed_s if self.elapsed_s else float("inf")

    @property
    def simulated_per_s(self) -> float:
        return self.simulated / self.elapsed_s if self.elapsed_s else float("inf")

    def to_dict(self) -> dict[str, Any]:
        return {"enumerated": self.enumerated, "memory_groups": self.memory_groups,
                "memory_pruned": self.memory_pruned, "bound_pruned": self.bound_pruned,
                "simulated": self.simulated, "cache_hits": self.cache_hits,
                "elapsed_s": self.elapsed_s, "candidates_per_s": self.candidates_per_s,
                "simulated_per_s": self.simulated_per_s, "executor": self.executor,
                "workers": self.workers}


@dataclass(frozen=True)
class Ranked:
    rank: int
    evaluation: Evaluation
    reasons: tuple[str, ...] = ()
    """Why it is slower than the best (empty for the best)."""

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, **self.evaluation.to_dict(), "why_slower": list(self.reasons)}


@dataclass(frozen=True)
class ReferenceRank:
    """Where a given configuration (e.g. a published one) lands in the ranking."""

    evaluation: Evaluation
    rank: int
    """1 + the layouts (others than its own) whose best configuration is faster."""
    exact: bool
    """False when rank > top_k: then it is a lower bound (pruned layouts are not counted)."""
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "rank_is_exact": self.exact, **self.evaluation.to_dict(),
                "fits_in_memory": self.evaluation.fits, "why_slower": list(self.reasons)}


@dataclass(frozen=True)
class SearchResult:
    base: Base
    gpu_counts: tuple[int, ...]
    top: tuple[Ranked, ...]
    pareto: tuple[Evaluation, ...]
    evaluated: tuple[Evaluation, ...] = field(repr=False)
    stats: SearchStats
    distinct: bool
    reference: ReferenceRank | None = None

    @property
    def best(self) -> Evaluation | None:
        return self.top[0].evaluation if self.top else None

    def to_dict(self) -> dict[str, Any]:
        b = self.base
        return {"model": b.model.name, "gpu": b.cluster.gpu.name, "gpu_counts": list(self.gpu_counts),
                "global_batch_size": b.training.global_batch_size,
                "seq_length": b.training.seq_length, "dtype": b.training.dtype,
                "distinct_layouts": self.distinct, "stats": self.stats.to_dict(),
                "top": [r.to_dict() for r in self.top],
                "pareto": [e.to_dict() for e in self.pareto],
                "reference": self.reference.to_dict() if self.reference else None}


def _group(c: Candidate, distinct: bool) -> object:
    return c.layout if distinct else c


def search(base: Base, gpu_counts: Sequence[int], space: SearchSpace | None = None, *,
           top_k: int = 10, executor: Executor | None = None, distinct: bool = True,
           exhaustive: bool = False, reference: Candidate | None = None,
           progress: Progress | None = None, cache: EvaluationCache | None = DEFAULT_CACHE,
           wave: int = WAVE, batch: int = BATCH) -> SearchResult:
    """Fastest configurations of ``base`` on each of ``gpu_counts`` GPUs.

    ``distinct`` ranks parallel layouts (GPUs, tp, pp, cp, vpp, micro batch), each by its
    fastest setting of the other switches, so the top k shows k different strategies rather
    than one strategy with switches toggled; ``distinct=False`` ranks every candidate.
    """
    if top_k < 1:
        raise ConfigError(f"--top={top_k} must be >= 1")
    space = space or SearchSpace()
    executor = executor or SerialExecutor()
    t0 = time.perf_counter()
    counts = tuple(dict.fromkeys(int(n) for n in gpu_counts))
    for n in counts:
        if n < 1:
            raise ConfigError(f"--gpus={n} must be positive")

    # 1. enumerate and prune by memory, once per memory group
    keys = [k for n in counts for k in space.memory_keys(base, n)]
    enumerated = memory_pruned = 0
    feasible: list[tuple[float, Candidate, float]] = []  # (bound, candidate, headroom)
    for i, key in enumerate(keys):
        mc = check_memory(key, base)
        if mc is not None:
            variants = space.variants(key)
            enumerated += len(variants)
            if not mc.fits:
                memory_pruned += len(variants)
            else:
                lb = lower_bound_s(key, base)
                feasible.extend((lb, c, mc.headroom_bytes) for c in variants)
        if progress and (i % 256 == 0 or i == len(keys) - 1):
            progress("memory", i + 1, len(keys))
    feasible.sort(key=lambda x: (x[0], x[1]))

    # 2. simulate in waves, best bound first, skipping what cannot matter
    tokens = base.training.global_batch_size * base.training.seq_length
    bkey = EvaluationCache.base_key(base)
    hits0 = cache.hits if cache else 0
    best_of: dict[object, float] = {}
    front: list[Evaluation] = []
    evaluated: list[Evaluation] = []
    threshold = float("inf")
    bound_pruned = simulated = 0
    done = 0
    for start in range(0, len(feasible), wave):
        chunk = feasible[start:start + wave]
        todo: list[Candidate] = []
        fresh: list[Evaluation] = []
        for lb, c, headroom in chunk:
            if not exhaustive and lb > threshold and any(
                    f.tokens_per_s >= tokens / lb and f.memory_headroom_bytes >= headroom
                    and f.num_gpus <= c.mem.num_gpus for f in front):
                bound_pruned += 1
                continue
            hit = cache.get(bkey, c) if cache else None
            if hit is not None:
                fresh.append(hit)
            else:
                todo.append(c)
        batches = [todo[i:i + batch] for i in range(0, len(todo), batch)]
        for res in executor.map(base, batches):
            for e in res:
                if cache:
                    cache.put(bkey, e)
                fresh.append(e)
        simulated += len(todo)
        fresh.sort(key=lambda e: e.candidate)
        evaluated.extend(fresh)
        for e in fresh:
            g = _group(e.candidate, distinct)
            if e.iteration_time_s < best_of.get(g, float("inf")):
                best_of[g] = e.iteration_time_s
        if len(best_of) >= top_k:
            threshold = heapq.nsmallest(top_k, best_of.values())[-1]
        front = pareto_front(front + fresh)
        done += len(chunk)
        if progress:
            progress("simulate", done, len(feasible))

    # 3. rank
    best_eval: dict[object, Evaluation] = {}
    for e in evaluated:
        g = _group(e.candidate, distinct)
        cur = best_eval.get(g)
        if cur is None or (e.iteration_time_s, e.candidate) < (cur.iteration_time_s, cur.candidate):
            best_eval[g] = e
    ordered = sorted(best_eval.values(), key=lambda e: (e.iteration_time_s, e.candidate))
    top = tuple(Ranked(i + 1, e, why_slower(ordered[0], e) if i else ())
                for i, e in enumerate(ordered[:top_k]))
    ref = None
    if reference is not None:
        ref = _rank_reference(reference, base, ordered, top_k, distinct, cache, bkey)
    stats = SearchStats(enumerated, len(keys), memory_pruned, bound_pruned, simulated,
                        (cache.hits - hits0) if cache else 0, time.perf_counter() - t0,
                        executor.name, executor.workers)
    return SearchResult(base, counts, top, tuple(front), tuple(evaluated), stats, distinct, ref)


def _rank_reference(reference: Candidate, base: Base, ordered: list[Evaluation], top_k: int,
                    distinct: bool, cache: EvaluationCache | None, bkey: str) -> ReferenceRank:
    e = cache.get(bkey, reference) if cache else None
    if e is None:
        e = evaluate(reference, base)
        if cache:
            cache.put(bkey, e)
    own = _group(reference, distinct)
    faster = sum(1 for o in ordered
                 if _group(o.candidate, distinct) != own and o.iteration_time_s < e.iteration_time_s)
    rank = faster + 1
    # A layout pruned by the bound is slower than the k-th best found, so every layout faster
    # than the reference was simulated as long as fewer than k others beat it.
    own_in_top = any(_group(o.candidate, distinct) == own for o in ordered[:top_k])
    exact = rank < top_k or (rank == top_k and not own_in_top)
    reasons = why_slower(ordered[0], e) if ordered and ordered[0].candidate != reference else ()
    return ReferenceRank(e, rank, exact, reasons)


__all__ = ["EvaluationCache", "Ranked", "ReferenceRank", "SearchResult", "SearchStats", "search"]
