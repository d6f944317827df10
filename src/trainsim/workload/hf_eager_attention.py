"""The score-matrix passes of Hugging Face's eager attention beyond Megatron's unfused core.

``ops.Attention`` with ``impl="unfused"`` prices Megatron's core: the QK^T and PV batched
matmuls and one fused 16-bit scale-mask-softmax (per score 8 bytes forward, 14 backward;
``Attention.bytes``). transformers' ``eager_attention_forward`` (v4.53.3
models/llama/modeling_llama.py; the same function in transformers 5.x, which
benchmarks/step_probe.py ran) issues instead, per score:

* ``torch.matmul(query, key.transpose(2, 3)) * scaling``: the product, then a multiplication
  by the scalar (read 2, write 2);
* ``attn_weights + causal_mask``: the model's 4-D additive mask ``[b, 1, q, k]`` broadcast over
  the heads, made in the model's dtype, fp32 under autocast with fp32 parameters: the bf16 +
  fp32 sum promotes to fp32 (read 2, read the mask 4, write 4). A broadcast operand and a
  dtype cast put it on PyTorch's non-vectorized elementwise path (aten/src/ATen/native/cuda/
  CUDALoops.cuh ``gpu_kernel_impl``: the vectorized kernel only for contiguous operands
  without dynamic casting), the ``eager_broadcast`` rate;
* ``softmax(attn_weights, dim=-1, dtype=torch.float32)``: fp32 in, fp32 out (read 4, write 4,
  where the fused kernel reads and writes 2 each: 4 more);
* ``.to(query.dtype)``: the cast to bf16 (read 4, write 2); dropout with p = 0 returns its
  input (aten/src/ATen/native/Dropout.cpp ``_dropout_impl``: ``if (p == 0 ...) return
  input``), no kernel.

Backward, autograd's reverse (tools/autograd/derivatives.yaml): the cast's, bf16 gradient to
fp32 (read 2, write 4); ``_softmax_backward_data`` in fp32 (read the gradient and the output,
write: 12 where the fused kernel's 16-bit backward moves 6, 6 more); the promoted add's
gradient cast back to the bf16 input's dtype by the autograd engine (read 4, write 2; the
mask takes no gradient); the scalar multiplication's (read 2, write 2). The matmuls' bytes
and the 16-bit softmax round trip stay in ``Attention``. Per score: 24 bytes forward in three
kernels beyond the core's (10 of them non-vectorized), 22 backward in three."""

from __future__ import annotations

from trainsim.workload.ops import Elementwise

F32, BF16 = 4, 2


def hf_eager_score_ops(scores: float) -> list[Elementwise]:
    """The passes over ``scores`` score elements that Hugging Face's eager attention adds to
    Megatron's unfused core (module docstring), in forward order."""
    return [
        # * scaling: forward read + write 16-bit; backward the gradient times the scalar
        Elementwise("attn_eager.scale", bytes=2 * BF16 * scores,
                    bwd_bytes=2 * BF16 * scores, bwd_kernels=1),
        # + mask, promoted to fp32 on the non-vectorized path; no backward kernel of its own
        Elementwise("attn_eager.mask_add", bytes=(BF16 + F32 + F32) * scores,
                    impl="eager_broadcast", bwd_bytes=0.0, bwd_kernels=0),
        # the add's fp32 gradient cast to its bf16 input's dtype (backward only)
        Elementwise("attn_eager.mask_add_grad_cast", bytes=0.0, kernels=0,
                    bwd_bytes=(F32 + BF16) * scores, bwd_kernels=1),
        # softmax in fp32 over an fp32 input: the bytes beyond the 16-bit core's softmax, both
        # directions, in the core's own softmax kernel
        Elementwise("attn_eager.softmax_fp32", bytes=(2 * F32 - 2 * BF16) * scores, kernels=0,
                    bwd_bytes=(3 * F32 - 3 * BF16) * scores, bwd_kernels=0),
        # .to(bf16) and its backward, the cast up
        Elementwise("attn_eager.cast", bytes=(F32 + BF16) * scores,
                    bwd_bytes=(BF16 + F32) * scores, bwd_kernels=1),
    ]
