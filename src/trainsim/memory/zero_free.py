"""Answers kept across configs that differ only in the optimizer sharding (``zero_stage``,
``distributed_optimizer``), for the memory estimate's parts that never read those fields (they
act through ``memory.state``): a search checks the memory of four such groups of each layout.

An answer is keyed by the identities of the config's model, training and cluster (kept with
it, so an identity is never reused while kept), a small number standing for the parallel
fields but the ZeRO ones, and the caller's arguments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from trainsim.config import ParallelConfig, RunConfig

R = TypeVar("R")

ZERO_FIELDS = frozenset({"zero_stage", "distributed_optimizer"})
_NOT_ZERO = tuple(f.name for f in dataclasses.fields(ParallelConfig) if f.name not in ZERO_FIELDS)
KEPT = 4096
"""Entries each table keeps at most (all three are cleared together past it)."""
_CLASSES: dict[tuple, int] = {}  # the parallel fields but the ZeRO ones -> a small number
_OF: dict[int, tuple[ParallelConfig, int]] = {}  # id(parallel config) -> (it, its number)
_KEPT: dict[tuple, tuple[Any, Any, Any, Any]] = {}  # key -> (model, training, cluster, answer)


def cache_clear() -> None:
    _CLASSES.clear()
    _OF.clear()
    _KEPT.clear()


def _class_of(p: ParallelConfig) -> int | None:
    hit = _OF.get(id(p))
    if hit is not None and hit[0] is p:
        return hit[1]
    fields = tuple(getattr(p, name) for name in _NOT_ZERO)
    try:
        number = _CLASSES.get(fields)
    except TypeError:  # a field that cannot be hashed: not kept
        return None
    if number is None:
        if len(_CLASSES) >= KEPT or len(_OF) >= KEPT:
            cache_clear()
        number = _CLASSES[fields] = len(_CLASSES)
    _OF[id(p)] = (p, number)
    return number


def zero_free(fn: Callable[[RunConfig, int], R], cfg: RunConfig, arg: Hashable) -> R:
    """``fn(cfg, arg)``, computed once for the configs equal to ``cfg`` but in the ZeRO fields;
    ``fn`` must read none of them (nor anything of ``cfg`` but its model, training, cluster
    and parallel config)."""
    number = _class_of(cfg.parallel)
    if number is None:
        return fn(cfg, arg)
    m, t, c = cfg.model, cfg.training, cfg.cluster
    key = (fn, id(m), id(t), id(c), number, arg)
    hit = _KEPT.get(key)
    if hit is not None and hit[0] is m and hit[1] is t and hit[2] is c:
        return hit[3]
    if len(_KEPT) >= KEPT:
        _KEPT.clear()
    out = _KEPT[key] = (m, t, c, fn(cfg, arg))
    return out[3]


__all__ = ["ZERO_FIELDS", "cache_clear", "zero_free"]
