"""Results kept per config object, so that the callers that ask the same question of one
config in a process (the tuner's and the search's memory checks, then ``simulate``) compute
the answer once.

Configs are frozen dataclasses but not hashable (some fields are mappings), so an answer is
keyed by the config object's identity, and the cache holds the config itself: an identity is
never reused while its answer is kept. The cache is bounded (least recently used first out).
"""

from __future__ import annotations

import dataclasses
import functools
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from trainsim.catalog.shared_sections import SCALARS, Unkept, frozen
from trainsim.chunks import Chunk, LayerSource, chunks
from trainsim.config import RunConfig
from trainsim.memory import estimate_stage_memory
from trainsim.pricing import Pricer
from trainsim.workload.shard import Shard
from trainsim.workload.sharding import reduces_every_microbatch

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


OPTIMIZER_SIDE: dict[str, tuple[str, ...]] = {
    "parallel": ("distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather",
                 "ddp_bucket_size", "dp_buckets"),
    "training": ("optimizer", "optimizer_dtype", "exp_avg_dtype", "exp_avg_sq_dtype"),
}
"""Config fields that neither ``chunks`` nor ``Pricer.__init__`` reads, nor anything they
call, left out of :func:`chunk_key`: candidates of one tuned row that differ only in them
(Megatron's DDP or its distributed optimizer) price the same chunks. Read: of the modules
``chunks`` and ``pricing`` import, only the config's own checks and framework defaults
(``config.parallel`` / ``run`` / ``training``, ``catalog.defaults``), ``limits.pass_tasks``
and the gradient buckets (``workload.sharding.bucket_params`` /
``unbucketed_without_overlap``, ``workload.ddp_buckets``: placed by ``last_backward`` and
``optimizer_tasks`` after the passes) name them; the optimizer's state is sized by
``memory.state``. tests/test_shared_chunks.py records every attribute read while each public
row's candidates (their optimizer-side choices each) are priced and fails if one of these is
among them."""

_ROWS: list[dict[Hashable, Any]] = []
"""Per :func:`chunks_shared` entered (innermost last): priced chunks by :func:`chunk_key`, and
each section's frozen fields by its identity (with the section, so the identity is its own)."""


def _frozen(value: Any) -> Hashable:
    """``value`` as a hashable key that tells apart values of different types (1, 1.0, True;
    -0.0 and 0.0 by their digits: ``catalog.shared_sections.frozen``); frozensets, other
    mappings and dataclasses (by every field) too; ``Unkept`` for any other."""
    return frozen(value, _other)


def _other(value: Any) -> Hashable:
    kind = type(value)
    if kind is frozenset:
        return (kind, tuple(_frozen(v) for v in sorted(value, key=repr)))
    if isinstance(value, Mapping):
        return (kind, tuple((_frozen(k), _frozen(v)) for k, v in value.items()))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _section(value, ())
    raise Unkept


_NAMES: dict[tuple[type, tuple[str, ...]], tuple[str, ...]] = {}


def _section(section: Any, left_out: tuple[str, ...]) -> Hashable:
    """A dataclass's fields but ``left_out``, frozen: scalars with their types beside them
    (floats by their digits), any other value by :func:`_frozen`."""
    kind = type(section)
    names = _NAMES.get((kind, left_out))
    if names is None:
        names = _NAMES[(kind, left_out)] = tuple(
            f.name for f in dataclasses.fields(section) if f.name not in left_out)
    values = [getattr(section, n) for n in names]
    types = tuple(map(type, values))
    return (kind, types, tuple(
        v if t in SCALARS else repr(v) if t is float else _frozen(v)
        for v, t in zip(values, types)))


_KEPT_AT: dict[tuple[type, tuple[str, ...]], tuple[int, ...]] = {}


def config_key(cfg: RunConfig, left_out: Mapping[str, tuple[str, ...]]) -> Hashable:
    """Every field of every section of ``cfg`` but ``left_out``'s (per section name), frozen
    as :func:`_section` freezes it (raises ``Unkept`` for a value it cannot freeze); inside
    :func:`chunks_shared` each section object is frozen once, and each key of it taken from
    that."""
    kept = _ROWS[-1] if _ROWS else {}
    parts = []
    for name in ("model", "parallel", "training", "cluster"):
        section = getattr(cfg, name)
        omit = left_out.get(name, ())
        hit = kept.get(("section", id(section)))
        if hit is None or hit[0] is not section:
            hit = (section, _section(section, ()), {})
            if _ROWS:
                kept[("section", id(section))] = hit
        part = hit[2].get(omit)
        if part is None:
            kind, types, values = hit[1]
            at = _KEPT_AT.get((kind, omit))
            if at is None:
                at = _KEPT_AT[(kind, omit)] = tuple(
                    i for i, f in enumerate(_NAMES[(kind, ())]) if f not in omit)
            part = hit[2][omit] = (kind, tuple(types[i] for i in at),
                                   tuple(values[i] for i in at))
        parts.append(part)
    return (type(cfg), tuple(parts))


def chunk_key(cfg: RunConfig) -> Hashable:
    """What of ``cfg`` its priced chunks depend on: every field of every section but
    ``OPTIMIZER_SIDE``'s (raises ``Unkept`` for a value it cannot freeze), and whether every
    micro-batch's backward reduces its buckets (``workload.sharding.reduces_every_microbatch``,
    read from the overlap and ZeRO switches under a profile that has it, Megatron-LLaMA's:
    its overlapped optimizer moves the gradients into its buckets itself, so the chunks price
    no main_grad accumulation, ``workload.wgrad_fusion``)."""
    return (config_key(cfg, OPTIMIZER_SIDE), reduces_every_microbatch(cfg, False))


def row_kept() -> dict[Hashable, Any] | None:
    """The innermost :func:`chunks_shared` block's dict (one tuned row's), None outside any:
    other answers a row's candidates share are kept there under keys of their own."""
    return _ROWS[-1] if _ROWS else None


@contextmanager
def chunks_shared() -> Iterator[None]:
    """Within it, :func:`shared_chunks` prices the chunks of each distinct :func:`chunk_key`
    once (a tuned row's candidates; ``validate.training.row_shared``)."""
    _ROWS.append({})
    try:
        yield
    finally:
        _ROWS.pop()


def shared_chunks(cfg: RunConfig, pricer: Pricer, sh: Shard,
                  layer_source: LayerSource | None = None) -> dict[int, Chunk]:
    """``chunks(cfg, pricer, sh, layer_source)``; inside :func:`chunks_shared` the same
    objects as an earlier config's with an equal :func:`chunk_key`, where the pricer is a plain
    ``Pricer`` of ``cfg`` (its settings read from ``cfg``; an ``sm_share`` override is in the
    key) and the layers are the analytical ones. ``sh`` is ``shard_of(cfg)``, a function of
    the fields the key holds."""
    if not _ROWS or layer_source is not None or type(pricer) is not Pricer or \
            pricer.cfg is not cfg:
        return chunks(cfg, pricer, sh, layer_source)
    try:
        key = (chunk_key(cfg), _frozen(pricer.sm_share), _frozen(pricer.ep_gemm_share))
    except Unkept:
        return chunks(cfg, pricer, sh, layer_source)
    kept = _ROWS[-1]
    hit = kept.get(key)
    if hit is None:
        hit = kept[key] = chunks(cfg, pricer, sh, None)
    return hit


__all__ = ["MAXSIZE", "OPTIMIZER_SIDE", "chunk_key", "chunks_shared", "config_key", "per_config",
           "per_pricer", "row_kept", "shared_chunks", "stage_memory"]
