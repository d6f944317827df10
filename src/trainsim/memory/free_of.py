"""Answers kept across configs that differ only in parallel fields the answer never reads: the
optimizer sharding (``zero_stage``, ``distributed_optimizer``) for the activations in flight
(they act through ``memory.state``: a search checks the memory of four such groups of each
layout), and the data-parallel and p2p overlap switches for a stage's whole memory (read only
by the task graph's placement: ``simulator``, ``optimizer_tasks``, ``pipeline``: a search
simulates up to eight such siblings of one memory group).

An answer is keyed by the identities of the config's model, training and cluster (kept with
it, so an identity is never reused while kept), a small number standing for the parallel
fields but the free ones, the function and its argument. Answers are kept only for one
question whose constants cannot change (as ``pricing.shared``): :func:`zero_free` inside
:func:`zero_free_kept` (``memory.state.states_shared``: a search's process), a ``FreeOf``
the caller keeps for as long (``simulator``: in ``engine.runs_shared``'s store).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from trainsim.config import ParallelConfig, RunConfig

R = TypeVar("R")

ZERO_FIELDS = frozenset({"zero_stage", "distributed_optimizer"})
OVERLAP_FIELDS = frozenset({"overlap_grad_reduce", "overlap_param_gather", "overlap_p2p_comm"})
KEPT = 4096
"""Entries each table keeps at most (all of one ``FreeOf`` cleared together past it)."""


class FreeOf:
    """``fn(cfg, arg)`` kept for the configs equal to ``cfg`` but in ``fields``."""

    def __init__(self, fields: frozenset[str]) -> None:
        names = {f.name for f in dataclasses.fields(ParallelConfig)}
        assert fields <= names, fields - names
        self.fields = fields
        self._rest = tuple(sorted(names - fields))
        self._classes: dict[tuple, int] = {}  # the other fields -> a small number
        self._of: dict[int, tuple[ParallelConfig, int]] = {}  # id(parallel) -> (it, number)
        self._kept: dict[tuple, tuple[Any, Any, Any, Any]] = {}  # -> (model, training, cluster, answer)

    def cache_clear(self) -> None:
        self._classes.clear()
        self._of.clear()
        self._kept.clear()

    def _class_of(self, p: ParallelConfig) -> int | None:
        hit = self._of.get(id(p))
        if hit is not None and hit[0] is p:
            return hit[1]
        rest = tuple(getattr(p, name) for name in self._rest)
        try:
            number = self._classes.get(rest)
        except TypeError:  # a field that cannot be hashed: not kept
            return None
        if number is None:
            if len(self._classes) >= KEPT or len(self._of) >= KEPT:
                self.cache_clear()
            number = self._classes[rest] = len(self._classes)
        self._of[id(p)] = (p, number)
        return number

    def __call__(self, fn: Callable[[RunConfig, Any], R], cfg: RunConfig, arg: Hashable) -> R:
        """``fn(cfg, arg)``, computed once for the configs equal to ``cfg`` but in
        ``fields``; ``fn`` must read none of them (nor anything of ``cfg`` but its model,
        training, cluster and parallel config), and its answer must not be changed after."""
        number = self._class_of(cfg.parallel)
        if number is None:
            return fn(cfg, arg)
        m, t, c = cfg.model, cfg.training, cfg.cluster
        key = (fn, id(m), id(t), id(c), number, arg)
        hit = self._kept.get(key)
        if hit is not None and hit[0] is m and hit[1] is t and hit[2] is c:
            return hit[3]
        if len(self._kept) >= KEPT:
            self._kept.clear()
        out = self._kept[key] = (m, t, c, fn(cfg, arg))
        return out[3]


_ZERO: list[FreeOf] = []  # one per zero_free_kept entered


@contextmanager
def zero_free_kept() -> Iterator[None]:
    """Inside it, :func:`zero_free` keeps its answers; they are dropped on exit."""
    _ZERO.append(FreeOf(ZERO_FIELDS))
    try:
        yield
    finally:
        _ZERO.pop()


def zero_free(fn: Callable[[RunConfig, Any], R], cfg: RunConfig, arg: Hashable) -> R:
    """``fn(cfg, arg)``, kept across the optimizer shardings inside :func:`zero_free_kept`
    (``fn`` reads neither ZeRO field), else computed."""
    return _ZERO[-1](fn, cfg, arg) if _ZERO else fn(cfg, arg)


def cache_clear() -> None:
    """Forget what the :func:`zero_free_kept` entered keep."""
    for kept in _ZERO:
        kept.cache_clear()


__all__ = ["OVERLAP_FIELDS", "ZERO_FIELDS", "FreeOf", "cache_clear", "zero_free",
           "zero_free_kept"]
