"""FlashAttention-2's kernel traits and the shared-memory traffic of its warps' matmuls.

FlashAttention-2 (and PyTorch SDPA's flash backend, which vendors it) picks one
``Flash_fwd_kernel_traits`` / ``Flash_bwd_kernel_traits`` per head dim, causal mask, dropout and
GPU: the CTA's tile (query rows ``kBlockM`` x keys ``kBlockN``), its warps and, backward, how the
warps split each of its five matmuls (``AtomLayoutMSdP``, ``AtomLayoutNdKV``, ``AtomLayoutMdQ``)
and whether V stays in registers (``Is_V_in_regs``): Dao-AILab/flash-attention@0251105a
csrc/flash_attn/src/flash_fwd_launch_template.h L195-L318 and flash_bwd_launch_template.h
L136-L302 (``fa2_traits``).

Its matmuls issue Ampere's ``mma.sync``, whose operands each warp loads from shared memory
itself (``ldmatrix``; csrc/flash_attn/src/utils.h ``gemm``: A and B copied from shared memory
k-slice by k-slice unless held in registers, ``gemm_rs``: A from registers). A warp that owns
fewer output rows or columns reloads the same operand for less work, so the shared-memory
bytes per matmul FLOP follow from the warp layout (``fa2_smem_bytes_per_flop``): forward, the
warps split the query rows only (kernel_traits.h L74-L77, ``Layout<Shape<Int<kNWarps>,_1,_1>>``),
so FlashAttention-2's 64-row, 4-warp head-dim-256 tile on H100 and H200 (16 rows a warp)
loads K and V twice per FLOP what its 128-row head-dim-128 tile (32 rows a warp) loads.
"""

from __future__ import annotations

from typing import NamedTuple

SHARED_MEMORY_KIB = {70: (96, 96), 80: (164, 163), 86: (100, 99), 87: (164, 163),
                     89: (100, 99), 90: (228, 227), 100: (228, 227), 103: (228, 227),
                     120: (100, 99), 121: (100, 99)}
"""(per SM, per block with the opt-in attribute) KiB of shared memory by compute capability
(CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"; 12.0 and 12.1,
the RTX PRO 6000 Blackwell / GeForce RTX 50 and DGX Spark's GB10, a 100 KiB shared-memory
carve-out of which a block may take 99 KiB, as on sm86/sm89: NVIDIA Blackwell Tuning Guide,
CUDA 13.0, "Unified Shared Memory/L1/Texture Cache"; NVIDIA/cutlass 7107b055
include/cutlass/arch/arch.h L44-L45 ``sm120_smem_capacity_bytes = 101376`` (99 KiB) against
``sm100_smem_capacity_bytes = 232448`` (227 KiB), 12.1 built as the same family; the figures
FlashAttention-2's launch templates test: "A100" >= 144 KiB, "H100" >= 176 KiB, "sm86 and
sm89, max smem is 99 KB"). A GPU not listed (another vendor's, an unknown capability) takes
A100's: the tiles these kernels were first tuned on."""


FA2_HEAD_DIMS = (32, 64, 96, 128, 160, 192, 224, 256)
"""Head dims FlashAttention-2's kernels are instantiated for, a head rounded up to the next
(``HEADDIM_SWITCH``): PyTorch's vendored copy, which SDPA's flash backend runs
(pytorch/pytorch@035290b7 aten/src/ATen/native/transformers/cuda/flash_attn/static_switch.h,
``HEADDIM_SWITCH``: 32, 64, 96, 128, 160, 192, 224, 256; its kernels/ folder builds
flash_fwd_hdim160_* and flash_fwd_hdim224_*). Dao-AILab/flash-attention built the same set to
v2.6.1, dropped 224 after it (751c762c) and 160 after v2.7.4.post1 (ce212720, "Don't
specialize for hdim 160 anymore"): from v2.8 a 160-wide head runs the 192 kernel; a run on
flash-attn >= 2.8 with such a head is priced here on the older kernel (a lead:
``benchmarks/hd42_headdim.py``)."""


class Fa2Traits(NamedTuple):
    """One FlashAttention-2 kernel's traits (``Flash_fwd_kernel_traits`` /
    ``Flash_bwd_kernel_traits`` template arguments); the atom layouts are the warps along the
    first output dimension of the backward's S/dP, dK/dV and dQ matmuls (1 forward)."""
    block_m: int
    block_n: int
    warps: int
    atom_sdp: int = 1
    atom_dkv: int = 1
    atom_dq: int = 1
    v_in_regs: bool = False


def fa2_traits(head_dim: int, causal: bool, backward: bool, dropout: bool = False,
               arch: int | None = None) -> Fa2Traits:
    """FlashAttention-2's kernel traits as its launch templates choose them (see the module
    docstring) by head dim (rounded up to one of ``FA2_HEAD_DIMS``), causal mask, dropout and
    the GPU's shared memory (``SHARED_MEMORY_KIB`` of compute capability ``arch``; sm8x is 8.6,
    8.7 and 8.9, ``is_sm8x``). Head dims 160 and 224 as PyTorch's copy launches them
    (pytorch/pytorch@04ff5beb .../flash_attn/flash_fwd_launch_template.h ``run_mha_fwd_hdim160``:
    128 x 32, 4 warps, "For A100, H100, 128 x 32 is the fastest", on sm8x 128 x 64 with 8 warps
    non-causal, 64 x 64 causal; ``run_mha_fwd_hdim224``: 128 x 64 with 8 warps where a block may
    take 2 * 224 * (128 + 2 * 64) bytes, else 64 x 64; @08e43ed5 flash_bwd_launch_template.h
    ``run_mha_bwd_hdim160`` and ``run_mha_bwd_hdim224``: 64 x 64, 8 warps, atom layouts 4, 4,
    4, V from shared memory; flash-attn v2.7.4 (979702c8) launches the same at 160)."""
    per_sm, per_block = SHARED_MEMORY_KIB.get(arch or 80, SHARED_MEMORY_KIB[80])
    sm8x = arch is not None and 80 < arch < 90
    hd = next((d for d in FA2_HEAD_DIMS if head_dim <= d), 256)
    if backward:  # (block_m, block_n, warps, AtomLayoutMSdP, AtomLayoutNdKV, AtomLayoutMdQ, V)
        if hd == 32:  # 104 KB: "We can afford more registers to keep V in registers"
            big = per_block * 1024 >= 2 * ((3 * 128 + 2 * 128) * 32 + 2 * 128 * 128)
            return Fa2Traits(128, 128, 8, 4, 4, 4, not (big and dropout))
        if hd == 64:
            return Fa2Traits(128, 128, 8, 4, 4, 4, False) if per_block >= 144 else \
                Fa2Traits(64, 128, 8, 2, 4, 4, True)
        if hd == 96:
            return Fa2Traits(64, 128, 8, 2, 4, 4, not (per_block >= 116 and dropout))
        if hd == 128:
            return Fa2Traits(64, 128, 8, 2, 4, 2, False) if per_block >= 144 else \
                Fa2Traits(64, 64, 8, 4, 2, 2, True)
        if hd == 160:  # 116 KiB or less: no double buffer, the same warps
            return Fa2Traits(64, 64, 8, 4, 4, 4, False)
        if hd == 192:
            return Fa2Traits(64, 64, 8, 4, 2, 2, per_block < 136)
        if hd == 224:
            return Fa2Traits(64, 64, 8, 4, 4, 4, False)
        return Fa2Traits(64, 64, 8, 4, 2, 2, False) if per_block >= 144 else \
            Fa2Traits(64, 32, 8, 4, 1, 2, True)
    if hd <= 64:
        return Fa2Traits(128, 64, 4) if dropout and hd == 64 else Fa2Traits(128, 128, 4)
    if hd == 96:
        return Fa2Traits(64, 64, 4) if sm8x and causal else Fa2Traits(128, 64, 4)
    if hd == 128:
        if dropout:
            return Fa2Traits(128, 32, 4)
        if sm8x:
            return Fa2Traits(64, 64, 4) if causal else Fa2Traits(128, 32, 4)
        return Fa2Traits(128, 64, 4)
    if hd == 160:  # "For A100, H100, 128 x 32 is the fastest"
        if sm8x:
            return Fa2Traits(64, 64, 4) if causal else Fa2Traits(128, 64, 8)
        return Fa2Traits(128, 32, 4)
    if hd == 192:
        return Fa2Traits(64, 64, 4) if dropout else Fa2Traits(128, 64, 8)
    if hd == 224:  # 2 * 224 * (128 + 2 * 64) bytes = 112 KiB a block
        return Fa2Traits(128, 64, 8) if per_block * 1024 >= 2 * 224 * (128 + 2 * 64) else \
            Fa2Traits(64, 64, 4)
    # the template's test in bytes, head dim 256: 2 * 256 * (128 + 2 * 64) = 128 KiB a block,
    # 4 * 256 * (64 + 2 * 64) = 192 KiB an SM ("For A100, we want to run with 128 x 64";
    # "For H100 we want to run with 64 x 64 (96KB smem) since then we can get 2 CTAs per SM")
    a100_like = per_block * 1024 >= 2 * 256 * (128 + 2 * 64) and \
        per_sm * 1024 < 4 * 256 * (64 + 2 * 64)
    return Fa2Traits(128, 64, 8) if a100_like else Fa2Traits(64, 64, 4)


def _warp_gemm(rows: int, cols: int, a_smem: bool, b_smem: bool) -> float:
    """Shared-memory bytes per FLOP of one warp's share (``rows`` x ``cols`` of the output) of a
    16-bit matmul: per k step it loads its rows of A (``a_smem``) and its columns of B
    (``b_smem``), 2 bytes each, for 2 * rows * cols FLOPs."""
    return (1.0 / cols if a_smem else 0.0) + (1.0 / rows if b_smem else 0.0)


def fa2_smem_bytes_per_flop(t: Fa2Traits, head_dim: int, backward: bool) -> float:
    """Shared-memory operand bytes per matmul FLOP of FlashAttention-2 kernel ``t``, averaged
    over its matmuls (of equal FLOPs). Forward (csrc/flash_attn/src/flash_fwd_kernel.h L326,
    L374: ``gemm`` for S = Q K^T with Q from shared memory, ``Is_Q_in_regs`` false in every
    trait the templates launch; ``gemm_rs`` for O += P V, P in registers), each warp owning
    ``block_m / warps`` query rows and all columns. Backward (flash_bwd_kernel.h L474 S, L577
    dP with V in registers where ``Is_V_in_regs``, L635 dV, L655 dQ, L689 dK: both operands
    from shared memory), each matmul's warps laid out (atom, warps / atom) over its output:
    S and dP block_m x block_n, dK and dV block_n x head dim, dQ block_m x head dim
    (kernel_traits.h L195-L208). H100: forward 0.035 / 0.039 / 0.070 bytes a FLOP at head dim
    64 / 128 / 256, backward 0.056 / 0.056 / 0.066."""
    gemms = fa2_gemm_smem_bytes_per_flop(t, head_dim, backward)
    return sum(gemms) / len(gemms)


def fa2_gemm_smem_bytes_per_flop(t: Fa2Traits, head_dim: int, backward: bool) -> list[float]:
    """Shared-memory operand bytes per FLOP of each of FlashAttention-2 kernel ``t``'s
    matmuls (of equal FLOPs), as ``fa2_smem_bytes_per_flop`` lays them out: forward S and O,
    backward S, dP, dV, dK and dQ."""
    w = t.warps
    if not backward:
        rows = t.block_m / w
        return [_warp_gemm(rows, t.block_n, True, True), _warp_gemm(rows, head_dim, False, True)]
    m, n, d = t.block_m, t.block_n, head_dim
    s = _warp_gemm(m / t.atom_sdp, n * t.atom_sdp / w, True, True)
    dp = _warp_gemm(m / t.atom_sdp, n * t.atom_sdp / w, True, not t.v_in_regs)
    dkv = _warp_gemm(n / t.atom_dkv, d * t.atom_dkv / w, True, True)
    dq = _warp_gemm(m / t.atom_dq, d * t.atom_dq / w, True, True)
    return [s, dp, dkv, dkv, dq]


__all__ = ["FA2_HEAD_DIMS", "SHARED_MEMORY_KIB", "Fa2Traits", "fa2_gemm_smem_bytes_per_flop",
           "fa2_smem_bytes_per_flop", "fa2_traits"]
