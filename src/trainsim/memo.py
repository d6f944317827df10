"""Results kept per config object, so that the callers that ask the same question of one
config in a process (the tuner's and the search's memory checks, then ``simulate``) compute
the answer once.

Configs are frozen dataclasses but not hashable (some fields are mappings), so an answer is
keyed by the config object's identity, and the cache holds the config itself: an identity is
never reused while its answer is kept. The cache is bounded (least recently used first out).
"""

from __future__ import annotations

import functools
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from trainsim.memory import estimate_stage_memory
from trainsim.pricing import Pricer

R = TypeVar("R")

MAXSIZE = 4096
"""Answers kept per memoized function: a tuned row or a search checks a few hundred configs,
each with a few pipeline stages, before simulating some of them."""


def per_config(fn: Callable[..., R], maxsize: int = MAXSIZE) -> Callable[..., R]:
    """``fn(cfg, *args)`` memoized on the identity of ``cfg`` and the (hashable) ``args``."""
    kept: OrderedDict[tuple[int, tuple[Hashable, ...]], tuple[Any, R]] = OrderedDict()

    @functools.wraps(fn)
    def wrapper(cfg: Any, *args: Hashable) -> R:
        key = (id(cfg), args)
        hit = kept.get(key)
        if hit is not None and hit[0] is cfg:
            kept.move_to_end(key)
            return hit[1]
        value = fn(cfg, *args)
        kept[key] = (cfg, value)
        if len(kept) > maxsize:
            kept.popitem(last=False)
        return value

    wrapper.cache_clear = kept.clear  # type: ignore[attr-defined]
    return wrapper


stage_memory = per_config(estimate_stage_memory)
"""``estimate_stage_memory(cfg, stage)``, computed once per config object: the tuner and the
search check a config's memory before ``simulate`` reports it."""

_PER_PRICER: weakref.WeakKeyDictionary[Pricer, dict] = weakref.WeakKeyDictionary()


def per_pricer(cfg: Any, pricer: Pricer, layer_source: Hashable) -> dict:
    """A dict that every task graph of ``cfg`` priced by ``pricer`` from ``layer_source``
    shares (one ``simulate`` builds up to three from its pricer: the steady state's truncated
    runs and a fallback's full graph): the simulator keeps its priced passes there. Kept as
    long as the pricer is, so a pricer built after a module constant changed prices anew."""
    kept = _PER_PRICER.setdefault(pricer, {})
    hit = kept.get(layer_source)
    if hit is None or hit[0] is not cfg:
        hit = kept[layer_source] = (cfg, {})
    return hit[1]


__all__ = ["MAXSIZE", "per_config", "per_pricer", "stage_memory"]
