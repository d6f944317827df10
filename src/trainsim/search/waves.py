"""The search's branch and bound: memory groups popped lowest bound first, checked for memory,
simulated in waves, pruned when they can change neither the top k nor the Pareto front.

:func:`run_waves` takes the heap :func:`~trainsim.search.core.search` enumerated (one entry per
memory group, its *lead* keyed by a lower bound on its iteration time) and pops it:

- A group is checked for memory once (``estimate_stage_memory``, no simulation); one that does
  not fit prunes all its variants.
- The rest are simulated in fixed-size waves. After each wave a candidate is skipped when it
  can neither enter the top k (its bound is above the k-th best time found, or above the best
  time of its own ranking group) nor the Pareto front (it would be slower than
  ``pareto_slowdown`` x the best, or an evaluated configuration is at least as fast as its
  bound with as much memory headroom on no more GPUs).
- A group's refined bound is the lowest of its pricing classes' (TP and expert all-to-all
  overlap change how passes are priced: :data:`_pricing`), so pruning a group never prunes a
  faster member. Before it is refined a group is queued again at its passes' bound
  (``Bounds.passes_bound``: no layout's collectives priced, never above the refined bound)
  where that is higher, and refined only when popped at it, its refined entry taking the
  order the group was first given: every refined entry pops exactly when it would have (the
  passes' entry, no higher, pops first and is replaced by it), and one a bound rules out now
  would be then (the threshold, best times and front only tighten), so fewer groups are
  refined (the 22B search: 24,386 refined bounds -> 10,425) for the same waves.
- Switching a data-parallel or p2p overlap on hides communication and slows the simulated
  iteration by at most :data:`OVERLAP_SLOWDOWN` (the SMs its hidden collectives hold), so a
  lead's simulated time, less that share, bounds its siblings of the same pricing class; the
  other classes are queued as groups of their own.

Waves do not depend on the executor or the number of workers, so local processes and Ray give
the same answer; while workers simulate, this process prepares what the next pops will ask
(:func:`_ahead`), pure functions of the candidate, so the answer is the same.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass

from trainsim.cpus import cpus
from trainsim.memory.estimate import peak_floor
from trainsim.search.evaluation import Evaluation, Skipped
from trainsim.search.executors import Executor, Stream
from trainsim.search.explain import FrontIndex
from trainsim.search.family import Family
from trainsim.search.lower_bounds import Bounds
from trainsim.search.memory_check import check_memory
from trainsim.search.reference import RankBy, group_of
from trainsim.search.results import EvaluationCache, Progress
from trainsim.search.space import Base, Candidate

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


_PAIRS = {(tp, ep): tuple((t, e) for t in ((False, True) if tp else (False,))
                          for e in ((False, True) if ep else (False,)))
          for tp in (False, True) for ep in (False, True)}
"""A whole family's pricing classes by whether its TP and expert all-to-all overlap switches
apply, in ``Family.class_leads``'s order."""


def _class_pairs(c: Candidate, family: list[Candidate] | Family | tuple
                 ) -> tuple[tuple[bool, bool], ...]:
    """The :data:`_pricing` switches of :func:`_class_leads`'s leads, in their order, without
    building the leads (``Bounds.passes_low``)."""
    if type(family) is Family and family.whole and family.lead is c:
        return _PAIRS[family.switches[2], family.switches[4]]
    return tuple(sorted({_pricing(x) for x in (c, *family)}))


_pricing: Callable[[Candidate], tuple[bool, bool]] = operator.attrgetter(
    "tp_comm_overlap", "moe_overlap_ep_comm")
"""The switches that change how a pass is priced: Transformer Engine's TP overlap runs the
GEMMs it hides collectives under on fewer SMs (``gemm_overlap.UB_COMM_SMS``: +17 % per GEMM on
an A100, 3.4 % of a 22B iteration), and pooled expert all-to-alls hide behind compute. A
lead's time does not bound a variant that differs from it in these. (An attrgetter: asked
for each of the ~2 x 10^5 candidates a search regroups.)"""


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


Heap = list[tuple[float, int, Candidate, float | None, bool | str]]
"""(bound, order, candidate, headroom or None, bound refined? True, False or PENDING)."""


@dataclass(frozen=True)
class Waves:
    """What the waves left: every evaluation in the order evaluated, the best time on each GPU
    count, and the counts of candidates pruned and simulated."""

    evaluated: list[Evaluation]
    best_n: dict[int, float]
    memory_pruned: int
    bound_pruned: int
    simulated: int
    over_limit: str | None = None
    """The first candidate skipped in the waves for its simulation's work (its label and the
    limit's message: ``evaluation.Skipped``)."""


def run_waves(base: Base, heap: Heap, siblings: dict[Candidate, list[Candidate] | Family],
              bounds: Bounds, order: int, enumerated: int, *, executor: Executor,
              token: Hashable, cache: EvaluationCache | None, bkey: str, exhaustive: bool,
              rank_by: RankBy, pareto_slowdown: float, top_k: int, wave: int, batch: int,
              progress: Progress | None) -> Waves:
    """Pop ``heap`` (a heapified :data:`Heap`; ``siblings`` maps each lead to its group's
    other variants, ``order`` is the last order given) wave by wave until it is empty.
    ``enumerated`` is only the progress total."""
    # 2. pop the lowest bound first; check memory only when the bound alone cannot rule a
    #    group out; simulate in waves; skip what cannot change the answer
    tokens = base.training.global_batch_size * base.training.seq_length
    best_of: dict[object, float] = {}
    best_n: dict[int, float] = {}
    index = FrontIndex()
    evaluated: list[Evaluation] = []
    threshold = float("inf")
    memory_pruned = bound_pruned = simulated = done = 0
    over_limit = None  # the first candidate skipped for its simulation's work, and why

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

    def off_front(lb: float, c: Candidate) -> bool:
        """``not on_front(lb, c, h)`` with ``h`` the most headroom its memory group can have
        (HBM less the floor of its first and last stages' peaks, ``memory.estimate.
        peak_floor``): a group that cannot rank and is dominated even with it is pruned
        without its memory estimate (it would be pruned with any headroom it has, or for not
        fitting: either way not simulated). ``h`` is the smaller of HBM less each stage's
        floor (subtraction rounds monotonically), and dominated exactly when the most headroom
        of the evaluations at least as fast on no more GPUs is at least ``h``
        (``FrontIndex.most_headroom``), so a floor is worked out only where that answer still
        needs it: none without such evaluations, the last stage's only where the first's
        leaves the group undominated."""
        n = c.mem.num_gpus
        if lb > pareto_slowdown * best_n.get(n, INF):
            return True
        cfg = bounds.configs.get(c.mem)
        if cfg is None:
            return index.dominated(tokens / lb, INF, n)
        most = index.most_headroom(tokens / lb, n)
        if most is None:
            return False
        hbm, pp = cfg.cluster.gpu.hbm_bytes, cfg.parallel.pp
        return any(hbm - peak_floor(cfg, s) <= most for s in dict.fromkeys((0, pp - 1)))
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
            if not may_rank(lb, c) and off_front(lb, c):
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
            # not ruled_out(lb, c, headroom), its cheapest tests first (a pure test: the same
            # answer; else ruled out before its memory is checked)
            keep = headroom is not None or \
                not lb > pareto_slowdown * best_n.get(c.mem.num_gpus, INF) or may_rank(lb, c)
            if keep and refined is not True:
                # first popped (False): queued at its passes' bound where higher (PENDING);
                # popped again (or not higher): its refined bound, queued with the order the
                # group was first given (see the module's docstring)
                if refined is False:
                    order += 1
                    at = order
                    family = siblings.get(c, ())
                    low = bounds.passes_low(c, _class_pairs(c, family))
                    if low is None:  # a class's passes not priced yet: its lead's config does
                        low = min(bounds.passes_bound(x) for x in _class_leads(c, family))
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
            # a pruned group's size is its lead and the siblings it drops (a regrouped lead
            # keeps the group's: ``regroup``), counted only where it is pruned
            if not keep:
                group_size = 1 + len(siblings.pop(c, ()))
                bound_pruned += group_size
                done += group_size
                continue
            if headroom is None:  # a lead not yet checked for memory
                if c.mem not in memory and not may_rank(lb, c) and off_front(lb, c):
                    group_size = 1 + len(siblings.pop(c, ()))  # dominated whatever its memory
                    bound_pruned += group_size
                    done += group_size
                    continue
                mc = memory[c.mem] if c.mem in memory else \
                    check_memory(c.mem, base, bounds.configs.get(c.mem))
                if mc is None or not mc.fits:
                    group_size = 1 + len(siblings.pop(c, ()))
                    memory_pruned += group_size
                    done += group_size
                    continue
                headroom = mc.headroom_bytes
            if not may_rank(lb, c) and not on_front(lb, c, headroom):
                group_size = 1 + len(siblings.pop(c, ()))  # siblings no faster than their lead
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
        for (lb, c, headroom), e in zip(todo, results):
            if isinstance(e, Skipped):  # over a work limit in its simulation: skipped with
                # its group as an up-front over-limit group is (check_memory's None)
                over_limit = over_limit or f"{c.label()}: {e.why}"
                skipped = 1 + len(siblings.pop(c, ()))
                memory_pruned += skipped
                done += skipped
                simulated -= 1
                continue
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
    return Waves(evaluated, best_n, memory_pruned, bound_pruned, simulated, over_limit)
