"""Fused attention kernels' time in the roofline (``compute.roofline.RooflineModel``).

* Each implementation's matmuls run at its own fraction of the GEMM ceiling, forward and
  backward (``ATTENTION_OF_GEMM``), over whole tiles of the kernel's own block shape
  (``attention_tile``, ``tile_scores``); the softmax exponentials on the special-function
  units and a fixed cost per query row come on top; kernels written for Ampere lose half of the
  rate on GPUs whose tensor cores need Hopper's instructions, three quarters on Blackwell
  (``ampere_kernel_share``); a causal forward waits for each head's heaviest query blocks,
  launched last (``causal_forward_tail``; FA2's backward: ``causal_bwd_tail``); FA2's main
  loop runs no faster than its warps load their matmuls' operands from shared memory
  (``fa2_smem_over_mma``), FlashAttention-3's and cuDNN's Hopper backward no faster than shared
  memory feeds its ``wgmma``s (``fa3_bwd_traits.fa3_bwd_pace``).
* Memory traffic beyond Q, K, V and O: the first FlashAttention's per-key-block passes
  (``flash1_pass_bytes``) and FlashAttention-2's grouped-query dK/dV sums
  (``gqa_group_sum_bytes``); the first FlashAttention's split-K exchange through shared memory
  is added to its work (``flash1_split_k_s``).

The roofline adds the launch and takes the longer of this work and the memory time.
"""

from __future__ import annotations

import functools
import heapq
import math

from trainsim.compute.attention_dropout import (  # noqa: F401 - ATTN_DROPOUT_*: re-exported
    ATTN_DROPOUT_BWD,
    ATTN_DROPOUT_FWD,
    dropout_draw_s,
    dropout_rate_share,
)
from trainsim.compute.attention_flash1 import (  # noqa: F401 - re-exported
    FLASH1_KEY_BLOCK,
    FLASH1_SPLIT_K_WARPS,
    MMA_SYNC_FLOPS_PER_SM_CLOCK,
    SMEM_BYTES_PER_SM_CLOCK,
    TENSOR_FLOPS_PER_SM_CLOCK,
    flash1_pass_bytes,
    flash1_passes,
    flash1_split_k_bytes,
    flash1_split_k_s,
    sm_clock_hz,
)
from trainsim.compute.attention_head_dims import kernel_head_dims, padded_mma_share
from trainsim.compute.attention_rocm import aotriton_share
from trainsim.compute.block_sums import (
    causal_backward_blocks,
    causal_forward_blocks,
    local_backward_skipped,
    local_forward_skipped,
    window_edge_keys,
)
from trainsim.compute.causal_bwd_tail import causal_backward_tail, warp_specialised_bwd_tail
from trainsim.compute.fa2_traits import (
    fa2_gemm_smem_bytes_per_flop,
    fa2_smem_bytes_per_flop,
    fa2_traits,
)
from trainsim.compute.fa3_bwd_traits import fa3_bwd_pace
from trainsim.config import GPUSpec
from trainsim.workload.ops import GQA_EXPANDED_BWD, Attention

ATTENTION_OF_GEMM: dict[str, tuple[float, float]] = {
    "flash2": (1.15, 0.79),
    "cudnn": (1.25, 0.80),
}
"""(forward, backward) rate of a fused attention kernel's matmuls as a fraction of the GEMM
ceiling of the GPU it was written for; the softmax exponentials and each query row's fixed
work are priced beside it (``SOFTMAX_EXP_EXPOSED``, ``ATTN_ROW_OVERHEAD_KEYS``), so a rate can
pass 1: the main loop of a long-sequence kernel outruns a general GEMM's measured maximum.

Two families: ``flash2`` (Ampere's synchronous ``mma``: FA2; FA1 and llm-foundry's Triton
port at ``FLASH1_OF_FLASH2``; PyTorch SDPA's flash backend; its memory-efficient backend at
``MEM_EFFICIENT_OF_FLASH2``; FlexAttention at ``FLEX_OF_FLASH2``)
and ``cudnn`` (warp-specialised, asynchronous ``wgmma``/``tcgen05`` kernels: cuDNN's fused
attention and FlashAttention-3 and -4, which the FA3 paper's Figs. 5-6 put within ~10 % of
cuDNN). Fitted by ``benchmarks/fit_kernels.py`` (its held-out sources excluded).
"""
ATTENTION_FAMILY = {"flash1": "flash2", "flash2": "flash2", "sdpa": "flash2", "triton": "flash2",
                    "flex": "flash2", "mem_efficient": "flash2", "flash3": "cudnn", "cudnn": "cudnn",
                    "flash4": "cudnn", "ck": "flash2"}
"""Each implementation's family in ``ATTENTION_OF_GEMM``. ``ck``, Transformer Engine's fused
attention on ROCm (its Composable Kernel backend, ROCm/TransformerEngine@ac80527d
transformer_engine/common/fused_attn_rocm/fused_attn.cpp L69-116), is FlashAttention-2's
algorithm (Dao-AILab/flash-attention README, "AMD ROCm Support": the ROCm build's default
composable_kernel backend is "an implementation of FlashAttention-2"; ``validate.vocab`` reads a
kernel row's ``ck`` the same way): the flash2 family at the AMD GPU's own GEMM ceiling, with no
efficiency of its own (no published CK measurement is used); tiles not read (``ATTN_BLOCK``)."""
ATTN_ROW_OVERHEAD_KEYS: dict[str, tuple[float, float]] = {
    "flash2": (137, 145),
    "cudnn": (112, 529),
}
"""(forward, backward) fixed work of one query row's pass, in key columns, per kernel family
(``ATTENTION_FAMILY``): loading the row's Q tile, the softmax rescale and the output write
cost as much as this many more keys, so short sequences run below the long-sequence rate (FA3
paper Figs. 5-6: hd128 causal 512 tokens at about half the 16k rate). The backward also runs
the ``rowsum(dO * O)`` preprocessing pass, accumulates dQ in fp32 across key blocks and
converts it at the end, so short sequences fall further below the long-sequence rate than in
the forward (measured H100 SDPA backward at 512 causal tokens: 106-169 TFLOP/s against 375-388
forward). Per family because the two kinds of kernel do that work differently: Ampere-style
FA2 kernels run it in the same warps as the matmuls, between key blocks; the warp-specialised
ones (cuDNN, FA3/FA4) in producer/consumer warps beside them, and cuDNN's backward adds its
own preprocessing and dQ-conversion kernels. Counted per query row of whole query blocks; the
padding of whole tiles and a causal kernel's diagonal blocks, computed in full, come beside it
(``tile_scores``). Fitted with ``ATTENTION_OF_GEMM`` by ``benchmarks/fit_kernels.py``."""
ATTN_BLOCK = 128
"""Query rows and keys of one block of a fused attention kernel whose tiles neither
``TILED_KERNELS`` lists nor ``fa2_tile`` chooses (``FA2_KERNELS``: FlashAttention-2 and SDPA's
flash backend): FA1, xFormers/PyTorch memory-efficient, Triton, FlexAttention, cuDNN, FA4.
cuDNN's Hopper forward is this tile (two 64-row consumer warp groups x 128 keys, a persistent grid
taking tiles lightest first, as ``causal_forward_tail`` runs them): NVIDIA/cudnn-frontend@df73764a
include/cudnn_frontend/experimental/sm90_sdpa_prefill_engine.h (``knob_7_64x128x{64,128}``, named
as the kernels cuDNN 9.19 ran: benchmarks/attn49_kernel_parts.py)."""
FA3_TILES = {False: ((64, 192, 128, 128), (128, 128, 176, 128), (256, 128, 80, 80)),
             True: ((64, 128, 128, 128), (128, 64, 128, 128), (256, 64, 80, 80))}
"""FlashAttention-3's CTA tiles on Hopper, forward (False) and backward (True): (largest head
dim, query rows, keys non-causal, keys causal). Forward at the release its paper measured
(Dao-AILab/flash-attention 7f67966c, 2024-07-11, hopper/flash_fwd_launch_template.h:
``Flash_fwd_kernel_traits<64, 192, 128, ...>``, ``<128, 128, Is_causal ? 128 : 176, ...>``,
``<256, 128, 80, ...>``; hopper/tile_size.h at 0251105a keeps them but for 192 keys at head
dim 64 non-causal); backward: 7f67966c hopper/flash_bwd_launch_template.h
``Flash_bwd_kernel_traits<64, 128, 128, ...>``, ``<128, 64, 128, ...>`` (hd256 had no backward
then: 0251105a ``run_mha_bwd_dispatch<Arch, T, 64, 80, 256, ...>``). cuDNN: ``ATTN_BLOCK``. Added
2026-11-25: the FA3 paper's Fig. 5 forward rows (held out) 7.6 -> 5.3 %, training unchanged."""
FA2_KERNELS = frozenset({"flash2", "sdpa"})
"""FlashAttention-2's kernels, whose tiles ``fa2_tile`` chooses; PyTorch SDPA's flash backend
vendors them (aten/src/ATen/native/transformers/cuda/flash_attn/)."""


def fa2_tile(head_dim: int, causal: bool, backward: bool, dropout: bool = False,
             arch: int | None = None) -> tuple[int, int]:
    """(query rows, keys) of FlashAttention-2's CTA tile (``Flash_fwd_kernel_traits`` and
    ``Flash_bwd_kernel_traits``' kBlockM, kBlockN) as its launch templates choose it by head
    dim (rounded up to one of ``fa2_traits.FA2_HEAD_DIMS``: PyTorch's copy, which still builds
    160 and 224, as flash-attn did to v2.7.4.post1 and v2.6.1), causal mask, dropout and the
    GPU's shared memory (``fa2_traits.SHARED_MEMORY_KIB`` of compute capability ``arch``),
    Dao-AILab/flash-attention 0251105a csrc/flash_attn/src/ (160 and 224: ``fa2_traits``):

    * forward (flash_fwd_launch_template.h L195-L318): 128 x 128 up to head dim 64 (128 x 64
      with dropout); 128 x 64 at 96 and 128, but on sm8x (8.6, 8.7, 8.9: ``is_sm8x``) causal
      64 x 64 and, at 128, non-causal 128 x 32 (128 x 32 at 128 with dropout); 128 x 64 at
      192 (64 x 64 with dropout); at 256 128 x 64 only where a block may take 128 KiB and an
      SM holds less than 192 KiB (A100: "For A100, we want to run with 128 x 64"), else
      64 x 64 ("For H100 we want to run with 64 x 64 (96KB smem) since then we can get 2 CTAs
      per SM"; sm86/sm89, which cannot hold 128 KiB, too);
    * backward (flash_bwd_launch_template.h L136-L302): 128 x 128 at 32; at 64 128 x 128 with
      >= 144 KiB per block, else 64 x 128; 64 x 128 at 96; at 128 64 x 128 with >= 144 KiB,
      else 64 x 64; 64 x 64 at 192; at 256 64 x 64 with >= 144 KiB, else 64 x 32."""
    return fa2_traits(head_dim, causal, backward, dropout, arch)[:2]


TILED_KERNELS = {"flash3": FA3_TILES}
FA3_LOCAL_FWD_TILES = ((64, 192, 128, 128), (96, 192, 128, 128), (128, 128, 128, 128),
                       (192, 128, 96, 96), (256, 128, 64, 64))
"""FlashAttention-3's forward tiles when local (a sliding window), as ``FA3_TILES``: v2.8.3
hopper/tile_size.h ``tile_size_fwd_sm90`` L24-L25 (192 x 128 up to head dim 64), L30 (192 x
128 to 96), L32 (128 x 128 to 128), L36 (128 x 96 to 192), L38 (128 x 64 above). Its backward
takes the causal tiles (flash_bwd_launch_template.h L352 ``Is_causal || Is_local``; the other
head dims' choices do not depend on either), and FlashAttention-2's local kernels are its
non-causal ones with the same tiles (csrc/flash_attn/src/flash_fwd_launch_template.h and
flash_bwd_launch_template.h choose their traits by head dim, dropout and GPU, and on sm8x by
the causal mask too, which a local kernel runs without: ``fa2_tile`` with causal False)."""
LOCAL_TILED_KERNELS = {"flash3": {False: FA3_LOCAL_FWD_TILES, True: FA3_TILES[True]}}


def attention_tile(impl: str, head_dim: int, causal: bool, backward: bool,
                   local: bool = False, dropout: bool = False,
                   arch: int | None = None) -> tuple[int, int]:
    """(query rows, keys) of one CTA's block of ``impl``'s main loop, from the kernels'
    sources (``fa2_tile`` for FlashAttention-2 on a GPU of compute capability ``arch``, with
    or without ``dropout``; ``TILED_KERNELS``, ``LOCAL_TILED_KERNELS`` for a ``local``
    sliding-window kernel); ``ATTN_BLOCK`` square for kernels whose tiles are not listed."""
    if impl in FA2_KERNELS:  # a local FA2 kernel is its non-causal one (``FA3_LOCAL_FWD_TILES``)
        return fa2_tile(head_dim, causal and not local, backward, dropout, arch)
    tiles = (LOCAL_TILED_KERNELS.get(impl) if local else None) or TILED_KERNELS.get(impl)
    if tiles is None:
        return ATTN_BLOCK, ATTN_BLOCK
    table = tiles[backward]
    _, m, n, n_causal = next((t for t in table if head_dim <= t[0]), table[-1])
    return m, n_causal if causal else n


@functools.lru_cache(maxsize=4096)
def tile_scores(q_len: int, kv_len: int, causal: bool, block_m: int, block_n: int,
                backward: bool = False, left: int | None = None) -> float:
    """Scores one head's kernel computes in whole tiles: query rows padded to whole blocks of
    ``block_m``, keys to whole blocks of ``block_n``; causal (bottom-right aligned, as
    FlashAttention aligns a shorter query), the forward's query blocks run every key block up
    to the last key their last row sees, the backward's key blocks (each CTA owns one,
    FlashAttention-2 §3.2) every query block from the one holding the first row that sees
    their first key. A causal window reaching ``left`` keys back (query and key lengths equal)
    skips the blocks wholly left of every row's window (``local_forward_skipped``,
    ``local_backward_skipped``)."""
    q_blocks = math.ceil(q_len / block_m)
    kv_blocks = math.ceil(kv_len / block_n)
    if not causal:
        return float(q_blocks * block_m * kv_blocks * block_n)
    offset = kv_len - q_len
    # summed in closed form (``block_sums``): a loop over the blocks hung on a long sequence
    blocks = causal_backward_blocks(q_blocks, q_len, block_m, block_n, offset, kv_blocks) \
        if backward else causal_forward_blocks(q_blocks, block_m, block_n, offset, kv_blocks)
    if left is not None:
        assert offset == 0, "a window's tiles are counted for equal query and key lengths"
        blocks -= local_backward_skipped(q_blocks, kv_blocks, block_m, block_n, left) \
            if backward else local_forward_skipped(q_blocks, block_m, block_n, left)
    return float(blocks * block_m * block_n)


@functools.lru_cache(maxsize=256)
def diagonal_keys(block_m: int, block_n: int, backward: bool) -> float:
    """Keys a causal kernel computes per query row beyond those the row sees, on average along
    a long diagonal: the masked part of the whole tiles the diagonal crosses, as ``tile_scores``
    counts them. The tiles meet the diagonal the same way every lcm(``block_m``, ``block_n``)
    rows, so one such square is the average: 63.5 keys for 128-square blocks, 127.5 for
    FlashAttention-3's 192x128 forward tiles at head dim 64, 95.5 for its 128x80 ones at 256.
    Each query row of a CP rank's shard or of a window crosses the diagonal once, as in the
    whole sequence, so they pay it per row; a window's row pays it again at its left edge
    (``computed_scores``)."""
    period = math.lcm(block_m, block_n)
    seen = period * (period + 1) / 2
    return (tile_scores(period, period, True, block_m, block_n, backward) - seen) / period


def computed_scores(op: Attention, arch: int | None = None) -> float:
    """Scores one head of fused attention ``op`` costs, in key columns: its kernel's whole
    tiles (``tile_scores``) and each query row's fixed work (``ATTN_ROW_OVERHEAD_KEYS``); a
    window's or a CP shard's queries (a causal ``q_len`` short of ``kv_len``) their useful
    scores and, row by row, the fixed work and the diagonal's tiles (``diagonal_keys``).

    A window's kernel (``local``, with its own tiles) skips only the key blocks wholly left of
    a block's window and masks the edge inside the tiles it keeps, as it masks the diagonal:
    over a whole sequence ``tile_scores`` counts its tiles exactly; a CP shard's rows past the
    window's length (their balanced share, as in ``op.pairs``) pay the edge's mean
    (``window_edge_keys``). A window as long as the keys is no window."""
    return _scores_and_tile(op, arch)[0]


def _scores_and_tile(op: Attention, arch: int | None = None) -> tuple[float, tuple[int, int]]:
    """``computed_scores`` and the kernel tile it counts them in (``attention_tile``) on a GPU
    of compute capability ``arch``."""
    row = ATTN_ROW_OVERHEAD_KEYS[attention_family(op.impl, arch)][op.backward]
    # FlashAttention drops a window as long as the keys: flash_api.cpp (v2.8.3 hopper L559,
    # csrc L399) sets window_size_left = -1 when >= seqlen_k - 1 (resp. seqlen_k), and runs
    # the plain causal kernel
    window = op.window if op.window is not None and op.window < op.kv_len else None
    local = window is not None and op.causal
    tile = block_m, block_n = attention_tile(op.impl, kernel_head_dims(op)[0], op.causal,
                                             op.backward, local, op.dropout, arch)
    if window is None and (op.q_len == op.kv_len or not op.causal) \
            or local and op.q_len == op.kv_len:
        # op.pairs' window: query i sees keys i - window + 1 .. i, left = window - 1
        left = window - 1 if local else None
        return (tile_scores(op.q_len, op.kv_len, op.causal, block_m, block_n, op.backward,
                            left) + math.ceil(op.q_len / block_m) * block_m * row), tile
    if not op.causal:
        return op.pairs + op.q_len * row, tile
    scores = op.pairs + op.q_len * (row + diagonal_keys(block_m, block_n, op.backward))
    if window is not None:
        edge = window_edge_keys(block_m, block_n, op.backward, window - 1)
        scores += op.q_len * (op.kv_len - window) / op.kv_len * edge
    return scores, tile


FA2_SMEM_BOUND = True
"""Whether FlashAttention-2's main loop is paced by its shared-memory operand loads
(``fa2_smem_over_mma``); a switch for comparison (``benchmarks/attn41_check.py``), not a fitted
constant. Added 2026-11-27 (41st session, attn41): FA2 at head dim 256 forward, 16 query rows a
warp, loads 1.125x what mma.sync's clock allows; the FA3 paper's H100 FA2 head-dim-256 rows (held
out of every fit) 16.6 -> 7.6 % MAPE, the H200 s41 grid's 21.1 -> 12.3 % (forward) and 17.2 ->
13.4 % (backward); no fitted row moves (none has a head dim above 128)."""


FA2_BWD_TAIL = False
"""Whether the roofline alone prices FA2's causal backward tail (``causal_bwd_tail``), as a kernel
database reads its records (``database.RECORD_BWD_TAIL``). Not shipped (48th session, h200db48):
public 5.433 -> 5.483 % (nemo 3.23 -> 4.33 %: NeMo 24.07's H100 FA2 rows 1-3 points slower)."""


FA2_SMEM_PER_MATMUL = False
"""Pace each FlashAttention-2 matmul by its own operand loads (they run one after another)
rather than by their mean: a candidate, off (RESULTS.md, 43rd session, bwd43: H200 FA2
backward hd192 / 256 +19 / +23 -> +10 / +8 %, but public 5.432 -> 5.434 %; measured when the
DeepSeek-V3 example still priced FA2, whose DualPipe pair it took to 137.4 ms against 129.0)."""


def fa2_smem_over_mma(op: Attention, arch: int | None) -> float:
    """How much longer than its ``mma.sync`` issues FlashAttention-2's main loop takes to
    load their operands from shared memory, at least 1: the bytes a FLOP
    (``fa2_smem_bytes_per_flop``) at ``SMEM_BYTES_PER_SM_CLOCK`` over the FLOPs an SM's
    ``mma.sync`` does a clock (``MMA_SYNC_FLOPS_PER_SM_CLOCK``, on Hopper and Blackwell as on
    Ampere: ``ampere_kernel_share``)."""
    head_dim = kernel_head_dims(op)[0]  # the kernel's own width: its tiles, its loads
    traits = fa2_traits(head_dim, op.causal and op.window is None, op.backward, op.dropout,
                        arch)
    if FA2_SMEM_PER_MATMUL:
        gemms = fa2_gemm_smem_bytes_per_flop(traits, head_dim, op.backward)
        return sum(max(1.0, b * MMA_SYNC_FLOPS_PER_SM_CLOCK / SMEM_BYTES_PER_SM_CLOCK)
                   for b in gemms) / len(gemms)
    per_flop = fa2_smem_bytes_per_flop(traits, head_dim, op.backward)
    return max(1.0, per_flop * MMA_SYNC_FLOPS_PER_SM_CLOCK / SMEM_BYTES_PER_SM_CLOCK)


SOFTMAX_EXP_EXPOSED = 1.04
"""Share of the softmax exponentials' time (one exp per score, at ``GPUSpec.flops_per_exp``)
not hidden under the matmuls (the fit finds 1.04: none is hidden). It is what makes head dim
64 slower per FLOP than 128 (half the matmul work per exp). FlashAttention-4 evaluates part of its exponentials as polynomials on the
FMA units (Zadouri et al. 2026, §3), so it pays half. Fitted with ``ATTENTION_OF_GEMM``."""
FLEX_OF_FLASH2 = (0.90, 0.85)
"""FlexAttention reaches "90% of FlashAttention2's performance in the forward pass and 85% in
the backward pass" (PyTorch blog, "FlexAttention: The Flexibility of PyTorch with the
Performance of FlashAttention", August 2024)."""
FLASH1_OF_FLASH2 = 0.50
"""The first FlashAttention runs at about half FlashAttention-2's rate ("around 2x speedup
compared to FlashAttention", Dao 2023, abstract; Figs. 4-6 on A100): the rate ``AT_FLASH1_RATE``
kernels run at; FA1 itself is priced from its parts since the 39th session
(``FLASH1_MMA_OF_FLASH2`` and its split-K exchange). Not fitted (as
``AMPERE_KERNEL_ON_HOPPER`` is not): fitted on FA1's own rows once PyTorch's memory-efficient
backend no longer shared it (``MEM_EFFICIENT_OF_FLASH2``), it drifted to 0.55, set by the FA2
paper's H100 FA1 bars alone, and priced the held-out A100 FA1 rows faster (RESULTS.md, 36th
session, kern36)."""
FLASH1_MMA_OF_FLASH2 = 0.64
"""Rate of the first FlashAttention's matmuls as a fraction of FlashAttention-2's (same
``mma.sync``, one CTA per 16-row step of a key block), its split-K exchange priced beside them
(``flash1_split_k_s``): what is left of FA1's "around 2x" once that exchange, one of the three
reasons the FA2 paper gives for it (§3.3), is counted. Fitted by ``benchmarks/fit_kernels.py``
(golden section) on the fitted FA1 rows of the FA2 paper's H100 figures; its A100 figures stay
held out (RESULTS.md, 39th session, attn39). ``FLASH1_OF_FLASH2`` stays FA1's whole rate, at
which Triton is priced."""
MEM_EFFICIENT_OF_FLASH2 = (0.43, 0.40)
"""(forward, backward) rate of PyTorch SDPA's memory-efficient backend as a fraction of
FlashAttention-2's on the same GPU. The backend is xFormers' CUTLASS kernels
(pytorch/pytorch aten/src/ATen/native/transformers/cuda/mem_eff_attention/, ``kernel_forward.h``,
``kernel_backward.h``): Ampere ``mma.sync`` CUTLASS tiles, a query-block-outer loop without
FA1's per-key-block round trips (``flash1_pass_bytes``), the 16-bit backward computing
rowsum(dO * O) itself (``kKernelComputesDelta``) and accumulating dQ in fp32
(``kNeedsAccumGradQ``): a library of its own, not FA1. Fitted by ``benchmarks/fit_kernels.py``
on the fitted part of ``kernels_h100_measured.csv``'s rows of that backend; the never-fitted
H200 file (``benchmarks/kernels_h200_measured.csv``) checks it: measured at the same shapes it
ran 0.39-0.54 of FA2's rate on both GPUs, and at FA1's rate (shared to the 36th session) it was
priced 18-32 % too fast (its H200 rows 24.0 / 32.1 % MAPE forward / backward -> 13.8 / 11.9 %
with its own rate and the refit, the H100 file's 19.3 / 28.9 -> 12.3 / 10.9 %:
``benchmarks/RESULTS.md``, 36th session, kern36, and 37th session, attn37)."""
AT_FLASH1_RATE = frozenset({"flash1", "triton"})
"""Kernels priced at the first FlashAttention's rate (``FLASH1_OF_FLASH2``): FA1 itself (from
its parts: ``FLASH1_MMA_OF_FLASH2`` and ``flash1_split_k_s``) and llm-foundry's ``attn_impl:
triton`` kernel (at the whole rate, as its docstring compares it with FA1's; its source
writes no exchange between warps) (llmfoundry/models/layers/flash_attn_triton.py, a copy of Dao-AILab's flash_attn/flash_attn_triton.py compiled with the pre-MLIR Triton 2.0
fork ``triton-pre-mlir``: 128x128 blocks, ``num_stages=1``). Its docstring: "Triton forward
is generally faster than CUDA forward, while Triton backward is generally slower than CUDA
backward. Overall Triton forward + backward is slightly slower" than FlashAttention (v1)'s
CUDA kernels; llm-foundry's TUTORIAL.md (v0.3.0): "triton is slightly faster than flash" (its
flash-attn 1.0.9 path with unpadding). Not fitted; no published measurement of this kernel is
known: the FlashAttention-2 paper's "FlashAttention Triton" bars (Fig. 4, A100, causal, head dim
128, 16k: 80 TFLOP/s against FA1 83, FA2 189) time Triton's own ``triton.ops.flash_attention``
(the 06-fused-attention tutorial's kernel, with a ``sequence_parallel`` backward), not this one
(the only "Triton" method of the sweeps over the figure's six shapes: Dao-AILab/flash-attention
@4f285b35, the FA2 release, benchmarks/benchmark_causal.py L16 and L192-203, commented out there;
@60499abc benchmarks/benchmark_flash_attention.py L17 and L113-132, live; Dao's kernel has no
``sequence_parallel`` argument).
llm-foundry's own tables imply more than this rate at 8k-64k tokens
(``benchmarks/foundry_attention_rate.py --errata``: 1.09x on A100, 1.14-1.26x on H100)."""
def gqa_group_sum_bytes(op: Attention) -> float:
    """HBM bytes of the group sums after a FlashAttention-2 backward with fewer key/value heads
    than query heads: ``mha_bwd`` allocates ``dk_expanded`` and ``dv_expanded`` of
    (batch, seqlen_k, num_heads, head_size) for the kernel to write and then runs
    ``at::sum_out`` over each group into dK and dV (Dao-AILab/flash-attention 0251105a
    csrc/flash_attn/flash_api.cpp L935-L1005; PyTorch SDPA's flash backend vendors it): each
    sum reads the expanded 16-bit tensor and writes the grouped one. A framework that repeats
    K and V before the kernel (torchtitan's ``repeat_kv``) pays the same sum in the repeat's
    backward. 0 for multi-head attention and for kernels without it: FA3 adds the groups into
    fp32 accumulators inside its kernel (hopper/flash_api.cpp ``dk_accum``, ``dv_accum``);
    cuDNN's handling is not published."""
    if not op.backward or op.kv_heads >= op.heads or op.impl not in GQA_EXPANDED_BWD:
        return 0.0
    return 2.0 * op.batch * op.kv_len * op.head_dim * 2 * (op.heads + op.kv_heads)


AMPERE_KERNEL_ON_HOPPER = 0.51
"""FA1, FA2 and PyTorch's flash backend issue Ampere's synchronous ``mma.sync``; Hopper's and
Blackwell's tensor cores reach their rate only through ``wgmma``/``tcgen05`` with TMA. FA2
runs at "only 35% utilization on the H100" (FA3 paper, abstract: 0.44 of H100's MAMF) against
73% on A100 (FA2 paper, abstract: 0.85 of A100's MAMF): 0.44 / 0.85 = 0.51. Not fitted: on H100 rows alone it
trades one for one against the FA2 family's own fraction. The FA2 paper's own bars put A100 ->
H100 at 1.64-1.69x for FA2 where this prices 1.51x: an SMs x max-clock form with A100's GEMM
efficiency gets the pairs right but, refitted, costs the training rows
(benchmarks/candidates/attention_ampere_sm_clock.patch; RESULTS.md "25th session, attnhop")."""
def ampere_kernel_share(gpu: GPUSpec) -> float:
    """Fraction of ``gpu``'s GEMM ceiling an Ampere-style kernel's matmuls reach there, against
    their fraction on the Ampere GPU they were written for, where the tensor cores need Hopper's
    instructions (``has_hopper_tensor_cores``): ``AMPERE_KERNEL_ON_HOPPER`` on Hopper and that
    over the SM's tensor work a clock beyond Hopper's (``TENSOR_FLOPS_PER_SM_CLOCK``) later,
    since ``mma.sync`` issues at Ampere's rate on both: 0.255 on Blackwell. NVIDIA/cudnn-frontend's
    B200 and GB200 rows of torch SDPA's flash backend and flash-attn 2.7.4 (36 rows,
    benchmarks/kernels_blackwell.csv, Llama 405B heads, 4k-128k causal) were priced 1.55-2.15x
    too fast at the Hopper share, at 4.3 % (B200) and 3.0 % (GB200) MAPE at this one."""
    arch = gpu.sm_arch or 90
    per_clock = TENSOR_FLOPS_PER_SM_CLOCK[max((a for a in TENSOR_FLOPS_PER_SM_CLOCK if a <= arch),
                                              default=90)]
    return AMPERE_KERNEL_ON_HOPPER * TENSOR_FLOPS_PER_SM_CLOCK[90] / per_clock


AMPERE_KERNELS = frozenset(k for k, fam in ATTENTION_FAMILY.items() if fam == "flash2")

AMPERE_FAMILY_BELOW_HOPPER = frozenset({"cudnn"})
"""Kernels of the warp-specialised family (``ATTENTION_FAMILY``) that also run on GPUs without
Hopper's tensor-core instructions, where no ``wgmma`` / TMA producer-consumer kernel can exist
and the library runs synchronous-``mma`` kernels like FlashAttention-2's: cuDNN (sm 8.x) takes
the ``flash2`` family's rate and per-row work there (``attention_family``). The published sm80
ratios of cuDNN over SDPA's flash backend (FA2) are 0.93-1.05: pytorch/pytorch#126122 (A100,
2024-05: 0.956, 0.930, 0.993), #192799 (sm80 medians, 2026-08: forward 1.051, fwd+bwd 1.008);
huggingface/transformers#48163's 0.82 (A100 training shapes) the low end; the Hopper-fitted
family priced it at 0.64-0.98 of FA2 at head dim 64 (0.73 at 1,024 causal tokens):
benchmarks/llmc62_evidence.py. Added 2026-11-29 (62nd session, llmc62)."""


def attention_family(impl: str, arch: int | None) -> str:
    """``impl``'s family in ``ATTENTION_OF_GEMM`` / ``ATTN_ROW_OVERHEAD_KEYS`` on a GPU of
    compute capability ``arch``: ``ATTENTION_FAMILY``'s, but ``flash2`` for
    ``AMPERE_FAMILY_BELOW_HOPPER`` on an NVIDIA part below 9.0."""
    if impl in AMPERE_FAMILY_BELOW_HOPPER and arch is not None and arch < 90:
        return "flash2"
    return ATTENTION_FAMILY[impl]


CAUSAL_TAIL_EXACT_BLOCKS = 1 << 16
"""Query blocks up to which ``causal_forward_tail`` simulates the dispatch; beyond, the
closed form (the makespan passes the mean by half the longest block, within 0.1 %)."""


@functools.lru_cache(maxsize=4096)
def causal_forward_tail(heads: int, blocks: int, sms: int) -> float:
    """Makespan over mean load when a causal forward's query blocks run as one CTA each, SM by
    SM in launch order: block i of a head does i + 1 key blocks of work, and the grid lists a
    head's blocks lightest first (FlashAttention-2's forward grid is (query block, batch,
    head), ``m_block = blockIdx.x``), so each head's heaviest blocks start last and finish
    after the other SMs have run dry. Few heads per GPU (tensor parallelism, one sequence per
    micro-batch) leave a long tail: 8 heads of 32 blocks on 132 SMs take 1.66x the mean (one
    CTA per SM at a time, as FA3's and cuDNN's warp-specialised kernels run). The
    FA3 paper's causal forward figures show it (head dim 256, 8 heads: 15-48 % below the
    non-causal rate at 16k tokens, against 5 % for 16 heads of dim 128)."""
    total = heads * blocks * (blocks + 1) / 2.0
    if heads * blocks <= sms:  # every block has an SM to itself: the heaviest one ends last
        return blocks / (total / sms)  # (what the loop gives, without a list of ``sms`` SMs)
    if heads * blocks > CAUSAL_TAIL_EXACT_BLOCKS:
        return 1.0 + blocks / 2.0 / (total / sms)
    free = [0] * sms  # when each SM frees, in key-block units
    for _ in range(heads):
        for work in range(1, blocks + 1):
            heapq.heapreplace(free, free[0] + work)
    return max(free) / (total / sms)


def has_hopper_tensor_cores(gpu: GPUSpec) -> bool:
    """An NVIDIA data-centre GPU of the Hopper generation or later, whose quoted peak needs
    warp-group MMAs (``wgmma``, Blackwell's ``tcgen05``) that Ampere-style ``mma.sync`` kernels
    do not issue: ``GPUSpec.sm_arch`` 90 and above (the compute capability where the GPU states
    it, so an fp8-capable Ada GPU, 8.9, is not one), except the 12.x parts (RTX Blackwell),
    whose tensor cores take ``mma.sync`` and have neither (CUTLASS's sm120 kernels)."""
    arch = gpu.sm_arch or 0
    return arch >= 90 and not 120 <= arch < 130


def attention_fraction(impl: str, backward: bool, gpu: GPUSpec) -> float:
    """Fraction of ``gpu``'s GEMM ceiling a fused attention kernel ``impl`` reaches."""
    fwd, bwd = ATTENTION_OF_GEMM[attention_family(impl, gpu.sm_arch if gpu.vendor == "nvidia" else None)]
    frac = bwd if backward else fwd
    if impl == "flash1":  # its split-K exchange apart (``flash1_split_k_s``)
        frac *= FLASH1_MMA_OF_FLASH2
    elif impl in AT_FLASH1_RATE:
        frac *= FLASH1_OF_FLASH2
    if impl == "mem_efficient":
        frac *= MEM_EFFICIENT_OF_FLASH2[backward]
    if impl == "flex":
        frac *= FLEX_OF_FLASH2[1] if backward else FLEX_OF_FLASH2[0]
    frac *= aotriton_share(impl, backward, gpu.vendor)  # SDPA on ROCm: AOTriton's kernels
    if impl in AMPERE_KERNELS and has_hopper_tensor_cores(gpu):
        frac *= ampere_kernel_share(gpu)
    # a main loop may outrun the best general GEMM (no epilogue, no waves) but not the
    # tensor cores: at most the dense 16-bit peak, 1 / mamf_fraction of the ceiling
    return min(frac, 1.0 / gpu.mamf_fraction)


def fused_attention_work(gpu: GPUSpec, op: Attention, bwd_tail: bool = False) -> float:
    """Seconds of a fused attention kernel's compute (matmuls over its whole tiles and each
    row's fixed work at ``attention_fraction`` of the bf16 GEMM ceiling, dropout's random
    numbers, the exposed softmax exponentials at the same clock as the matmuls, a causal
    forward's tail and, with ``bwd_tail``, FA2's causal backward's), before the roofline weighs
    it against memory time and adds the launch."""
    peak = gpu.gemm_ceiling("bf16")
    frac = attention_fraction(op.impl, op.backward, gpu)
    if op.dropout:  # a slower matmul rate where the draws are not priced per score
        frac *= dropout_rate_share(op.impl, op.backward, gpu)
    scores_per_head, tile = _scores_and_tile(op, gpu.sm_arch)
    stretch = scores_per_head / op.pairs  # scores computed per useful score
    scores = op.batch * op.heads * op.pairs * stretch
    mma = op.flops * stretch * padded_mma_share(op) / (peak * frac)
    if op.impl in FA2_KERNELS and gpu.vendor == "nvidia" and FA2_SMEM_BOUND:
        mma *= fa2_smem_over_mma(op, gpu.sm_arch)
    if op.backward:  # FA3's (and cuDNN's) Hopper backward at its kernel's widths
        qk, v = kernel_head_dims(op)
        mma *= fa3_bwd_pace(op.impl, gpu.sm_arch, qk, op.causal or op.window is not None, v)
    # the exponential units issue per SM clock (16 results per clock per SM: FA3 paper §3.1,
    # FA4 paper §1), the clock the matmuls run at: a training GPU's power-saturated clock
    # (``GPUSpec.sustained_of_burst``, Bekman's B200 MSMF at 1339 of 1965 MHz) and a board power
    # limit (``power_scale``) slow them as they slow the tensor cores
    exp_rate = gpu.flops("bf16") / gpu.flops_per_exp * gpu.sustained_of_burst * gpu.power_scale
    exposed = SOFTMAX_EXP_EXPOSED * (0.5 if op.impl == "flash4" else 1.0)
    work = mma + exposed * scores / exp_rate + dropout_draw_s(gpu, op, scores)
    if op.impl == "flash1":
        work += flash1_split_k_s(gpu, op)
    if op.causal and not op.backward and op.window is None and op.q_len == op.kv_len:
        # one CTA per SM at a time (``causal_forward_tail``), for FA2's tiles too, although the
        # template comment that picks FA2's 64 x 64 head-dim-256 tile on H100 counts on two CTAs
        # an SM (``fa2_tile``): the two-CTA tail was tried and dropped (fit and held-out MAPE
        # worse, benchmarks/RESULTS.md "21st session, attn", tried item 3)
        block_m = tile[0]  # causal, forward, no window: not a local kernel's tile
        work *= causal_forward_tail(op.batch * op.heads,
                                    math.ceil(op.q_len / block_m), gpu.num_sms)
    elif op.causal and op.window is None and op.q_len == op.kv_len and bwd_tail \
            and op.impl in FA2_KERNELS and gpu.vendor == "nvidia":  # heaviest key block first
        work *= causal_backward_tail(op.batch * op.heads, math.ceil(op.q_len / tile[0]),
                                     math.ceil(op.kv_len / tile[1]), *tile, gpu.num_sms)
    return work * warp_specialised_bwd_tail(op, tile, gpu)  # 1 but on Blackwell
