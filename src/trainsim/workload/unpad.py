"""The copies around the attention kernel in llm-foundry's MPT, by ``attn_impl``.

``flash`` (variable-length FlashAttention): every layer unpads its queries, keys and values
before the kernel and pads the output after it.

mosaicml/llm-foundry@5e85bd62 (2024-01-06, the benchmark tables' commit)
llmfoundry/models/layers/attention.py ``flash_attn_fn`` calls flash-attn's
``bert_padding.unpad_input`` on each of the query, key and value (chunks of the fused QKV
output), runs ``flash_attn_varlen_func`` (``flash_attn_unpadded_func`` in flash-attn 1) on the
packed tokens and ``pad_input`` on its output, even when no token is padding. flash-attn
(v1.0.9 and v2.x) flash_attn/bert_padding.py: ``unpad_input`` sums the mask, takes
``torch.nonzero`` of it and ``max().item()`` of the lengths (two device-to-host waits), then
gathers the tokens (``index_first_axis``: ``torch.gather``); ``pad_input`` zero-fills the padded
output and scatters the tokens into it (``index_put_first_axis``). Backward: the gathers'
backward zero-fills each input's gradient and scatters into it, the scatter's backward gathers;
and since the varlen kernel returns separate dq, dk, dv, autograd's backward of ``chunk``
concatenates them into the fused QKV gradient.

``triton`` (llm-foundry's Triton FlashAttention, the harness's and the pretrain YAMLs'
default): no unpadding (the padding mask is an additive key bias the kernel reads), but the
backward's concatenation of dq, dk and dv (``triton_grad_op``).
"""

from __future__ import annotations

from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import Elementwise, Op

UNPAD_KERNELS = 8
"""Launches of one ``unpad_input`` call: the mask's sum, ``nonzero`` (its count copied to the
host), the lengths' ``max`` and its ``.item()`` copy, ``cumsum``, ``F.pad``, the gather."""


def unpad_ops(tokens: int, q_width: int, kv_width: int) -> list[Op]:
    """Before the kernel: ``unpad_input`` of the query, key and value (``*_width`` elements per
    token each), each waiting twice for the GPU and gathering its tensor (read, write)."""
    ops: list[Op] = []
    for name, width in (("q", q_width), ("k", kv_width), ("v", kv_width)):
        ops.append(Elementwise(f"unpad_{name}.nonzero", bytes=0.0, kernels=3, host_sync=True))
        ops.append(Elementwise(f"unpad_{name}.max_item", bytes=0.0, kernels=1, host_sync=True))
        # backward: zero-fill the input's gradient, scatter into it (read, write)
        grad = 3 * tokens * width * ACT
        if name == "q":  # and the chunk backward's concatenation of dq, dk, dv (read, write)
            grad += 2 * tokens * (q_width + 2 * kv_width) * ACT
        ops.append(Elementwise(f"unpad_{name}.gather", bytes=2 * tokens * width * ACT,
                               kernels=UNPAD_KERNELS - 4, bwd_bytes=grad,
                               bwd_kernels=3 if name == "q" else 2))
    return ops


def pad_op(tokens: int, width: int) -> Elementwise:
    """After the kernel: ``pad_input`` zero-fills the output and scatters the tokens into it
    (write; read, write); its backward gathers the gradient's tokens (read, write)."""
    return Elementwise("pad_output", bytes=3 * tokens * width * ACT, kernels=2,
                       bwd_bytes=2 * tokens * width * ACT, bwd_kernels=1)


def triton_grad_op(tokens: int, q_width: int, kv_width: int) -> Elementwise:
    """Backward of MPT's ``attn_impl: triton`` outside the kernel (mosaicml/llm-foundry@5e85bd62
    llmfoundry/models/layers/flash_attn_triton.py ``FlashAttnFunc.backward``; attention.py
    ``GroupedQueryAttention.forward``): the kernel returns dq, dk and dv as tensors of their own,
    so the backward of ``qkv.split`` concatenates them into the fused QKV gradient (read, write).
    The kernel's fp32 dQ buffer (zero-filled, converted to 16 bits after) is FlashAttention's
    too and sits in the kernel's measured rate. Nothing runs in the forward."""
    grad = 2 * tokens * (q_width + 2 * kv_width) * ACT
    return Elementwise("triton_attn_dqkv_cat", bytes=0.0, kernels=0, bwd_bytes=grad,
                       bwd_kernels=1)
