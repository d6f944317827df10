"""When Megatron's fused scale-mask-softmax falls back to PyTorch ops.

Megatron's unfused attention (``megatron/model/fused_softmax.py`` ``FusedScaleMaskSoftmax``)
runs its one-kernel CUDA softmax only where ``is_kernel_available`` allows it; otherwise
``forward_torch_softmax`` runs the softmax as separate PyTorch ops. For causal self-attention
the check is: 16-bit input, a mask, ``16 < sq <= 2048``, ``sk % 4 == 0``, ``b * np % 4 == 0`` and
``b * np`` a multiple of the kernel's batches per thread block (``get_batch_per_block`` in
``fused_kernels/scaled_masked_softmax.h``: 128 threads per block, one warp of
``min(next_pow2(key_len), 32)`` threads per row, two rows per warp where ``next_pow2(key_len)
<= 128``).

BigScience's Megatron-DeepSpeed from 2021-07 (``dc4e0cba``) until 2022-03-06 (``1cb76a64``,
"sync the whole Meg-LM fused_kernels sub-tree") called that function with its arguments out
of order: ``is_kernel_available`` passes ``(sq, sk, b, np)`` to a static method declared
``(b, np, sq, sk)``, which hands ``(sq, sk, b, np)`` of its own names on, so the CUDA side sees
the number of heads per TP rank as the key length. With 64 heads over TP 8 (np = 8) a block
then holds 32 rows and ``b * np`` must be a multiple of 32: micro-batches 1, 2 and 6 run the
PyTorch softmax, 4 and 8 the fused kernel (the BLOOM team saw a constraint on
``(HEADS/TP)*MBS`` in their 2022-02 sweep, chronicles-prequel.md 'NHEADs comparison').

The fallback under ``--apply-query-key-layer-scaling`` (on by default; it forces
``attention_softmax_in_fp32``): ``input.float()`` (read 2, write 4 bytes a score), ``* scale``
(4 + 4), ``masked_fill_`` in place (4 + 4), ``Softmax`` (4 + 4) and ``.half()`` (4 + 2): 36
bytes in 5 kernels where the fused kernel reads and writes 16 bits (4 bytes, 1 kernel). Its
backward is autograd's reverse of each: the cast (2 + 4), softmax backward reading the
gradient and the fp32 output (4 + 4 + 4), the masked fill's (8 + 8: below), the scale (4 + 4)
and the cast back (4 + 2): 48 bytes in 6 kernels where the fused backward reads the gradient
and the output and writes 16 bits (6 bytes). The attention op keeps the fused kernel's bytes;
the ops built here add the difference.

The mask is Megatron-DeepSpeed's causal ``args.attn_mask``, one ``[1, 1, s, s]`` bool tensor
(pretrain_gpt.py ``model_provider``), broadcast over the batch and the heads.
``masked_fill_`` expands it to the scores' shape (pytorch/pytorch v1.11.0
aten/src/ATen/native/cuda/Indexing.cu ``masked_fill__cuda``: ``expand_inplace(self, mask)``,
then one TensorIterator over the scores and the expanded mask), so one operand has zero
strides and the kernel takes PyTorch's non-vectorized path (``workload.elementwise.
STRIDED_LOADS``): its 8 bytes a score move at the scalar-load rate. Its backward,
``grad.masked_fill(mask, 0)`` (tools/autograd/derivatives.yaml ``masked_fill_.Scalar``), is
the out-of-place ``masked_fill``: a contiguous clone of the gradient (4 + 4, vectorized), then
the same in-place fill over the expanded mask (4 + 4, non-vectorized; aten/src/ATen/native/
TensorAdvancedIndexing.cpp ``masked_fill``).

A learned attention sink (``ModelConfig.softmax_type``) on FlexAttention is added after the
kernel: ``flex_attention`` has no sink input, so the model asks it for the log-sum-exp and
rescales the output by ``sigmoid(lse - sink)`` (NeMo Automodel @ 89e3a9fd
nemo_automodel/components/attention/flex_attention.py ``FlexAttention.forward``: only
``flex_attention`` is compiled, the rescale runs as PyTorch ops). Per query row (fp32 ``lse``):
``lse - sink`` and ``sigmoid`` (4 + 4 bytes each); per output element: ``out * scale``, whose
bf16 ``out`` times the fp32 scale is promoted to fp32 (2 + 4 bytes, and the scale's 4 a row),
and ``.to(q.dtype)`` (4 + 2): 12 bytes an element and 20 a row (8 + 8 + 4) in 4 kernels.
Autograd runs the reverse, each term an element / a row: the cast's backward (2 + 4 / 0); the
gradient of ``out``, ``grad * scale`` (4 + 4 / the scale read, 4) cast back to bf16 (4 + 2 /
0); the gradient of the scale, ``grad * out`` (4 + 2 + 4 / 0) summed over the head dim (4 /
its fp32 result written, 4); the sigmoid's backward (0 / 4 + 4 + 4); the subtraction's, the
negation for the sink (0 / 4 + 4) and its sum over batch and queries into the sink's per-head
gradient (0 / 4): 6 + 8 + 6 + 10 + 4 = 34 bytes an element and 4 + 4 + 12 + 8 + 4 = 32 a row
in 8 kernels (cast, mul, cast, mul, sum, sigmoid backward, neg, sum). Compiled with the
model, Inductor fuses each direction: read ``out`` and ``lse``, write the result (4 + 4 a row)
in one kernel; backward, read the gradient and ``out``, write ``out``'s gradient (6) and reduce
the scale's gradient per row (8) in two.
"""

from __future__ import annotations

from trainsim.workload.ops import Elementwise

THREADS_PER_BLOCK = 128  # scaled_masked_softmax.h get_batch_per_block
WARP = 32
FUSED_MAX_SEQ = 2048  # ``16 < sq <= 2048`` before the 2022-03 sync
FUSED_MAX_SEQ_SYNCED = 4096  # ``16 < sk <= 4096`` after it

FALLBACK_FWD_BYTES = 36.0 - 4.0  # per score, over the fused kernel's read and write
FALLBACK_BWD_BYTES = 48.0 - 6.0
FALLBACK_EXTRA_KERNELS = (4, 5)  # 5 PyTorch ops forward, 6 backward, in place of 1 kernel
MASK_FILL_BYTES = 8.0
"""Per score, each direction: the fp32 read and write of the in-place fill over the broadcast
mask, the part of the fallback on PyTorch's non-vectorized path (module docstring)."""


def batches_per_block(key_len: int) -> int:
    """Rows of scores one thread block of the fused kernel takes (``get_batch_per_block``)."""
    pow2 = 1 << max(key_len - 1, 0).bit_length()
    warp = min(pow2, WARP)
    return (THREADS_PER_BLOCK // warp) * (2 if pow2 <= 128 else 1)


def fused_softmax_runs(b: int, np: int, sq: int, sk: int, args_swapped: bool) -> bool:
    """Whether Megatron's causal ``FusedScaleMaskSoftmax`` takes its fused kernel for scores of
    shape [b, np, sq, sk] (16-bit, masked); ``args_swapped``: the 2021-07..2022-03
    Megatron-DeepSpeed call, where the kernel's key length is ``np``."""
    batches = b * np
    seq_ok = 16 < sq <= FUSED_MAX_SEQ if args_swapped else 16 < sk <= FUSED_MAX_SEQ_SYNCED
    if not (seq_ok and sk % 4 == 0 and batches % 4 == 0):
        return False
    return batches % batches_per_block(np if args_swapped else sk) == 0


def torch_softmax_fallback(scores: float) -> list[Elementwise]:
    """What the PyTorch softmax costs beyond the fused kernel over ``scores`` score elements:
    its contiguous kernels, then the masked fill over the broadcast mask (non-vectorized)."""
    fwd_kernels, bwd_kernels = FALLBACK_EXTRA_KERNELS
    return [
        Elementwise("softmax_torch_fallback", bytes=(FALLBACK_FWD_BYTES - MASK_FILL_BYTES) * scores,
                    kernels=fwd_kernels - 1, impl="eager",
                    bwd_bytes=(FALLBACK_BWD_BYTES - MASK_FILL_BYTES) * scores,
                    bwd_kernels=bwd_kernels - 1),
        Elementwise("softmax_torch_fallback.masked_fill", bytes=MASK_FILL_BYTES * scores,
                    impl="eager_broadcast", bwd_bytes=MASK_FILL_BYTES * scores, bwd_kernels=1,
                    elem_bytes=4),
    ]


SINK_RESCALE_EAGER = ((12.0, 20.0, 4), (34.0, 32.0, 8))
"""(bytes per output element, bytes per query row, kernels), forward then backward, of the sink
rescale after FlexAttention run as PyTorch ops (module docstring)."""
SINK_RESCALE_COMPILED = ((4.0, 4.0, 1), (6.0, 8.0, 2))
"""The same fused by Inductor when the model is compiled."""


def flex_sink_rescale(rows: float, head_dim: int, compiled: bool) -> Elementwise:
    """The rescale of FlexAttention's output by a learned sink over ``rows`` query rows (batch x
    heads x queries) of ``head_dim`` values each (module docstring)."""
    fwd, bwd = SINK_RESCALE_COMPILED if compiled else SINK_RESCALE_EAGER
    elems = rows * head_dim
    return Elementwise("attn_sink_rescale", bytes=fwd[0] * elems + fwd[1] * rows,
                       kernels=fwd[2], impl="fused" if compiled else "eager",
                       bwd_bytes=bwd[0] * elems + bwd[1] * rows, bwd_kernels=bwd[2])


SOFTCAP_EAGER = ((12.0, 3), (14.0, 3))
"""(bytes per score, kernels), forward then backward, of attention-logit soft-capping as
PyTorch ops on 16-bit scores, ``c * tanh(scores / c)``: Megatron-Bridge's ``logit_softcapping``
in ``Gemma2DotProductAttention`` (NVIDIA-NeMo/Megatron-Bridge@2394d359
src/megatron/bridge/models/gemma/gemma2_provider.py, between the ``baddbmm`` and
``FusedScaleMaskSoftmax``) and Hugging Face's ``eager_attention_forward`` (transformers 5.24.0
modeling_gemma2.py lines 195-198). Forward: the division, the tanh and the multiplication each
read and write the scores (3 x 4 bytes). Backward: the multiplication's and the division's
gradients by the constant each read and write (4 + 4), tanh's reads the gradient and its saved
output and writes (6): 14 bytes."""
SOFTCAP_COMPILED = ((4.0, 1), (6.0, 1))
"""The same fused by Inductor when the model is compiled: one pass each way (the backward
reading the gradient and the saved scores)."""


def softcap_op(scores: float, compiled: bool) -> Elementwise:
    """Attention-logit soft-capping over ``scores`` materialized score elements
    (``ModelConfig.attn_logit_softcapping``; ``SOFTCAP_EAGER``)."""
    fwd, bwd = SOFTCAP_COMPILED if compiled else SOFTCAP_EAGER
    return Elementwise("attn_softcap", bytes=fwd[0] * scores, kernels=fwd[1],
                       impl="fused" if compiled else "eager",
                       bwd_bytes=bwd[0] * scores, bwd_kernels=bwd[1])
