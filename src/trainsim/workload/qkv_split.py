"""The copies and the gradient join of Megatron-core's split of the fused QKV output on
Transformer Engine layers (framework profile ``te_layer_spec``): the kernels between
``linear_qkv`` and the attention kernel that no GEMM, norm or RoPE op counts.

* **Query reshape.** ``get_query_key_value_tensors`` views the fused output as
  ``[sq, b, ng, (np/ng + 2) hn]``, splits it along the last dimension (TE's ``SplitAlongDim``:
  views) and reshapes the query to ``[sq, b, np, hn]`` (NVIDIA/Megatron-LM core_v0.15.0
  megatron/core/transformer/attention.py L1061-1105; the same at d7288711). The query view's
  group stride is ``(np/ng + 2) hn``, not ``(np/ng) hn``, so with more than one query group on
  the rank and more than one head per group ``reshape`` cannot view it and copies it (one
  kernel, the query read and written; NVIDIA/Megatron-LM#6460, 2026-08, finds this copy in a
  profile: "``Tensor.reshape`` silently materializes the entire query").
* **Q and K made contiguous for their norms.** A layer with per-head q/k norms runs them as
  two ``TENorm`` calls, and Transformer Engine's norm reads a contiguous input
  (TransformerEngine v2.9 pytorch/ops/basic/rmsnorm.py L182 ``input_.contiguous()``, its
  backward L224 the gradient, already contiguous): the key's split view is copied, and the
  query's too where its reshape was a view. NVIDIA/Megatron-LM#6459 (2026-08) reports both the
  two ``rmsnorm_fwd_general`` launches and these layout copies of the QKV split views in a
  Qwen3 profile.
* **V made contiguous.** Under RoPE (or per-head q/k norms) the query and key are new
  contiguous tensors while V is still a strided view of the fused output; TE's
  ``get_qkv_layout`` then finds no supported layout and makes all three contiguous
  (TransformerEngine v2.9 pytorch/attention/dot_product_attention/utils.py L1888-1998:
  ``q, k, v = [x.contiguous() for x in [q, k, v]]``, a no-op for Q and K, a copy of V;
  ``memory.te_spec`` keeps the copy's bytes). Megatron-core 0.9-0.13 makes the same copies
  itself under RoPE fusion (``TEDotProductAttention.forward``). ``contiguous``'s backward is
  the identity: no kernel.
* **The gradient join.** ``SplitAlongDim.backward`` returns the three gradients as one tensor
  without a copy only where they already sit side by side in one buffer (v2.9 pytorch/utils.py
  L330-351 ``noop_ok``); the query's and key's gradients come out of the RoPE / norm backward
  as tensors of their own, so it runs ``torch.cat`` (L352-354): one kernel, dQ, dK and dV read
  and the joined gradient written.

Without RoPE and q/k norms a multi-head layer's Q, K and V stay views TE takes as they are
(``sbh3d``) and the attention's backward writes one gradient buffer: nothing is counted.
Counted from the code; the two Megatron-LM pull requests above name the same copies in their
profiles (of inference decoding, which runs the same split).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsim.catalog.frameworks import profile_supports
from trainsim.workload.ops import ACT_BYTES, Elementwise

if TYPE_CHECKING:
    from trainsim.config import RunConfig


def mcore_qkv_split_ops(cfg: RunConfig, tokens: int, q_loc: int, kv_loc: int) -> list[Elementwise]:
    """The split's kernels for ``tokens`` rows of a rank's ``q_loc`` query and ``kv_loc`` key
    (and value) columns, forward (the query's reshape copy, the q/k norms' input copies, V's
    contiguous copy) and backward
    (the gradients' ``cat``), as one op after the QKV GEMM; none for a run whose framework
    does not build Megatron-core's TE layers, an MLA layer, or where nothing is copied."""
    m = cfg.model
    if m.is_mla or not profile_supports(cfg, "te_layer_spec"):
        return []
    head = m.kv_channels
    groups, per_group = kv_loc // head, q_loc // max(kv_loc, 1)
    normed = m.qk_layernorm  # TE's norms copy their strided inputs
    q_copy = groups > 1 and per_group > 1 or normed
    fresh = m.position_embedding == "rope" or normed  # Q and K no longer views: V copied
    copied = (q_loc if q_copy else 0) + (kv_loc if normed else 0) + (kv_loc if fresh else 0)
    kernels = int(q_copy) + int(normed) + int(fresh)
    if not kernels:
        return []
    joined = fresh or q_copy  # dQ (or dK) a tensor of its own: the join copies
    return [Elementwise("qkv_split", bytes=2.0 * tokens * copied * ACT_BYTES, kernels=kernels,
                        kernel="copy",
                        bwd_bytes=2.0 * tokens * (q_loc + 2 * kv_loc) * ACT_BYTES * joined,
                        bwd_kernels=int(joined))]


__all__ = ["mcore_qkv_split_ops"]
