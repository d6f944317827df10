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

from trainsim.config import RunConfig
from trainsim.model.counts import (
    embedding_params,
    layer_expert_params,
    layer_params,
    mtp_params,
    output_layer_params,
)
from trainsim.workload.schedule import peak_in_flight, schedule

GiB = 2**30
CONTEXT_RESERVE_BYTES = 1.0 * GiB
"""CUDA context, cuBLAS workspaces and NCCL channel buffers: ~0.5-1.5 GiB measured per GPU with
nvidia-smi vs torch.cuda.memory_allocated on A100/H100 (PyTorch CUDA semantics docs)."""


@functools.lru_cache(maxsize=4096)
def _peak_chunks(stage: int, pp: int, vpp: int, m: int) -> float:
    """Peak number of model chunks whose activations are alive, from the actual schedule."""
    return peak_in_flight(schedule(stage, pp, vpp, m))


@dataclass(frozen=True)
class MemoryBreakdown:
    weights: float
    gradients: float
    optimizer: float
    activations: float
    buffers: float
    """Largest temporary buffers (logits, a recomputed layer) plus the context reserve."""

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.buffers


def activation_bytes_per_layer(cfg: RunConfig, recompute: str | None = None,
                               moe: bool = False) -> float:
    """Bytes one layer keeps for backward, per micro-batch, on one rank (``moe``: a layer with
    routed experts in place of the dense MLP)."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    recompute = recompute or p.recompute
    t, sp = p.tp, p.sequence_parallel
    T = tr.micro_batch_size * tr.seq_length / p.cp  # local tokens
    b, q_len, kv_len = tr.micro_batch_size, tr.seq_length / p.cp, tr.seq_length
    h, q, kv, f = m.hidden_size, m.q_size, m.kv_size, m.ffn_size
    kv_loc = max(kv / t, m.kv_channels)
    mask = 1.0 if m.hidden_dropout > 0 else 0.0
    shared_div = t if sp else 1
    if recompute == "full":
        return 2.0 * T * h / shared_div
    # replicated over TP unless sequence parallel: two norm inputs, QKV and FC1 inputs, masks
    # (a parallel block has one norm whose output feeds both QKV and FC1, and one mask)
    per_token = (2 + 2 + mask) if m.parallel_block else (2 + 2 + mask + 2 + 2 + mask)
    shared = T * h * per_token / shared_div
    # sharded over TP: Q, K, V, attention output (out-proj input), MLP intermediates
    mlp_inner = (3 * 2 * f) if m.activation == "swiglu" else (2 * 2 * f)
    # Q, K, V as attention's backward keeps them (measured with saved_tensors_hooks on
    # Megatron-style layers, tests/test_memory_torch.py): slices of the fused QKV output stay
    # views of it; RoPE writes new rotated Q and K; Megatron's unfused attention expands K and V
    # to one head per query head for GQA (repeat_interleave), so those are copies too.
    fused = 2 * (q / t + 2 * kv_loc)
    rope = m.position_embedding == "rope"
    if m.is_mla:  # Q, K (with rotary parts), V per head, plus the compressed latents
        qkv = 2 * (2 * m.qk_dim + m.v_dim) / t + 2 * ((m.q_lora_rank or 0) + (m.kv_lora_rank or 0))
    elif cfg.training.attention == "unfused" and kv_loc < q / t:
        qkv = 2 * q / t * 3 if rope else fused + 2 * 2 * q / t
    else:
        qkv = fused + (2 * (q / t + kv_loc) if rope else 0.0)
    sharded = T * (qkv + 2 * m.v_dim / t) + T * mlp_inner / t
    heads = m.num_attention_heads / t
    if cfg.training.attention != "unfused":
        scores = 4.0 * b * heads * q_len  # fp32 log-sum-exp per query row
    elif recompute == "selective":
        scores = 0.0
    else:  # softmax output, plus dropout mask and output when attention dropout is on
        per = 5.0 if m.attention_dropout > 0 else 2.0
        scores = per * b * heads * q_len * kv_len
    total = shared + sharded + scores
    if moe:  # swap the dense MLP's tensors for the expert block's
        total += _moe_block_bytes(cfg) - _mlp_block_bytes(cfg, f, shared_div)
    if recompute == "selective":
        total -= _selective_savings(cfg, moe, T, shared_div)
    return total


def _selective_savings(cfg: RunConfig, moe: bool, T: float, shared_div: int) -> float:
    """Bytes that Megatron-core's ``--recompute-modules`` frees per layer: each checkpointed
    module keeps its input and drops what it saved inside (``core_attn``'s scores are handled
    with the attention term above)."""
    m, p = cfg.model, cfg.parallel
    modules = set(p.recompute_modules or ("core_attn",))
    h, t = m.hidden_size, p.tp
    out = 0.0
    if "layernorm" in modules:  # the norm outputs (QKV and FC1 inputs); the inputs stay
        out += T * h * 2 * (1 if m.parallel_block else 2) / shared_div
    if "mla_up_proj" in modules and m.is_mla:  # per-head Q, K, V; the latents stay
        out += T * 2 * (2 * m.qk_dim + m.v_dim) / t
    if "mlp" in modules and not moe:  # the MLP's inner tensors; its input stays
        inner = (3 * 2 * m.ffn_size) if m.activation == "swiglu" else (2 * 2 * m.ffn_size)
        out += T * inner / t
    if moe and "moe" in modules:  # the whole expert block but its input
        out += _moe_block_bytes(cfg) - T * h * 2 / shared_div
    elif moe:
        if "moe_act" in modules:  # the activation's output (the FC2 input) of every copy
            out += _moe_recv(cfg) * p.etp * 2 * m.expert_ffn_size / p.etp
        if "shared_experts" in modules and m.moe_shared_expert_intermediate_size:
            shared = m.moe_shared_expert_intermediate_size
            out += T * ((3 * 2 * shared) if m.activation == "swiglu" else (2 * 2 * shared)) / t
    return out


def _moe_recv(cfg: RunConfig) -> float:
    """Token copies the busiest expert rank receives per micro-batch (dropless: the imbalance;
    token dropping: at most the capacity)."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    T = tr.micro_batch_size * tr.seq_length / p.cp
    routed = (T / p.tp if p.sequence_parallel else T) * m.moe_router_topk
    if m.moe_capacity_factor is not None:  # padded to the capacity: static shapes
        return routed * m.moe_capacity_factor
    return routed * m.moe_token_imbalance


def _mlp_block_bytes(cfg: RunConfig, width: float, shared_div: int) -> float:
    """A TP-parallel MLP's saved tensors: norm input, FC1 input, dropout mask, inner tensors."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    T = tr.micro_batch_size * tr.seq_length / p.cp
    mask = 1.0 if m.hidden_dropout > 0 else 0.0
    inner = (3 * 2 * width) if m.activation == "swiglu" else (2 * 2 * width)
    return T * m.hidden_size * (2 + 2 + mask) / shared_div + T * inner / p.tp


def _moe_block_bytes(cfg: RunConfig) -> float:
    """Saved tensors of the expert block: norm input, router input and probabilities, the
    permuted tokens each expert GEMM saves, the expert inner tensors and the combine input."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    T = tr.micro_batch_size * tr.seq_length / p.cp
    tokens = T / p.tp if p.sequence_parallel else T
    h, k = m.hidden_size, m.moe_router_topk
    routed = tokens * k
    recv = _moe_recv(cfg)
    f = m.expert_ffn_size / p.etp
    inner = (3 * 2 * f) if m.activation == "swiglu" else (2 * 2 * f)
    out = tokens * h * 2 * 2 + tokens * (m.num_experts or 0) * 4  # norm + router in, probs
    out += recv * p.etp * (2 * h + inner) + routed * 2 * h  # expert inputs/inner, combine
    if m.moe_shared_expert_intermediate_size:
        shared = m.moe_shared_expert_intermediate_size
        inner_s = (3 * 2 * shared) if m.activation == "swiglu" else (2 * 2 * shared)
        out += T * h * 2 / (p.tp if p.sequence_parallel else 1) + T * inner_s / p.tp
    return out


def stage_param_split(cfg: RunConfig, stage: int) -> tuple[float, float]:
    """(non-expert, routed-expert) parameters held by one rank of pipeline stage ``stage``:
    non-expert parameters are sharded over TP, experts over EP x expert-TP."""
    m, p = cfg.model, cfg.parallel
    layers = [i for v, r in enumerate(cfg.virtual_stage_layers()) if v % p.pp == stage for i in r]
    experts = sum(layer_expert_params(m, i) for i in layers)
    dense = sum(layer_params(m, i) for i in layers) - experts
    if stage == 0:
        dense += embedding_params(m)
    if stage == p.pp - 1:  # the head, and any multi-token-prediction modules
        mtp_experts = m.mtp_num_layers * layer_expert_params(m, m.num_layers - 1)
        experts += mtp_experts
        dense += output_layer_params(m) + mtp_params(m) - mtp_experts
        if m.tied_embeddings and p.pp > 1:  # last stage keeps its own copy of the word embedding
            dense += m.vocab_size * m.hidden_size
    return dense / p.tp, experts / (p.ep * p.etp)


def stage_params(cfg: RunConfig, stage: int) -> float:
    """Parameters held by one rank of pipeline stage ``stage``."""
    return sum(stage_param_split(cfg, stage))


def estimate_stage_memory(cfg: RunConfig, stage: int) -> MemoryBreakdown:
    p, t = cfg.parallel, cfg.training
    dense, experts = stage_param_split(cfg, stage)
    # state is sharded over the data-parallel (with CP) group; experts over expert-DP
    sharded = dense / (cfg.dp * p.cp) + experts / cfg.edp
    weight_bytes = 3.0 if t.dtype == "fp8" else 2.0  # TE caches fp8 copies of the weights
    grad_bytes = 4.0 if t.grad_reduce_in_fp32 else 2.0
    opt_bytes = 8.0 if t.optimizer == "sgd" else 12.0  # LAMB keeps Adam's two moments
    zero = 1 if (p.distributed_optimizer and p.zero_stage == 0) else p.zero_stage
    full = dense + experts
    weights = (sharded if zero >= 3 else full) * weight_bytes
    grads = (sharded if zero >= 2 else full) * grad_bytes
    optimizer = (sharded if zero >= 1 else full) * opt_bytes

    m = cfg.model
    kept: dict[tuple[bool, bool], float] = {}  # by (routed experts, recomputed whole)

    def layer_bytes(i: int) -> float:
        key = (m.is_moe_layer(i), i in cfg.recomputed_layers)
        if key not in kept:
            mode = "full" if key[1] else ("none" if p.recompute == "full" else p.recompute)
            kept[key] = activation_bytes_per_layer(cfg, recompute=mode, moe=key[0])
        return kept[key]

    chunk_bytes = [sum(layer_bytes(i) for i in r)
                   for v, r in enumerate(cfg.virtual_stage_layers()) if v % p.pp == stage]
    if stage == p.pp - 1 and m.mtp_num_layers:  # MTP layers sit after the last chunk's layers
        chunk_bytes[-1] += m.mtp_num_layers * layer_bytes(m.num_layers - 1)
    if len(set(chunk_bytes)) == 1:
        activations = _peak_chunks(stage, p.pp, p.vpp, cfg.num_microbatches) * chunk_bytes[0]
    else:
        activations = peak_in_flight(schedule(stage, p.pp, p.vpp, cfg.num_microbatches),
                                     dict(enumerate(chunk_bytes)))

    T = t.micro_batch_size * t.seq_length / p.cp
    temp = 0.0
    if stage == p.pp - 1:  # 16-bit logits and fp32 softmax of the vocab-parallel cross-entropy
        temp = max(temp, T * m.vocab_size / p.tp * (2 + 4))
    if p.recompute == "full":  # one layer's full activations live during its backward
        temp = max(temp, activation_bytes_per_layer(cfg, recompute="none", moe=m.is_moe))
    if zero >= 3:  # gathered parameters of the current and the prefetched layer
        temp = max(temp, 2 * 2.0 * max(layer_params(m, i) for i in range(m.num_layers)) / p.tp)
    return MemoryBreakdown(weights, grads, optimizer, activations, temp + CONTEXT_RESERVE_BYTES)
