"""The routed experts and their combine as eager PyTorch runs them around ``torch._grouped_mm``.

Megatron-core's experts (``TEGroupedMLP``, the default of ``moe_block.moe_block``, style ``""``)
run gate and up projections as one GEMM and a fused (weighted) SwiGLU, and un-permute with
Transformer Engine's fused kernel (a gather of each token's k rows with their probabilities, no
atomics). Two eager styles (``STYLES``), each what a measured source runs kernel by kernel:

``padded``: torchtitan's ``GroupedExperts`` (torchtitan/models/common/moe/moe.py
``_run_experts_grouped_mm`` and moe/utils.py ``indices_padding_wrapper``, up to pytorch/
torchtitan@fe80b63 "remove unnecessary padding in MoE (#2774)", 2026-04-02) and the copy of it in
ByteDance-Seed/VeOmni (veomni/ops/fused_moe/torch_fused_moe.py, PR #460, 2026-02):

* each expert group is padded to a multiple of 8 rows by a second permutation of the routed
  tokens: ``torch.vstack`` appends a zero row (a copy of every routed row), ``x[permuted_indices]``
  gathers them in padded order (another copy), and ``_unpermute`` scatters the output back
  (``out_unpermuted[permuted_indices, :] = out``: a third);
* ``w1`` and ``w3`` are two grouped GEMMs of ``ffn`` columns each (not one of ``2 ffn``);
* SwiGLU is ``F.silu`` then the product, two kernels on contiguous tensors (``swiglu``/``eager``);
* VeOmni multiplies the activation by the routing weights (``h = h * gate_weights``, a
  ``[rows, 1]`` operand: PyTorch's non-vectorized path, ``eager_broadcast``). torchtitan scales
  the routed input instead, in fp32, before the experts (``score_before_experts``); that is its
  dispatcher's, not priced here;
* the combine (``padded_combine``) writes no atomics: ``torch.zeros`` of ``rows x hidden``, an
  index-put of the expert outputs into it in (token, choice) order and ``.sum(dim=1)`` over each
  token's k rows (pytorch/torchtitan@0646ba46 torchtitan/models/common/moe/moe.py
  ``MoE.forward``; VeOmni's ``torch_fused_moe_forward`` the same).

``index_add``: ``benchmarks/device_checks54.py`` ``_moe_forward`` (the H200's run6): the rows
gathered once (no padding), gate and up as one grouped GEMM of ``2 ffn`` columns whose halves
(``chunk(2, -1)``, strided views) ``F.silu`` and the product read one element per thread
(``swiglu``/``eager_chunked``), fc2, the routing weights' ``[rows, 1]`` product on the ``rows x
hidden`` output (``eager_broadcast``), and ``torch.zeros_like(x).index_add_`` back to the tokens:
one bf16 atomic add per element (``index_add_combine``, ``compute.atomics``).

Only the kernels files' ``torch._grouped_mm`` MoE-block rows are built these ways
(``validate.kernels``); no training profile runs torchtitan's MoE before #2774.
"""

from __future__ import annotations

from trainsim.errors import ConfigError
from trainsim.workload.elementwise import IMPLEMENTATIONS
from trainsim.workload.ops import ACT_BYTES, Elementwise

STYLES = ("", "padded", "index_add")
"""How the routed experts run: ``""`` Megatron-core's (fused), ``padded`` torchtitan's eager
experts before #2774, ``index_add`` one gated grouped GEMM and an ``index_add_`` combine."""

PAD_PERMUTE_COPIES = 2
"""Copies of the routed tokens before the experts: the ``vstack`` with the zero row and the
gather in padded order (``generate_permute_indices`` itself moves only indices)."""
PAD_UNPERMUTE_COPIES = 1
"""Copies after them: the index-put scatter back to the unpadded order."""
INDEX_BYTES = 8
"""The sorted (token, choice) indices are int64."""


def check_style(style: str) -> str:
    """``style`` if it is one of ``STYLES``; a one-line error otherwise."""
    if style not in STYLES:
        raise ConfigError(f"unknown MoE experts style {style!r}; known: "
                          f"{', '.join(repr(s) for s in STYLES)}")
    return style


def pad_permute(rows: int, hidden: int) -> Elementwise:
    """torchtitan's ``_permute`` of ``rows`` routed tokens of width ``hidden`` (read and write
    per copy), plus its index kernel."""
    copies = PAD_PERMUTE_COPIES
    return Elementwise("expert_pad_permute", bytes=copies * rows * hidden * ACT_BYTES * 2,
                       kernels=copies + 1)


def pad_unpermute(rows: int, hidden: int) -> Elementwise:
    """torchtitan's ``_unpermute``: the expert outputs scattered back (read and write)."""
    copies = PAD_UNPERMUTE_COPIES
    return Elementwise("expert_pad_unpermute", bytes=copies * rows * hidden * ACT_BYTES * 2,
                       kernels=copies)


def eager_swiglu(rows: int, ffn: int, chunked: bool = False) -> Elementwise:
    """``silu(gate) * up`` as two kernels (the bytes of ``swiglu``/``eager``): on two contiguous
    GEMM outputs, or (``chunked``) on the halves of one ``[rows, 2 ffn]`` output, strided views
    that run PyTorch's non-vectorized path. Priced by bytes, not by the kernel database."""
    impl = "eager_chunked" if chunked else "eager"
    per, kernels = IMPLEMENTATIONS[("swiglu", impl)]
    return Elementwise("expert_act", bytes=rows * ffn * per(ACT_BYTES), kernels=kernels,
                       impl="eager_chunked" if chunked else "fused")


def probs_mul(rows: int, width: int) -> Elementwise:
    """The routing weights' product with a ``[rows, width]`` tensor: read it, write it, the
    weights one value a row broadcast (``[rows, 1]``), so PyTorch's non-vectorized path."""
    return Elementwise("expert_probs_mul", bytes=rows * width * ACT_BYTES * 2,
                       impl="eager_broadcast")


def eager_swiglu_ops(rows: int, ffn: int) -> list[Elementwise]:
    """The ``padded`` style's activation: SwiGLU on contiguous outputs, then the weights'
    product on the activation (VeOmni's ``h * gate_weights``)."""
    return [eager_swiglu(rows, ffn), probs_mul(rows, ffn)]


def padded_combine(tokens: int, rows: int, hidden: int) -> Elementwise:
    """torchtitan's (and VeOmni's) un-permute: ``torch.zeros`` of ``rows x hidden`` (write), the
    index-put of the outputs into it (read, write, the indices), ``.sum(dim=1)`` over each
    token's rows (read, write ``tokens x hidden``): three kernels, no atomics."""
    nbytes = rows * hidden * ACT_BYTES * 4 + rows * INDEX_BYTES + tokens * hidden * ACT_BYTES
    return Elementwise("unpermute", bytes=nbytes, kernels=3)


def index_add_combine(tokens: int, rows: int, hidden: int) -> list[Elementwise]:
    """``torch.zeros_like(x).index_add_(0, token, out)``: the zero fill of ``tokens x hidden``,
    then one bf16 atomic add per element of the ``rows x hidden`` outputs (read once, added at
    the L2: ``compute.atomics``, whose rate includes the kernel's reads)."""
    return [Elementwise("unpermute.zeros", bytes=tokens * hidden * ACT_BYTES),
            Elementwise("unpermute", bytes=0.0, atomic_adds=float(rows * hidden))]


__all__ = ["INDEX_BYTES", "PAD_PERMUTE_COPIES", "PAD_UNPERMUTE_COPIES", "STYLES", "check_style",
           "eager_swiglu", "eager_swiglu_ops", "index_add_combine", "pad_permute",
           "pad_unpermute", "padded_combine", "probs_mul"]
