"""Task graphs kept for twin configs: configs that differ only in their recompute settings and
whose priced chunks are the very same objects build the same task graph, so inside
``engine.runs_shared`` the graph is built once and handed to the twin.

A search's candidates come in such pairs (``recompute: selective`` of core attention beside
FlashAttention, whose backward recomputes the scores anyway, leaves ``recompute: none``'s
passes: ``workload.recompute.layer_recompute``), and ``runs_shared`` already runs their equal
graphs' event loop once; this saves building the twin's graph too (over half of a search
worker's time was building graphs, half of them twins').

Why the key is exact: the graph builder (``simulator._TaskGraph``, with ``chunks``,
``sharded_passes``, ``combined_1f1b`` and ``pipeline``) reads the recompute settings only
through the priced chunks (``chunks.chunks``: ``layer_recompute`` per layer kind) and
``RunConfig.recomputed_layers`` (ZeRO-3's gathers for recomputed layers). Everything else it
reads is in the key: every other parallel field, the model, training and cluster objects
(shared by a search's configs), the pricer's pricing signature (``pricing.shared``: the same
op list priced under it is the same object), the layer source and the micro-batch count. The
chunks' priced passes are compared by identity, so a key matches only where the twin's
pricer handed back the same objects; the graph kept holds them, so an identity is never
reused while its key is kept. The pricer's records (:func:`mark`) are in the key too: a build
hands its twin only what it added to them, so a pricer that priced before it (a lower bound
with the same pricer) shares its graph only with a twin whose pricer stands at the same place.

The ZeRO fields (``zero_stage``, ``distributed_optimizer``) are in the key as they are: the
one pair that built the same graph (Megatron-core DDP's ZeRO-1 against its ZeRO-2) is no run
any more, as Megatron runs 0, 1 and 3 only (``config.validity.ZERO_STAGES``).
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
from collections.abc import Hashable
from typing import Any

from trainsim.chunks import chunks
from trainsim.config import ParallelConfig, RunConfig
from trainsim.engine.loop import shared_store, shared_tasks
from trainsim.memo import per_pricer, stage_memory
from trainsim.memory.free_of import OVERLAP_FIELDS, FreeOf
from trainsim.pricing import Pricer
from trainsim.workload.recompute import reruns_nothing
from trainsim.workload.shard import shard_of
from trainsim.workload.sharding import fsdp_per_unit

RECOMPUTE_FIELDS = frozenset({"recompute", "recompute_modules", "recompute_num_layers"})
"""The parallel fields the graph builder reads only through the priced chunks and
``RunConfig.recomputed_layers``."""
_OTHER_FIELDS = tuple(f.name for f in dataclasses.fields(ParallelConfig)
                      if f.name not in RECOMPUTE_FIELDS)
_other_fields = operator.attrgetter(*_OTHER_FIELDS)
UNREAD_UNDER_FSDP = ("overlap_grad_reduce", "overlap_param_gather")
"""The data-parallel overlap switches, which the graph builder never reads where the run
gathers and reduce-scatters per FSDP unit at ZeRO stage 3 (:func:`_fields_key`)."""
_UNREAD_AT = tuple(_OTHER_FIELDS.index(name) for name in UNREAD_UNDER_FSDP)
_UNREAD = "not read under ZeRO-3 / FSDP"
CHUNK_FREE_FIELDS = OVERLAP_FIELDS
"""The parallel fields the priced chunks never read (:func:`kept_chunks`)."""
_CHUNK_FIELDS = tuple(f.name for f in dataclasses.fields(ParallelConfig)
                      if f.name not in CHUNK_FREE_FIELDS | RECOMPUTE_FIELDS)
_chunk_fields = operator.attrgetter(*_CHUNK_FIELDS)
_RECOMPUTE_FIELDS = tuple(sorted(RECOMPUTE_FIELDS))
_RERUNS_NOTHING = "reruns nothing"
"""The recompute part of a kept chunk set's key where the layers re-run no op
(``workload.recompute.reruns_nothing``)."""
KEPT_CHUNKS = 4096
"""Chunk sets one ``runs_shared`` keeps at most (a few kB each: their passes are the shared
prices' objects)."""
_CHUNKS = "chunks kept"  # first item of a kept chunk set's key; the store's count of them
_TASKS = "tasks kept"  # the store's count of the kept graphs' tasks
_MEMORY = "memory kept"  # the store's FreeOf of stage memories (kept_memories)
_SUMMARY = "summary"  # first item of a kept summary's key
_ATTEMPT = "steady-state attempt"  # first item of a kept attempt's key; the store's count


def graph_key(cfg: RunConfig, pricer: Pricer, layer_source: Any,
              microbatches: int | None) -> Hashable | None:
    """What the graph of ``cfg`` depends on, with its chunks priced (they are kept where the
    graph builder looks for them: ``memo.per_pricer``); None where the pricer shares no prices
    or a field cannot be hashed."""
    if getattr(pricer, "_store", None) is None:
        return None
    shared = per_pricer(cfg, pricer, layer_source)
    if "chunks" not in shared:
        shared["chunks"] = kept_chunks(cfg, pricer, layer_source)
    key = (id(cfg.model), id(cfg.training), id(cfg.cluster), id(layer_source), microbatches,
           pricer._sig, mark(pricer), cfg.recomputed_layers, _fields_key(cfg),
           tuple((v, tuple(map(id, ch.fwd_parts)), id(ch.bwd_head),
                  tuple(map(id, ch.bwd_layers)), id(ch.bwd_tail))
                 for v, ch in shared["chunks"].items()))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _fields_key(cfg: RunConfig) -> tuple:
    """The parallel fields but the recompute ones (``_OTHER_FIELDS``) as :func:`graph_key`
    holds them: the data-parallel overlap switches (``UNREAD_UNDER_FSDP``) as one value where
    the effective ZeRO stage is 3 or more and the run gathers and reduce-scatters per FSDP
    unit (``workload.sharding.fsdp_per_unit``), where the graph builder reads neither. Its
    reads of them, all behind a test that fails there: ``overlap_grad_reduce`` in
    ``last_backward.split_last_backward`` (the non-FSDP branch of ``backward``) and through
    ``workload.sharding.dp_bucket_count`` (called from it and from
    ``pipeline_passes._bucketed_first_chunk``, at ZeRO 1-2 only), and in
    ``optimizer_tasks.optimizer_steps``' bucket loop (no chunk under FSDP);
    ``overlap_param_gather`` in ``pipeline_passes``, ``optimizer_tasks`` and ``pipeline``, each
    at ZeRO 1-2 only (``Pricer`` reads neither; ``search.bound`` is not the builder).
    tests/test_twin_graphs.py records every parallel field the builder reads under FSDP and
    fails if either is among them. A search's ZeRO-3 candidates come in such pairs (the 22B
    search: 20 graphs built and steady states proven again for a twin)."""
    values = _other_fields(cfg.parallel)
    zero = cfg.parallel.effective_zero_stage
    if zero >= 3 and fsdp_per_unit(cfg, zero):
        values = list(values)
        for i in _UNREAD_AT:
            values[i] = _UNREAD
        return tuple(values)
    return values


def kept_chunks(cfg: RunConfig, pricer: Pricer, layer_source: Any) -> dict:
    """``chunks.chunks`` of ``cfg``, or those of a config priced earlier inside this
    ``runs_shared`` that differs from it only in ``CHUNK_FREE_FIELDS`` (a search's overlap
    siblings: 1,216 simulated configurations of the 22B search, 550 distinct chunk sets). Exact:
    no op list and no pricing setting reads those fields (only the task graph's placement:
    ``simulator``, ``optimizer_tasks``, ``pipeline``, ``steady_grid``), the pricer signature is
    in the key, and equal op lists priced under one signature are the same ``Priced`` objects
    (``pricing.shared``). What the build added to the pricer's records is replayed on a hit,
    as :func:`kept_graph` does, so ``compute_sources`` and :func:`mark` read as if priced here."""
    store = shared_store()
    key = None
    if store is not None and getattr(pricer, "_store", None) is not None:
        p = cfg.parallel
        key = (_CHUNKS, id(cfg.model), id(cfg.training), id(cfg.cluster), id(layer_source),
               pricer._sig, _chunk_fields(p),
               _recompute_part(cfg, layer_source))
        try:
            hit = store.get(key)
        except TypeError:  # a field that cannot be hashed
            key = hit = None
        if hit is not None and hit[0] is cfg.model and hit[1] is cfg.training and \
                hit[2] is cfg.cluster and hit[3] is layer_source:
            _replay(pricer, *hit[5:7])
            return hit[4]
    before = mark(pricer)
    out = chunks(cfg, pricer, shard_of(cfg), layer_source)
    if key is not None and store.get(_CHUNKS, 0) < KEPT_CHUNKS:
        store[_CHUNKS] = store.get(_CHUNKS, 0) + 1
        # the configs' parts whose identities key it, kept alive with it
        store[key] = (cfg.model, cfg.training, cfg.cluster, layer_source, out,
                      *_added(pricer, before))
    return out


def _recompute_part(cfg: RunConfig, layer_source: Any) -> tuple | str:
    """The recompute fields as the chunks read them: one value for recompute none and for
    selective recompute that re-runs nothing (``reruns_nothing``; the analytical layer
    source only). The chunk builder reads the recompute fields only through
    ``layer_recompute`` (no op for either), ``RunConfig.recomputed_layers`` and
    ``mtp_recomputed`` (full recompute only) and ``schedule.combined_1f1b`` (``!= 'full'``),
    so the two build equal op lists, which ``pricing.shared`` prices as the same objects:
    a search's selective twins of recompute none (264 of the 22B search's 474 chunk sets
    were built again only to find them the same objects)."""
    if layer_source is None and reruns_nothing(cfg):
        return _RERUNS_NOTHING
    p = cfg.parallel
    return tuple(getattr(p, name) for name in _RECOMPUTE_FIELDS)


def kept_attempt(cfg: RunConfig, pricer: Pricer, layer_source: Any, extra: Hashable,
                 attempt: Any) -> Any:
    """``attempt(cfg, pricer, layer_source)`` (the steady-state shortcut's answer: its
    summary, or None, and why), or inside ``runs_shared`` the answer kept for a twin: a config
    whose full graph's key (:func:`graph_key`) is the same, with the same ``extra`` (what the
    shortcut reads of the config beside its graphs: its plan, ``combined_1f1b``, the task
    limit). The shortcut reads the config only through the graphs it builds (truncated
    graphs, and its grid of run A, of the same builder and priced chunks, all keyed as the
    full graph is but for the micro-batch count) and ``extra``; the loop and the period proofs
    are functions of those, so the twin's answer would be the same (the 22B search's twins
    proved their periods again: a fifth of a worker's simulations). What its first run added
    to the pricer's records is replayed on a hit, as :func:`kept_graph` does. Kept within
    ``KEPT_CHUNKS`` answers; each entry holds the config and chunks whose identities key it."""
    store = shared_store()
    key = graph_key(cfg, pricer, layer_source, None) if store is not None else None
    if key is not None:
        key = (_ATTEMPT, key, extra)
        try:
            hit = store.get(key)
        except TypeError:  # an extra that cannot be hashed
            key = hit = None
        if hit is not None:
            _replay(pricer, *hit[2:4])
            return hit[4]
    before = mark(pricer)
    out = attempt(cfg, pricer, layer_source)
    if key is not None and store.get(_ATTEMPT, 0) < KEPT_CHUNKS:
        store[_ATTEMPT] = store.get(_ATTEMPT, 0) + 1
        store[key] = (cfg, per_pricer(cfg, pricer, layer_source).get("chunks"),
                      *_added(pricer, before), out)
    return out


def kept_memories(cfg: RunConfig) -> list:
    """Each pipeline stage's memory (``memo.stage_memory``); inside ``runs_shared`` (one
    question) kept across the configs that differ only in ``CHUNK_FREE_FIELDS``, which no
    memory path reads either (``memory.free_of``: a search's overlap siblings)."""
    store = shared_store()
    if store is None:
        return [stage_memory(cfg, s) for s in range(cfg.parallel.pp)]
    kept = store.get(_MEMORY)
    if kept is None:
        kept = store[_MEMORY] = FreeOf(CHUNK_FREE_FIELDS)
    return [kept(stage_memory, cfg, s) for s in range(cfg.parallel.pp)]


def kept_graph(cfg: RunConfig, pricer: Pricer, layer_source: Any,
               microbatches: int | None) -> tuple[Any, Hashable | None]:
    """(the twin's graph or None, the key to keep a new one under, or None)."""
    store = shared_store()
    if store is None:
        return None, None
    key = graph_key(cfg, pricer, layer_source, microbatches)
    hit = store.get(key) if key is not None else None
    if hit is None:
        return None, key
    graph, seen, ops = hit
    _replay(pricer, seen, ops)
    return graph, None


def mark(pricer: Pricer) -> tuple[int, int]:
    """Where the pricer's records stand before a build (for :func:`keep_graph`)."""
    return len(pricer._seen), len(pricer.compute._cache)


def _added(pricer: Pricer, before: tuple[int, int]) -> tuple[list, tuple]:
    """What a build added to the pricer's records since ``before`` (:func:`mark`): the op
    lists taken from the shared prices, and the ops priced on the compute model directly."""
    return pricer._seen[before[0]:], tuple(itertools.islice(pricer.compute._cache, before[1],
                                                            None))


def _replay(pricer: Pricer, seen: list, ops: tuple) -> None:
    """A kept build's records (:func:`_added`) added to ``pricer`` as if it had built it here
    (``Pricer.compute_sources``): a twin handed back leaves the pricer as its build would."""
    pricer._seen.extend(seen)
    for op in ops:
        pricer.compute.time(op)


def keep_graph(key: Hashable | None, graph: Any, pricer: Pricer, before: tuple[int, int]
               ) -> None:
    """Keep ``graph`` under ``key`` (from :func:`kept_graph`) with what its build added to the
    pricer's records since ``before`` (:func:`mark`), within the ``runs_shared``'s cap
    (``engine.loop.shared_tasks``) in tasks in all."""
    store = shared_store()
    if key is None or store is None:
        return
    n = store.get(_TASKS, 0) + len(graph.tasks)
    if n <= shared_tasks():
        store[_TASKS] = n
        store[key] = (graph, *_added(pricer, before))
        store[(_SUMMARY, id(graph))] = (graph, None, None)  # its summary, once run in full


def kept_summary(graph: Any, cfg: RunConfig) -> Any:
    """The summary of ``graph``'s full run kept by :func:`keep_summary` inside this
    ``runs_shared`` (a twin handed the same graph object), or None. ``summary.summarize`` reads
    the timeline, which is the loop's function of the graph's tasks, the graph's ends and
    ``parallel.optimizer_post_validation`` alone, so the twin's would be the same."""
    store = shared_store()
    hit = store.get((_SUMMARY, id(graph))) if store is not None else None
    if hit is None or hit[0] is not graph or hit[2] is None or \
            hit[1] != cfg.parallel.optimizer_post_validation:
        return None
    return hit[2]


def keep_summary(graph: Any, cfg: RunConfig, summary: Any) -> None:
    """Keep the summary of a graph that :func:`keep_graph` kept for twins (the entry holds the
    graph, so its identity is not reused while kept)."""
    store = shared_store()
    hit = store.get((_SUMMARY, id(graph))) if store is not None else None
    if hit is not None and hit[0] is graph and hit[2] is None:
        store[(_SUMMARY, id(graph))] = (graph, cfg.parallel.optimizer_post_validation, summary)


__all__ = ["CHUNK_FREE_FIELDS", "RECOMPUTE_FIELDS", "graph_key", "keep_graph", "keep_summary",
           "kept_attempt", "kept_chunks", "kept_graph", "kept_memories", "kept_summary", "mark"]
