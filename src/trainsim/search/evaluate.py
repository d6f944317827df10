"""Pricing one candidate: a cheap lower bound on its iteration time, and the full simulation.

The lower bound lets a search skip simulations that cannot change its answer (branch and
bound); the simulation is :func:`trainsim.simulate`, unchanged, so a search reports exactly
what ``trainsim simulate`` would for the same configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainsim.search.space import Base, Candidate, MemoryKey
from trainsim.simulator import simulate

BOUND_SAFETY = 0.97
"""The bound is scaled by this so that rounding or a later, slightly faster compute model
cannot make it exceed a simulated time (tests check bound <= simulation)."""


def lower_bound_s(key: MemoryKey, base: Base) -> float:
    """A lower bound on the iteration time, from matmul FLOPs alone (no simulation).

    Every GEMM runs at most at the GPU's sustained matmul ceiling (``GPUSpec.gemm_ceiling``,
    the fastest rate any op reaches in the roofline model). The last pipeline stage runs the
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
    rate = max(gpu.gemm_ceiling(t.dtype), gpu.gemm_ceiling("bf16"))
    tokens = key.micro_batch * t.seq_length / key.cp
    h = m.hidden_size
    mats = 3 if m.activation == "swiglu" else 2
    layer_params = h * (m.q_size + 2 * m.kv_size) + m.q_size * h + mats * h * m.ffn_size
    per_layer = (8.0 if key.recompute == "full" else 6.0) * layer_params * tokens / key.tp
    head = 6.0 * m.vocab_size * h * tokens / key.tp
    n_micro = t.global_batch_size // (key.dp * key.micro_batch)
    layers = m.num_layers // key.pp
    last_stage = n_micro * (layers * per_layer + head)
    fill_drain = (key.pp - 1) * (layers // key.vpp) * per_layer
    return BOUND_SAFETY * (last_stage + fill_drain) / rate


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


__all__ = ["BOUND_SAFETY", "Evaluation", "evaluate", "evaluate_batch", "lower_bound_s"]
