"""PyTorch SDPA on an AMD GPU: AOTriton's kernels, priced beside the fused kernels AMD writes.

PyTorch's ROCm build runs ``scaled_dot_product_attention``'s flash backend through AOTriton,
ahead-of-time compiled Triton kernels (pytorch/pytorch@40519fbb aten/src/ATen/native/
transformers/hip/flash_attn/aot/mha_all_aot.hip; AOTriton 0.10b from torch 2.9's nightlies,
pytorch/pytorch#156499, 2025-06), not through the Composable Kernel / AITER kernels that ``ck`` (Transformer Engine's and
FlashAttention's ROCm backends) names. trainsim prices ``ck`` as the flash2 family at the AMD
GPU's own GEMM ceiling (``attention.ATTENTION_FAMILY``), which HipKittens' MI355X table puts at
AITER's measured rate (0.997 forward, 0.889 backward of it at 8k, hd128, causal); AOTriton ran
0.10-0.61 of AITER's forward and 0.16-0.28 of its backward in the same table.
"""

from __future__ import annotations

AOTRITON_OF_FLASH2 = (0.265, 0.195)
"""(forward, backward) rate of AOTriton's matmuls as a fraction of the flash2 family's on the
same AMD GPU (the exponentials and each row's fixed work priced as the family's). Fitted by
``benchmarks/rocm45_aotriton.py --fit`` (least squares of log time, golden section) to
HazyResearch/HipKittens@f09e9685's PyTorch SDPA column on one MI355X (bf16, B16 H16, hd128,
causal, 1k-16k tokens: analysis/attn/fwd/plot.py L61-L83, analysis/attn/bkwd/plot.py L36-L42),
the only published AOTriton measurement at training shapes found; carried to CDNA 3 (MI300X)
unmeasured, AOTriton 0.10b shipping both gfx942 and gfx950 kernels. One factor per direction
does not follow the forward's length dependence (measured 55 TFLOP/s at 1k, 630 at 8k: priced
4.3x too fast at 1k, 1.8x too slow at 8k, 2.1x at 16k); the backward stays within 0.74-1.27
(benchmarks/RESULTS.md, 45th session, rocm45)."""

AOTRITON_IMPLS = frozenset({"sdpa"})
"""Implementations PyTorch's ROCm build runs through AOTriton and that trainsim prices so on an
AMD GPU: SDPA's default (flash) backend. Its memory-efficient backend also runs AOTriton on ROCm
but keeps ``MEM_EFFICIENT_OF_FLASH2`` (no published AMD measurement of it)."""


def aotriton_share(impl: str, backward: bool, vendor: str) -> float:
    """Factor on the flash2 family's rate for ``impl`` on a ``vendor`` GPU: AOTriton's
    (``AOTRITON_OF_FLASH2``) for SDPA on AMD, else 1."""
    if vendor == "amd" and impl in AOTRITON_IMPLS:
        return AOTRITON_OF_FLASH2[backward]
    return 1.0
