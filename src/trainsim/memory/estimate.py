"""Memory of one rank, following Korthikanti et al. 2022 (arXiv:2205.05198) for activations
and Megatron-LM's mixed-precision layout for model state.

Activations of one layer for one micro-batch (16-bit tensors, 1-byte dropout masks), written
out tensor by tensor so that GQA, SwiGLU, FlashAttention and dropout-free models are covered;
for a GPT layer with dropout and unfused attention it reduces to Table 2 of the paper:
``s b h (34 + 5 a s / h)`` without parallelism, ``s b h (10 + 24/t + 5 a s/(h t))`` with
tensor parallelism, ``s b h / t (34 + 5 a s / h)`` with sequence parallelism, the ``5 a s / h``
term dropped by selective recompute and ``2 s b h`` (``/t`` with SP) under full recompute.

Model state per parameter (Megatron ``--bf16``, Adam): 2 bytes of 16-bit weights, 4 of fp32
main gradients (``grad_reduce_in_fp32``), 12 of fp32 master weights and two moments; the
distributed optimizer / ZeRO-1 shards the 12 over data-parallel ranks, ZeRO-2 also the
gradients, ZeRO-3 also the weights (Rajbhandari et al. 2020, §5).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.memory import hf, params
from trainsim.memory.allocator import context_bytes, freed_logits_hole, reserved_bytes
from trainsim.memory.free_of import cache_clear as free_of_clear
from trainsim.memory.free_of import zero_free
from trainsim.memory.graph_outputs import moe_graph_output_bytes, pre_mlp_norm_recomputed
from trainsim.memory.mla import mla_attention_bytes
from trainsim.memory.mtp import loss_logit_sets, mtp_head_bytes
from trainsim.memory.ring_attention import ring_backward_bytes
from trainsim.memory.saved_inputs import E5M6_SAVED_BYTES, gemm_input_bytes
from trainsim.memory.scores import score_bytes
from trainsim.memory.state import ModelState, model_state
from trainsim.memory.te_spec import norms_fused, qkv_copies
from trainsim.workload.head import cross_entropy_impl
from trainsim.workload.ops import MATERIALIZED_SCORES
from trainsim.workload.pipeline_schedules import rank_chunks
from trainsim.workload.schedule import (
    combined_1f1b,
    microbatch_group,
    schedule_peak_in_flight,
    torch_warmup,
)
from trainsim.workload.shard import kv_repeated, separate_projections

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

    @property
    def allocated(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.buffers

    @property
    def reserved(self) -> float:
        return self.allocated + self.cached

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


def activation_bytes_per_layer(cfg: RunConfig, recompute: str | None = None,
                               moe: bool = False, separate_qkv: bool | None = None) -> float:
    """Bytes one layer keeps for backward, per micro-batch, on one rank (``moe``: a layer with
    routed experts in place of the dense MLP; ``separate_qkv``: whether Q, K and V come from
    three projections, by default as ``workload.shard.separate_projections`` says)."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    recompute = recompute or p.recompute
    if hf.applies(cfg, recompute, moe):  # Hugging Face's modules, as autograd saves them
        return hf.hf_layer_bytes(cfg)
    t, sp = p.tp, p.sequence_parallel
    T = tr.micro_batch_size * tr.seq_length / p.cp  # local tokens
    b, q_len, kv_len = tr.micro_batch_size, tr.seq_length / p.cp, tr.seq_length
    h, q, kv, f = m.hidden_size, m.q_size, m.kv_size, m.ffn_size
    kv_loc = max(kv / t, m.kv_channels)
    mask = 1.0 if m.hidden_dropout > 0 else 0.0
    shared_div = t if sp else 1
    if recompute == "full":
        return 2.0 * T * h / shared_div
    if recompute == "selective" and not moe and not m.is_mla and profile_supports(cfg, "per_op_sac"):
        return _per_op_sac_bytes(cfg)
    x = gemm_input_bytes(cfg)
    # replicated over TP unless sequence parallel: two norm inputs, QKV and FC1 inputs, masks
    # (a parallel block has one norm whose output feeds both QKV and FC1, and one mask)
    per_token = (2 + x + mask) if m.parallel_block else (2 + x + mask + 2 + x + mask)
    if m.post_sublayer_norm:  # each post-sublayer norm keeps its 16-bit input (Gemma 2/3)
        per_token += 2 * 2
    shared = T * h * per_token / shared_div
    # sharded over TP: Q, K, V, attention output (out-proj input), MLP intermediates
    mlp_inner = _inner_bytes(cfg, f)
    # Q, K, V as attention's backward keeps them (measured with saved_tensors_hooks on
    # Megatron-style layers, tests/test_memory_torch.py): slices of the fused QKV output stay
    # views of it; RoPE writes new rotated Q and K; Megatron's unfused attention expands K and V
    # to one head per query head for GQA (repeat_interleave), so those are copies too.
    fused = 2 * (q / t + 2 * kv_loc)
    rope = m.position_embedding == "rope"
    if m.is_mla:  # Q, K (with rotary parts), V per head, the latents, projections' copies
        qkv = mla_attention_bytes(cfg, recompute, x, shared_div)
    elif cfg.training.attention in MATERIALIZED_SCORES and kv_loc < q / t:
        qkv = 2 * q / t * 3 if rope else fused + 2 * 2 * q / t
    elif rope and (separate_projections(cfg) if separate_qkv is None else separate_qkv):
        # three projections (workload.shard.separate_projections): nothing keeps the unrotated Q and K
        # (RoPE's backward needs only its cos/sin tables), so only rotated Q and K and the V
        # projection's output stay: as many bytes as one fused QKV buffer
        qkv = fused
    elif rope and cfg.training.attention not in MATERIALIZED_SCORES and qkv_copies(cfg, recompute):
        # Transformer Engine's attention copies Q, K and V contiguous and saves the copies:
        # the rotated Q and K and V's copy, no fused buffer (memory.te_spec)
        qkv = fused
    else:
        qkv = fused + (2 * (q / t + kv_loc) if rope else 0.0)
    if cfg.training.attention not in MATERIALIZED_SCORES and not m.is_mla and not (
            recompute == "selective" and "core_attn" in (p.recompute_modules or ("core_attn",))):
        qkv += hf.repeated_kv_bytes(cfg, q / t, kv_loc)  # SDPA keeps the copies it was given
    if m.qk_layernorm:  # the per-head q/k norms keep their 16-bit inputs
        qkv += 2 * (q / t + kv_loc)
    # the attention output, the out-projection's GEMM input: under fp8 that GEMM saves its own
    # 8-bit cast (x), while a fused attention kernel also keeps the 16-bit output it wrote for
    # its own backward (TransformerEngine dot_product_attention/backends.py FusedAttnFunc
    # saves ``out`` beside q, k, v unless fp8_dpa; flash-attn saves ``out`` with the
    # log-sum-exp); in 16-bit both save the same tensor. Recomputing core attention keeps only
    # the projection's copy; DeepSeek-V3's one E5M6 copy serves both (attention_output_e5m6)
    out = x
    if x != 2 and tr.attention_output_e5m6:
        out = E5M6_SAVED_BYTES
    elif x != 2 and cfg.training.attention not in MATERIALIZED_SCORES and not (
            recompute == "selective" and "core_attn" in (p.recompute_modules or ("core_attn",))):
        out += 2
    sharded = T * (qkv + out * m.v_dim / t) + T * mlp_inner / t
    heads = m.num_attention_heads / t
    scores = score_bytes(cfg, b, heads, q_len, kv_len, recompute == "selective")
    total = shared + sharded + scores
    if moe:  # swap the dense MLP's tensors for the expert block's
        total += _moe_block_bytes(cfg) - _mlp_block_bytes(cfg, f, shared_div)
        total += moe_graph_output_bytes(cfg)  # a partial CUDA graph's outputs (graph_outputs)
    if recompute == "selective":
        total -= _selective_savings(cfg, moe, T, shared_div)
    return total


def _per_op_sac_bytes(cfg: RunConfig) -> float:
    """Bytes a block keeps under per-op selective checkpointing (torchtitan's ``selective_ac_
    option = 'op'``, parallelize_llama.py): the checkpoint's input, then by the policy the
    outputs of the 1st, 3rd, 5th and 7th ``aten.mm`` of the block (wq, wv, w1, w2 in the order
    the Llama block runs wq, wk, wv, wo, w1, w3, w2), the SDPA output with its fp32
    log-sum-exp, and under sequence parallelism the reduce-scatter outputs of wo and w2; norms,
    RoPE, SiLU and the other matmuls are recomputed. The row-parallel w2's mm output is its
    partial sum over the whole hidden size. Float8 linears save the same: torchao's
    Float8Linear calls ``torch.mm`` on its float8 tensor subclass, and a dispatch mode (the
    checkpoint policy) sees that ``aten.mm`` before the subclass turns it into
    ``_scaled_mm``; the output stays 16-bit.

    Eager, the policy's dispatch mode stores every MUST_SAVE output until the recomputation
    replays it (torch/utils/checkpoint.py ``_CachingTorchDispatchMode``), needed or not; under
    torch.compile the policy only tags the graph, and the min-cut partitioner
    (torch/_functorch/partitioners.py) saves no tensor the backward does not read: the w2
    output (and under SP its reduce-scatter), which only the residual add consumes, is not
    kept (measured, tests/test_memory_torchtitan.py: 3616 -> 3104 B per token)."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    t, sp = p.tp, p.sequence_parallel
    T = tr.micro_batch_size * tr.seq_length / p.cp
    h, q, f = m.hidden_size, m.q_size / t, m.ffn_size / t
    kv = max(m.kv_size / t, m.kv_channels)
    w2_out = 0.0 if tr.compile else 2 * h  # the last block matmul's (partial-sum) output
    per = 2 * h / (t if sp else 1) + 2 * (q + kv + f) + w2_out + 2 * q + 4 * m.num_attention_heads / t
    if t > 1 and sp:  # the reduce-scatter outputs of wo and (eager) w2
        per += 2 * h / t * (1 if tr.compile else 2)
    return T * per


def _selective_savings(cfg: RunConfig, moe: bool, T: float, shared_div: int) -> float:
    """Bytes that Megatron-core's ``--recompute-modules`` frees per layer: each checkpointed
    module keeps its input and drops what it saved inside (``core_attn``'s scores: the attention
    term above). Files cited are Megatron-LM's megatron/core at d98e8a64 (2026-08-22)."""
    m, p = cfg.model, cfg.parallel
    modules = set(p.recompute_modules or ("core_attn",))
    h, t = m.hidden_size, p.tp
    x = gemm_input_bytes(cfg)
    out = 0.0
    if "layernorm" in modules:  # what the norms' outputs fed; the norms' inputs stay
        # (transformer_layer.py: CheckpointWithoutOutput over input_layernorm and
        # pre_mlp_layernorm; under fp8 the linears they feed save the original, discarded,
        # input: set_for_recompute_input_layernorm, set_save_original_input(linear_fc1), and
        # for MoE the shared experts' fc1, moe_layer.py set_for_recompute_pre_mlp_layernorm)
        # the QKV (MLA: down-projection) input; none where the norm is fused into the linear
        # it feeds, which keeps it (memory.te_spec: the FC1 input of a dense layer neither)
        fused_norms = norms_fused(cfg)
        per = 0.0 if fused_norms else x
        if moe and "moe" not in modules:
            # the router's 16-bit input (moe_utils.py RouterGatingLinearFunction
            # ``ctx.save_for_backward(inp, weight, bias)``), the shared experts' fp8 copy; not
            # where a router graph keeps the norm (graph_outputs.pre_mlp_norm_recomputed)
            per += (2 + (x if x != 2 and m.moe_shared_expert_intermediate_size else 0)
                    if pre_mlp_norm_recomputed(cfg) else 0)
        elif not m.parallel_block and not fused_norms:
            per += x  # the FC1 input
        out += T * h * per / shared_div
    if "mla_up_proj" in modules and m.is_mla:  # per-head Q, K, V; the latents stay
        out += T * 2 * (2 * m.qk_dim + m.v_dim) / t
    if "mlp" in modules and not moe:  # the MLP's inner tensors; its input stays
        out += T * _inner_bytes(cfg, m.ffn_size) / t
    if moe and "moe" in modules:  # the whole expert block but its input
        out += _moe_block_bytes(cfg) - T * h * 2 / shared_div
    elif moe:
        if "moe_act" in modules:  # the activation's output (the FC2 input) of every copy
            f = m.expert_ffn_size / p.etp
            freed = x * f
            if (profile_supports(cfg, "recompute_modules") and m.activation == "swiglu"
                    and cfg.training.activation_func_fp8_input_store):
                # Megatron-core's checkpoint keeps its input, the 16-bit FC1 output
                # (random.py CheckpointWithoutOutputFunction: ``_save_args_to_ctx(ctx, args)``;
                # the SwiGLU runs under no_grad, so its fp8 input store saves nothing), and
                # FC2 saves the discarded original (experts.py set_save_original_input)
                freed -= (2 - 1) * 2 * f
            out += _moe_recv(cfg) * p.etp * freed
        if "shared_experts" in modules and m.moe_shared_expert_intermediate_size:
            out += T * _inner_bytes(cfg, m.moe_shared_expert_intermediate_size) / t
    return out


def _inner_bytes(cfg: RunConfig, width: float) -> float:
    """Saved bytes per token of an MLP of inner ``width``: the activation's 16-bit input (both
    halves for SwiGLU; one fp8 byte each with ``activation_func_fp8_input_store``, as
    megatron/core/fusions/fused_bias_swiglu.py saves ``input.to(torch.float8_e4m3fn)``) and its
    output, which is FC2's GEMM input."""
    x = gemm_input_bytes(cfg)
    if cfg.model.activation == "swiglu":
        a = 1.0 if cfg.training.activation_func_fp8_input_store else 2.0
        return a * 2 * width + x * width
    return 2 * width + x * width


def _moe_recv(cfg: RunConfig) -> float:
    """Token copies the busiest expert rank receives per micro-batch (dropless: the imbalance;
    token dropping: at most the capacity, exactly it when padded)."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    T = tr.micro_batch_size * tr.seq_length / p.cp
    routed = (T / p.tp if p.sequence_parallel else T) * m.moe_router_topk
    return routed * m.moe_recv_factor()


def _mlp_block_bytes(cfg: RunConfig, width: float, shared_div: int) -> float:
    """A TP-parallel MLP's saved tensors: norm input, FC1 input, dropout mask, inner tensors."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    T = tr.micro_batch_size * tr.seq_length / p.cp
    mask = 1.0 if m.hidden_dropout > 0 else 0.0
    x = gemm_input_bytes(cfg)
    return T * m.hidden_size * (2 + x + mask) / shared_div + T * _inner_bytes(cfg, width) / p.tp


def _probs_in_expert(cfg: RunConfig) -> bool:
    """Whether the framework applies the routing probabilities inside the expert. A named
    framework says so in its profile; with none named, the MoE block is the one trainsim prices
    (workload/moe_block.py ``MOE_KERNELS``: Megatron-core 0.13's weighted SwiGLU, experts.py
    ``weighted_bias_swiglu_impl(intermediate_parallel, bias_parallel, permuted_probs, ...)``),
    so its memory is that block's too: the probabilities are applied in the expert."""
    return not cfg.training.framework or profile_supports(cfg, "moe_probs_in_expert")


def _moe_block_bytes(cfg: RunConfig) -> float:
    """Saved tensors of the expert block: norm input, router input and probabilities, the
    permuted tokens each expert GEMM saves, the expert inner tensors and the permuted
    probabilities. Since Megatron-core 0.12.1 ("memory efficient token permutation", MR 2668)
    the routing probabilities multiply the expert activation's output inside the expert
    (megatron/core/transformer/moe/experts.py ``weighted_bias_swiglu_impl``, which saves the
    fp32 ``permuted_probs``) and the combine is a plain unpermute that saves no token copies
    (token_dispatcher.py calls ``unpermute`` without probs): the framework profile's
    ``moe_probs_in_expert``. Elsewhere (older Megatron-core, Hugging Face's loop over experts)
    the combine weighs each expert's output by its probability and keeps those copies."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    T = tr.micro_batch_size * tr.seq_length / p.cp
    tokens = T / p.tp if p.sequence_parallel else T
    h = m.hidden_size
    recv = _moe_recv(cfg)
    x = gemm_input_bytes(cfg)
    inner = _inner_bytes(cfg, m.expert_ffn_size / p.etp)
    out = tokens * h * 2 * 2 + tokens * (m.num_experts or 0) * 4  # norm + router in, probs
    out += recv * p.etp * (x * h + inner + 4)  # expert inputs and inner tensors, probs
    if not _probs_in_expert(cfg):
        out += recv * p.etp * 2 * h  # the combine's weighted copies of the expert outputs
    if m.moe_shared_expert_intermediate_size:
        shared = m.moe_shared_expert_intermediate_size
        sp = p.tp if p.sequence_parallel else 1
        # its FC1 input is the router's input in 16-bit; under fp8 its own quantized copy
        out += T * h * (x if x != 2 else 0.0) / sp + T * _inner_bytes(cfg, shared) / p.tp
    return out


_LAYER_BYTES: dict[int, tuple[RunConfig, dict[tuple[bool, bool], float]]] = {}
"""A layer's activation bytes by config identity, then by (routed experts, recomputed whole),
each kept with its config (an identity is never reused while kept): every stage of a memory
check asks the same (cleared when it reaches ``_LAYER_BYTES_KEPT`` configs)."""
_LAYER_BYTES_KEPT = 4096


def _layer_bytes_kept(cfg: RunConfig) -> dict[tuple[bool, bool], float]:
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
    kept = _layer_bytes_kept(cfg)  # by (routed experts, recomputed whole)

    def layer_bytes(i: int) -> float:
        key = (m.is_moe_layer(i), i in cfg.recomputed_layers)
        if key not in kept:
            mode = "full" if key[1] else ("none" if p.recompute == "full" else p.recompute)
            kept[key] = activation_bytes_per_layer(cfg, recompute=mode, moe=key[0])
        return kept[key]

    ranges = cfg.virtual_stage_layers()
    held = rank_chunks(p.pipeline_schedule, stage, p.pp, p.vpp)  # virtual stage of each chunk
    # with CPU offloading the first N layers' activations leave the GPU (memory.offload)
    gone = range(p.cpu_offloading_num_layers)
    rec = cfg.recomputed_layers
    if m.num_experts is None and not gone and (not rec or len(rec) == sum(map(len, ranges))):
        # every layer keeps the same bytes (none or all recomputed): the same sums, added in
        # the same order, without a call per layer
        first = next((r[0] for r in (ranges[v] for v in held) if r), None)
        one = [] if first is None else [layer_bytes(first)]
        chunk_bytes = [sum(one * len(ranges[v])) for v in held]
    else:
        chunk_bytes = [sum(layer_bytes(i) for i in ranges[v] if i not in gone) for v in held]
    if len(ranges) - 1 in held and m.mtp_num_layers:  # MTP depths follow the last layers
        chunk_bytes[held.index(len(ranges) - 1)] += m.mtp_num_layers * layer_bytes(
            m.num_layers - 1) + mtp_head_bytes(cfg, gemm_input_bytes(cfg))  # memory.mtp
    if len(ranges) - 1 in held:  # the head, which no layer checkpoint covers: the final norm
        # keeps its 16-bit input and the output GEMM its 16-bit input (the norm's output; under
        # sequence parallelism Megatron's linear saves the sharded input and gathers it again
        # in the backward: tensor_parallel/layers.py LinearWithGradAccumulationAndAsync
        # Communication ``ctx.save_for_backward(input, weight)``)
        tokens = cfg.training.micro_batch_size * cfg.training.seq_length / p.cp
        sp = p.tp if p.sequence_parallel else 1
        gemm_in = 2.0 * (sp if profile_supports(cfg, "sp_gathered_gemm_inputs") else 1)  # (DTensor SP)
        chunk_bytes[held.index(len(ranges) - 1)] += tokens * m.hidden_size * (2 + gemm_in) / sp
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
    p, t, m = cfg.parallel, cfg.training, cfg.model
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
    else:
        per = 12 if t.modules == "eager" else 2 + 4
    return T * m.vocab_size / p.tp * per * loss_logit_sets(cfg)  # MTP's too (memory.mtp)


def _backward_temporaries(cfg: RunConfig, stage: int) -> list[tuple[str, float]]:
    """Activation buffers alive beside the in-flight ones at the backward's peak."""
    p, m = cfg.parallel, cfg.model
    temps: list[tuple[str, float]] = []
    if stage == p.pp - 1:
        temps.append(("logits and fp32 softmax", _loss_temporary(cfg)))
    if p.recompute == "full":  # one layer's full activations live during its backward
        temps.append(("recomputed layer", activation_bytes_per_layer(cfg, recompute="none",
                                                                       moe=m.is_moe)))
    if profile_supports(cfg, "cp_sdpa_ring"):  # torch's ring attention: memory.ring_attention
        sp = p.tp if p.sequence_parallel else 1  # the norm's and the QKV GEMM's inputs
        block_inputs = m.hidden_size * (2 / sp + gemm_input_bytes(cfg) * (
            1 if profile_supports(cfg, "sp_gathered_gemm_inputs") else 1 / sp))
        ring = ring_backward_bytes(cfg, kv_repeated(cfg), block_inputs)
        if ring:
            temps.append(("ring attention backward (K/V, fp32 dQ/dK/dV)", ring))
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
          ", in a ring attention's backward" if what.startswith("ring attention") else "")
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
    outputs = [("last stage's outputs kept for the step", n * 2.0 * tokens * m.vocab_size / p.tp)] \
        if last in held else []
    return recv, outputs


def estimate_stage_memory(cfg: RunConfig, stage: int) -> MemoryBreakdown:
    """Peak memory of one rank of pipeline stage ``stage``: the larger of the backward's peak
    (model state, the micro-batches in flight, the loss or a recomputed layer, the framework's
    backward buffers) and the optimizer step's (model state and the step's buffers)."""
    state, base, inflight = _unbuffered(cfg, stage)
    recv, outputs = _pipelining_buffers(cfg, stage)
    temporaries = _backward_temporaries(cfg, stage)
    backward = list(state.persistent) + list(state.backward) + temporaries + recv + outputs
    step = list(state.persistent) + list(state.step) + recv
    backward_peak = base + inflight + sum(b for _, b in backward)
    held_at_step = state.gradients if state.step_gradients is None else state.step_gradients
    step_peak = base - state.gradients + held_at_step + sum(b for _, b in step)
    step_only = sum(b for _, b in state.step)
    if backward_peak >= step_peak:
        grads, activations, temps = state.gradients, inflight, backward
        peak_at = _backward_moment(cfg, temporaries)
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
        temporaries=tuple(sorted(temps, key=lambda x: -x[1])))


def _unbuffered(cfg: RunConfig, stage: int) -> tuple[ModelState, float, float]:
    """(state, weights + gradients + optimizer, in flight): the backward peak less its buffers."""
    state = model_state(cfg, stage)  # (the activations: the same for every optimizer sharding)
    return state, state.weights + state.gradients + state.optimizer, zero_free(_activations, cfg, stage)


def peak_floor(cfg: RunConfig, stage: int) -> float:
    """What :func:`estimate_stage_memory`'s ``total`` is never below: the backward's peak less its
    buffers (none negative), plus the context; ``search.waves`` bounds a group's headroom by it."""
    _, base, inflight = _unbuffered(cfg, stage)
    return base + inflight + context_bytes(cfg, stage)
