"""Bytes one layer keeps for its attention scores in the forward (``memory.estimate``).

A fused kernel (flash, cuDNN, SDPA's efficient/flash backends) keeps only its fp32
log-sum-exp per query row. Materialized scores (``workload.ops.MATERIALIZED_SCORES``: Megatron's
unfused ``DotProductAttention``, Hugging Face eager) keep the 16-bit softmax output for the
backward, plus the dropout mask (1 byte) and its 16-bit output when attention dropout is on
(Korthikanti et al. 2022, Sec. 4.1: 2 + 1 + 2 = 5 bytes a score). Soft-capping the logits,
``c * tanh(scores / c)`` as eager PyTorch ops (Megatron-Bridge ``Gemma2DotProductAttention``
``logit_softcapping``; transformers ``eager_attention_forward`` for Gemma 2), keeps tanh's
16-bit output for its backward (d tanh = 1 - tanh^2); the division and the multiplication by a
constant keep nothing: 2 more bytes a score. A framework whose eager attention runs the softmax
in fp32 and casts the result back (profile feature ``softmax_fp32_saved``: transformers'
``eager_attention_forward``, ``softmax(..., dtype=torch.float32).to(query.dtype)``, v4.53.3
models/llama/modeling_llama.py; GPT-2's ``_attn`` under autocast, whose softmax autocast runs in
fp32, then ``.type(value.dtype)``) keeps the fp32 softmax output for softmax's backward beside
the 16-bit probabilities the value matmul keeps: 4 more bytes a score (6 without the cap, 8 with
it; a saved-tensor hook over that code keeps exactly these). Transformer Engine's unfused
attention keeps the same where its fused softmax does not run and it falls back to the fp32
``torch.nn.Softmax`` (``workload.te_unfused``: 16,384 keys and more), and Praxis's attention
under XLA keeps its fp32 ``exp`` (``workload.xla_layers``). Selective recomputation of
core attention keeps none of these.
"""

from __future__ import annotations

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.workload.ops import MATERIALIZED_SCORES
from trainsim.workload.te_unfused import te_softmax_in_fp32
from trainsim.workload.xla_layers import XLA_SOFTMAX_SAVED_BYTES, xla_softmax_in_fp32

SOFTCAP_SAVED_BYTES = 2.0
"""16-bit tanh output a soft-capped score keeps (torch's tanh_backward reads ``result``)."""

SOFTMAX_FP32_SAVED_BYTES = 4.0
"""fp32 softmax output an fp32 softmax keeps (torch's _softmax_backward_data reads ``output``)."""


def score_bytes(cfg: RunConfig, b: float, heads: float, q_len: float, kv_len: float,
                core_recomputed: bool) -> float:
    """Bytes of attention scores kept by one layer for ``b`` sequences of ``heads`` local heads,
    ``q_len`` local queries over ``kv_len`` keys (module docstring)."""
    m = cfg.model
    if cfg.training.attention not in MATERIALIZED_SCORES:
        return 4.0 * b * heads * q_len  # fp32 log-sum-exp per query row
    if core_recomputed:
        return 0.0
    per = 5.0 if m.attention_dropout > 0 else 2.0
    if m.attn_logit_softcapping is not None:
        per += SOFTCAP_SAVED_BYTES
    if profile_supports(cfg, "softmax_fp32_saved") or te_softmax_in_fp32(
            cfg, int(b), int(heads), int(q_len), int(kv_len)):
        per += SOFTMAX_FP32_SAVED_BYTES
    if xla_softmax_in_fp32(cfg):  # Praxis's softmax under XLA keeps its fp32 exp
        per += XLA_SOFTMAX_SAVED_BYTES
    return per * b * heads * q_len * kv_len
