"""Layout copies some frameworks make around the attention (nanotron's fused-QKV layout):
``workload.layers`` adds them where the profile says (``Shard.qkv_relayout``)."""

from __future__ import annotations

from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import Elementwise


def qkv_relayout_op(tokens: int, q_loc: int, kv_loc: int) -> Elementwise:
    """nanotron's layout copies between the fused qkv_proj and flash-attn (models/llama.py
    CausalSelfAttention.forward @ e24d2483 L446-L476, L651-L660): forward, Q, K and V
    ``permute(...).contiguous()`` out of the [seq, batch, 3, heads, d] output (MHA; GQA's
    ``torch.split`` then three ``transpose(0, 1).contiguous()`` move as much in three kernels),
    ``torch.cat`` of K and V and its ``permute(1, 2, 0, 3, 4).contiguous()`` for flash-attn's
    rotary kernel: each element read and written. Backward, autograd's ``split`` backward
    joins dK and dV (a cat); under MHA ``unbind``'s stack of dQ, dK, dV and ``view``'s reshape
    of the permuted gradient back to [seq, batch, qkv] copy again (two more); under GQA
    (``is_gqa``: fewer key/value heads than query heads) the transposes' and views' backwards
    stay views and the qkv ``split``'s backward is one cat of dQ, dK, dV."""
    qkv, kv = q_loc + 2 * kv_loc, 2 * kv_loc
    gqa = q_loc != kv_loc
    return Elementwise("qkv_relayout", bytes=tokens * (2 * qkv + 2 * kv + 2 * kv) * ACT,
                       kernels=5 if gqa else 3, kernel="copy",
                       bwd_bytes=tokens * (2 * kv + 2 * qkv * (1 if gqa else 2)) * ACT,
                       bwd_kernels=2 if gqa else 3)


def attn_out_relayout_op(tokens: int, width: int) -> Elementwise:
    """nanotron's attention output ``view(batch, seq, width).transpose(0, 1)`` into out_proj
    (models/llama.py L685-L689 @ e24d2483): with a micro-batch above 1 the transposed view
    is not contiguous and ``F.linear`` copies it before its GEMM; its backward reshapes the
    input gradient back (another copy)."""
    return Elementwise("attn_out_relayout", bytes=tokens * width * 2 * ACT, kernel="copy",
                       bwd_bytes=tokens * width * 2 * ACT, bwd_kernels=1)


__all__ = ["attn_out_relayout_op", "qkv_relayout_op"]
