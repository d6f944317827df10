"""The routed experts as eager PyTorch runs them around ``torch._grouped_mm``.

Megatron-core's experts (``TEGroupedMLP``, the default of ``moe_block.moe_block``) run gate and
up projections as one GEMM and a fused (weighted) SwiGLU. The reference PyTorch user of
``torch._grouped_mm``, torchtitan's ``GroupedExperts`` (torchtitan/models/common/moe/moe.py
``_run_experts_grouped_mm`` and moe/utils.py ``indices_padding_wrapper``, up to pytorch/
torchtitan@fe80b63 "remove unnecessary padding in MoE (#2774)", 2026-04-02), and the copy of it
in ByteDance-Seed/VeOmni (veomni/ops/fused_moe/torch_fused_moe.py, PR #460, 2026-02) do it
eagerly, kernel by kernel:

* each expert group is padded to a multiple of 8 rows by a second permutation of the routed
  tokens: ``torch.vstack`` appends a zero row (a copy of every routed row), ``x[permuted_indices]``
  gathers them in padded order (another copy), and ``_unpermute`` scatters the output back
  (``out_unpermuted[permuted_indices, :] = out``: a third);
* ``w1`` and ``w3`` are two grouped GEMMs of ``ffn`` columns each (not one of ``2 ffn``);
* SwiGLU is ``F.silu`` then the product, two kernels (``elementwise`` ``swiglu``/``eager``);
* VeOmni multiplies the activation by the routing weights in one more pass
  (``h = h * gate_weights``). torchtitan scales the routed input instead, in fp32, before the
  experts (``score_before_experts``: three eager passes over ``rows x hidden``); that is its
  dispatcher's, not priced here.

Only the kernels files' ``torch._grouped_mm`` MoE-block rows are built this way
(``validate.kernels``); no training profile runs torchtitan's MoE before #2774.
"""

from __future__ import annotations

from trainsim.workload.elementwise import IMPLEMENTATIONS
from trainsim.workload.ops import ACT_BYTES, Elementwise

PAD_PERMUTE_COPIES = 2
"""Copies of the routed tokens before the experts: the ``vstack`` with the zero row and the
gather in padded order (``generate_permute_indices`` itself moves only indices)."""
PAD_UNPERMUTE_COPIES = 1
"""Copies after them: the index-put scatter back to the unpadded order."""


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


def eager_swiglu(rows: int, ffn: int) -> list[Elementwise]:
    """``silu(x @ w1) * (x @ w3)`` as two kernels on contiguous tensors (the bytes of
    ``swiglu``/``eager``), then the routing-weight product (read the activation, write it; the
    weights are one value per row). Priced by bytes, not by the kernel database: its SwiGLU
    records are ``trainsim profile``'s ``x.chunk(2)`` halves, strided views (``eager_chunked``)."""
    per, kernels = IMPLEMENTATIONS[("swiglu", "eager")]
    return [Elementwise("expert_act", bytes=rows * ffn * per(ACT_BYTES), kernels=kernels),
            Elementwise("expert_probs_mul", bytes=rows * ffn * ACT_BYTES * 2)]
