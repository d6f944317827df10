"""The matmul-FLOP lower bound on a search candidate's iteration time (:func:`lower_bound_s`):
no simulation, every GEMM at the fastest rate the roofline gives, attention, memory-bound
kernels and communication left out. ``search.lower_bounds`` re-exports it beside the bounds
priced from the simulator's own passes (``Bounds``).
"""

from __future__ import annotations

from trainsim.compute.roofline import gemm_rate
from trainsim.config.hybrid import main_pattern
from trainsim.search.space import Base, MemoryKey
from trainsim.workload.ops import Gemm
from trainsim.workload.vocab import padded_size, vocab_divisor

BOUND_SAFETY = 0.97
"""The FLOP bound is scaled by this so that rounding or a later, slightly faster compute model
cannot make it exceed a simulated time (tests check bound <= simulation)."""

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
    # the logit layer of the vocabulary the run builds (padded as the simulator prices it)
    head = 6.0 * padded_size(m.vocab_size, key.tp, vocab_divisor(t)) * h * tokens / key.tp
    n_micro = t.global_batch_size // (key.dp * key.micro_batch)
    if m.hybrid_layer_pattern is not None:  # layers of unlike work: the busiest stage's share
        return BOUND_SAFETY * _hybrid_flops(key, base, tokens, head, n_micro) / rate
    layers = m.num_layers // key.pp
    if m.num_layers % key.pp:  # a balanced layout: the embedding and loss take a layer's place
        layers = max(0, layers - 2)
    last_stage = n_micro * (layers * per_layer + head)
    fill_drain = (key.pp - 1) * (layers // key.vpp) * per_layer
    if key.schedule:  # other schedules move the head and fill the bubble differently
        last_stage, fill_drain = n_micro * layers * per_layer, 0.0
    return BOUND_SAFETY * (last_stage + fill_drain) / rate


def _hybrid_flops(key: MemoryKey, base: Base, tokens: float, head: float, n_micro: int
                  ) -> float:
    """Matmul FLOPs of a hybrid model's busiest pipeline rank: each layer's by its one block
    (Mamba-2's in_proj and out_proj, attention's QKV and output projections, the MLP's, the MoE
    block's top-k experts), the whole model's and head's divided evenly over the pp ranks (the
    busiest holds at least the mean, whatever the layout and schedule; no fill or drain)."""
    from trainsim.config.hybrid import ATTENTION, MAMBA, MLP, MOE
    from trainsim.model.mamba import in_proj_width, inner

    m, h = base.model, base.model.hidden_size
    mats = 3 if m.activation == "swiglu" else 2
    params = {MAMBA: h * in_proj_width(m) + inner(m) * h if MAMBA in m.hybrid_layer_pattern
              else 0,
              ATTENTION: h * (m.q_size + 2 * m.kv_size) + m.q_size * h, MLP: mats * h * m.ffn_size,
              MOE: m.moe_router_topk * mats * m.expert_input_size * m.expert_ffn_size}
    per_param = (8.0 if key.recompute == "full" else 6.0) * tokens / key.tp
    layers = sum(params[k] for k in main_pattern(m)) * per_param  # MTP depths left out
    return n_micro * (layers + head) / key.pp


__all__ = ["BOUND_SAFETY", "lower_bound_s", "peak_gemm_rate"]
