"""search(): enumerate, prune by memory, simulate in parallel, rank, Pareto front.

1. Every canonical candidate of the space is enumerated (and checked by RunConfig), grouped
   by what memory depends on. Each group is represented by its *lead*, the variant with
   every applicable overlap switch on, keyed by a lower bound on its iteration time
   (:func:`~trainsim.search.lower_bounds.lower_bound_s`).
2. Groups are taken lowest bound first (:func:`~trainsim.search.waves.run_waves`): checked for
   memory once, simulated in fixed-size waves, skipped when they can neither enter the top k
   nor the Pareto front. This is branch and bound: the top k and the front are those of
   simulating everything (``exhaustive=True`` does that), whatever the executor.
3. Evaluations are cached by (base, candidate) (:class:`~trainsim.search.results.EvaluationCache`):
   a plan or a repeated search does not simulate a configuration twice; memory and the bound
   are computed once per memory group and shared by its overlap variants. The best of each
   ranking group is ranked with why it loses to the best, and the Pareto front is kept.
"""

from __future__ import annotations

import heapq
import itertools
import os
import time
from collections.abc import Hashable, Sequence

from trainsim.config import RunConfig
from trainsim.engine import gc_paused
from trainsim.errors import ConfigError
from trainsim.limits import check, limit
from trainsim.memory.state import states_shared
from trainsim.network.forced_algo import forced_algo_problem, forces_algo
from trainsim.pricing import shared
from trainsim.search.candidate import candidate
from trainsim.search.evaluation import Evaluation, SearchToken, drop_runs
from trainsim.search.executors import Executor, SerialExecutor
from trainsim.search.explain import pareto_front, rank_key, why_slower
from trainsim.search.family import Family
from trainsim.search.lower_bounds import Bounds
from trainsim.search.reference import RANK_BY, RankBy, ReferenceRank, group_of, rank_reference
from trainsim.search.results import (
    DEFAULT_CACHE,
    EvaluationCache,
    Progress,
    Ranked,
    SearchResult,
    SearchStats,
)
from trainsim.search.rules import softcap_cp_refusal
from trainsim.search.space import (
    Base,
    Candidate,
    MemoryKey,
    SearchSpace,
    drop_parallels,
)
from trainsim.search.waves import (
    BATCH,
    OVERLAP_SLOWDOWN,
    PARETO_SLOWDOWN,
    WAVE,
    Heap,
    _lead,
    run_waves,
)


def search(base: Base, gpu_counts: Sequence[int], space: SearchSpace | None = None, *,
           top_k: int = 10, executor: Executor | None = None, rank_by: RankBy = "split",
           exhaustive: bool = False, reference: Candidate | None = None,
           pareto_slowdown: float = PARETO_SLOWDOWN, progress: Progress | None = None,
           cache: EvaluationCache | None = DEFAULT_CACHE, wave: int = WAVE,
           batch: int = BATCH) -> SearchResult:
    """Fastest configurations of ``base`` on each of ``gpu_counts`` GPUs.

    ``rank_by`` sets what the top k lists: 'split' (default) k different GPU splits
    (tp, pp, cp, dp), each with its fastest settings; 'layout' also tells vpp and micro-batch
    apart; 'config' ranks every candidate. The Pareto front keeps configurations within
    ``pareto_slowdown`` times the best iteration time of their GPU count.
    """
    if top_k < 1:
        raise ConfigError(f"--top={top_k} must be >= 1")
    if rank_by not in RANK_BY:
        raise ConfigError(f"rank_by={rank_by!r} is not one of {list(RANK_BY)}")
    if not pareto_slowdown >= 1:
        raise ConfigError(f"pareto_slowdown={pareto_slowdown} must be >= 1")
    space = (space or SearchSpace()).held_by(base)
    executor = executor or SerialExecutor()
    t0 = time.perf_counter()
    # this search's prices, shared by its bounds here and its simulations in each worker;
    # the cyclic garbage collector paused, as simulate() pauses it: the search keeps ~10^5
    # long-lived objects (configs, candidates, bounds), which every collection the
    # enumeration's allocations trigger scanned again (a fifth of the 22B search's main
    # process); what it allocates is acyclic and freed by reference counting
    # (its workers' share of the graphs and timelines kept: ``evaluation.share``)
    token = SearchToken(os.getpid(), next(_SEARCHES), time.time_ns(),
                        max(1, int(getattr(executor, "workers", None) or 1)))
    try:
        with shared(token), gc_paused(), states_shared():
            result = _search(base, gpu_counts, space, top_k, executor, rank_by, exhaustive,
                             reference, pareto_slowdown, progress, cache, wave, batch, t0,
                             token)
            _survivors_to_oldest()
            return result
    finally:
        drop_runs(token)  # what batches simulated in this process kept (SerialExecutor)
        drop_parallels()  # and the parallel configs its candidates built here


_SEARCHES = itertools.count()


def _survivors_to_oldest() -> None:
    """Move every object alive now to the cyclic collector's oldest generation, no object
    visited (``engine.loop.collector_to_oldest``, as a forked worker's start), where nothing is
    held frozen (a holder's count, ``engine.loop._FROZEN``: the service's startup freeze is left
    as it is). The collector is paused through the search (``gc_paused``), so all it allocated
    and kept (its result, the pricing store, the caches) is still in the youngest generation
    when the collector resumes, and the first allocation after that scanned all of it (a
    main process whose workers simulate: ~100k objects, 63 ms at the 22B search's end, 4 % of
    its CPU; a serial search's simulations freeze and thaw them already: ``runs_shared``).
    Nearly all of it is acyclic, freed by reference counting (the 22B search's cyclic garbage:
    42 objects, which now wait for the next full collection, as does what is still alive
    then). Which objects the collector scans, never a result."""
    from trainsim.engine import loop

    if not loop._FROZEN[0]:
        loop.collector_to_oldest()


def _key_config(base: Base, key: MemoryKey) -> RunConfig:
    """A memory group's config, refused (``ConfigError``) where a forced NCCL_ALGO one of its
    groups cannot run (``network.forced_algo``; robust62, collfab61's Lead 2): that group is
    skipped as the config rules' refusals are, not the whole search."""
    cfg = candidate(key).to_config(base)
    if problem := forced_algo_problem(cfg):
        raise ConfigError(problem)
    return cfg


def forced_algo_refusal(base: Base, gpu_counts: Sequence[int], space: SearchSpace) -> str | None:
    """The first refusal of a search whose every split a forced ``cluster.nccl_algo`` (or the
    config's rules) refuses, as the search's enumeration finds it (``SearchResult.refused``),
    or None: the service's job check refuses such a search before queueing it (robust62).
    Nothing is enumerated unless an algorithm is forced."""
    if not forces_algo(base.cluster):
        return None
    refused = None
    for n in dict.fromkeys(int(n) for n in gpu_counts):
        for key in space.memory_keys(base, n):
            try:
                _key_config(base, key)
            except ConfigError as exc:
                refused = refused or f"{Candidate(key).label()}: {exc}"
                continue
            return None
    return refused


def _search(base: Base, gpu_counts: Sequence[int], space: SearchSpace, top_k: int,
            executor: Executor, rank_by: RankBy, exhaustive: bool, reference: Candidate | None,
            pareto_slowdown: float, progress: Progress | None, cache: EvaluationCache | None,
            wave: int, batch: int, t0: float, token: Hashable) -> SearchResult:
    counts = tuple(dict.fromkeys(int(n) for n in gpu_counts))
    if not counts or any(n < 1 for n in counts):
        raise ConfigError(f"--gpus={list(gpu_counts)} must be positive GPU counts")

    # 1. enumerate: every valid canonical candidate, one heap entry per memory group (its
    #    lead variant), ordered by the lower bound of its iteration time
    # the cheapest candidate: pp=1, every GPU a data-parallel rank, the largest micro-batch
    t, layers = base.training, base.model.num_layers + base.model.mtp_num_layers
    fewest = t.global_batch_size / (max(counts) * space.max_micro_batch)
    check("TRAINSIM_MAX_TASKS", 2 * fewest + 2 * layers, "simulated tasks in one iteration of "
          "every candidate", "", f"global batch {t.global_batch_size:,} is "
          f"at least {fewest:,.0f} micro-batches per replica")
    if space.cp is not None:  # sizes the loader refuses every one of: its reason, not "none"
        why = [softcap_cp_refusal(base.model.attn_logit_softcapping, t.framework,
                                  t.framework_version, c) for c in space.cp]
        if all(why):
            raise ConfigError(f"--cp {','.join(map(str, space.cp))}: {why[0]}")
    keys = []
    cap = limit("TRAINSIM_MAX_CANDIDATES")
    for n in counts:
        for k in space.memory_keys(base, n):
            keys.append(k)
            if len(keys) > cap:
                check("TRAINSIM_MAX_CANDIDATES", len(keys), "search candidates (memory groups)",
                      "",
                      "fix some of --tp/--pp/--cp or lower --max-vpp/--max-micro-batch")
    bounds = Bounds(base)
    block_alone = base.sends_block_alone
    enumerated = 0
    heap: Heap = []
    siblings: dict[Candidate, list[Candidate] | Family] = {}

    def make(key: MemoryKey) -> list[Candidate]:
        return space.variants(key, block_alone)
    refused = None  # the first group the config's rules refuse (all refused: said why)
    for i, key in enumerate(keys):
        try:
            bounds.prime(key, _key_config(base, key))
        except ConfigError as exc:
            refused = refused or f"{Candidate(key).label()}: {exc}"
            continue
        if space.overlap == "search" and not space.pinned:  # siblings built when read
            # (most are pruned first; a Family's members have every switch free)
            family = Family.of(key, tuple(space.switches(key, block_alone).values()), make)
            lead, siblings[family.first] = family.first, family
            enumerated += 1 + len(family)
        else:
            variants = space.variants(key, block_alone)
            enumerated += len(variants)
            lead = variants.pop(_lead(variants))
            siblings[lead] = variants
        heap.append((bounds.cheap(key), i, lead, None, exhaustive))
        if progress and (i % 1024 == 0 or i == len(keys) - 1):
            progress("enumerate", i + 1, len(keys))
    heapq.heapify(heap)

    # 2. pop the lowest bound first; check memory only when the bound alone cannot rule a
    #    group out; simulate in waves; skip what cannot change the answer (search.waves)
    bkey = EvaluationCache.base_key(base)
    hits0 = cache.hits if cache else 0
    w = run_waves(base, heap, siblings, bounds, len(keys), enumerated, executor=executor,
                  token=token, cache=cache, bkey=bkey, exhaustive=exhaustive, rank_by=rank_by,
                  pareto_slowdown=pareto_slowdown, top_k=top_k, wave=wave, batch=batch,
                  progress=progress)
    evaluated, best_n = w.evaluated, w.best_n

    # 3. rank
    best_eval: dict[object, Evaluation] = {}
    for e in evaluated:
        if not e.fits:
            continue
        g = group_of(e.candidate, rank_by)
        cur = best_eval.get(g)
        if cur is None or rank_key(e) < rank_key(cur):
            best_eval[g] = e
    ordered = sorted(best_eval.values(), key=rank_key)
    top = tuple(Ranked(i + 1, e, why_slower(ordered[0], e) if i else ())
                for i, e in enumerate(ordered[:top_k]))
    front = pareto_front([e for e in evaluated if e.fits and
                          e.iteration_time_s <= pareto_slowdown * best_n[e.num_gpus]])
    ref = None
    if reference is not None:
        ref = rank_reference(reference, base, ordered, top_k, rank_by, cache, bkey)
    stats = SearchStats(enumerated, len(keys), w.memory_pruned, w.bound_pruned, w.simulated,
                        (cache.hits - hits0) if cache else 0, time.perf_counter() - t0,
                        executor.name, executor.workers)
    return SearchResult(base, counts, top, tuple(front), tuple(evaluated), stats, rank_by, ref,
                        refused, w.over_limit)


__all__ = [
    "BATCH",
    "DEFAULT_CACHE",
    "OVERLAP_SLOWDOWN",
    "PARETO_SLOWDOWN",
    "RANK_BY",
    "WAVE",
    "EvaluationCache",
    "Progress",
    "Ranked",
    "ReferenceRank",
    "SearchResult",
    "SearchStats",
    "group_of",
    "search",
]
