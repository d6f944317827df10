"""search(): enumerate, prune by memory, simulate in parallel, rank, Pareto front.

1. Every canonical candidate of the space is enumerated (and checked by RunConfig), grouped
   by what memory depends on. Each group is represented by its *lead*, the variant with
   every applicable overlap switch on, keyed by a lower bound on its iteration time
   (:func:`~trainsim.search.lower_bounds.lower_bound_s`).
2. Groups are taken lowest bound first. A group is checked for memory once
   (``estimate_stage_memory``, no simulation); one that does not fit prunes all its variants.
   The rest are simulated in fixed-size waves. After each wave a candidate is skipped when it
   can neither enter the top k (its bound is above the k-th best time found, or above the best
   time of its own ranking group) nor the Pareto front (it would be slower than
   ``pareto_slowdown`` x the best, or an evaluated configuration is at least as fast as its
   bound with as much memory headroom on no more GPUs). A group's refined bound is the lowest
   of its pricing classes' (TP and expert all-to-all overlap change how passes are priced:
   :func:`_pricing`), so pruning a group never prunes a faster member. Before it is refined
   a group is queued again at its passes' bound (``Bounds.passes_bound``: no layout's
   collectives priced, never above the refined bound) where that is higher, and refined
   only when popped at it, its refined entry taking the order the group was first given:
   every refined entry pops exactly when it would have (the passes' entry, no higher, pops
   first and is replaced by it), and one a bound rules out now would be then (the threshold,
   best times and front only tighten), so fewer groups are refined (the 22B search: 24,386
   refined bounds -> 10,425) for the same waves. Switching a
   data-parallel or p2p overlap on hides communication and slows the simulated iteration by
   at most ``OVERLAP_SLOWDOWN`` (the SMs its hidden collectives hold), so a lead's simulated
   time, less that share, bounds its siblings of the same pricing class; the other classes
   are queued as groups of their own. This is branch and bound: the top k and the front are
   those of simulating everything (``exhaustive=True`` does that). Waves do not depend on the executor or the number of
   workers, so local processes and Ray give the same answer.
3. Evaluations are cached by (base, candidate): a plan or a repeated search does not simulate
   a configuration twice; memory and the bound are computed once per memory group and shared
   by its overlap variants.
"""

from __future__ import annotations

import heapq
import itertools
import json
import operator
import os
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainsim.cpus import cpus
from trainsim.engine import gc_paused
from trainsim.errors import ConfigError
from trainsim.limits import check, limit
from trainsim.memory.estimate import peak_floor
from trainsim.memory.state import states_shared
from trainsim.pricing import shared
from trainsim.search.evaluation import Evaluation, SearchToken, drop_runs
from trainsim.search.executors import Executor, SerialExecutor, Stream
from trainsim.search.explain import FrontIndex, pareto_front, rank_key, why_slower
from trainsim.search.family import Family
from trainsim.search.lower_bounds import Bounds
from trainsim.search.memory_check import check_memory
from trainsim.search.reference import RANK_BY, RankBy, ReferenceRank, group_of, rank_reference
from trainsim.search.rules import softcap_cp_refusal
from trainsim.search.space import (
    Base,
    Candidate,
    MemoryKey,
    SearchSpace,
    drop_parallels,
)

Progress = Callable[[str, int, int], None]
"""progress(phase, done, total): phase is 'enumerate' or 'simulate'."""

WAVE = 64
"""Candidates simulated between two updates of the pruning state (fixed: results must not
depend on the number of workers)."""
BATCH = 4
"""Candidates per task sent to a worker."""
TWIN_SPAN = 4
"""Batches a run of candidates at one bound may fill before it is cut (``_search``)."""
AHEAD = 32 * WAVE
"""Heap entries the search prepares (memory checks, refined bounds) while workers simulate."""
INF = float("inf")
PENDING = "passes"
"""A heap entry at its passes' bound, to be refined when popped (``_search``)."""
PARETO_SLOWDOWN = 1.25
"""The Pareto front keeps configurations at most this much slower than the best on the same
GPU count: memory headroom bought with a much slower run is not a trade-off anyone takes, and
the bound prunes far more (on the 1,024-GPU benchmark 1.25 simulates 1,193 configurations in
22 s where 1.5 simulates 1,375 in 38 s)."""
OVERLAP_SLOWDOWN = 0.02
"""Most an overlap switch may slow the simulated iteration: a hidden collective costs the
compute it runs beside its SMs' share, which can land on the critical stage while the exposed
version did not (0.49 % at worst over 80 memory groups of 16- and 64-GPU spaces; test_search
checks it)."""


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
    checked for memory and count as bound-pruned)."""
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


def _lead(variants: list[Candidate]) -> int:
    """Index of the variant with the most overlap switches on (the first of those): the
    fastest of its memory group."""
    best, lead = -1, 0
    for i, c in enumerate(variants):  # _flags summed inline: one pass, no call per variant
        n = (c.overlap_grad_reduce + c.overlap_param_gather + c.tp_comm_overlap
             + c.overlap_p2p_comm + c.moe_overlap_ep_comm)
        if n > best:
            best, lead = n, i
    return lead


def _class_leads(c: Candidate, family: list[Candidate] | Family | tuple) -> list[Candidate]:
    """The lead of each pricing class of the group ``c`` leads with siblings ``family``, in the
    classes' sorted order: a whole family's from its switches (``Family.class_leads``, the
    same leads without building its variants), else each class's member with the most on."""
    if type(family) is Family and family.whole and family.lead is c:
        return family.class_leads()
    classes: dict[tuple[bool, ...], list[Candidate]] = {}
    for x in (c, *family):
        classes.setdefault(_pricing(x), []).append(x)
    return [cl[_lead(cl)] for cl in (classes[k] for k in sorted(classes))]


_pricing: Callable[[Candidate], tuple[bool, bool]] = operator.attrgetter(
    "tp_comm_overlap", "moe_overlap_ep_comm")
"""The switches that change how a pass is priced: Transformer Engine's TP overlap runs the
GEMMs it hides collectives under on fewer SMs (``pricing.UB_COMM_SMS``: +17 % per GEMM on
an A100, 3.4 % of a 22B iteration), and pooled expert all-to-alls hide behind compute. A
lead's time does not bound a variant that differs from it in these. (An attrgetter: asked
for each of the ~2 x 10^5 candidates a search regroups.)"""


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
            return _search(base, gpu_counts, space, top_k, executor, rank_by, exhaustive,
                           reference, pareto_slowdown, progress, cache, wave, batch, t0, token)
    finally:
        drop_runs(token)  # what batches simulated in this process kept (SerialExecutor)
        drop_parallels()  # and the parallel configs its candidates built here


_SEARCHES = itertools.count()


def _ahead(executor: Executor) -> int:
    """Heap entries to prepare while the workers simulate (``AHEAD``) where this process has a
    CPU of its own beside local workers, else none: on as many CPUs as workers it takes their
    time, and part of what it prepares is pruned before it is asked for (the 22B search with
    2 workers on 2 CPUs: this process's CPU 7.3-8.4 -> 4.5-5.3 s, the wall not longer).
    CPUs are ``trainsim.cpus.cpus`` (affinity, at most the cgroup's quota). An executor without
    ``submit`` (this process, Ray: its batches are mapped when the results are asked for) is
    never busy beside the search, so nothing is prepared ahead whatever this says: none. One
    that submits to workers elsewhere (not ``local``): prepared as before."""
    if getattr(executor, "submit", None) is None:
        return 0
    if getattr(executor, "name", "") != "local":
        return AHEAD
    return AHEAD if cpus() > getattr(executor, "workers", 1) else 0


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
    # (bound, order, candidate, headroom or None, bound refined? True, False or PENDING)
    heap: list[tuple[float, int, Candidate, float | None, bool | str]] = []
    siblings: dict[Candidate, list[Candidate] | Family] = {}

    def make(key: MemoryKey) -> list[Candidate]:
        return space.variants(key, block_alone)
    refused = None  # the first group the config's rules refuse (all refused: said why)
    for i, key in enumerate(keys):
        try:
            bounds.prime(key, Candidate(key).to_config(base))
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
    #    group out; simulate in waves; skip what cannot change the answer
    tokens = base.training.global_batch_size * base.training.seq_length
    bkey = EvaluationCache.base_key(base)
    hits0 = cache.hits if cache else 0
    best_of: dict[object, float] = {}
    best_n: dict[int, float] = {}
    index = FrontIndex()
    evaluated: list[Evaluation] = []
    threshold = float("inf")
    memory_pruned = bound_pruned = simulated = done = 0
    order = len(keys)

    def may_rank(lb: float, c: Candidate) -> bool:
        return exhaustive or (lb <= threshold and lb < best_of.get(group_of(c, rank_by), INF))

    def ruled_out(lb: float, c: Candidate, headroom: float | None) -> bool:
        """A group not yet checked for memory that can neither rank nor join the front."""
        return headroom is None and not may_rank(lb, c) and \
            lb > pareto_slowdown * best_n.get(c.mem.num_gpus, INF)

    def on_front(lb: float, c: Candidate, headroom: float) -> bool:
        if lb > pareto_slowdown * best_n.get(c.mem.num_gpus, INF):
            return False
        return not index.dominated(tokens / lb, headroom, c.mem.num_gpus)

    def regroup(c: Candidate) -> tuple[float, Candidate]:
        """The refined bound of the group ``c`` leads and its new lead: the bound is the lowest
        of its pricing classes' (it must bound every member the group is pruned with), the lead
        the variant with the most switches on of the class that has it."""
        family = siblings.pop(c, ())
        leads = _class_leads(c, family)
        lazy = type(family) is Family and family.whole and family.lead is c
        best: tuple[float, Candidate] | None = None
        for lead in leads:
            b = bounds.refined(lead)
            if best is None or b < best[0]:
                best = (b, lead)
        assert best is not None
        siblings[best[1]] = family.led_by(best[1]) if lazy else \
            [x for x in (c, *family) if x is not best[1]]
        return best

    memory: dict = {}  # memory group -> check_memory's answer, worked out ahead
    scheduled: set[Candidate] = set()  # leads whose named schedule's bound was worked out

    def most_headroom(key: object) -> float:
        """The most headroom a memory group can have (HBM less the floor of its first and last
        stages' peaks, ``memory.estimate.peak_floor``): a group that cannot rank and is
        dominated even with it is pruned without its memory estimate (it would be pruned
        with any headroom it has, or for not fitting: either way not simulated)."""
        cfg = bounds.configs.get(key)
        if cfg is None:
            return INF
        pp = cfg.parallel.pp
        return cfg.cluster.gpu.hbm_bytes - max(peak_floor(cfg, s) for s in {0, pp - 1})
    ahead = _ahead(executor)

    def prepare(lb: float, _: int, c: Candidate, headroom: float | None, refined: bool) -> None:
        """Work out ahead what popping this heap entry asks (regroup's refined bounds, the
        memory check), unless the pruning state already rules it out."""
        if headroom is None and not may_rank(lb, c) and \
                lb > pareto_slowdown * best_n.get(c.mem.num_gpus, INF):
            return
        if refined is not True:  # (regroup's leads: a whole family's without building it)
            lb = min(bounds.refined(x) for x in _class_leads(c, siblings.get(c, ())))
            if not may_rank(lb, c) and not on_front(lb, c, INF):
                return
        if headroom is None and c.mem not in memory:
            if not may_rank(lb, c) and not on_front(lb, c, most_headroom(c.mem)):
                return
            memory[c.mem] = check_memory(c.mem, base, bounds.configs.get(c.mem))

    def work_ahead(todo: list[tuple[float, Candidate, float]]) -> Iterator[None]:
        """:func:`prepare` step by step: the refined bounds the simulated candidates' siblings
        are queued with, then the heap entries popped first."""
        if not exhaustive:
            for _, c, _ in todo:
                own = _pricing(c)
                for x in siblings.get(c, ()):
                    if _pricing(x) == own:
                        bounds.refined(x)
                yield
        for entry in heapq.nsmallest(ahead, heap) if ahead else ():
            prepare(*entry)
            yield

    while heap:
        todo: list[tuple[float, Candidate, float]] = []
        fresh: list[tuple[float, Evaluation, float]] = []
        stream = Stream(executor, base, token)
        sent = 0  # candidates of todo handed to the stream
        while heap and len(todo) + len(fresh) < wave:
            lb, at, c, headroom, refined = heapq.heappop(heap)
            group_size = 1 + len(siblings.get(c, ()))
            keep = not ruled_out(lb, c, headroom)  # else ruled out before its memory is checked
            if keep and refined is not True:
                # first popped (False): queued at its passes' bound where higher (PENDING);
                # popped again (or not higher): its refined bound, queued with the order the
                # group was first given (see the module's docstring)
                if refined is False:
                    order += 1
                    at = order
                    low = min(bounds.passes_bound(x) for x in _class_leads(c, siblings.get(c, ())))
                    keep = low <= lb or not ruled_out(low, c, headroom)
                    if keep and low > lb:
                        heapq.heappush(heap, (low, at, c, headroom, PENDING))
                        continue
                if keep:
                    lb, c = regroup(c)
                    if not ruled_out(lb, c, headroom):
                        heapq.heappush(heap, (lb, at, c, headroom, True))
                        continue
                keep = False
            if not keep:
                siblings.pop(c, None)
                bound_pruned += group_size
                done += group_size
                continue
            if headroom is None:  # a lead not yet checked for memory
                if c.mem not in memory and not may_rank(lb, c) and \
                        not on_front(lb, c, most_headroom(c.mem)):
                    siblings.pop(c, None)  # dominated whatever its memory
                    bound_pruned += group_size
                    done += group_size
                    continue
                mc = memory[c.mem] if c.mem in memory else \
                    check_memory(c.mem, base, bounds.configs.get(c.mem))
                if mc is None or not mc.fits:
                    siblings.pop(c, None)
                    memory_pruned += group_size
                    done += group_size
                    continue
                headroom = mc.headroom_bytes
            if not may_rank(lb, c) and not on_front(lb, c, headroom):
                siblings.pop(c, None)  # siblings are no faster than their lead
                bound_pruned += group_size
                done += group_size
                continue
            if c.mem.schedule and not exhaustive and c not in scheduled:
                # a named schedule's bound from its simulated passes (Bounds.scheduled), for a
                # group about to be simulated: its pricing classes' lowest, queued again if higher
                scheduled.add(c)
                tight = min(bounds.scheduled(x) for x in _class_leads(c, siblings.get(c, ())))
                if tight > lb:
                    order += 1
                    heapq.heappush(heap, (tight, order, c, headroom, True))
                    continue
            hit = cache.get(bkey, c) if cache else None
            if hit is not None:
                fresh.append((lb, hit, headroom))
            else:
                todo.append((lb, c, headroom))
                # the wave's batches start as they are made, each of at least ``batch``
                # candidates and not between two at the same bound (twins whose task graphs
                # a worker then runs once: evaluate_batch) unless the batch has grown to
                # ``TWIN_SPAN`` batches (an exhaustive search queues a lead's siblings at its
                # bound: one batch a wave would leave the other workers idle)
                if len(todo) - sent > batch and (lb != todo[-2][0]
                                                 or len(todo) - sent > TWIN_SPAN * batch):
                    stream.add([c for _, c, _ in todo[sent:-1]])
                    sent = len(todo) - 1
        if len(todo) > sent:
            stream.add([c for _, c, _ in todo[sent:]])
        # while the workers simulate, what this wave's results and the next waves will ask
        # first: pure functions of the candidate, kept, so the answer is the same (fewer
        # serial seconds on few cores)
        for _ in work_ahead(todo) if stream.busy() else ():
            if not stream.busy():
                break
        results = stream.results()
        for (lb, _, headroom), e in zip(todo, results):
            if cache:
                cache.put(bkey, e)
            fresh.append((lb, e, headroom))
        simulated += len(todo)
        fresh.sort(key=lambda x: x[1].candidate)
        for lb, e, headroom in fresh:
            evaluated.append(e)
            c, t = e.candidate, e.iteration_time_s
            # an overlap switch can add memory its group's check (switches off) did not see
            # (the expert all-to-all overlap's extra forward in flight): rank only what fits
            if e.fits:
                index.add(e)
                g = group_of(c, rank_by)
                best_of[g] = min(best_of.get(g, t), t)
                best_n[c.mem.num_gpus] = min(best_n.get(c.mem.num_gpus, t), t)
            # Turning a data-parallel or p2p overlap on slows the simulated iteration by at
            # most OVERLAP_SLOWDOWN (tests check it), so the lead's time bounds the siblings
            # whose passes are priced as its own; the others form groups of their own, each
            # led by its variant with the most switches on and bounded by its own passes.
            classes: dict[tuple[bool, ...], list[Candidate]] = {}
            for s in siblings.pop(c, ()):
                classes.setdefault(_pricing(s), []).append(s)
            for s in classes.pop(_pricing(c), ()):
                order += 1
                sib = lb if exhaustive else max(bounds.refined(s), t * (1 - OVERLAP_SLOWDOWN))
                heapq.heappush(heap, (sib, order, s, headroom, True))
            for _, rest in sorted(classes.items()):
                sub = rest.pop(_lead(rest))
                siblings[sub] = rest
                order += 1
                heapq.heappush(heap, (bounds.cheap(sub.mem), order, sub, headroom, exhaustive))
        if len(best_of) >= top_k:
            threshold = heapq.nsmallest(top_k, best_of.values())[-1]
        done += len(fresh)
        if progress:
            progress("simulate", done, enumerated)

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
    stats = SearchStats(enumerated, len(keys), memory_pruned, bound_pruned, simulated,
                        (cache.hits - hits0) if cache else 0, time.perf_counter() - t0,
                        executor.name, executor.workers)
    return SearchResult(base, counts, top, tuple(front), tuple(evaluated), stats, rank_by, ref,
                        refused)


__all__ = [
    "RANK_BY",
    "EvaluationCache",
    "Ranked",
    "ReferenceRank",
    "SearchResult",
    "SearchStats",
    "group_of",
    "search",
]
