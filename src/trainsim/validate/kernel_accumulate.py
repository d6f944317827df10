"""The buffer a kernel row's GEMM adds its output into, read from the row's note (the kernels
files have no column for it): ``Gemm.accumulate_bytes``, the epilogue reading and writing that
buffer (beta 1), as a weight-gradient GEMM accumulating into Megatron's ``main_grad`` does in
training (``workload.layers.backward_of``)."""

from __future__ import annotations

import re

from trainsim.workload.ops import DTYPE_BYTES

ACCUMULATE_NOTE = re.compile(r"\baccumulat(?:e|es|ed|ing) into (?:the |an? )?(fp32|bf16|fp16)\b",
                             re.IGNORECASE)
"""A note saying the GEMM accumulates into an existing buffer of a dtype ("accumulated into the
fp32 main_grad", "accumulate into an fp32 output"): TransformerEngine's ``general_gemm`` /
``general_grouped_gemm`` with ``accumulate=True``, cuBLAS's beta 1."""


def accumulate_bytes(note: str) -> int:
    """Bytes per element of the buffer a row's note says its GEMM accumulates into
    (``ACCUMULATE_NOTE``); 0 for a fresh output."""
    found = ACCUMULATE_NOTE.search(note or "")
    return DTYPE_BYTES[found.group(1).lower()] if found else 0


__all__ = ["ACCUMULATE_NOTE", "accumulate_bytes"]
