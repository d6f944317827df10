"""Bytes of a GEMM input that Transformer Engine saves for the backward (split from
``memory.estimate``, which reads it for every saved matmul input)."""

from __future__ import annotations

from trainsim.config import RunConfig
from trainsim.workload.ops import NVFP4_ELEMENT_BYTES

FP8_SAVED_INPUT_BYTES = {"delayed": 1.0, "current": 1.0, "blockwise": 1.0 + 4 / 128,
                         "mxfp8": 1.0 + 1 / 32, "nvfp4": NVFP4_ELEMENT_BYTES}
"""Bytes per element of a GEMM input that Transformer Engine saves for the backward under fp8:
the 8-bit cast (the copy the weight-gradient GEMM reads) instead of the 16-bit tensor, plus its
scales (blockwise: an fp32 scale per 1x128 tile; MXFP8: an E8M0 byte per 32 elements; NVFP4 the
4-bit column-wise copy with an E4M3 byte per 16, ``workload.ops.NVFP4_ELEMENT_BYTES``).
TransformerEngine transformer_engine/pytorch/module/linear.py, layernorm_linear.py and
layernorm_mlp.py save ``inputmat`` / ``ln_out`` / the activation output in fp8 when fp8 is on;
the LayerNorm input and the FC1 output (the activation's input) stay 16-bit."""


E5M6_SAVED_BYTES = 12 / 8 + 4 / 128
"""Bytes per element of the attention output DeepSeek-V3 caches in E5M6 (1 sign, 5 exponent
and 6 mantissa bits: 12), with an fp32 scale per 1x128 tile as its fp8 activations (report
§3.3.3 "Low-Precision Activation"; §3.3.2 Figure 7a for the tiles)."""


def gemm_input_bytes(cfg: RunConfig) -> float:
    """Bytes a saved GEMM input takes per element: 2 in 16-bit training, ~1 under fp8."""
    t = cfg.training
    return FP8_SAVED_INPUT_BYTES[t.fp8_recipe] if t.dtype == "fp8" else 2.0
