"""What a search gives back (:class:`SearchResult`: the top k, the Pareto front, the counts) and
the evaluations it keeps between searches of one process (:class:`EvaluationCache`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainsim.search.evaluation import Evaluation
from trainsim.search.reference import ReferenceRank
from trainsim.search.space import Base, Candidate

Progress = Callable[[str, int, int], None]
"""progress(phase, done, total): phase is 'enumerate' or 'simulate'."""


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
    """Candidates whose memory group does not fit (groups the bound rules out first are not
    checked for memory and count as bound-pruned), or whose simulation is over the task limit:
    up front (``check_memory``) or in the full simulation the steady-state shortcut falls back
    to (``evaluation.evaluate_runnable``: not counted as simulated)."""
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

    def to_dict(self, base: Base | None = None) -> dict[str, Any]:
        return {"rank": self.rank, **self.evaluation.to_dict(base),
                "why_slower": list(self.reasons)}


@dataclass(frozen=True)
class SearchResult:
    base: Base
    gpu_counts: tuple[int, ...]
    top: tuple[Ranked, ...]
    pareto: tuple[Evaluation, ...]
    evaluated: tuple[Evaluation, ...] = field(repr=False)
    stats: SearchStats
    rank_by: str
    reference: ReferenceRank | None = None
    refused: str | None = None
    """The first memory group whose config was refused (its label and the refusal), kept
    to say why where none is valid (``cli_inputs.nothing_found``)."""
    over_limit: str | None = None
    """The first candidate skipped because its simulation was over a work limit after the
    up-front check passed it (its label and the limit's message: ``evaluation.Skipped``), kept
    to say why where nothing was ranked (``cli_inputs.nothing_found``)."""

    @property
    def best(self) -> Evaluation | None:
        return self.top[0].evaluation if self.top else None

    def to_dict(self) -> dict[str, Any]:
        b = self.base
        return {"model": b.model.name, "gpu": b.cluster.gpu.name, "gpu_counts": list(self.gpu_counts),
                "global_batch_size": b.training.global_batch_size,
                "seq_length": b.training.seq_length, "dtype": b.training.dtype,
                "rank_by": self.rank_by, "stats": self.stats.to_dict(),
                "fixed": {k: v for k, v in b.fixed},
                # the run config each entry extends with its micro batch, GPU count and
                # parallel section to reproduce it under simulate (Base.given)
                "base": json.loads(b.given) if b.given else None,
                "top": [r.to_dict(b) for r in self.top],
                "pareto": [e.to_dict(b) for e in self.pareto],
                "reference": self.reference.to_dict(b) if self.reference else None,
                "refused": self.refused}


__all__ = ["DEFAULT_CACHE", "EvaluationCache", "Progress", "Ranked", "SearchResult", "SearchStats"]
