"""Lower bounds on a search candidate's iteration time, cheap to compute, so that the search
skips simulations that cannot change its answer (branch and bound): from matmul FLOPs alone
(:func:`lower_bound_s`, in ``search.flop_bound``), and from the passes priced as the simulator
prices them (:class:`Bounds`). Each stays below what ``trainsim simulate`` gives the same
configuration.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from trainsim.config import ParallelConfig
from trainsim.config.hybrid import main_pattern
from trainsim.errors import TrainsimError
from trainsim.search.flop_bound import BOUND_SAFETY, lower_bound_s, peak_gemm_rate
from trainsim.search.layout_costs import (
    BoundShape,
    after_passes,
    dp_comm_time,
    gather_waits,
    link_floor,
    paired_gathers,
)
from trainsim.search.space import Base, Candidate, MemoryKey

log = logging.getLogger(__name__)

REFINED_SAFETY = 1 - 1e-9
"""The refined bound prices the very passes the simulator places, with the same pricer, and
the event loop never runs a task faster than its duration: it needs no margin for the model,
only for the same durations summed in another order (as ``trainsim.bound.SAFETY``)."""


def pass_ops(cfg: Any) -> tuple:
    """The op lists :meth:`Bounds._pass_times` prices for ``cfg``'s shard shape: ({is-MoE: ((a
    layer's forward, its recompute + backward), one such pair per precision its layers may run
    in)}, (the head's forward, its backward, the train metrics over the logits), (the
    embedding's forward, its backward)), built as the simulator builds them (``workload``)."""
    from trainsim.config.hybrid import layer_kind
    from trainsim.workload.head import (
        embedding_backward,
        embedding_forward,
        head_backward,
        head_forward,
        train_metric_ops,
    )
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.recompute import layer_recompute, recompute_drops_fp8
    from trainsim.workload.shard import shard_of

    sh, model = shard_of(cfg), cfg.model
    whole = cfg.parallel.recompute_num_layers is None
    # layers kept in 16 bits under fp8 (``RunConfig.bf16_layers``), and a recompute and backward
    # run in 16 bits (``recompute_drops_fp8``), may be the faster ones (a small layer's fp8
    # casts and launches): each kind is priced every way its layers may run, the cheaper kept
    drops = recompute_drops_fp8(cfg)
    c16 = dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, dtype="bf16")) \
        if cfg.bf16_layers or drops else None
    sh16 = shard_of(c16) if c16 is not None else sh
    ways = ((cfg, sh),) if not cfg.bf16_layers else ((cfg, sh), (c16, sh16))
    layers = {}
    for moe in {layer_kind(model, i) for i in range(model.num_layers)}:
        alts = []
        for c, s in ways:
            lf = layer_forward(c, s, moe=moe)
            # a partial recompute may skip any layer: price none (a bound)
            alts.append((lf, layer_recompute(c, s, lf, whole=whole) + backward_of(lf, s)))
        if drops:  # the first forward in fp8, what the backward differentiates in 16 bits
            lf16 = layer_forward(c16, sh16, moe=moe)
            alts.append((alts[0][0], layer_recompute(cfg, sh16, lf16, whole=whole)
                         + backward_of(lf16, sh16)))
        layers[moe] = tuple(alts)
    hf = head_forward(cfg, sh)
    return (layers, (hf, head_backward(cfg, sh, hf), train_metric_ops(cfg, sh)),
            (embedding_forward(cfg, sh), embedding_backward(cfg, sh)))


_NOT_TP_OVERLAP = tuple(f.name for f in dataclasses.fields(ParallelConfig)
                        if f.name != "tp_comm_overlap")
"""The parallel fields :func:`pass_ops` may read (``Bounds._ops_of``)."""


class Bounds:
    """Lower bounds on the iteration time of a search's candidates, with their caches.

    :meth:`refined` prices one layer (of each kind), the head and the embedding as the
    simulator prices them (compute, recompute and blocking TP/CP communication), once per
    shard shape (GPUs, tp, cp, micro batch, SP, recompute, TP overlap), then for each candidate:
    stage ``s`` runs every micro-batch's passes of its chunks on one stream, after the first
    micro-batch's forward through the stages before it and before the last one's backward
    through them, ``T >= sum_{v<s} (F_v + B_v) + m * sum_{v on s} (F_v + B_v)``. After its
    last pass a stage still reduces gradients, steps the optimizer and gathers parameters
    (:func:`~trainsim.search.layout_costs.after_passes`); under ZeRO-3 its data-parallel
    stream reduce-scatters the gradients of every backward and slows the passes beside it.
    If the simulator's building blocks cannot be used, :func:`lower_bound_s` is kept (logged
    once).
    """

    def __init__(self, base: Base) -> None:
        self.base = base
        pattern = main_pattern(base.model) if base.model.hybrid_layer_pattern else None
        # the layer kinds _kinds_of counts per virtual stage, in this order (hsearch51)
        self._order: tuple[Any, ...] = tuple(sorted(set(pattern))) if pattern else (False, True)
        self._passes: dict[tuple, tuple[dict[bool, float], float, float]] = {}
        self._op_lists: dict[tuple, tuple] = {}  # _ops_of
        self._composed: dict[tuple, float] = {}  # _pipeline_bound by its inputs' identities
        self._rows: dict[MemoryKey, tuple] = {}  # _row: what a memory group's bounds read
        self._kinds_by: dict[int, tuple[Any, tuple[tuple[int, int], ...]]] = {}
        self._sums_bound: dict[tuple, float] = {}
        self._shapes: dict[MemoryKey, BoundShape] = {}
        self._shapes_of: dict[tuple, BoundShape] = {}
        self._pricers: dict[tuple, Any] = {}
        self._layouts: dict[tuple, tuple] = {}
        self._kinds: dict[tuple[range, ...], tuple[tuple[int, int], ...]] = {}
        self._refined: dict[tuple, float] = {}
        self._sums: dict[tuple, tuple] = {}  # _stage_sums
        self._cheap: dict[MemoryKey, float] = {}
        self._cheap_of: dict[tuple, float] = {}  # cheap() by the fields lower_bound_s reads
        self._rate: float | None = None  # peak_gemm_rate(base), once
        self._busy: dict[tuple, float] = {}  # scheduled()
        self._layer_passes: dict[tuple, dict[str, float]] = {}
        self._reruns: dict[int, tuple[Any, bool]] = {}  # _reruns_nothing
        self.configs: dict[MemoryKey, Any] = {}
        """Each memory group's config as :meth:`prime` was given it (the search's memory check
        and bound shapes read it again)."""
        self.failed: str | None = None

    def cheap(self, key: MemoryKey) -> float:
        hit = self._cheap.get(key)
        if hit is None:
            # lower_bound_s reads these fields of the key only (dp from the GPU count, tp, pp
            # and cp): the groups that differ in the rest (ZeRO stage, SP, expert and dispatcher
            # fields, selective or no recompute) share one computation, the same floats
            of = (key.num_gpus, key.tp, key.pp, key.cp, key.vpp, key.micro_batch,
                  key.recompute == "full", bool(key.schedule))
            hit = self._cheap_of.get(of)
            if hit is None:
                if self._rate is None:
                    self._rate = peak_gemm_rate(self.base)
                hit = self._cheap_of[of] = lower_bound_s(key, self.base, self._rate)
            self._cheap[key] = hit
        return hit

    def _row(self, c: Candidate) -> tuple:
        """What :meth:`passes_bound` and :meth:`_pass_times` read of ``c``'s memory group, worked
        out once per group (the class leads of a group and its refined bounds' candidates ask
        the same): (the FLOP bound, the micro-batches, the layer kinds of each virtual stage or
        None for a named schedule, and the pass times' shard-shape key less the switches:
        GPUs, tp, cp, micro batch, SP, the recompute mode priced, ep, etp, dispatcher). From
        the group's config (:meth:`prime`); for a group never primed, from ``c``'s own config,
        each time (not kept: another candidate of the group may ask)."""
        m = c.mem
        row = self._rows.get(m)
        if row is not None:
            return row
        group = self.configs.get(m)
        cfg = group if group is not None else c.to_config(self.base)
        p = cfg.parallel
        kinds = None
        if p.pipeline_schedule in (None, "1f1b", "interleaved_1f1b"):
            # where the layers are reads the parallel config and the model only (the base's):
            # kept by the parallel config's identity, kept alive with it
            got = self._kinds_by.get(id(p))
            if got is None or got[0] is not p:
                got = self._kinds_by[id(p)] = (p, self._kinds_of(cfg.virtual_ranges))
            kinds = got[1]
        recompute = m.recompute
        # re-running nothing, selective recompute prices recompute none's passes
        if recompute == "selective" and self._reruns_nothing(cfg):
            recompute = "none"
        row = (self.cheap(m), cfg.num_microbatches, kinds,
               (m.num_gpus, m.tp, m.cp, m.micro_batch, m.sequence_parallel, recompute, m.ep,
                m.etp, m.dispatcher))
        if group is not None:
            self._rows[m] = row
        return row

    def _pass_times(self, c: Candidate, config: Callable[[], Any], compute_only: bool = False,
                    split: bool = False) -> tuple[dict[bool, float], float, float]:
        """(forward + backward of one layer by is-MoE, of the head, of the embedding);
        ``compute_only``: their compute segments alone (what no overlap can hide). ``split``:
        a named schedule, which may run a backward as a split I and W instead
        (``pipeline.split_backward``, each priced as its own op list by ``pipeline.HalfPricer``:
        a few % below B where what B overlapped runs beside fewer ops): each backward is
        the smaller of B and I + W. ``config`` builds the candidate's config, needed only the
        first time a shard shape is priced. Kept by the shard shape (:meth:`_row`'s, and the
        two pricing switches)."""
        key = (self._row(c)[3], c.tp_comm_overlap, c.moe_overlap_ep_comm, compute_only, split)
        hit = self._passes.get(key)
        if hit is None:
            cfg = config()
            hit = self._passes[key] = self._priced_passes(cfg, compute_only, split,
                                                          self._ops_of(cfg))
        return hit

    def _ops_of(self, cfg: Any) -> tuple:
        """:func:`pass_ops` of ``cfg``, kept for the configs equal to it but in
        ``parallel.tp_comm_overlap``, which no op-list builder reads (in ``src`` only the
        ``Pricer`` reads it, besides the loader's framework defaults, the Chakra export and the
        validator's inputs): a TP > 1 group's two pricing classes' leads differ in it alone and
        price the same op lists with their own pricers (the 22B search: 416 shard shapes
        priced, 384 of them such pairs). Kept by the identities of the model, training and
        cluster (kept alive with the entry) and the other parallel fields' values."""
        p = cfg.parallel
        m, t, cl = cfg.model, cfg.training, cfg.cluster
        try:
            key = (id(m), id(t), id(cl), *(getattr(p, f) for f in _NOT_TP_OVERLAP))
            hit = self._op_lists.get(key)
        except TypeError:  # a parallel field that cannot be hashed: built each time
            return pass_ops(cfg)
        if hit is None or hit[0] is not m or hit[1] is not t or hit[2] is not cl:
            hit = self._op_lists[key] = (m, t, cl, pass_ops(cfg))
        return hit[3]

    @staticmethod
    def _priced_passes(cfg: Any, compute_only: bool, split: bool, ops: tuple | None = None
                       ) -> tuple[dict[bool, float], float, float]:
        """:meth:`_pass_times` of one shard shape, priced with ``cfg``'s own pricer; ``ops``:
        ``pass_ops(cfg)`` where the caller has it (:meth:`_ops_of`)."""
        from trainsim.pipeline import HalfPricer
        from trainsim.pricing import COMPUTE
        from trainsim.simulator import Pricer

        pricer = Pricer(cfg)

        def t(ops: Any, by: Any = pricer) -> float:
            priced = by.price(ops)
            if compute_only:
                return sum(d for cat, d, _ in priced.segments if cat == COMPUTE)
            return priced.duration_s

        halves = (HalfPricer(pricer, False), HalfPricer(pricer, True)) if split else ()

        def bwd(ops: Any) -> float:  # a backward as B, or as I + W where cheaper
            whole = t(ops)
            return min(whole, sum(t(ops, h) for h in halves)) if halves else whole

        layers, (hf, hb, metrics), (ef, eb) = ops if ops is not None else pass_ops(cfg)
        layer = {moe: min(t(lf) + bwd(lb) for lf, lb in alts) for moe, alts in layers.items()}
        # the trainer's train metrics over the logits run after each micro-batch's backward
        head = t(hf) + bwd(hb) + t(metrics)
        emb = t(ef) + bwd(eb)
        return layer, head, emb

    def _reruns_nothing(self, cfg: Any) -> bool:
        """``workload.recompute.reruns_nothing(cfg)``, kept by the parallel config's identity
        (kept alive with it): it reads the parallel config and the base's model and training
        (framework, attention), never the micro-batch or the GPU count, so the memory groups
        of one parallel config share it (the 22B search asked it 7,965 times)."""
        p = cfg.parallel
        hit = self._reruns.get(id(p))
        if hit is None or hit[0] is not p:
            from trainsim.workload.recompute import reruns_nothing

            hit = self._reruns[id(p)] = (p, reruns_nothing(cfg))
        return hit[1]

    def refined(self, c: Candidate) -> float:
        key = (c.mem, c.overlap_grad_reduce, c.overlap_param_gather, c.tp_comm_overlap,
               c.moe_overlap_ep_comm)
        hit = self._refined.get(key)
        if hit is not None:
            return hit
        cheap = self.cheap(c.mem)
        if self.failed:
            return cheap
        try:
            hit = self._refined[key] = max(cheap, REFINED_SAFETY * self._pipeline_bound(c))
        except Exception as exc:  # noqa: BLE001 - an internal API changed: keep the FLOP bound
            self.failed = repr(exc)
            # a candidate's own refusal (robust62: a forced nccl_algo a group of it cannot run
            # for the kind it prices) is its simulation's too, said there in one line: not a
            # second line quoting the exception's repr
            say = log.debug if isinstance(exc, TrainsimError) else log.warning
            say("search: refined bound unavailable (%r); using the FLOP bound", exc)
            return cheap
        return hit

    def passes_bound(self, c: Candidate) -> float:
        """What :meth:`refined` is never below, from the passes alone: every micro-batch's
        passes of the stage and one micro-batch's of the stages before it, without the
        stage's gather waits, what it runs after its last pass, the contention and the floor
        (each non-negative, added or taken the larger of: float addition and ``max`` are
        monotone), so no layout's collectives are priced. The FLOP bound for a named schedule
        (whose bound reads the shape), or where the refined bound is unavailable. The search
        queues a group at it before refining (``search.waves``), asking it once per class
        lead: nothing kept per candidate (what it reads is kept per group, :meth:`_row`, per
        shard shape and per layout)."""
        m = c.mem
        if self.failed or m.schedule:
            return self.cheap(m)
        cheap, micro, kinds, shape = self._row(c)
        if kinds is None:
            return cheap
        passes = self._passes.get((shape, c.tp_comm_overlap, c.moe_overlap_ep_comm, False,
                                   False))
        if passes is None:
            passes = self._pass_times(c, lambda: c.to_config(self.base))
        return max(cheap, self._sums_bound_of(passes, kinds, m.pp, micro))

    def _sums_bound_of(self, passes: tuple, kinds: tuple, pp: int, micro: int) -> float:
        """The stages' passes bound of :meth:`passes_bound`: every micro-batch's passes of a
        stage and one micro-batch's of the stages before it, the largest over the stages; kept
        by the objects it reads (the memory groups of one layout's optimizer shardings share
        it)."""
        of = (id(passes), id(kinds), pp, micro)
        bound = self._sums_bound.get(of)
        if bound is None:
            before, own = self._stage_sums(passes, kinds, pp)
            bound = self._sums_bound[of] = REFINED_SAFETY * max(
                before[s] + micro * own[s] for s in range(pp))
        return bound

    def passes_low(self, c: Candidate, pairs: tuple[tuple[bool, bool], ...]) -> float | None:
        """The least :meth:`passes_bound` of ``c``'s memory group over its pricing classes'
        (``tp_comm_overlap``, ``moe_overlap_ep_comm``) ``pairs``, the same float as the
        ``min`` of :meth:`passes_bound` over the classes' leads (which it reads only through
        their memory group and those two switches), without building the leads; None where a
        class's pass times are not priced yet (its lead's config prices them: the caller asks
        :meth:`passes_bound` of the leads). The search asks it at each group's first pop
        (``search.waves``: 12,803 of the 22B search's 13,248 groups, most pruned by it)."""
        m = c.mem
        if self.failed or m.schedule:
            return self.cheap(m)
        cheap, micro, kinds, shape = self._row(c)
        if kinds is None:
            return cheap
        low = None
        for tp_overlap, ep_overlap in pairs:
            passes = self._passes.get((shape, tp_overlap, ep_overlap, False, False))
            if passes is None:
                return None
            bound = max(cheap, self._sums_bound_of(passes, kinds, m.pp, micro))
            if low is None or bound < low:
                low = bound
        return low

    def scheduled(self, c: Candidate) -> float:
        """:meth:`refined`, or for a named pipeline schedule (DualPipe, zero-bubble) the larger
        busiest compute stream of :func:`~trainsim.search.schedule_bound.layered_busy_s` (the
        passes as the simulator prices them, pairs and exposed communication included; a
        layer's pricings kept per shard shape, the search asks it only of groups about to be
        simulated). The same for
        every variant of ``c``'s memory group with its TP and expert all-to-all overlap
        switches (sends are left out, and the gradient and parameter overlaps run on the
        data-parallel stream: tests check it)."""
        refined = self.refined(c)
        if not c.mem.schedule or self.failed:
            return refined
        key = (c.mem, c.tp_comm_overlap, c.moe_overlap_ep_comm)
        hit = self._busy.get(key)
        if hit is None:
            from trainsim.search.schedule_bound import layer_pass_s, layered_busy_s

            m = c.mem  # a layer's passes: the same for every pipeline layout (_pass_times)
            shape = (m.num_gpus, m.tp, m.cp, m.micro_batch, m.sequence_parallel, m.recompute,
                     m.zero, m.ep, m.etp, m.dispatcher, c.tp_comm_overlap, c.moe_overlap_ep_comm)

            def per_kind(kind: tuple[bool, bool, bool, bool]) -> dict[str, float]:
                got = self._layer_passes.get((shape, kind))
                if got is None:
                    got = self._layer_passes[shape, kind] = layer_pass_s(cfg, kind)
                return got

            try:
                cfg = c.to_config(self.base)
                hit = 0.0 if cfg.schedule_steps > 1 else \
                    REFINED_SAFETY * max(layered_busy_s(cfg, per_kind))
            except Exception as exc:  # noqa: BLE001 - an internal API changed: keep refined
                log.warning("search: schedule bound unavailable (%r)", exc)
                hit = 0.0
            self._busy[key] = hit
        return max(refined, hit)

    def _work(self, passes: tuple, kinds: tuple[tuple[int, int], ...]) -> list[float]:
        """One micro-batch's forward + backward of each virtual stage."""
        layer, head, emb = passes
        # n x a layer's passes, not n additions: the same to ~n ulps, far inside REFINED_SAFETY
        if self.base.model.hybrid_layer_pattern is None:  # (dense, routed-expert)
            work = [(dense * layer[False] if dense else 0.0) + (moe * layer[True] if moe else 0.0)
                    for dense, moe in kinds]
        else:  # a hybrid model's kinds (config.hybrid.layer_kind), in self._order
            work = [sum(n * layer[k] for k, n in zip(self._order, counts) if n)
                    for counts in kinds]
        work[0] += emb
        work[-1] += head
        return work

    def _stage_sums(self, passes: tuple, kinds: tuple[tuple[int, int], ...], pp: int
                    ) -> tuple[list[float], list[float]]:
        """Per stage s, the passes of the virtual stages before it (one micro-batch's) and its
        own: kept by the identities of the pass times and layer kinds (both kept by this
        object's caches), which the memory groups of one layout share across their micro-batch
        sizes, optimizer shardings and overlap switches."""
        key = (id(passes), id(kinds), pp)
        hit = self._sums.get(key)
        if hit is None or hit[0] is not passes or hit[1] is not kinds:
            work, n_virtual = self._work(passes, kinds), len(kinds)
            hit = self._sums[key] = (passes, kinds, [sum(work[:s]) for s in range(pp)],
                                     [sum(work[s:n_virtual:pp]) for s in range(pp)])
        return hit[2], hit[3]

    def _pipeline_bound(self, c: Candidate) -> float:
        sh = self._shape(c.mem)
        named = sh.schedule not in (None, "1f1b", "interleaved_1f1b")
        passes = self._pass_times(c, lambda: c.to_config(self.base), compute_only=sh.paired,
                                  split=named)
        # what follows reads the shape, the pass times and the two data-parallel overlap
        # switches only (both objects kept by this one's caches, so their identities are not
        # reused): the 22B search composes 23,722 bounds from 15,544 distinct inputs
        key = (id(sh), id(passes), c.overlap_grad_reduce, c.overlap_param_gather)
        hit = self._composed.get(key)
        if hit is None:
            hit = self._composed[key] = self._compose(sh, passes, named, c.overlap_grad_reduce,
                                                      c.overlap_param_gather)
        return hit

    def _compose(self, sh: BoundShape, passes: tuple, named: bool, og: bool, op: bool) -> float:
        """:meth:`_pipeline_bound` from the group's shape and the candidate's pass times."""
        pp, m = sh.pp, sh.m
        if not named:
            before, own = self._stage_sums(passes, sh.kinds, pp)
            busy = [m * x for x in own]  # each stage's passes
            # with their gather waits (not added to the contention's: a reduce-scatter may
            # slow a pass while it waits)
            waited = [b + w for b, w in zip(busy, sh.waits)]
            bound = max(before[s] + waited[s] for s in range(pp))
            if sh.tails:  # what stage s still runs after its last pass, or beside its passes
                tail = sh.tails[(og, op)]
                for s in range(pp):
                    bound = max(bound, waited[s] + tail[s], busy[s] + sh.contention[s])
                    if og:  # every backward's reductions (Megatron-LLaMA): their SM share
                        # slows the passes, and they lie one after another on the stream
                        held, stream = sh.every_backward[s]
                        bound = max(bound, busy[s] + m * held, m * stream)
        else:  # every rank runs its micro-batches of the chunks it holds (DualPipe: half)
            from trainsim.workload.pipeline_schedules import rank_chunks
            work = self._work(passes, sh.kinds)
            per_chunk = m / 2 if sh.schedule == "dualpipe" else m
            bound = max(per_chunk * sum(work[v] for v in rank_chunks(sh.schedule, s, pp, sh.vpp))
                        for s in range(pp))
        return max(bound, sh.floor)

    def _pricer(self, cfg: Any) -> Any:
        """A Pricer for the collectives and the optimizer step of ``cfg``'s layout: its spans
        depend on the GPUs and the tp, pp, cp, ep and etp sizes only (the rest is the base's)."""
        from trainsim.pricing import Pricer

        p = cfg.parallel
        key = (cfg.cluster.num_gpus, p.tp, p.pp, p.cp, p.ep, p.etp)
        hit = self._pricers.get(key)
        if hit is None:
            hit = self._pricers[key] = Pricer(cfg)
        return hit

    def _shape(self, key: MemoryKey) -> BoundShape:
        hit = self._shapes.get(key)
        if hit is None:
            # the same for every recompute mode, dispatcher and sequence parallelism:
            # _shape_of reads the schedule, the micro-batch count, pp, vpp, where the layers
            # are and _layout_costs (whose key holds none of them); one shape per the rest of
            # the memory key (the 22B search: 4,395 -> 2,610 shapes worked out)
            of = (key.num_gpus, key.tp, key.pp, key.cp, key.vpp, key.micro_batch, key.zero,
                  key.ep, key.etp, key.schedule)
            hit = self._shapes_of.get(of)
            if hit is None:
                hit = self._shapes_of[of] = self._shape_of(
                    self.configs.get(key) or Candidate(key).to_config(self.base))
            self._shapes[key] = hit
        return hit

    def prime(self, key: MemoryKey, cfg: Any) -> None:
        """Keep the config of a memory group that the caller has built anyway: its bound shape
        is worked out from it when a refined bound first asks (:meth:`_shape`; most groups
        are, while the workers simulate, rather than before the first simulation starts)."""
        self.configs[key] = cfg

    def _shape_of(self, cfg: Any) -> BoundShape:
        p, m = cfg.parallel, cfg.num_microbatches
        ranges = tuple(cfg.virtual_stage_layers())
        unit_floor, tails, scatter, once, waits, links, backward = \
            self._layout_costs(cfg, ranges)
        # ZeRO-3 / FSDP reduce-scatters every micro-batch's gradients but the last's, or with
        # FSDP2's no-sync under pipelining (``fsdp_pp_unsharded``) once per chunk and step
        reps = 1 if once else max(0, m - 1)
        return BoundShape(p.pipeline_schedule in ("dualpipe", "dualpipe_v"), p.pipeline_schedule,
                      m, p.pp, p.vpp, ranges,
                      self._kinds_of(ranges),
                      max(max((reps * f for f in unit_floor), default=0.0),
                          max((m * g + reps * r for g, r in links), default=0.0)), tails,
                      backward, [max(0, m - 1) * x for x in scatter], [m * w for w in waits])

    def _kinds_of(self, ranges: tuple[range, ...]) -> tuple[tuple[int, int], ...]:
        """(dense, routed-expert) layers of each virtual stage; a hybrid model's layers of each
        kind in ``self._order`` (its pattern's symbols, sorted)."""
        hit = self._kinds.get(ranges)
        if hit is None:
            pattern = main_pattern(self.base.model) \
                if self.base.model.hybrid_layer_pattern else None
            if pattern is not None:
                hit = self._kinds[ranges] = tuple(
                    tuple(sum(pattern[i] == k for i in r) for k in self._order) for r in ranges)
                return hit
            moe = self.base.model.is_moe_layer
            hit = self._kinds[ranges] = tuple(
                (len(r) - n, n) for r in ranges for n in [sum(moe(i) for i in r)])
        return hit

    def _layout_costs(self, cfg: Any, ranges: tuple[range, ...]) -> tuple:
        """The collectives and optimizer step of a layout (the same for every micro-batch size
        and recompute mode): per stage, ZeRO-3's gathers and reduce-scatters of one
        micro-batch, what runs after the last pass and the slowdown of one micro-batch's
        passes (:func:`~trainsim.search.layout_costs.after_passes`)."""
        p = cfg.parallel
        # sequence parallelism left out: nothing below reads it (parameter splits, gradient
        # widths, bucket counts, the optimizer step and the collectives' spans are the same
        # with it on or off), and the two halves of the tp > 1 groups share their costs
        # (the 22B search: 1,104 -> 657 layouts worked out; test_search_speed_bounds)
        key = (cfg.cluster.num_gpus, p.tp, p.pp, p.cp, p.vpp, p.zero_stage,
               p.distributed_optimizer, p.ep, p.etp, p.pipeline_schedule)
        hit = self._layouts.get(key)
        if hit is not None:
            return hit
        from trainsim.memory import stage_param_split
        from trainsim.workload.sharding import fsdp_grad_bytes, fsdp_per_unit, fsdp_pp_mode

        pricer = self._pricer(cfg)
        width = fsdp_grad_bytes(cfg)  # the simulator's reduce-scatter widths, by group
        sizes = {"dp_cp": cfg.shard_ranks, "edp": cfg.edp if cfg.model.is_moe else 1}
        split = [stage_param_split(cfg, s) for s in range(p.pp)]
        # ZeRO-3 reduce-scatters each backward pass's gradients on the data-parallel stream
        # (the last micro-batch's layer by layer: not counted). Its parameter gathers are not
        # tasks of that stream but waits inside the passes (sharded_passes): a floor that
        # added them exceeded the simulated time 1.6x (22B, TP4 CP2 DP2 zero3 on 16 H100).
        # Under FSDP2's no-sync (``fsdp_pp_unsharded``) each chunk reduce-scatters once per
        # step (``simulator._TaskGraph.gather_once``): the floor is one of each, no contention.
        unit_floor = []
        zero = p.effective_zero_stage
        per_unit = fsdp_per_unit(cfg, zero)  # stage 3, and FSDP1/fully_shard's stage 2
        once = per_unit and fsdp_pp_mode(cfg) == "unsharded"
        if per_unit:
            for s in range(p.pp):
                unit_floor.append(p.vpp * sum(
                    dp_comm_time(pricer, cfg, "r", "reduce_scatter",
                                 params / p.vpp * width[group], group)
                    for params, group in zip(split[s], ("dp_cp", "edp"))
                    if sizes[group] > 1 and params > 0))
        # the passes' waits for their unit gathers (per micro-batch; not where the gathers
        # lead each chunk's first forward only, nor per tensor: blocking_gathers)
        paired = paired_gathers(cfg, pricer, ranges) \
            if per_unit and not once and p.zero3_gather != "per_parameter" else None
        waits = gather_waits(cfg, pricer, ranges, paired) if paired is not None else [0.0] * p.pp
        tails: dict[tuple[bool, bool], list[float]] = {}
        scatter_s = [0.0] * p.pp
        backward = [(0.0, 0.0)] * p.pp
        if p.pipeline_schedule in (None, "1f1b", "interleaved_1f1b") and \
                not p.optimizer_post_validation:
            tails, scatter_s, backward = after_passes(cfg, pricer, ranges, split, zero)
            if once:
                scatter_s = [0.0] * p.pp
        links = link_floor(cfg, pricer, ranges, paired) if per_unit and not once \
            else [(0.0, 0.0)] * p.pp
        hit = self._layouts[key] = (unit_floor, tails, scatter_s, once, waits, links, backward)
        return hit


__all__ = ["BOUND_SAFETY", "REFINED_SAFETY", "Bounds", "lower_bound_s", "peak_gemm_rate"]
