"""Pricing one candidate: a cheap lower bound on its iteration time, and the full simulation.

The lower bound lets a search skip simulations that cannot change its answer (branch and
bound); the simulation is :func:`trainsim.simulate`, unchanged, so a search reports exactly
what ``trainsim simulate`` would for the same configuration.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from trainsim.compute.roofline import gemm_rate
from trainsim.search.space import Base, Candidate, MemoryKey
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


def lower_bound_s(key: MemoryKey, base: Base) -> float:
    """A lower bound on the iteration time, from matmul FLOPs alone (no simulation).

    Every GEMM runs at most at the fastest rate the roofline model gives a GEMM of the run's
    dtype or bf16 (``compute.roofline.gemm_rate``; an fp8 kernel without the split accumulator,
    such as DeepGEMM's grouped GEMMs, runs above the fp8 ``GPUSpec.gemm_ceiling``). The last pipeline stage runs the
    matmuls of all its micro-batches (layers and the logit layer, ``6 N`` FLOPs per token,
    Narayanan et al. 2021 eq. 3, plus one more forward of the layers under full recompute),
    and it cannot start before the first micro-batch has gone forward through the other
    ``pp - 1`` stages nor finish before its last backward has gone back through them: one
    model chunk each way per stage, the pipeline bubble of 1F1B and its interleaved form
    (ibid. §2.2). TP shards every GEMM, CP every token (replicated KV projections under GQA
    only add work, so dividing by tp stays a bound). Attention, memory-bound kernels and all
    communication are left out, so the bound is always below the simulated time.
    """
    m, t, gpu = base.model, base.training, base.cluster.gpu
    rate = max(gemm_rate(gpu, Gemm("bound", 1, 1, 1, dtype, fp8_fast_accum=True))
               for dtype in {t.dtype, "bf16"})
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
    through them, ``T >= sum_{v<s} (F_v + B_v) + m * sum_{v on s} (F_v + B_v)``. Under ZeRO-3
    the stage's data-parallel stream also all-gathers its parameters before every pass and
    reduce-scatters its gradients after every backward. If the simulator's building blocks
    cannot be used, :func:`lower_bound_s` is kept (logged once).
    """

    def __init__(self, base: Base) -> None:
        self.base = base
        self._passes: dict[tuple, tuple[dict[bool, float], float, float]] = {}
        self.failed: str | None = None

    def cheap(self, key: MemoryKey) -> float:
        return lower_bound_s(key, self.base)

    def _pass_times(self, c: Candidate, cfg: Any, compute_only: bool = False
                    ) -> tuple[dict[bool, float], float, float]:
        """(forward + backward of one layer by is-MoE, of the head, of the embedding);
        ``compute_only``: their compute segments alone (what no overlap can hide)."""
        m = c.mem
        key = (m.num_gpus, m.tp, m.cp, m.micro_batch, m.sequence_parallel, m.recompute,
               c.tp_comm_overlap, m.ep, m.etp, m.dispatcher, c.moe_overlap_ep_comm,
               compute_only)
        hit = self._passes.get(key)
        if hit is None:
            from trainsim.pricing import COMPUTE
            from trainsim.simulator import Pricer
            from trainsim.workload.head import (
                embedding_backward,
                embedding_forward,
                head_backward,
                head_forward,
            )
            from trainsim.workload.layers import (
                backward_of,
                layer_forward,
                layer_recompute,
                shard_of,
            )

            pricer, sh, model = Pricer(cfg), shard_of(cfg), cfg.model

            def t(ops: Any) -> float:
                priced = pricer.price(ops)
                if compute_only:
                    return sum(d for cat, d, _ in priced.segments if cat == COMPUTE)
                return priced.duration_s

            layer = {}
            for moe in {model.is_moe_layer(i) for i in range(model.num_layers)}:
                lf = layer_forward(cfg, sh, moe=moe)
                layer[moe] = (t(lf)
                              # a partial recompute may skip any layer: price none (a bound)
                              + t(layer_recompute(
                                  cfg, sh, lf, whole=cfg.parallel.recompute_num_layers is None)
                                  + backward_of(lf, sh)))
            hf = head_forward(cfg, sh)
            head = t(hf) + t(head_backward(cfg, sh, hf))
            emb = t(embedding_forward(cfg, sh)) + t(embedding_backward(cfg, sh))
            hit = self._passes[key] = (layer, head, emb)
        return hit

    def refined(self, c: Candidate) -> float:
        cheap = self.cheap(c.mem)
        if self.failed:
            return cheap
        try:
            return max(cheap, REFINED_SAFETY * self._pipeline_bound(c))
        except Exception as exc:  # noqa: BLE001 - an internal API changed: keep the FLOP bound
            self.failed = repr(exc)
            log.warning("search: refined bound unavailable (%r); using the FLOP bound", exc)
            return cheap

    def _pipeline_bound(self, c: Candidate) -> float:
        from trainsim.memory import stage_param_split
        from trainsim.simulator import Pricer
        from trainsim.workload.ops import Comm

        cfg = c.to_config(self.base)
        # DualPipe's pairs hide the communication the passes priced alone expose: compute only
        paired = cfg.parallel.pipeline_schedule in ("dualpipe", "dualpipe_v")
        layer, head, emb = self._pass_times(c, cfg, compute_only=paired)
        p, model, m = cfg.parallel, cfg.model, cfg.num_microbatches
        ranges = cfg.virtual_stage_layers()
        work = [sum(layer[model.is_moe_layer(i)] for i in r) for r in ranges]
        work[0] += emb
        work[-1] += head
        pp, n_virtual = p.pp, len(ranges)
        if p.pipeline_schedule in (None, "1f1b", "interleaved_1f1b"):
            bound = max(sum(work[:s]) + m * sum(work[s:n_virtual:pp]) for s in range(pp))
        else:  # every rank runs its micro-batches of the chunks it holds (DualPipe: half)
            from trainsim.workload.pipeline_schedules import rank_chunks
            per_chunk = m / 2 if p.pipeline_schedule == "dualpipe" else m
            bound = max(per_chunk * sum(work[v] for v in
                                        rank_chunks(p.pipeline_schedule, s, pp, p.vpp))
                        for s in range(pp))
        zero = 1 if (p.distributed_optimizer and p.zero_stage == 0) else p.zero_stage
        if zero >= 3 and cfg.dp * p.cp > 1:
            pricer = Pricer(cfg)
            grad_bytes = 4 if cfg.training.grad_reduce_in_fp32 else 2
            sizes = {"dp_cp": cfg.dp * p.cp, "edp": cfg.edp if model.is_moe else 1}
            for s in range(pp):
                dp_busy = 0.0
                for params, group in zip(stage_param_split(cfg, s), ("dp_cp", "edp")):
                    if sizes[group] > 1 and params > 0:
                        chunk = params / p.vpp
                        gather = pricer.comm_time(Comm("g", "all_gather", chunk * 2, group))
                        scatter = pricer.comm_time(Comm("r", "reduce_scatter", chunk * grad_bytes,
                                                        group))
                        dp_busy += m * p.vpp * (2 * gather + scatter)
                bound = max(bound, dp_busy)
        return bound


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

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.candidate.to_dict(), "label": self.label,
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
                      lower_bound_s(candidate.mem, base))


def evaluate_batch(base: Base, candidates: list[Candidate]) -> list[Evaluation]:
    """The unit of work an executor runs on a worker: one batch of candidates."""
    return [evaluate(c, base) for c in candidates]


__all__ = ["BOUND_SAFETY", "REFINED_SAFETY", "Bounds", "Evaluation", "evaluate", "evaluate_batch", "lower_bound_s",
           "refined_bound_s"]
