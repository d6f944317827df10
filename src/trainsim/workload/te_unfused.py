"""What Transformer Engine's unfused attention runs beside the score matrix's own passes.

Where Transformer Engine's ``DotProductAttention`` finds neither its cuDNN fused attention nor
FlashAttention for the inputs (``get_attention_backend``: on Blackwell, heads wider than 128 in
training before TE v2.5, MLA's unequal query and value widths before that: ``catalog.
te_attention``), it runs ``UnfusedDotProductAttention``. Its core is Megatron's: ``torch.baddbmm``
(QK^T times the softmax scale, beta 0 into an empty buffer), ``FusedScaleMaskSoftmax``, the
attention dropout, ``torch.bmm`` (PV) and the output's ``permute(2, 0, 1, 3).contiguous()``
(NVIDIA/TransformerEngine@bee4649c, the TE of NeMo 25.04, transformer_engine/pytorch/
attention.py L3762-3990; v2.3 onward pytorch/attention/dot_product_attention/backends.py), so
``ops.Attention`` with ``megatron_ops`` prices its score passes and launches
(``compute.host.MEGATRON_UNFUSED_LAUNCHES``). Three things differ, all built here:

* **The full mask, built on every call (TE >= 2.0).** ``forward`` calls
  ``dpa_utils.get_full_mask`` before the scores whatever the mask type (bee4649c L3850-3859;
  introduced with f033498f6, 2024-12-17, first released in v2.0), which builds the
  ``[1, 1, sq, sk]`` mask from index arithmetic (bee4649c pytorch/dot_product_attention/utils.py
  L1091-1118): ``arange(sq) - arange(sk)`` (an int32 [sq, sk]: 4 bytes written an element),
  ``swa_left = mask - window`` and ``swa_right = mask + window`` (4 + 4 each), then
  ``torch.where(swa_left <= 0, 1, 0) - torch.where(swa_right < 0, 1, 0)`` and ``logical_not``:
  each comparison reads 4 and writes a bool (5), each ``where`` of two Python ints writes int64
  (1 + 8), their difference reads 16 and writes 8, ``logical_not`` 8 + 1: 81 bytes an element
  in 11 kernels (two ``arange`` among them). From TE v2.6 (0a1499faa, 2025-07-16, "Dynamo ONNX
  export support") the last step is ``logical_not((swa_left <= 0) & ~(swa_right < 0))`` on
  bools: 4 + 8 + 8 + 5 + 5 + 2 + 3 + 2 = 37 bytes in 10 kernels. The mask is per call, not per
  head; it has no backward, and a recomputed core builds it again.
* **The softmax reads that mask (TE >= 2.0).** ``FusedScaleMaskSoftmax.forward_fused_softmax``
  sends a causal mask to ``ScaledMaskedSoftmax`` (the aligned causal kernel "disabled for now
  until unalignment bug is fixed", bee4649c pytorch/softmax.py L212-233), which reads one mask
  byte per score (common/fused_softmax/scaled_masked_softmax.cu
  ``scaled_masked_softmax_warp_forward``, ``copy_vector<uint8_t>`` of the mask beside the
  scores, L203-259). The grid walks a head's query rows before the next head's (``blocks(
  query_seq_len / batches_per_block, attn_heads, batches)``, L546), so each head re-reads the
  same [sq, sk] mask after the kernel moved that head's scores (2 read and 2 written) and the
  mask (1): 5 bytes a score between two reads of a mask line. Where that fits in the GPU's L2
  (``GPUSpec.l2_bytes``) the re-read hits it and costs no HBM byte; where it does not, every
  head reads the mask from HBM. TE 1.x ran causal scores through the mask-free
  upper-triangular kernel (v1.8 softmax.py ``ScaledUpperTriangMaskedSoftmax``, v1.13
  ``ScaledAlignedCausalMaskedSoftmax``) and built no mask.
* **Where the fused softmax does not run.** ``is_kernel_available`` (bee4649c softmax.py L177-210;
  v2.8 attention/dot_product_attention/softmax.py unchanged) takes 16-bit scores with
  ``16 < sk < 16384``, ``sk % 8 == 0``, ``sq > 1``, a causal mask only with ``sq == sk``, and
  ``sq % 4 == 0``, ``b * np % 4 == 0``, ``sq % batch_per_block == 0``; TE 1.x (v1.8) runs a
  causal mask on its own kernel wherever ``16 < sk < 16384`` and ``sk % 8 == 0``. Otherwise
  ``forward_torch_softmax`` runs in fp32 (``softmax_in_fp32`` True, the module's default):
  ``inp.float()`` (2 + 4 bytes a score), the causal mask or'ed with the cached triangular one (per
  call), ``attention_mask_func``'s in-place ``masked_fill_`` over the broadcast mask (4 + 4, on
  PyTorch's non-vectorized path), ``Softmax`` (4 + 4) and ``.bfloat16()`` (4 + 2): 28 bytes in 4
  kernels where the fused kernel moves 4 in 1; no scale multiply (the scale is applied by the
  ``baddbmm``; ``NVTE_APPLY_QK_LAYER_SCALING`` is off by default). Backward, autograd's reverse:
  the cast (2 + 4), softmax's backward (4 + 4 + 4), the fill's (a clone 4 + 4 and the fill
  4 + 4, the latter non-vectorized) and the cast back (4 + 2): 40 bytes in 5 kernels where the
  fused backward moves 6 in 1. Long sequences (16,384 keys and more) always take this path.

Which framework's unfused attention is Transformer Engine's is the profile's
``te_unfused_attention``; which TE release, its ``te_version`` (null: not known, priced as
TE 1.x, without the mask). ``te_version`` names NVIDIA's releases, so an AMD GPU (ROCm's TE fork,
versioned apart) gets the core's launches and no mask.
"""

from __future__ import annotations

from trainsim.catalog.frameworks import profile_supports, te_at_least
from trainsim.config import RunConfig
from trainsim.workload.ops import Attention, Elementwise
from trainsim.workload.softmax import batches_per_block

TE_FULL_MASK = "2.0"
"""First Transformer Engine release whose unfused attention builds the full mask on every call
(f033498f6) and sends causal scores through the masked softmax kernel."""
TE_BOOL_MASK = "2.6"
"""First release that builds it from bool comparisons (0a1499faa) instead of int64 ``where``."""
MASK_BUILD_INT64 = (81.0, 11)
"""(bytes per mask element, kernels) of ``get_full_mask`` from TE 2.0 to 2.5 (module docstring)."""
MASK_BUILD_BOOL = (37.0, 10)
"""The same from TE 2.6."""
MASK_READ_BYTES = 1.0
"""Bytes of mask the masked softmax kernel reads per score (a ``uint8`` per element)."""
MASK_REUSE_BYTES_PER_SCORE = 5.0
"""Bytes the softmax kernel moves per score between two reads of one mask line: a head's scores
read (2) and written (2) and the mask (1)."""
TE_FUSED_SOFTMAX_MAX_KEYS = 16384
"""``is_kernel_available``'s ``16 < sk < 16384``: this many keys and more run the fp32 fallback."""
FALLBACK_FWD_BYTES = 28.0 - 4.0
"""Per score, the fp32 fallback's forward beyond the fused kernel's read and write."""
FALLBACK_BWD_BYTES = 40.0 - 6.0
"""Per score, its backward beyond the fused backward's."""
FALLBACK_EXTRA_KERNELS = (3, 4)
"""Kernels the fallback adds, forward (4 for 1) and backward (5 for 1)."""
MASK_FILL_BYTES = 8.0
"""Per score, each way: the fp32 fill over the broadcast mask, on the non-vectorized path."""


def te_fused_softmax_runs(b: int, np: int, sq: int, sk: int, causal: bool, te2: bool) -> bool:
    """Whether Transformer Engine's ``FusedScaleMaskSoftmax`` takes its fused kernel for 16-bit
    scores of shape [b, np, sq, sk] (``te2``: the TE 2.x rules, else 1.x's; module docstring)."""
    if not (16 < sk < TE_FUSED_SOFTMAX_MAX_KEYS and sk % 8 == 0 and sq > 1):
        return False
    if not te2:
        return causal or (sq % 4 == 0 and b * np % 4 == 0 and sq % batches_per_block(sk) == 0)
    if causal and sq != sk:
        return False
    return sq % 4 == 0 and b * np % 4 == 0 and sq % batches_per_block(sk) == 0


def _te2(cfg: RunConfig) -> bool:
    """The run's Transformer Engine builds the full mask (>= 2.0, on an NVIDIA GPU)."""
    t = cfg.training
    return cfg.cluster.gpu.vendor != "amd" and te_at_least(t.framework, t.framework_version,
                                                           TE_FULL_MASK)


def te_softmax_in_fp32(cfg: RunConfig, b: int, np: int, sq: int, sk: int) -> bool:
    """Whether the run's unfused attention is Transformer Engine's and its softmax over [b, np,
    sq, sk] causal scores falls back to ``torch.nn.Softmax`` in fp32, which keeps its fp32
    output for the backward (``memory.scores``)."""
    if cfg.training.attention != "unfused" or not profile_supports(cfg, "te_unfused_attention"):
        return False
    return not te_fused_softmax_runs(b, np, sq, sk, True, _te2(cfg))


def te_unfused_ops(cfg: RunConfig, core: Attention) -> list[Elementwise]:
    """The ops Transformer Engine's ``UnfusedDotProductAttention`` runs beside ``core`` (an
    unfused attention of a framework whose profile has ``te_unfused_attention``): the full mask
    built before the scores, the mask the softmax kernel reads from HBM, and the fp32 softmax
    where the fused kernel does not run (module docstring). Empty for any other attention."""
    t = cfg.training
    if core.impl != "unfused" or not profile_supports(cfg, "te_unfused_attention"):
        return []
    te2 = _te2(cfg)
    ops: list[Elementwise] = []
    mask = float(core.q_len) * core.kv_len
    scores = core.batch * core.heads * core.pairs
    if te2:
        per, kernels = MASK_BUILD_BOOL if te_at_least(t.framework, t.framework_version,
                                                      TE_BOOL_MASK) else MASK_BUILD_INT64
        ops.append(Elementwise("te_unfused_mask", bytes=per * mask, kernels=kernels,
                               bwd_bytes=0.0, bwd_kernels=0))
        if MASK_REUSE_BYTES_PER_SCORE * mask > cfg.cluster.gpu.l2_bytes:
            ops.append(Elementwise("te_unfused_mask_read", bytes=MASK_READ_BYTES * scores,
                                   kernels=0, bwd_bytes=0.0, bwd_kernels=0))
    if not te_fused_softmax_runs(core.batch, core.heads, core.q_len, core.kv_len,
                                 core.causal, te2):
        fwd_kernels, bwd_kernels = FALLBACK_EXTRA_KERNELS
        ops += [
            Elementwise("te_softmax_fallback",
                        bytes=(FALLBACK_FWD_BYTES - MASK_FILL_BYTES) * scores,
                        kernels=fwd_kernels - 1, impl="eager",
                        bwd_bytes=(FALLBACK_BWD_BYTES - MASK_FILL_BYTES) * scores,
                        bwd_kernels=bwd_kernels - 1),
            Elementwise("te_softmax_fallback.masked_fill", bytes=MASK_FILL_BYTES * scores,
                        impl="eager_broadcast", bwd_bytes=MASK_FILL_BYTES * scores,
                        bwd_kernels=1, elem_bytes=4),
        ]
    return ops


CORE_ATTENTION_OPS = frozenset({"te_unfused_mask", "te_unfused_mask_read", "te_softmax_fallback"})
"""Names (before any '.') of the ops above: inside the core attention, re-run with it by a
selective recompute of ``core_attn`` (``workload.recompute``)."""
