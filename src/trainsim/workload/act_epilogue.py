"""The MLP's GELU in the GEMMs' epilogues (cuBLASLt ``GELU_AUX_BIAS`` / ``DGELU_BGRAD``).

flash-attn's ``FusedDenseGeluDense`` (Dao-AILab/flash-attention@4a6eaa9f flash_attn/ops/
fused_dense.py L129-237) and ``FusedMLP`` (@4f285b35 L189-455) run fc1 as
``fused_dense_cuda.linear_gelu_forward``: the GEMM's epilogue adds the bias, applies the GELU and
writes both the activation and its input (the auxiliary output the backward needs), so no
activation kernel reads the GEMM's output back. The backward's ``linear_gelu_linear_backward``
computes fc2's data gradient with a ``DGELU_BGRAD`` epilogue, which reads the saved GELU input,
multiplies by the GELU's derivative and reduces fc1's bias gradient: again no kernel of its own.

Priced as what the epilogues add to the GEMMs' traffic, at the HBM roofline and with no launch:
the forward writes one more 16-bit tensor of the activation's size (the auxiliary input) and
the backward reads it once. The unfused path it replaces (``elementwise.activation_op``) reads
and writes in a kernel of its own forward (2 elements' bytes) and reads two and writes one
backward (3). Nothing is fitted. Which runs fuse is the framework profile's
``gelu_gemm_epilogue``, by GPU architecture (FusedMLP's ``heuristic='auto'`` falls back to the
separate GELU on compute capability 9.0).
"""

from __future__ import annotations

import re

from trainsim.catalog.frameworks import framework_feature
from trainsim.config import RunConfig
from trainsim.workload.ops import ACT_BYTES, Elementwise

FEATURE = "gelu_gemm_epilogue"


def _sm(key: str) -> int | None:
    return int(key[2:]) if re.fullmatch(r"sm\d{2,3}", key) else None


def gelu_in_epilogue(cfg: RunConfig) -> bool:
    """Whether the run's framework computes the (ungated) GELU in its GEMMs' epilogues on the
    run's GPU: the profile's ``gelu_gemm_epilogue`` entry at the highest architecture key at or
    below the GPU's (``{sm80: true, sm90: false}``: Ampere and Ada fuse, Hopper on does not)."""
    t, gpu = cfg.training, cfg.cluster.gpu
    if not t.framework or cfg.model.activation != "gelu" or t.modules == "eager":
        return False
    by_arch = framework_feature(t.framework, t.framework_version, FEATURE) or {}
    level = gpu.sm_arch
    if level is None:
        return False
    held = [(n, bool(v)) for n, v in ((_sm(str(k)), v) for k, v in by_arch.items())
            if n is not None and n <= level]
    return max(held)[1] if held else False


def epilogue_op(elements: float) -> Elementwise:
    """The epilogues' extra traffic for ``elements`` activation outputs: the forward writes
    the GELU's input beside its output, the backward's dgrad epilogue reads it; no launch."""
    extra = elements * ACT_BYTES
    return Elementwise("gelu.epilogue", bytes=extra, kernels=0, bwd_bytes=extra,
                       bwd_kernels=0, kernel="", impl="fused")
