"""The memory of torchtitan's own MoE layer (``workload.moe_titan``'s eras, profile
``moe_experts``): what autograd saves for the backward, what the forward holds at its peak
beyond that, and the combine's backward temporaries, tensor by tensor from the source.

Read at pytorch/torchtitan e1f7f318a (#1974, 2025-11-21) torchtitan/models/moe/moe.py and
utils.py (``indices_padding_wrapper``), the PR branch's old forward (14cd817e4
torchtitan/moe_bench_and_test/__init__.py ``MoEOld``, ``TokenReordererOld``) and b5bcd76c6
torchtitan/models/common/token_dispatcher.py L70-L169 and torchtitan/ops/scatter_add.py.

Saved, in every era: the router's score function output (``T x E`` fp32: softmax and sigmoid
keep their output) and its ``gather`` index (``T x k`` int64); two int64 index vectors over the
``R = T k`` copies (the stable argsort's, kept by the sorted scores' indexing or the index-put,
and ``// top_k``'s, kept by the tokens' copy and the scatter); the experts' input rows (kept by
the w1 and w3 grouped GEMMs) and four inner tensors of eager SwiGLU (w1's output for ``silu``,
``silu``'s output and w3's for the product, the product for w2: ``8 F`` bytes a row where
Megatron-core's fused SwiGLU keeps ``6 F``); the fp32 copy of the expert outputs the score
product keeps for the scores' gradient (``R x h x 4``: ``routed_output.to(float32) * scores``,
or the index-put era's ``bmm`` operand ``routed_output_unsorted.float()``) and the scores; the
shared experts' four inner tensors. The first two eras pad every expert's rows to a multiple of
``PAD_ALIGN`` (``generate_permute_indices``, ``padded_max_len = round_up(rows + experts x 8,
8)``) and keep the permutation's int64 indices; the last keeps its EP permutation's indices.
From ab5ed59f8 (2026-03, ``moe_gate_fp32``) the gate runs under autocast to fp32, which saves
its fp32 input and weight casts.

Held at the forward's peak beyond those (``forward_extra_bytes``: locals of ``MoE.forward``
alive until it returns): the scatter-add eras' copied tokens, the experts' output, the fp32
product and its 16-bit cast, the shared experts' output; the index-put era's copied tokens,
the experts' output and its unsorted copy (``R x h x 2`` each), the ``bmm``'s fp32 output and
its cast, the shared and summed outputs. The combine's backward (``combine_backward_bytes``):
the scatter-add eras' ``MulBackward`` holds the fp32 gradient, the expert outputs' gradient
and the full-size product for the scores' gradient before autograd sums it to their shape
(``R x h x 12``); the index-put era's ``bmm`` backward the fp32 ``T x h`` gradient and the
``R x h`` fp32 one (no full-size temporary: the scores' gradient is a product of its own).

Checked against the one measurement of this layer's memory its history states: #1974's
``moe_memory.py`` (DSv3-16B layer, 4 x 4096 tokens, bf16, forward and backward of
``moe(inputs).sum()``) peak active 5.926 GiB (scatter_add) and 5.051 GiB (index-put + bmm),
``tests/test_moe_titan_memory.py``, ``benchmarks/titanmoe56_memory.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainsim.config import RunConfig

PAD_ALIGN = 8
"""Rows each expert's group is padded to a multiple of (``TOKEN_GROUP_ALIGN_SIZE_M``, 8 for
16-bit: "16 byte alignment / 2 bytes per elem"; e1f7f318a torchtitan/models/moe/utils.py)."""
ACT, F32, INDEX = 2, 4, 8
"""Bytes of a 16-bit activation, an fp32 element, an int64 index."""
SWIGLU_SAVED = 4
"""16-bit tensors of ``F`` per row eager SwiGLU keeps: w1's output, silu's, w3's, the
product."""


@dataclass(frozen=True)
class TitanMoeShape:
    """One rank's torchtitan MoE layer for one micro-batch."""

    tokens: int
    """Tokens the rank routes (``T``)."""
    topk: int
    experts: int
    """Routed experts of the model (the router's ``E``)."""
    local_experts: int
    hidden: int
    ffn: int
    """An expert's inner width on this rank."""
    rows: int
    """Token copies this rank's experts compute (``R`` without EP; the busiest rank's)."""
    shared_tokens: float = 0.0
    """Tokens the shared experts compute on this rank."""
    shared_ffn: float = 0.0
    """Their inner width on this rank (0: none)."""
    ep: int = 1

    @property
    def routed(self) -> int:
        """Copies the rank sends and combines (``R = T k``)."""
        return self.tokens * self.topk


def shape_of(cfg: RunConfig) -> TitanMoeShape:
    """The layer of the run ``cfg`` on one rank: the tokens it routes (``T / tp`` under SP),
    the busiest expert rank's rows (``memory.layer_activations``' rule: the imbalance, times
    the expert-TP gather), the shared experts on the micro-batch's tokens, TP-sharded."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    T = tr.micro_batch_size * tr.seq_length / p.cp
    tokens = int(T / p.tp) if p.sequence_parallel else int(T)
    routed = tokens * m.moe_router_topk
    rows = routed if p.ep * p.etp == 1 else math.ceil(routed * m.moe_recv_factor()) * p.etp
    return TitanMoeShape(
        tokens=tokens, topk=m.moe_router_topk, experts=m.num_experts or 1,
        local_experts=(m.num_experts or 1) // p.ep, hidden=m.hidden_size,
        ffn=m.expert_ffn_size // p.etp, rows=rows, shared_tokens=T,
        shared_ffn=(m.moe_shared_expert_intermediate_size or 0) / p.tp, ep=p.ep)


def padded_rows(rows: int, local_experts: int) -> int:
    """``padded_max_len`` of ``generate_permute_indices``: every group rounded up to
    ``PAD_ALIGN``, the worst case reserved."""
    n = rows + local_experts * PAD_ALIGN
    return -(-n // PAD_ALIGN) * PAD_ALIGN


def expert_rows(style: str, s: TitanMoeShape) -> int:
    """Rows the grouped GEMMs run on: padded in the first two eras."""
    return s.rows if style == "torchtitan_sorted" else padded_rows(s.rows, s.local_experts)


def saved_bytes(style: str, s: TitanMoeShape, fp32_gate: bool = False) -> float:
    """Bytes autograd keeps for the layer's backward (this module's docstring), beyond its
    input (the norm's output, which the gate and the shared experts keep)."""
    T, R, h = s.tokens, s.routed, s.hidden
    out = T * s.experts * F32 + T * s.topk * INDEX  # score function output, gather index
    if fp32_gate:  # autocast's fp32 copies of the gate's input and weight
        out += (T + s.experts) * h * F32
    out += 2 * R * INDEX  # the argsort's indices and // top_k's
    rows = expert_rows(style, s)
    if style != "torchtitan_sorted" or s.ep > 1:
        out += rows * INDEX  # the padding's, or the EP permutation's, indices
    out += rows * h * ACT + rows * s.ffn * ACT * SWIGLU_SAVED  # experts' input, SwiGLU
    out += R * h * F32 + R * F32  # the score product's fp32 operand, the scores
    out += s.shared_tokens * s.shared_ffn * ACT * SWIGLU_SAVED
    return float(out)


def forward_extra_bytes(style: str, s: TitanMoeShape) -> float:
    """Bytes the forward holds at its peak beyond ``saved_bytes`` (this module's docstring)."""
    T, R, h = s.tokens, s.routed, s.hidden
    if style == "torchtitan_index_put":
        # at the bmm output's cast: it, its 16-bit copy and the shared output (the sum of the
        # last two comes after the fp32 output is freed)
        return float(3 * R * h * ACT + T * h * (F32 + ACT + ACT))
    return float(R * h * (ACT + ACT + F32 + ACT) + T * h * ACT)


def combine_backward_bytes(style: str, s: TitanMoeShape) -> float:
    """Bytes the combine's backward holds beyond ``saved_bytes`` (this module's docstring)."""
    T, R, h = s.tokens, s.routed, s.hidden
    if style == "torchtitan_index_put":
        return float(T * h * F32 + R * h * F32)
    return float(3 * R * h * F32)


def layer_extra_bytes(style: str, s: TitanMoeShape) -> float:
    """One layer's forward-and-backward peak beyond ``saved_bytes``: the larger of the two.
    (The experts' backward, which trades saved rows for weight gradients, stays below both
    in #1974's layer: about 3.6 GiB with every expert gradient made, against 5.0 and 5.9.)"""
    return max(forward_extra_bytes(style, s), combine_backward_bytes(style, s))


__all__ = ["PAD_ALIGN", "TitanMoeShape", "combine_backward_bytes", "expert_rows",
           "forward_extra_bytes", "layer_extra_bytes", "padded_rows", "saved_bytes", "shape_of"]
