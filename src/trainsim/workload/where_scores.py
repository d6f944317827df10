"""The score-matrix passes of an unfused attention that casts its scores to fp32, rescales them
and masks them with ``torch.where`` before an fp32 softmax (profile ``fp32_where_scores``).

ServiceNow Fast-LLM's fallback where FlashAttention is off (``Attention._attn_fused``,
fast_llm/layers/transformer/attention.py @ 5eeef37d L126-165) issues, per score:

* ``torch.baddbmm(empty, query, key, beta=0, alpha=softmax_scale / layer_index)``: the product
  with its scale folded into the GEMM (the core's QK^T; no pass of its own);
* ``attn_weights.to(torch.float32)``: the cast up (read 2, write 4);
* ``* self._layer_index``: a Python scalar times the fp32 scores (read 4, write 4);
* ``torch.where(mask, attn_weights, mask_value)``: the causal bool mask of shape
  ``[1, 1, q, 1, k]`` (fast_llm/layers/transformer/preprocessing.py L98-117) broadcast over
  the batch and the heads, the 0-dim mask value: read 4 and the mask's byte, write 4, on
  PyTorch's non-vectorized path (a broadcast operand: the ``eager_broadcast`` rate, as
  ``workload.hf_eager_attention``'s mask add);
* ``softmax(attn_weights, dim=-1)`` on fp32: 4 more bytes than the core's 16-bit softmax;
* ``.to(query.dtype)``: the cast down (read 4, write 2); ``torch.dropout`` at p = 0 returns
  its input (aten/src/ATen/native/Dropout.cpp ``_dropout_impl``), no kernel.

Backward, autograd's reverse (tools/autograd/derivatives.yaml): the cast down's (read 2,
write 4); the fp32 softmax backward (6 more than the core's 16-bit one); ``where``'s,
``where(condition, grad, 0)`` over the broadcast mask (read 4 and the mask's byte, write 4,
non-vectorized); the scalar multiplication's (read 4, write 4); the cast up's (read 4, write
2). Per score: 33 bytes forward in four kernels beyond the core's (9 of them non-vectorized),
35 backward in four, where Hugging Face's eager chain (``hf_eager_score_ops``) moves 24 and
22 in three each. The tensors autograd keeps are those of that chain: the fp32 softmax output
(``softmax_fp32_saved``) and the mask; the multiplication by a Python scalar and the casts
keep none."""

from __future__ import annotations

from trainsim.workload.ops import Elementwise

F32, BF16, MASK = 4, 2, 1


def where_score_ops(scores: float) -> list[Elementwise]:
    """The passes over ``scores`` score elements that the fp32-cast, scaled, ``where``-masked
    chain adds to the unfused core (module docstring), in forward order."""
    return [
        Elementwise("attn_where.cast_up", bytes=(BF16 + F32) * scores,
                    bwd_bytes=(F32 + BF16) * scores, bwd_kernels=1),
        Elementwise("attn_where.scale", bytes=2 * F32 * scores,
                    bwd_bytes=2 * F32 * scores, bwd_kernels=1),
        Elementwise("attn_where.mask", bytes=(F32 + MASK + F32) * scores, impl="eager_broadcast",
                    bwd_bytes=(F32 + MASK + F32) * scores, bwd_kernels=1),
        # the fp32 softmax's bytes beyond the core's 16-bit one, in the core's own kernel
        Elementwise("attn_where.softmax_fp32", bytes=(2 * F32 - 2 * BF16) * scores, kernels=0,
                    bwd_bytes=(3 * F32 - 3 * BF16) * scores, bwd_kernels=0),
        Elementwise("attn_where.cast_down", bytes=(F32 + BF16) * scores,
                    bwd_bytes=(BF16 + F32) * scores, bwd_kernels=1),
    ]
