"""The routed experts' bias loops: the per-expert bias additions Megatron-core's
``TEGroupedMLP`` (after fc2) and NeMo Automodel's DeepEP experts (after fc1) run in Python, one
expert at a time, as memory-bound ops (importable from ``workload.elementwise`` too)."""

from __future__ import annotations

from typing import NamedTuple

from trainsim.workload.ops import ACT_BYTES, Elementwise

EXPERT_BIAS_BYTES = (6 * ACT_BYTES, 8 * ACT_BYTES)
"""Bytes per element of the experts' output that ``TEGroupedMLP._apply_bias`` moves (forward,
backward) with 16-bit routing probabilities. Transformer Engine's ``GroupedLinear`` adds fc1's
bias in its GEMMs, but fc2's is skipped (``skip_bias_add=True``) and added afterwards, weighted
by each token's routing probability, one expert at a time in Python (Megatron-core
megatron/core/transformer/moe/experts.py ``_apply_bias``, since a329dd6 "Enable bias in expert
mlp [gpt-oss 5/5]", 2025-09): per expert ``b * p`` (writes the expert's rows) and ``t + b * p``
(reads two, writes one), then ``torch.cat`` (reads and writes all rows): 6 element passes.
Backward: autograd's ``MulBackward`` forms ``grad * p`` and ``grad * b`` (each read and
written) and sums them (read), and the split of the GEMM output concatenates its gradient: 8
passes. Wider probabilities: ``expert_bias_bytes``."""
EXPERT_BIAS_KERNELS = (2, 4)
"""Kernels per local expert of ``_apply_bias`` (forward: mul, add; backward: two products and
their two sums), plus one concatenation each way."""


class ExpertBiasCost(NamedTuple):
    """What ``_apply_bias`` moves and launches per element of the experts' output."""

    fwd_bytes: int
    bwd_bytes: int
    extra_kernels: int
    """Kernels each way beyond ``EXPERT_BIAS_KERNELS`` (the closing cast and its gradient)."""
    bwd_kernels_per_expert: int


def expert_bias_bytes(prob_bytes: int) -> ExpertBiasCost:
    """Bytes (forward, backward) per element of the experts' output for ``_apply_bias`` with
    routing probabilities of ``prob_bytes`` bytes, and its kernels (``ExpertBiasCost``).
    16-bit probabilities: ``EXPERT_BIAS_BYTES``. fp32 probabilities (the flex dispatchers cast
    them: "DeepEP/HybridEP only supports float32 probs", ``self.token_probs.float()``,
    core_v0.17.0 megatron/core/transformer/moe/token_dispatcher.py L1033-1039 and L1178-1184;
    NeMo Automodel's DeepEP copy the same, L164-170, its ``Gate.forward`` returning
    ``weights.type_as(x)``, 16-bit, nemo_automodel/components/moe/layers.py @ 89e3a9fd L699; a
    ``moe_router_dtype`` fp32 router computes them so) promote the loop: ``b * p`` is a ``prob_bytes`` tensor of
    the expert's rows, ``t + b * p`` reads the 16-bit ``t`` and it and writes ``prob_bytes``,
    ``torch.cat`` moves them, and the closing ``.to(intermediate_parallel.dtype)`` reads them
    and writes 16 bits (a kernel of its own): ``6 p + 2 a`` bytes (``a`` the 16-bit size).
    Backward: that cast's gradient up-casts the incoming gradient (``a + p``), each expert's
    gradient of ``t`` is cast back to ``t``'s 16-bit type by autograd (``p + a``, a kernel per
    expert; torch/csrc/autograd/engine.cpp ``validate_outputs``; so is the bias's summed
    gradient, a kernel over ``h`` values), the two products and sums move ``6 p``, and the
    split's gradient concatenates the 16-bit pieces (``2 a``): ``8 p + 4 a``."""
    a = ACT_BYTES
    if prob_bytes <= a:
        return ExpertBiasCost(EXPERT_BIAS_BYTES[0], EXPERT_BIAS_BYTES[1], 0,
                              EXPERT_BIAS_KERNELS[1])
    return ExpertBiasCost(6 * prob_bytes + 2 * a, 8 * prob_bytes + 4 * a, 1,
                          EXPERT_BIAS_KERNELS[1] + 2)


def expert_fc2_bias(rows: int, h: int, local: int, prob_bytes: int = ACT_BYTES) -> Elementwise:
    """The per-expert bias loop after the experts' fc2 (``EXPERT_BIAS_BYTES``), its routing
    probabilities ``prob_bytes`` wide (``expert_bias_bytes``)."""
    elements = rows * local * h
    fwd, bwd, extra, bwd_per_expert = expert_bias_bytes(prob_bytes)
    return Elementwise("expert_fc2_bias", bytes=elements * fwd,
                       kernels=EXPERT_BIAS_KERNELS[0] * local + 1 + extra,
                       bwd_bytes=elements * bwd,
                       bwd_kernels=bwd_per_expert * local + 1 + extra, impl="eager")


EXPERT_FC1_BIAS_BYTES = (4 * ACT_BYTES, 3 * ACT_BYTES)
"""Bytes per element of fc1's output that a per-expert bias loop moves where the grouped GEMM
adds no bias (NeMo Automodel's ``GroupedExpertsDeepEP`` over ``grouped_gemm.ops.gmm``:
nemo_automodel/components/moe/layers.py @ 89e3a9fd ``_apply_bias(output1, gate_and_up_bias,
tokens_per_expert)``): per expert ``t + b`` (reads and writes its rows), then ``torch.cat``
(reads and writes all rows): 4 passes. Backward: the add passes the gradient through, each
bias gradient sums its expert's rows (reads them), and the split's gradient concatenates the
pieces (reads and writes): 3 passes."""


def expert_fc1_bias(rows: int, width: int, local: int) -> Elementwise:
    """The per-expert bias loop after the experts' fc1 (``EXPERT_FC1_BIAS_BYTES``): one kernel
    per local expert each way, plus the concatenation."""
    elements = rows * local * width
    return Elementwise("expert_fc1_bias", bytes=elements * EXPERT_FC1_BIAS_BYTES[0],
                       kernels=local + 1, bwd_bytes=elements * EXPERT_FC1_BIAS_BYTES[1],
                       bwd_kernels=local + 1, impl="eager")
