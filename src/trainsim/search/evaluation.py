"""Pricing one candidate: a cheap lower bound on its iteration time, and the full simulation.

The lower bound lets a search skip simulations that cannot change its answer (branch and
bound); the simulation is :func:`trainsim.simulate`, unchanged, so a search reports exactly
what ``trainsim simulate`` would for the same configuration.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, NamedTuple

from trainsim.compute.roofline import gemm_rate
from trainsim.engine import gc_paused
from trainsim.engine import loop as engine_loop
from trainsim.engine.loop import runs_shared
from trainsim.pricing import shared
from trainsim.search.layout_costs import (
    BoundShape,
    after_passes,
    dp_comm_time,
    gather_waits,
    link_floor,
)
from trainsim.search.space import Base, Candidate, MemoryKey, drop_parallels
from trainsim.simulator import simulate
from trainsim.workload.ops import Gemm

log = logging.getLogger(__name__)

BOUND_SAFETY = 0.97
"""The FLOP bound is scaled by this so that rounding or a later, slightly faster compute model
cannot make it exceed a simulated time (tests check bound <= simulation)."""
REFINED_SAFETY = 1 - 1e-9
"""The refined bound prices the very passes the simulator places, with the same pricer, and
the event loop never runs a task faster than its duration: it needs no margin for the model,
only for the same durations summed in another order (as ``trainsim.bound.SAFETY``)."""


def peak_gemm_rate(base: Base) -> float:
    """The fastest rate the roofline model gives a GEMM of ``base``'s dtype or bf16 (what
    :func:`lower_bound_s` divides by: the same for every candidate of a search)."""
    gpu, dtype = base.cluster.gpu, base.training.dtype
    return max(gemm_rate(gpu, Gemm("bound", 1, 1, 1, d, fp8_fast_accum=True))
               for d in {dtype, "bf16"})


def lower_bound_s(key: MemoryKey, base: Base, rate: float | None = None) -> float:
    """A lower bound on the iteration time, from matmul FLOPs alone (no simulation).

    Every GEMM runs at most at the fastest rate the roofline model gives a GEMM of the run's
    dtype or bf16 (``compute.roofline.gemm_rate``; an fp8 kernel without the split accumulator,
    such as DeepGEMM's grouped GEMMs, runs above the fp8 ``GPUSpec.gemm_ceiling``). The last
    pipeline stage runs the matmuls of all its micro-batches (layers and the logit layer,
    ``6 N`` FLOPs per token, Narayanan et al. 2021 eq. 3, plus one more forward of the layers under
    full recompute), and it cannot start before the first micro-batch has gone forward through
    the other ``pp - 1`` stages nor finish before its last backward has gone back through them:
    one model chunk each way per stage, the pipeline bubble of 1F1B and its interleaved form
    (ibid. §2.2). TP shards every GEMM, CP every token (replicated KV projections under GQA only
    add work, so dividing by tp stays a bound). Attention, memory-bound kernels and all
    communication are left out, so the bound is always below the simulated time. ``rate``:
    :func:`peak_gemm_rate` of ``base``, where the caller has it.
    """
    m, t = base.model, base.training
    if rate is None:
        rate = peak_gemm_rate(base)
    tokens = key.micro_batch * t.seq_length / key.cp
    h = m.hidden_size
    mats = 3 if m.activation == "swiglu" else 2
    layer_params = h * (m.q_size + 2 * m.kv_size) + m.q_size * h + mats * h * m.ffn_size
    per_layer = (8.0 if key.recompute == "full" else 6.0) * layer_params * tokens / key.tp
    head = 6.0 * m.vocab_size * h * tokens / key.tp
    n_micro = t.global_batch_size // (key.dp * key.micro_batch)
    layers = m.num_layers // key.pp
    if m.num_layers % key.pp:  # a balanced layout: the embedding and loss take a layer's place
        layers = max(0, layers - 2)
    last_stage = n_micro * (layers * per_layer + head)
    fill_drain = (key.pp - 1) * (layers // key.vpp) * per_layer
    if key.schedule:  # other schedules move the head and fill the bubble differently
        last_stage, fill_drain = n_micro * layers * per_layer, 0.0
    return BOUND_SAFETY * (last_stage + fill_drain) / rate


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
        self._passes: dict[tuple, tuple[dict[bool, float], float, float]] = {}
        self._shapes: dict[MemoryKey, BoundShape] = {}
        self._shapes_of: dict[tuple, BoundShape] = {}
        self._pricers: dict[tuple, Any] = {}
        self._layouts: dict[tuple, tuple] = {}
        self._kinds: dict[tuple[range, ...], tuple[tuple[int, int], ...]] = {}
        self._refined: dict[tuple, float] = {}
        self._sums: dict[tuple, tuple] = {}  # _stage_sums
        self._cheap: dict[MemoryKey, float] = {}
        self._rate: float | None = None  # peak_gemm_rate(base), once
        self._busy: dict[tuple, float] = {}  # scheduled()
        self._layer_passes: dict[tuple, dict[str, float]] = {}
        self.configs: dict[MemoryKey, Any] = {}
        """Each memory group's config as :meth:`prime` was given it (the search's memory check
        and bound shapes read it again)."""
        self.failed: str | None = None

    def cheap(self, key: MemoryKey) -> float:
        hit = self._cheap.get(key)
        if hit is None:
            if self._rate is None:
                self._rate = peak_gemm_rate(self.base)
            hit = self._cheap[key] = lower_bound_s(key, self.base, self._rate)
        return hit

    def _pass_times(self, c: Candidate, config: Callable[[], Any], compute_only: bool = False,
                    split: bool = False) -> tuple[dict[bool, float], float, float]:
        """(forward + backward of one layer by is-MoE, of the head, of the embedding);
        ``compute_only``: their compute segments alone (what no overlap can hide). ``split``:
        a named schedule, which may run a backward as a split I and W instead
        (``pipeline.split_backward``, each priced as its own op list by ``pipeline.HalfPricer``:
        a few % below B where what B overlapped runs beside fewer ops): each backward is
        the smaller of B and I + W. ``config`` builds the candidate's config, needed only the
        first time a shard shape is priced."""
        m = c.mem
        recompute = m.recompute
        if recompute == "selective":  # re-running nothing, it prices recompute none's passes
            from trainsim.workload.recompute import reruns_nothing

            group = self.configs.get(m)
            if reruns_nothing(group if group is not None else config()):
                recompute = "none"
        key = (m.num_gpus, m.tp, m.cp, m.micro_batch, m.sequence_parallel, recompute,
               c.tp_comm_overlap, m.ep, m.etp, m.dispatcher, c.moe_overlap_ep_comm,
               compute_only, split)
        hit = self._passes.get(key)
        if hit is None:
            from trainsim.pipeline import HalfPricer
            from trainsim.pricing import COMPUTE
            from trainsim.simulator import Pricer
            from trainsim.workload.head import (
                embedding_backward,
                embedding_forward,
                head_backward,
                head_forward,
                train_metric_ops,
            )
            from trainsim.workload.layers import backward_of, layer_forward
            from trainsim.workload.recompute import layer_recompute
            from trainsim.workload.shard import shard_of

            cfg = config()
            pricer, sh, model = Pricer(cfg), shard_of(cfg), cfg.model

            def t(ops: Any, by: Any = pricer) -> float:
                priced = by.price(ops)
                if compute_only:
                    return sum(d for cat, d, _ in priced.segments if cat == COMPUTE)
                return priced.duration_s

            halves = (HalfPricer(pricer, False), HalfPricer(pricer, True)) if split else ()

            def bwd(ops: Any) -> float:  # a backward as B, or as I + W where cheaper
                whole = t(ops)
                return min(whole, sum(t(ops, h) for h in halves)) if halves else whole

            layer = {}
            for moe in {model.is_moe_layer(i) for i in range(model.num_layers)}:
                lf = layer_forward(cfg, sh, moe=moe)
                layer[moe] = (t(lf)
                              # a partial recompute may skip any layer: price none (a bound)
                              + bwd(layer_recompute(
                                  cfg, sh, lf, whole=cfg.parallel.recompute_num_layers is None)
                                  + backward_of(lf, sh)))
            hf = head_forward(cfg, sh)
            # the trainer's train metrics over the logits run after each micro-batch's backward
            head = t(hf) + bwd(head_backward(cfg, sh, hf)) + t(train_metric_ops(cfg, sh))
            emb = t(embedding_forward(cfg, sh)) + bwd(embedding_backward(cfg, sh))
            hit = self._passes[key] = (layer, head, emb)
        return hit

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
            log.warning("search: refined bound unavailable (%r); using the FLOP bound", exc)
            return cheap
        return hit

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

            def per_kind(kind: tuple[bool, bool, bool]) -> dict[str, float]:
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
        work = [(dense * layer[False] if dense else 0.0) + (moe * layer[True] if moe else 0.0)
                for dense, moe in kinds]
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
        pp, m = sh.pp, sh.m
        if not named:
            before, own = self._stage_sums(passes, sh.kinds, pp)
            busy = [m * x for x in own]  # each stage's passes
            # with their gather waits (not added to the contention's: a reduce-scatter may
            # slow a pass while it waits)
            waited = [b + w for b, w in zip(busy, sh.waits)]
            bound = max(before[s] + waited[s] for s in range(pp))
            if sh.tails:  # what stage s still runs after its last pass, or beside its passes
                tail = sh.tails[(c.overlap_grad_reduce, c.overlap_param_gather)]
                for s in range(pp):
                    bound = max(bound, waited[s] + tail[s], busy[s] + sh.contention[s])
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
            # the same for every recompute mode and dispatcher: _shape_of reads the schedule,
            # the micro-batch count, pp, vpp, where the layers are and _layout_costs (whose key
            # holds neither); one shape per the rest of the memory key
            of = (key.num_gpus, key.tp, key.pp, key.cp, key.vpp, key.micro_batch,
                  key.sequence_parallel, key.zero, key.ep, key.etp, key.schedule)
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
        unit_floor, tails, scatter, once, waits, links = self._layout_costs(cfg, ranges)
        # ZeRO-3 / FSDP reduce-scatters every micro-batch's gradients but the last's, or with
        # FSDP2's no-sync under pipelining (``fsdp_pp_unsharded``) once per chunk and step
        reps = 1 if once else max(0, m - 1)
        return BoundShape(p.pipeline_schedule in ("dualpipe", "dualpipe_v"), p.pipeline_schedule,
                      m, p.pp, p.vpp, ranges,
                      self._kinds_of(ranges),
                      max(max((reps * f for f in unit_floor), default=0.0),
                          max((m * g + reps * r for g, r in links), default=0.0)), tails,
                      [max(0, m - 1) * x for x in scatter], [m * w for w in waits])

    def _kinds_of(self, ranges: tuple[range, ...]) -> tuple[tuple[int, int], ...]:
        """(dense, routed-expert) layers of each virtual stage."""
        hit = self._kinds.get(ranges)
        if hit is None:
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
        waits = gather_waits(cfg, pricer, ranges) \
            if per_unit and not once and p.zero3_gather != "per_parameter" else [0.0] * p.pp
        tails: dict[tuple[bool, bool], list[float]] = {}
        scatter_s = [0.0] * p.pp
        if p.pipeline_schedule in (None, "1f1b", "interleaved_1f1b") and \
                not p.optimizer_post_validation:
            tails, scatter_s = after_passes(cfg, pricer, ranges, split, zero)
            if once:
                scatter_s = [0.0] * p.pp
        links = link_floor(cfg, pricer, ranges) if per_unit and not once else [(0.0, 0.0)] * p.pp
        hit = self._layouts[key] = (unit_floor, tails, scatter_s, once, waits, links)
        return hit


@dataclass(frozen=True)
class Evaluation:
    """The simulated outcome of one candidate."""

    candidate: Candidate
    iteration_time_s: float
    tokens_per_s: float
    mfu: float
    peak_memory_bytes: float
    memory_headroom_bytes: float
    breakdown: dict[str, float]
    """compute_s, exposed_comm_s, pipeline_bubble_s, optimizer_s, other_s (as Result)."""
    exposed_comm: dict[str, float]
    """Exposed communication by group: tp, cp, pp, dp."""
    num_microbatches: int
    lower_bound_s: float = 0.0

    @property
    def num_gpus(self) -> int:
        return self.candidate.mem.num_gpus

    @property
    def fits(self) -> bool:
        return self.memory_headroom_bytes >= 0

    @property
    def label(self) -> str:
        return self.candidate.label()

    def to_dict(self, base: Base | None = None) -> dict[str, Any]:
        """Its figures and configuration; with the search's ``base``, also ``parallel``: the
        parallel section that reproduces it under ``simulate`` (``Candidate.simulate_parallel``:
        the --set fields and an uneven layout included), and the layout in ``config``."""
        as_stage = base is not None and base.zero1_as_stage
        config = self.candidate.to_dict(as_stage)
        extra: dict[str, Any] = {}
        if base is not None:
            config["pipeline_model_parallel_layout"] = self.candidate.run_layout(base)
            extra["parallel"] = self.candidate.simulate_parallel(base)
        return {"config": config, **extra, "label": self.candidate.label(as_stage),
                "iteration_time_s": self.iteration_time_s, "tokens_per_s": self.tokens_per_s,
                "tokens_per_s_per_gpu": self.tokens_per_s / self.num_gpus, "mfu": self.mfu,
                "peak_memory_bytes": self.peak_memory_bytes,
                "memory_headroom_bytes": self.memory_headroom_bytes,
                "num_microbatches": self.num_microbatches,
                "breakdown": dict(self.breakdown), "exposed_comm": dict(self.exposed_comm)}


def refined_bound_s(candidate: Candidate, base: Base) -> float:
    """The refined lower bound of one candidate (see :class:`Bounds`; no cache kept)."""
    return Bounds(base).refined(candidate)


def evaluate(candidate: Candidate, base: Base) -> Evaluation:
    """Simulate one candidate (in this process)."""
    cfg = candidate.to_config(base)
    r = simulate(cfg)
    return Evaluation(candidate, r.iteration_time_s, r.tokens_per_s, r.mfu, r.peak_memory_bytes,
                      cfg.cluster.gpu.hbm_bytes - r.peak_memory_bytes, dict(r.breakdown),
                      dict(r.exposed_comm), cfg.num_microbatches,
                      lower_bound_s(candidate.mem, base, _peak_rate(base)))


_RATE: list[tuple[Base, float]] = []


def _peak_rate(base: Base) -> float:
    """:func:`peak_gemm_rate` of ``base``, kept for the last base object asked (a search's
    worker gets one base for all its batches, ``_one_base``): the roofline's rates of two
    GEMMs were worked out again for every evaluation (~1 % of a worker's time)."""
    if not _RATE or _RATE[0][0] is not base:
        _RATE[:] = [(base, peak_gemm_rate(base))]
    return _RATE[0][1]


_BASES: dict[str, Base] = {}


def _one_base(base: Base) -> Base:
    """The first base of this process equal to ``base`` (by ``repr``, which spells every float
    exactly: ``EvaluationCache``'s key). A worker unpickles a new copy of the search's base with
    every batch; the prices ``shared`` keeps are keyed by the cluster's identity (and the twin
    graphs by the model's and the training's), so without this each batch priced its passes
    anew (the 22B search's workers: 2,125 op lists priced instead of 560)."""
    key = repr(base)
    hit = _BASES.get(key)
    if hit is None:
        if len(_BASES) >= 8:
            _BASES.clear()
        hit = _BASES[key] = base
    return hit


class SearchToken(NamedTuple):
    """One search's token (``search.core``): what its batches share in a process is keyed by
    it (``pricing.shared``, :func:`_runs_of`), and ``workers`` (the executor's) shares out the
    tasks a worker keeps (:func:`share`)."""

    pid: int
    search: int
    time_ns: int
    workers: int = 1


def evaluate_batch(base: Base, candidates: list[Candidate], token: Hashable = None
                   ) -> list[Evaluation]:
    """The unit of work an executor runs on a worker: one batch of candidates. ``token``: the
    search's (its batches price the passes they share once per process:
    :func:`trainsim.pricing.shared`); None prices each candidate on its own."""
    if token is None:
        return [evaluate(c, base) for c in candidates]
    base = _one_base(base)
    # the collector paused as simulate() pauses it, here over the configs and results too; a
    # task graph equal to one of the search's earlier candidates' in this process runs the
    # loop once (a search's candidates in pairs: selective recompute where FlashAttention's
    # backward recomputes the scores anyway leaves recompute none's passes, at the same
    # bound), and a twin's graph is built once (``trainsim.twin_graphs``)
    with shared(token), gc_paused(), runs_shared(_runs_of(token, base), share(token)):
        return [evaluate(c, base) for c in candidates]


SHARE_FLOOR_TASKS = 200_000
"""The least tasks one worker keeps, however many workers share ``SHARED_TASKS``: a graph is
kept whole or not at all (``engine.loop.run``), so a worker must be able to keep the graph of
the largest configuration its search builds, or a share below it keeps no timelines at all
(64 workers' even share of 10^6 is 15,625). A graph's tasks grow with the pipeline's stages,
virtual stages and layers' ops, not with the micro-batches (a 126-layer model on 14 stages of
9 chunks, 128 or 448 micro-batches: 14,377 tasks, measured 2026-11-25), and the largest
simulation measured keeps 176,456 tasks in all its graphs; 200,000 keeps either. The cost: up
to ~67 MB of timelines a worker (~335 bytes a task) beyond the even share, and twin graphs of
as many tasks again."""


def share(token: Hashable) -> int:
    """The tasks one worker of the search ``token`` keeps at most (timelines, and twin graphs
    as many tasks again): ``engine.loop.SHARED_TASKS`` shared out evenly among its executor's
    workers, but never less than ``SHARE_FLOOR_TASKS`` (one large graph) where the cap allows
    it. A search so keeps at most ``workers * max(SHARED_TASKS // workers,
    min(SHARE_FLOOR_TASKS, SHARED_TASKS))`` tasks in all: one validation question's 10^6 up
    to 5 workers, 64 workers' floors 12.8 M (~4.3 GB of timelines, twin graphs as many tasks
    again), where 64 workers with the whole cap each could hold 64 M (~21 GB and as much
    again; the 22B search's serial process keeps 329,250 timeline and 399,510 twin tasks, peak
    RSS 36 -> 292 MB)."""
    cap = engine_loop.SHARED_TASKS
    even = cap // max(1, getattr(token, "workers", None) or 1)
    return max(even, min(SHARE_FLOOR_TASKS, cap))


_RUNS: list[tuple[Hashable, Base, tuple[dict, dict]]] = []
"""The token and base of the last search that ran a batch in this process, and what its
batches' ``runs_shared`` kept (timelines, twin graphs and summaries)."""


def _runs_of(token: Hashable, base: Base) -> tuple[dict, dict]:
    """What the earlier batches of the search ``token`` kept in this process (its task graphs
    and timelines: 1,216 simulations of the 22B search built 529 graphs and ran the loop 534
    times with one store per batch, 449 and 456 with one per search), within :func:`share`;
    the first batch of a new search's token drops the last one's, as ``pricing.shared`` does
    its prices, so a long-lived worker (Ray's, a pool kept across searches) holds at most one
    search's store, until its next search (its main process cannot tell it that a search has
    ended: :func:`drop_runs` runs there). Their keys hold identities
    (``twin_graphs.graph_key``) of objects the kept entries keep alive, and of ``base``'s,
    kept here with them."""
    if not _RUNS or _RUNS[0][0] != token or _RUNS[0][1] is not base:
        if _RUNS and _RUNS[0][0] != token:  # the last search's configs too (a worker's)
            drop_parallels()
        _RUNS[:] = [(token, base, ({}, {}))]
    return _RUNS[0][2]


def drop_runs(token: Hashable) -> None:
    """Forget what the batches of the search ``token`` kept in this process (its end)."""
    if _RUNS and _RUNS[0][0] == token:
        _RUNS.clear()


__all__ = ["BOUND_SAFETY", "REFINED_SAFETY", "Bounds", "Evaluation", "SearchToken", "drop_runs",
           "evaluate", "evaluate_batch", "lower_bound_s", "refined_bound_s", "share"]
