"""Memory of one rank at its peak: :func:`estimate_stage_memory` (and the floor the search
prunes with, :func:`peak_floor`).

Activations are one layer's (``memory.layer_activations``, Korthikanti et al. 2022) times the
micro-batches and model chunks the pipeline schedule holds in flight at the peak, plus the
embedding, head and loss; then the backward's temporaries and the pipelining buffers.

Model state per parameter (Megatron ``--bf16``, Adam): 2 bytes of 16-bit weights, 4 of fp32
main gradients (``grad_reduce_in_fp32``), 12 of fp32 master weights and two moments; the
distributed optimizer / ZeRO-1 shards the 12 over data-parallel ranks, ZeRO-2 also the
gradients, ZeRO-3 also the weights (Rajbhandari et al. 2020, §5; ``memory.state``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.config.hybrid import layer_kind, main_pattern, mtp_layer_indices
from trainsim.memory import params
from trainsim.memory.allocator import (
    ReplayedReserve,
    context_bytes,
    freed_logits_hole,
    replayed_reserve,
    reserved_bytes,
)
from trainsim.memory.free_of import cache_clear as free_of_clear
from trainsim.memory.free_of import zero_free
from trainsim.memory.hf import autocast_fp32_params
from trainsim.memory.layer_activations import activation_bytes_per_layer
from trainsim.memory.moe_titan import combine_backward_bytes, shape_of
from trainsim.memory.mtp import loss_logit_sets, mtp_head_bytes
from trainsim.memory.ring_attention import ring_backward_bytes
from trainsim.memory.saved_inputs import gemm_input_bytes
from trainsim.memory.state import ModelState, model_state
from trainsim.workload.head import cross_entropy_impl, deferred_wgrad_bytes
from trainsim.workload.moe_block import titan_style
from trainsim.workload.pipeline_schedules import rank_chunks
from trainsim.workload.schedule import (
    combined_1f1b,
    microbatch_group,
    schedule_peak_in_flight,
    torch_warmup,
)
from trainsim.workload.shard import kv_repeated
from trainsim.workload.vocab import rank_vocab

GiB = 2**30
MEMORY_KINDS = ("allocated", "reserved", "device")
"""What a published memory figure counts (validation README ``memory_kind``)."""


@functools.lru_cache(maxsize=4096)
def _peak_chunks(stage: int, pp: int, vpp: int, m: int, name: str | None = None,
                 torch: bool = False, group: int | None = None) -> float:
    """Peak number of model chunks whose activations are alive, from the actual schedule
    (``name``: parallel.pipeline_schedule; ``torch``: torch's interleaved warm-up; ``group``:
    the interleaved order's micro-batch group size, ``workload.schedule.microbatch_group``)."""
    return schedule_peak_in_flight(stage, pp, vpp, m, name, torch, group=group)


@functools.lru_cache(maxsize=4096)
def _peak_weighted(stage: int, pp: int, vpp: int, m: int, name: str | None, torch: bool,
                   chunk_bytes: tuple[float, ...], group: int | None) -> float:
    """:func:`_peak_chunks` where the chunks keep different bytes (``chunk_bytes``, by chunk):
    memory groups that differ only in what activations do not depend on ask the same."""
    return schedule_peak_in_flight(stage, pp, vpp, m, name, torch, dict(enumerate(chunk_bytes)),
                                   group)


@dataclass(frozen=True)
class MemoryBreakdown:
    """One rank's memory at its peak moment, in bytes.

    ``allocated`` (live tensors, what ``torch.cuda.max_memory_allocated`` reports) is weights +
    gradients + optimizer + activations + buffers; ``reserved`` adds what the caching allocator
    holds beyond that; ``device`` adds the CUDA context (what nvidia-smi shows). ``total`` must
    fit in HBM: the allocated peak plus the context (the allocator frees cached blocks first)."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    buffers: float
    """Framework buffers and temporaries alive at the peak (see ``temporaries``)."""
    context: float = 0.0
    """CUDA context, library kernels and workspaces: outside PyTorch's allocator."""
    cached: float = 0.0
    """Reserved by the caching allocator beyond the allocated peak (freed blocks it keeps)."""
    peak_at: str = ""
    """When in the iteration the allocated peak happens."""
    temporaries: tuple[tuple[str, float], ...] = ()
    """The buffers counted in ``buffers``, largest first."""
    replayed: ReplayedReserve | None = field(default=None, compare=False, repr=False)
    """Megatron-core's reserve (``memory.megatron_step``), computed when ``reserved`` is read;
    ``cached`` leaves it out."""

    @property
    def allocated(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.buffers

    @property
    def reserved(self) -> float:
        base = self.allocated + self.cached
        return base if self.replayed is None else max(base, self.replayed.bytes())

    @property
    def device(self) -> float:
        return self.reserved + self.context

    @property
    def total(self) -> float:
        return self.allocated + self.context

    def of_kind(self, kind: str) -> float:
        """The figure a measurement of ``kind`` (allocated, reserved, device) compares with."""
        if kind not in MEMORY_KINDS:
            raise ValueError(f"memory kind {kind!r} is not allocated, reserved or device")
        return float(getattr(self, kind))


_LAYER_BYTES: dict[int, tuple[RunConfig, dict[tuple[bool | str, bool, bool], float]]] = {}
"""A layer's activation bytes by config identity, then by (routed experts, recomputed whole),
each kept with its config (an identity is never reused while kept): every stage of a memory
check asks the same (cleared when it reaches ``_LAYER_BYTES_KEPT`` configs)."""
_LAYER_BYTES_KEPT = 4096


def _layer_bytes_kept(cfg: RunConfig) -> dict[tuple[bool | str, bool, bool], float]:
    hit = _LAYER_BYTES.get(id(cfg))
    if hit is None or hit[0] is not cfg:
        if len(_LAYER_BYTES) >= _LAYER_BYTES_KEPT:
            _LAYER_BYTES.clear()
        hit = _LAYER_BYTES[id(cfg)] = (cfg, {})
    return hit[1]


def cache_clear() -> None:
    """Forget every answer the memory estimate keeps across calls (a layer's activation bytes,
    the schedules' peaks, the stages' parameter splits), like ``memo.per_config``'s hook: the
    kept answers are those computed afresh (tests/test_memory_caches.py)."""
    _LAYER_BYTES.clear()
    free_of_clear()
    _peak_chunks.cache_clear()
    _peak_weighted.cache_clear()
    params.cache_clear()


def _activations(cfg: RunConfig, stage: int) -> float:
    """Bytes of the micro-batches in flight at the peak on one rank of ``stage``."""
    p, m = cfg.parallel, cfg.model
    kept = _layer_bytes_kept(cfg)  # by (routed experts, recomputed whole, kept in bf16)
    bf16 = cfg.bf16_layers

    def layer_bytes(i: int, main: bool = True) -> float:
        # main: a decoder layer (its bf16 by index); False: an MTP depth's, in the run's dtype
        key = (layer_kind(m, i), i in cfg.recomputed_layers, main and i in bf16)
        if key not in kept:
            mode = "full" if key[1] else ("none" if p.recompute == "full" else p.recompute)
            c = replace(cfg, training=replace(cfg.training, dtype="bf16")) if key[2] else cfg
            kept[key] = activation_bytes_per_layer(c, recompute=mode, moe=key[0])
        return kept[key]

    ranges = cfg.virtual_stage_layers()
    held = rank_chunks(p.pipeline_schedule, stage, p.pp, p.vpp)  # virtual stage of each chunk
    # with CPU offloading the first N layers' activations leave the GPU (memory.offload)
    gone = range(p.cpu_offloading_num_layers)
    rec = cfg.recomputed_layers
    if m.num_experts is None and m.hybrid_layer_pattern is None and not gone and not bf16 and (
            not rec or len(rec) == sum(map(len, ranges))):
        # every layer keeps the same bytes (none or all recomputed): the same sums, added in
        # the same order, without a call per layer
        first = next((r[0] for r in (ranges[v] for v in held) if r), None)
        one = [] if first is None else [layer_bytes(first)]
        chunk_bytes = [sum(one * len(ranges[v])) for v in held]
    else:
        chunk_bytes = [sum(layer_bytes(i) for i in ranges[v] if i not in gone) for v in held]
    if len(ranges) - 1 in held and m.mtp_num_layers:  # MTP depths follow the last layers
        chunk_bytes[held.index(len(ranges) - 1)] += m.mtp_num_layers * sum(
            layer_bytes(i, False) for i in mtp_layer_indices(m)) + mtp_head_bytes(cfg, gemm_input_bytes(cfg))  # memory.mtp
    if len(ranges) - 1 in held:  # the head, which no layer checkpoint covers: the final norm
        # keeps its 16-bit input and the output GEMM its 16-bit input (the norm's output; under
        # sequence parallelism Megatron's linear saves the sharded input and gathers it again
        # in the backward: tensor_parallel/layers.py LinearWithGradAccumulationAndAsync
        # Communication ``ctx.save_for_backward(input, weight)``)
        tokens = cfg.training.micro_batch_size * cfg.training.seq_length / p.cp
        sp = p.tp if p.sequence_parallel else 1
        gemm_in = 2.0 * (sp if profile_supports(cfg, "sp_gathered_gemm_inputs") else 1)  # (DTensor SP)
        # under autocast on fp32 parameters the final norm keeps its fp32 input and fp32
        # normalized tensor and the output layer its 16-bit cast of the norm's output
        # (memory.hf.AUTOCAST_PER_TOKEN): 4 + 4 + 2
        norm = 8.0 if autocast_fp32_params(cfg) else 2.0
        chunk_bytes[held.index(len(ranges) - 1)] += tokens * m.hidden_size * (norm + gemm_in) / sp
    if 0 in held:  # the embedding output's dropout mask and the embedding norm's input,
        # kept beside the first layer's (no layer checkpoints them)
        per = (1.0 if m.hidden_dropout > 0 else 0.0) + (2.0 if m.embedding_norm else 0.0)
        tokens = cfg.training.micro_batch_size * cfg.training.seq_length / p.cp
        sp = p.tp if p.sequence_parallel else 1
        chunk_bytes[held.index(0)] += tokens * m.hidden_size * per / sp
    if p.data_parallel_impl == "deepspeed" and p.pp > 1 and stage < p.pp - 1:
        # DeepSpeed's PipelineEngine keeps each in-flight micro-batch's stage output in its
        # pipe buffers until that micro-batch's backward, as a 1/tp slice when tp > 1
        # (deepspeed/runtime/pipe/engine.py _exec_forward_pass, v0.5.10-v0.6.0)
        out = 2.0 * cfg.training.micro_batch_size * cfg.training.seq_length / p.cp \
            * m.hidden_size / p.tp
        chunk_bytes = [b + out for b in chunk_bytes]
    if p.pp > 1 and profile_supports(cfg, "pipelining_buffers"):
        # torch.distributed.pipelining keeps each in-flight micro-batch's stage output in
        # ``fwd_cache`` until that micro-batch's backward pops it (stage.py
        # ``forward_one_chunk``, torch 2.5-2.6): the last layer's output, which no layer saves
        # (the last stage's outputs are counted in ``_pipelining_buffers``); its first
        # layer's saved input is the stage's per-micro-batch receive buffer
        # (``_retrieve_recv_activations`` hands the preallocated buffer itself to the
        # forward), which ``_pipelining_buffers`` counts already
        last = p.pp * p.vpp - 1
        out = 2.0 * cfg.training.micro_batch_size * cfg.training.seq_length / p.cp \
            * m.hidden_size / (p.tp if p.sequence_parallel else 1)
        chunk_bytes = [b + (out if v != last else 0.0) - (min(out, b) if v != 0 else 0.0)
                       for b, v in zip(chunk_bytes, held)]
    if len(set(chunk_bytes)) == 1:
        inflight = _peak_chunks(stage, p.pp, p.vpp, cfg.schedule_microbatches,
                                p.pipeline_schedule, torch_warmup(cfg),
                                microbatch_group(cfg)) * chunk_bytes[0]
    else:
        inflight = _peak_weighted(stage, p.pp, p.vpp, cfg.schedule_microbatches,
                                  p.pipeline_schedule, torch_warmup(cfg), tuple(chunk_bytes),
                                  microbatch_group(cfg))
    if _a2a_overlap_extra_forward(cfg):
        # the combined step pairs one micro-batch's forward layer k with another's backward
        # layer L-1-k (core_v0.15.0 models/common/model_chunk_schedule_plan.py run:
        # "forward_layer[0] + backward_layer[3]", ...), each backward freeing what the forward
        # adds: one layer beyond the chunks in flight (which, with interleaving, include the
        # extra warm-up forward: the plain 1F1B peak's forward-before-backward)
        inflight += max((layer_bytes(i) for v in held for i in ranges[v] if i not in gone),
                        default=0.0)
    return inflight


def _a2a_overlap_extra_forward(cfg: RunConfig) -> bool:
    """Whether Megatron-core's expert all-to-all overlap runs one more forward ahead of the
    backwards: its combined 1F1B step runs the forward of the next micro-batch beside the
    backward of an earlier one, so the interleaved schedule adds one warm-up forward
    (megatron/core/pipeline_parallel/schedules.py get_pp_rank_microbatches: "we schedule one
    extra micro-batch forward step before the 1f1b stages", taking the place of the plain
    1F1B's forward ahead of each backward) and without pipelining
    (combined_1f1b_schedule_for_no_pipelining) the two micro-batches of a combined step trade
    layers, so only one layer more is alive. The time path pairs passes by the same rule
    (``combined_1f1b``; Megatron-core requires interleaving for it when pp > 1,
    transformer_config.py, which ``ParallelConfig`` checks)."""
    return combined_1f1b(cfg) and cfg.schedule_microbatches > 1


def _loss_temporary(cfg: RunConfig) -> float:
    """Bytes the last stage's loss holds at its backward beyond the micro-batches in flight:
    16-bit logits and fp32 softmax of the (vocab-parallel) cross-entropy."""
    p, t = cfg.parallel, cfg.training
    T = t.micro_batch_size * t.seq_length / p.cp
    # (HF's loss upcasts the logits: at its backward the 16-bit logits, the saved fp32
    # log-softmax and the fp32 and 16-bit gradients of the logits are alive: 2+4+4+2).
    # A compiled loss fuses the upcast, log-softmax and NLL: it saves the 16-bit logits
    # (and a log-sum-exp per token) and its backward writes the 16-bit gradient: 2+2
    # Under DTensor's loss_parallel (torch/distributed/tensor/parallel/loss.py) the eager
    # backward is decomposed: beside the saved fp32 log-softmax it makes zeros_like,
    # exp and their sum before the product with the incoming gradient: 4+4+4+4
    if t.modules == "eager" and t.compile and profile_supports(cfg, "compiled_loss"):
        # (the saved logits are the stage output that pipelining keeps: counted there)
        per = 2 if p.pp > 1 and profile_supports(cfg, "pipelining_buffers") else 2 + 2
    elif t.modules == "eager" and p.tp > 1 and profile_supports(cfg, "loss_parallel"):
        per = 16
    elif cross_entropy_impl(cfg) == "te":  # the 16-bit logits hold their own gradient
        per = 2
    elif cross_entropy_impl(cfg) == "flash_attn":  # 16-bit logits and their new gradient
        per = 2 + 2
    elif cross_entropy_impl(cfg) == "unfused" and profile_supports(cfg, "ce_shift_copy"):
        # Megatron's loss before 9634c0e4a3 (2024-06-13): its forward holds the 16-bit logits,
        # the caller's fp32 copy (``logits.float()``) and the out-of-place shifted fp32 logits
        # (``vocab_parallel_logits - logits_max``), more than its backward's 16-bit gradient
        # beside the fp32 softmax (2 + 4), with the same activations alive
        per = 2 + 4 + 4
    else:
        per = 12 if t.modules == "eager" else 2 + 4
    return T * rank_vocab(cfg) * per * loss_logit_sets(cfg)  # MTP's too (memory.mtp)


def _backward_temporaries(cfg: RunConfig, stage: int) -> list[tuple[str, float]]:
    """Activation buffers alive beside the in-flight ones at the backward's peak."""
    p, m = cfg.parallel, cfg.model
    temps: list[tuple[str, float]] = []
    if stage == p.pp - 1:
        temps.append(("logits and fp32 softmax", _loss_temporary(cfg)))
    if p.recompute == "full":  # one layer's full activations live during its backward
        layer = activation_bytes_per_layer(cfg, recompute="none", moe=m.is_moe) \
            if m.hybrid_layer_pattern is None else \
            max(activation_bytes_per_layer(cfg, recompute="none", moe=k)
                for k in sorted(set(main_pattern(m))))  # the largest kind's
        temps.append(("recomputed layer", layer))
    if profile_supports(cfg, "cp_sdpa_ring"):  # torch's ring attention: memory.ring_attention
        sp = p.tp if p.sequence_parallel else 1  # the norm's and the QKV GEMM's inputs
        block_inputs = m.hidden_size * (2 / sp + gemm_input_bytes(cfg) * (
            1 if profile_supports(cfg, "sp_gathered_gemm_inputs") else 1 / sp))
        ring = ring_backward_bytes(cfg, kv_repeated(cfg), block_inputs)
        if ring:
            temps.append(("ring attention backward (K/V, fp32 dQ/dK/dV)", ring))
    titan = titan_style(cfg) if m.is_moe and gemm_input_bytes(cfg) == 2 else ""
    if titan:  # torchtitan's MoE combine: its fp32 gradients (memory.moe_titan)
        temps.append(("torchtitan MoE combine backward (fp32 gradients)",
                      combine_backward_bytes(titan, shape_of(cfg))))
    # the loss backward, a recomputed layer's backward and its attention's do not overlap:
    # the larger one counts
    return [max(temps, key=lambda x: x[1])] if temps else []


def _backward_moment(cfg: RunConfig, temps: list[tuple[str, float]]) -> str:
    """Where in the backward the peak falls: at the loss (its logits and softmax are the
    largest temporary), while a layer is recomputed, or in a layer's backward; with pipeline
    parallelism in the schedule's steady state, when the most micro-batches are in flight."""
    p = cfg.parallel
    what = temps[0][0] if temps else ""
    at = (", at the loss" if what.startswith("logits") else
          ", recomputing a layer" if what == "recomputed layer" else
          ", in a ring attention's backward" if what.startswith("ring attention") else
          ", in a MoE combine's backward" if what.startswith("torchtitan MoE") else "")
    if p.pp == 1:
        return f"backward{at}"
    return f"backward{at} ({p.pipeline_schedule or '1F1B'} steady state)"


def _pipelining_buffers(cfg: RunConfig, stage: int) -> tuple[list[tuple[str, float]],
                                                              list[tuple[str, float]]]:
    """torch.distributed.pipelining's per-micro-batch buffers on one rank (profile feature
    ``pipelining_buffers``): each pipeline stage object allocates, before the first step and for
    good, a receive buffer per micro-batch for its input activations (all but the first stage;
    stage.py ``PipelineStage._prepare_forward_infra``) and one for its output gradients (all but
    the last; ``_create_grad_recv_info`` via ``_prepare_backward_infra``); the last stage keeps
    every micro-batch's output (the 16-bit logits) in ``output_chunks`` until the step returns
    them. Returns (receive buffers, kept outputs)."""
    p, t, m = cfg.parallel, cfg.training, cfg.model
    if p.pp == 1 or not profile_supports(cfg, "pipelining_buffers"):
        return [], []
    n = cfg.schedule_microbatches
    held = rank_chunks(p.pipeline_schedule, stage, p.pp, p.vpp)
    last = p.pp * p.vpp - 1
    tokens = t.micro_batch_size * t.seq_length / p.cp
    boundary = 2.0 * tokens * m.hidden_size / (p.tp if p.sequence_parallel else 1)
    ends = sum(v != 0 for v in held) + sum(v != last for v in held)
    recv = [("pipelining receive buffers (per micro-batch)", n * ends * boundary)]
    outputs = [("last stage's outputs kept for the step", n * 2.0 * tokens * rank_vocab(cfg))] \
        if last in held else []
    return recv, outputs


def _grads_at_backward(cfg: RunConfig, state: ModelState) -> float:
    """Gradient bytes alive at the backward's peak: none where the loop frees them after each
    step (``ModelState.grads_freed``) and the step has one micro-batch and no pipeline (the
    peak is at the loss, before the first gradient is made; the backward then trades freed
    activations for new gradients, and its end, every gradient and no activation, is the
    step's peak less the step's buffers); else all of them (accumulated from the first
    micro-batch on)."""
    if state.grads_freed and cfg.parallel.pp == 1 and cfg.schedule_microbatches == 1:
        return 0.0
    return state.gradients


def _layer_copies_kept(cfg: RunConfig, state: ModelState) -> float:
    """Share of ``ModelState.layer_copies`` alive at the backward's peak: the layers that are
    not recomputed keep theirs (a checkpoint keeps only its input)."""
    if not state.layer_copies:
        return 0.0
    n = cfg.model.num_layers
    return (n - len(cfg.recomputed_layers)) / n if n else 1.0


def _forward_loss_buffers(cfg: RunConfig, stage: int, state: ModelState,
                          kept: float) -> list[tuple[str, float]]:
    """The buffers of the forward's peak at the loss where recompute lets the backward drop the
    layers' weight copies (``_layer_copies_kept`` below 1): every copy still cached by autocast,
    and the HF loss's forward buffers (16-bit logits, their fp32 upcast, the fp32 log-softmax:
    2 + 4 + 4 bytes a logit, where the backward holds 12: ``_loss_temporary``). Only the plain
    PyTorch loop (``memory.hf.autocast_fp32_params``) has such copies: elsewhere none."""
    if kept >= 1.0 or stage != cfg.parallel.pp - 1 or not autocast_fp32_params(cfg):
        return []
    return list(state.persistent) + list(state.backward) + list(state.layer_copies) \
        + [("logits, fp32 upcast and log-softmax (forward)", _loss_temporary(cfg) * 10 / 12)]


def estimate_stage_memory(cfg: RunConfig, stage: int) -> MemoryBreakdown:
    """Peak memory of one rank of pipeline stage ``stage``: the larger of the backward's peak
    (model state, the micro-batches in flight, the loss or a recomputed layer, the framework's
    backward buffers) and the optimizer step's (model state and the step's buffers)."""
    state, base, inflight = _unbuffered(cfg, stage)
    recv, outputs = _pipelining_buffers(cfg, stage)
    temporaries = _backward_temporaries(cfg, stage)
    kept = _layer_copies_kept(cfg, state)
    copies = [(n, b * kept) for n, b in state.layer_copies if b * kept > 0]
    # the last stage's deferred output-layer wgrad inputs (``deferred_wgrad``): all of them
    # counted beside the steady state's micro-batches in flight (an upper bound: the buffer
    # fills as the backwards go, full only once the last deferred one has run)
    held = [("deferred output-layer wgrad inputs", deferred_wgrad_bytes(cfg))] \
        if stage == cfg.parallel.pp - 1 and deferred_wgrad_bytes(cfg) else []
    outputs = outputs + held
    backward = list(state.persistent) + list(state.backward) + copies + temporaries + recv \
        + outputs
    grads_bwd = _grads_at_backward(cfg, state)
    bwd_base = base - state.gradients + grads_bwd
    backward_peak = bwd_base + inflight + sum(b for _, b in backward)
    moment = _backward_moment(cfg, temporaries)
    forward = _forward_loss_buffers(cfg, stage, state, kept)
    if forward and (forward_peak := bwd_base + inflight + sum(b for _, b in forward + recv
                                                               + outputs)) > backward_peak:
        # the forward at the loss, every weight copy cached
        backward_peak, moment, backward = forward_peak, "forward, at the loss", \
            forward + recv + outputs
    step = list(state.persistent) + list(state.step) + recv
    held_at_step = state.gradients if state.step_gradients is None else state.step_gradients
    step_peak = base - state.gradients + held_at_step + sum(b for _, b in step)
    step_only = sum(b for _, b in state.step)
    if backward_peak >= step_peak:
        grads, activations, temps, peak_at = grads_bwd, inflight, backward, moment
    else:
        grads, activations, temps, peak_at = held_at_step, 0.0, step, "optimizer step"
    reserved = reserved_bytes(cfg, backward_peak, step_peak, step_only, state.side_pool,
                              state.grad_pool)
    hole = freed_logits_hole(cfg, stage)
    if hole:  # reserved at the loss's backward: what is allocated then, plus the free hole
        at_loss = backward_peak - sum(b for _, b in temporaries) + _loss_temporary(cfg)
        reserved = max(reserved, at_loss + hole + state.side_pool + state.grad_pool)
    return MemoryBreakdown(
        state.weights, grads, state.optimizer, activations,
        sum(b for _, b in temps), context=context_bytes(cfg, stage),
        cached=reserved - max(backward_peak, step_peak), peak_at=peak_at,
        temporaries=tuple(sorted(temps, key=lambda x: -x[1])),
        replayed=replayed_reserve(cfg, stage, backward_peak, step_peak, state.side_pool,
                                  state.grad_pool))


def _unbuffered(cfg: RunConfig, stage: int) -> tuple[ModelState, float, float]:
    """(state, weights + gradients + optimizer, in flight): the backward peak less its buffers."""
    state = model_state(cfg, stage)  # (the activations: the same for every optimizer sharding)
    return state, state.weights + state.gradients + state.optimizer, zero_free(_activations, cfg, stage)


def peak_floor(cfg: RunConfig, stage: int) -> float:
    """What :func:`estimate_stage_memory`'s ``total`` is never below: the backward's peak less its
    buffers (none negative), plus the context; ``search.waves`` bounds a group's headroom by it."""
    state, base, inflight = _unbuffered(cfg, stage)
    return base - state.gradients + _grads_at_backward(cfg, state) + inflight \
        + context_bytes(cfg, stage)


__all__ = [
    "MEMORY_KINDS",
    "GiB",
    "MemoryBreakdown",
    "activation_bytes_per_layer",
    "cache_clear",
    "estimate_stage_memory",
    "peak_floor",
]
