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
from trainsim.model.counts import embedding_params, layer_params, output_layer_params
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


def activation_bytes_per_layer(cfg: RunConfig, recompute: str | None = None) -> float:
    """Bytes one layer keeps for backward, per micro-batch, on one rank."""
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
    shared = T * h * (2 + 2 + mask + 2 + 2 + mask) / shared_div
    # sharded over TP: Q, K, V, attention output (out-proj input), MLP intermediates
    mlp_inner = (3 * 2 * f) if m.activation == "swiglu" else (2 * 2 * f)
    # Q, K, V as attention's backward keeps them (measured with saved_tensors_hooks on
    # Megatron-style layers, tests/test_memory_torch.py): slices of the fused QKV output stay
    # views of it; RoPE writes new rotated Q and K; Megatron's unfused attention expands K and V
    # to one head per query head for GQA (repeat_interleave), so those are copies too.
    fused = 2 * (q / t + 2 * kv_loc)
    rope = m.position_embedding == "rope"
    if cfg.training.attention == "unfused" and kv_loc < q / t:
        qkv = 2 * q / t * 3 if rope else fused + 2 * 2 * q / t
    else:
        qkv = fused + (2 * (q / t + kv_loc) if rope else 0.0)
    sharded = T * (qkv + 2 * q / t) + T * mlp_inner / t
    heads = m.num_attention_heads / t
    if cfg.training.attention == "flash":
        scores = 4.0 * b * heads * q_len  # fp32 log-sum-exp per query row
    elif recompute == "selective":
        scores = 0.0
    else:  # softmax output, plus dropout mask and output when attention dropout is on
        per = 5.0 if m.attention_dropout > 0 else 2.0
        scores = per * b * heads * q_len * kv_len
    return shared + sharded + scores


def stage_params(cfg: RunConfig, stage: int) -> float:
    """Parameters held by one rank of pipeline stage ``stage`` (after TP sharding)."""
    m, p = cfg.model, cfg.parallel
    n = cfg.stage_layer_counts[stage] * layer_params(m)
    if stage == 0:
        n += embedding_params(m)
    if stage == p.pp - 1:
        n += output_layer_params(m)
        if m.tied_embeddings and p.pp > 1:  # last stage keeps its own copy of the word embedding
            n += m.vocab_size * m.hidden_size
    return n / p.tp


def estimate_stage_memory(cfg: RunConfig, stage: int) -> MemoryBreakdown:
    p, t = cfg.parallel, cfg.training
    params = stage_params(cfg, stage)
    shard = cfg.dp * p.cp  # optimizer state is sharded over the data-parallel (with CP) group
    weight_bytes = 3.0 if t.dtype == "fp8" else 2.0  # TE caches fp8 copies of the weights
    grad_bytes = 4.0 if t.grad_reduce_in_fp32 else 2.0
    opt_bytes = 12.0 if t.optimizer == "adam" else 8.0
    zero = 1 if (p.distributed_optimizer and p.zero_stage == 0) else p.zero_stage
    weights = params * weight_bytes / (shard if zero >= 3 else 1)
    grads = params * grad_bytes / (shard if zero >= 2 else 1)
    optimizer = params * opt_bytes / (shard if zero >= 1 else 1)

    per_layer = activation_bytes_per_layer(cfg)
    layers_per_chunk = cfg.stage_layer_counts[stage] // p.vpp
    activations = _peak_chunks(stage, p.pp, p.vpp, cfg.num_microbatches) * per_layer * layers_per_chunk

    m = cfg.model
    T = t.micro_batch_size * t.seq_length / p.cp
    temp = 0.0
    if stage == p.pp - 1:  # 16-bit logits and fp32 softmax of the vocab-parallel cross-entropy
        temp = max(temp, T * m.vocab_size / p.tp * (2 + 4))
    if p.recompute == "full":  # one layer's full activations live during its backward
        temp = max(temp, activation_bytes_per_layer(cfg, recompute="none"))
    if zero >= 3:  # gathered parameters of the current and the prefetched layer
        temp = max(temp, 2 * 2.0 * layer_params(m) / p.tp)
    return MemoryBreakdown(weights, grads, optimizer, activations, temp + CONTEXT_RESERVE_BYTES)
