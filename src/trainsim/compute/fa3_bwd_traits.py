"""FlashAttention-3's Hopper backward kernel traits and the shared-memory operand traffic of
its warp-group matmuls (``wgmma``).

FA3's backward (Dao-AILab/flash-attention@0251105a hopper/flash_bwd_launch_template.h
L312-L389, ``run_mha_bwd_hdim64`` .. ``run_mha_bwd_hdim256``, ``Arch >= 90``) picks one set of
template arguments per head dim: the CTA's tile (query rows ``kBlockM`` x keys ``kBlockN``),
its MMA warp groups, whether each of its three kinds of matmul is computed transposed
(``SdP_swapAB``, ``dKV_swapAB``, ``dQ_swapAB``), how the warp groups split each
(``AtomLayoutMSdP``, ``AtomLayoutNdKV``, ``AtomLayoutMdQ``) and whether V stays in registers
(``V_in_regs``, the dP matmul's ``Mma_dP_is_RS``). Up to head dim 128 its tiles hold 128 keys
and its S / dP matmuls are transposed (128 keys the 64-row ``wgmma`` side); at 192 and 256 the
tile holds 96 / 80 keys, split three / two ways among the warp groups, untransposed: each warp
group's S and dP ``wgmma`` is 64 x 32 (192) or 64 x 40 (256) (``fa3_bwd_traits``).

A ``wgmma.m64nNk16`` (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate": M
is 64, N a multiple of 8 up to 256) reads its B operand (N x 16) from shared memory and its A
operand (64 x 16) from shared memory too unless it is held in registers (the ``rs`` form), for
2 x 64 x N x 16 FLOPs: 1/N + 1/64 bytes a FLOP (B only: 1/64). An SM's tensor cores do
``TENSOR_FLOPS_PER_SM_CLOCK`` (4096 on Hopper) a clock and its shared memory moves
``SMEM_BYTES_PER_SM_CLOCK`` (128), so a ``wgmma`` with both operands in shared memory keeps up
only from N = 64; at N = 32 it runs at 2/3 of the tensor rate (``wgmma_smem_over_mma``). The
backward's five matmuls run one after another within each warp group (S and dP, the softmax
gradient, then dV, dK and dQ: hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp ``mma``), so each is
paced on its own (``fa3_bwd_smem_over_mma``): 1 at head dims 64 and 128, 1.03 at 96, 1.20 at
192, 1.12 at 256.
"""

from __future__ import annotations

from typing import NamedTuple

WGMMA_M = 64
"""Rows of one ``wgmma`` (PTX ISA ``.m64nNk16``): the A operand's, whatever the tile."""
WGMMA_SMEM_BYTES_PER_CLOCK = 128
"""Shared-memory bytes an SM moves a clock (32 banks of 4 bytes), as
``compute.attention.SMEM_BYTES_PER_SM_CLOCK`` (the same figure, kept here so that this module
imports nothing from ``attention``)."""
WGMMA_FLOPS_PER_CLOCK = 4096
"""Dense 16-bit tensor FLOPs a Hopper SM does a clock (``attention.TENSOR_FLOPS_PER_SM_CLOCK``)."""


class Fa3BwdTraits(NamedTuple):
    """One FA3 Hopper backward kernel's template arguments (flash_bwd_launch_template.h
    ``run_mha_bwd_dispatch``)."""
    block_m: int
    block_n: int
    warpgroups: int
    sdp_swap: bool
    dkv_swap: bool
    dq_swap: bool
    atom_sdp: int
    atom_dkv: int
    atom_dq: int
    v_in_regs: bool = False


FA3_BWD_TRAITS: dict[tuple[int, bool], Fa3BwdTraits] = {
    (64, False): Fa3BwdTraits(128, 128, 2, True, False, False, 1, 2, 2),
    (96, False): Fa3BwdTraits(64, 128, 2, True, False, False, 1, 2, 1, True),
    (128, True): Fa3BwdTraits(64, 128, 2, True, False, False, 1, 2, 1),
    (128, False): Fa3BwdTraits(80, 128, 2, True, False, True, 1, 2, 1),
    (192, False): Fa3BwdTraits(64, 96, 3, False, True, False, 1, 1, 1),
    (256, False): Fa3BwdTraits(64, 80, 2, False, True, True, 1, 1, 1),
}
"""FA3's Hopper backward traits by (head dim, causal or local), @0251105a
hopper/flash_bwd_launch_template.h: L320 (64, no softcap: 128 x 128), L337 (96), L351 (128
causal or local: 64 x 128), L353 (128 otherwise: 80 x 128), L367 (192: 64 x 96, three MMA warp
groups), L380 (256: 64 x 80). A head dim's non-causal entry serves its causal kernel where
the source does not tell them apart (its ``True`` key is absent)."""


def fa3_bwd_traits(head_dim: int, causal: bool) -> Fa3BwdTraits:
    """FA3's Hopper backward traits for a kernel of ``head_dim`` (one of FA3's instantiated
    head dims, ``attention_head_dims.FA3_HEAD_DIMS``; a narrower head takes the next, a wider
    one the widest) with or without a causal (or local) mask (``FA3_BWD_TRAITS``)."""
    dims = sorted({d for d, _ in FA3_BWD_TRAITS})
    d = next((k for k in dims if head_dim <= k), dims[-1])
    return FA3_BWD_TRAITS.get((d, causal)) or FA3_BWD_TRAITS[(d, False)]


def wgmma_smem_over_mma(n: int, a_in_regs: bool) -> float:
    """How much longer than the tensor cores a ``wgmma.m64nNk16`` of width ``n`` takes to
    read its operands from shared memory (B, and A unless ``a_in_regs``), not less than 1."""
    per_flop = (0.0 if a_in_regs else 1.0 / n) + 1.0 / WGMMA_M
    return max(1.0, per_flop * WGMMA_FLOPS_PER_CLOCK / WGMMA_SMEM_BYTES_PER_CLOCK)


def fa3_bwd_gemm_widths(t: Fa3BwdTraits, head_dim: int, head_dim_v: int | None = None
                        ) -> list[tuple[int, bool, int]]:
    """(``wgmma`` N, A held in registers, FLOP weight) of the backward's five matmuls, as
    @0251105a hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp builds them (L82-L125
    ``TileShapeAtomSdP`` / ``dKV`` / ``dQ``: a swapped matmul's N is the tile's query rows or
    keys over its atom layout, an unswapped one's the keys or the head dim over the warp groups
    it is split among; L75-L76 ``Mma_dKV_is_RS``, ``Mma_dQ_is_RS``: P and dS from the S / dP
    accumulators' registers): S = Q K^T and dP = dO V^T (query rows x keys), dV = P^T dO and
    dK = dS^T Q (keys x head dim), dQ = dS K (query rows x head dim). FLOP weight: the head
    width each contracts or produces (``head_dim_v`` for dP and dV, as MLA's 192 / 128)."""
    dv = head_dim_v or head_dim
    w, m, n = t.warpgroups, t.block_m, t.block_n
    sdp_n = m // t.atom_sdp if t.sdp_swap else n // (w // t.atom_sdp)
    dkv_rs = t.atom_sdp == 1 and t.atom_dkv == w and t.sdp_swap and not t.dkv_swap
    dq_rs = t.atom_sdp == w and t.atom_dq == w and not t.sdp_swap and not t.dq_swap

    def dkv_n(d: int) -> int:
        return n // t.atom_dkv if t.dkv_swap else d // (w // t.atom_dkv)

    dq_n = m // t.atom_dq if t.dq_swap else head_dim // (w // t.atom_dq)
    return [(sdp_n, False, head_dim), (sdp_n, t.v_in_regs, dv), (dkv_n(dv), dkv_rs, dv),
            (dkv_n(head_dim), dkv_rs, head_dim), (dq_n, dq_rs, head_dim)]


def fa3_bwd_smem_over_mma(head_dim: int, causal: bool, head_dim_v: int | None = None) -> float:
    """FLOP-weighted mean over FA3's five backward matmuls (``fa3_bwd_gemm_widths``) of each
    one's shared-memory pace (``wgmma_smem_over_mma``): how much longer than at the tensor rate
    the kernel's matmuls take, at least 1. Head dims 64 and 128: 1 (every matmul at N >= 64 or
    with A in registers); 96: 1.03 (dQ at N 48); 192: 1.20 (S and dP at N 32); 256: 1.12 (S and
    dP at N 40)."""
    gemms = fa3_bwd_gemm_widths(fa3_bwd_traits(head_dim, causal), head_dim, head_dim_v)
    total = sum(wt for _, _, wt in gemms)
    return sum(wgmma_smem_over_mma(n, rs) * wt for n, rs, wt in gemms) / total


FA3_BWD_SMEM_BOUND = True
"""Whether FlashAttention-3's Hopper backward matmuls are paced by their ``wgmma`` operand
reads (``fa3_bwd_pace``); a switch for comparison (``benchmarks/bwd43_fa3_tiles.py``), not a
fitted constant. Added 2026-11-27 (43rd session, bwd43): on the H200 s41 grids cuDNN's
backward at head dim 160 / 192 / 256 +44 / +48 / +44 -> +22 / +25 / +29 % (predicted over
measured rate), 64 and 128 unchanged; no training row moves."""
FA3_BWD_PACED = frozenset({"flash3", "cudnn"})
"""Kernels whose Hopper backward takes FA3's tiles (``fa3_bwd_pace``): FA3 itself and cuDNN,
whose own tiles are not published but which runs FA3's head widths
(``attention_head_dims.KERNEL_HEAD_DIMS``, hd42). Blackwell's kernels (``tcgen05``: cuDNN's
there, FA4) are not FA3's."""


def fa3_bwd_pace(impl: str, arch: int | None, head_dim: int, causal: bool,
                 head_dim_v: int | None = None) -> float:
    """``fa3_bwd_smem_over_mma`` for a backward kernel ``impl`` of FA3's tiles
    (``FA3_BWD_PACED``) on a Hopper GPU (compute capability ``arch`` 9.x) at the kernel's
    query/key and value widths; 1 for every other kernel and GPU, or with the switch off."""
    if not FA3_BWD_SMEM_BOUND or impl not in FA3_BWD_PACED or not 90 <= (arch or 0) < 100:
        return 1.0
    return fa3_bwd_smem_over_mma(head_dim, causal, head_dim_v)


__all__ = ["FA3_BWD_PACED", "FA3_BWD_SMEM_BOUND", "FA3_BWD_TRAITS", "Fa3BwdTraits",
           "fa3_bwd_gemm_widths", "fa3_bwd_pace", "fa3_bwd_smem_over_mma", "fa3_bwd_traits",
           "wgmma_smem_over_mma"]
