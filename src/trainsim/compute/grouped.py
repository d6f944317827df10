"""Grouped GEMMs (an MoE layer's experts) by implementation (``Gemm.grouped``).

Per-expert cuBLAS GEMMs (Transformer Engine's ``GroupedLinear``: ``GROUPED_STREAMS``) are
tiled each on its own, so few rows per expert leave SMs idle; one-kernel grouped GEMMs
(CUTLASS, ``torch._grouped_mm``, Triton, DeepGEMM) spread all groups' tiles at
``GROUPED_OF_GEMM`` of the dense rate; dropless routing half-fills each expert's last row
tile (``Gemm.ragged``). On Hopper a CUTLASS grouped GEMM runs the tile PyTorch dispatches for
its group shape (``torch_sm90_tile``); its fp8 kernel without fast accumulation spills its fp32
sums on the 128 x 256 tile (``accumulator_spill_k``). A Triton kernel launched over a worst-case grid (``triton_max_m``,
VeOmni's) also pays for its empty programs (``EMPTY_PROGRAM_SM_S``).

The dense GEMM's tile, its fixed cost per tile and the block-scale promotion come from
``compute.roofline``, which calls in here: this module imports nothing from it.
"""

from __future__ import annotations

import math

from trainsim.compute import split_k
from trainsim.config import GPUSpec
from trainsim.workload.ops import Gemm

GROUPED_OF_GEMM: dict[str, float] = {"cutlass": 0.95, "triton": 0.61, "deepgemm": 0.91}
"""Rate of a one-kernel grouped GEMM's tiles as a fraction of a dense GEMM's on the same
GPU, by implementation family, after its tile and wave quantization (each group's rows tiled
on their own, and its columns with PyTorch's Hopper tiles; the tiles of every group spread over
the SMs together) and the dense tile overhead. Published H100 measurements put ``torch._grouped_mm`` (CUTLASS) and the Triton MoE
kernels at 0.6-0.7 of the dense rate (pytorch/ao #2490, VeOmni #460, Liger-Kernel) while
DeepGEMM's grouped kernels run near its dense rate (DeepGEMM README; 0.91 of the fp8
rate without cuBLAS's split accumulator, ``gemm_rate``). Fitted by
``benchmarks/fit_kernels.py`` (its held-out sources excluded; CUTLASS 0.73 and Triton 0.69
before the benchmark loop's clock, ``roofline.LOOP_CLOCK_TAU_S``, was priced: 28th session;
Triton 0.71 -> 0.61 once its tiles carry no fixed cost, ``TILE_COST_HIDDEN``: 43rd session).
CUTLASS 0.76 -> 0.95 (54th session) once its Hopper tiles are the ones PyTorch dispatches
(``torch_sm90_tile``: 128 x 256 for groups above 128 rows, where 0.76 had stood for the
square 128 x 128 tile) and ``benchmarks/kernels_h200_grouped54.csv``'s fitted families joined
its two pytorch/ao #2490 rows: graphed bf16 ``torch._grouped_mm`` at 512-2,048 rows a group
runs 0.9-1.1x the dense rate of the same tiles on one H200; the H100 rows of #2490 (random
offsets, mid-2025 torch) sit at 0.75 and are now priced 22 % fast (RESULTS.md, 54th session).
Per-expert cuBLAS GEMMs (``multi_stream``, ``loop``) are cuBLAS's own dense GEMMs: no
fraction."""
FP8_SERIAL_PROMOTION = frozenset({"cutlass"})
"""One-kernel grouped GEMMs whose fp8 kernel without fast accumulation promotes Hopper's
limited-precision tensor-core sums into fp32 accumulators itself, between k tiles, with the
tensor cores idle: PyTorch's ``torch._scaled_grouped_mm`` (``use_fast_accum=False`` by default,
aten native_functions.yaml) runs CUTLASS's ``KernelPtrArrayTmaWarpSpecializedCooperative``
schedule rather than its ``...FP8FastAccum`` one (aten/src/ATen/native/cuda/ScaledGroupMM.cu
``Schedule``; 128x128x128 tiles "for slow accum to avoid spilling"), whose FP8 mainloop calls
``GmmaFP8Accumulation::promote_if_needed`` after each k tile: ``warpgroup_wait<0>`` and one
FADD per accumulator element every ``mma_promotion_interval`` MMAs (CUTLASS
include/cutlass/gemm/collective/fp8_accumulation.hpp ``promote_core``), the structure
``roofline.block_promotion_k`` prices for block-scaled kernels (``serial``). Its fp8 rate is
therefore the 16-bit fraction of the fp8 peak stretched by that promotion, not cuBLAS's
split-accumulator MAMF (``roofline.gemm_rate``); with fast accumulation it is the unstretched
16-bit fraction. No constant."""
TILE_COST_HIDDEN = frozenset({"triton"})
"""One-kernel families whose fixed cost per output tile (the dense GEMM's pipeline fill and C
store, ``roofline.GEMM_TILE_OVERHEAD_K``, fitted to cuBLAS) runs under other tiles' main loops,
so a tile costs its main loop alone. A Triton grouped GEMM is a plain grid of programs, one
output tile each, several resident on an SM at once (Liger-Kernel@24d8a767
src/liger_kernel/ops/fused_moe_kernels.py: grid ``(num_m_tiles, cdiv(I, BLOCK_N))``, 4-8 warps,
2-5 stages; VeOmni@bfe4b650 veomni/ops/group_gemm/kernel/group_gemm.py L56: 128 x 128 x 32,
4 warps, 3 stages, 48 KiB of shared memory a program against 228 KiB an H100 SM): while one
program fills its pipeline or stores its tile, another on the same SM is in its main loop.
Measured: the empty-program probe's real-block grids (36th session,
``benchmarks/h100_2026-11-27`` and ``h200_2026-11-27/empty_program_probe.json``, VeOmni's
128 x 128 x 32 kernel, bf16) time each expert shape at two k (k 2048 and k 768 at 128 experts;
2048 and 512 at 512 experts); solving time = tiles x (k + overhead) x c for each pair gives a
fixed cost of -56 / -21 k-steps (H100) and +16 / +42 (H200) against cuBLAS's 219
(``benchmarks/triton_tile_cost.py``): none to measure. A persistent CUTLASS grouped kernel
(one CTA an SM looping over tiles) and DeepGEMM keep the dense cost. No constant."""
RATE_FAMILY = {"triton_max_m": "triton"}
"""One-kernel implementations whose real tiles are another family's (``GROUPED_OF_GEMM``):
VeOmni's ``group_gemm_same_nk`` is a Triton tile loop like Liger's and vLLM's fused MoE; only
its grid differs (``empty_programs``)."""
MAX_M_GRID_BLOCK = (128, 128)
"""``BLOCK_M``, ``BLOCK_N`` of a ``triton_max_m`` kernel's grid: VeOmni's ``pretuned``
fallback for ``group_gemm_same_nk`` (ByteDance-Seed/VeOmni@bfe4b650
veomni/ops/group_gemm/kernel/group_gemm.py L56 ``fallback``; no pre-tuned ``*.bpex`` file ships
in the tree, so the fallback runs)."""
EMPTY_PROGRAM_SM_S = 7.95e-8
"""Seconds of one SM that one early-exiting program of a Triton grouped GEMM costs (the block
scheduler's launch and retirement of the program, its two offset loads and the compare): a
measured hardware constant. Measured on one H200 (132 SMs, the GH100 die and clocks of the
H100 SXM) by ``benchmarks/empty_program_probe.py`` (a kernel built like VeOmni's
``group_gemm_same_nk``: 128 x 128 x 32 tiles, 4 warps, 3 stages, every group empty): the
least-squares slope of time over grids of 0.05-21 M programs is 6.02e-10 s a program GPU-wide,
times 132 SMs 7.95e-8 s (``benchmarks/h200_2026-11-27/empty_program_probe.json``
``empty_program_s_per_sm``; every grid of >= 0.39 M programs lies within 3 % of that slope).
Priced per SM, so a GPU-wide cost is this over ``GPUSpec.num_sms``: the programs are spread
over the SMs and each SM retires them at its own rate. The same probe on one H100 SXM (same
SMs and clock) measures 7.93e-8 s (``benchmarks/h100_2026-11-27``): within 0.3 %. On other GPUs
it is an extrapolation (another block scheduler, another load latency, another clock), to be
replaced by the probe run there."""
GROUPED_STREAMS = {"multi_stream": 4, "loop": 1}
"""GEMMs in flight at once for implementations that launch one GEMM per group: Transformer
Engine's ``GroupedLinear`` issues each expert's cuBLAS GEMM on one of 4 compute streams in
turn (TransformerEngine common/util/multi_stream.cpp ``num_compute_streams = 4``,
common/gemm/cublaslt_gemm.cu ``multi_stream_cublas_gemm``); a plain loop runs one at a time.
The chunks of a GEMM overlapped with a TP collective (``userbuffers``) are cuBLAS's dense
GEMMs issued round-robin on 3 streams (TE pytorch/module/base.py ``_NUM_MAX_UB_STREAMS = 3``),
each chunk's last wave filled by the next chunk's tiles: priced as one grid of every chunk's
tiles at the dense rate."""


PINGPONG_TILE_RATE = 0.61
"""Main-loop rate of PyTorch's small-group CUTLASS kernel (``torch_sm90_tile``: a 64 x 128 x 128
tile, ``KernelPtrArrayTmaWarpSpecializedPingpong``) as a fraction of its 128 x 256 cooperative
kernel's (``GROUPED_OF_GEMM``). In the ping-pong schedule the two math warpgroups take turns on
the tensor cores, each with its own 64-row tile, so one ``wgmma`` of 64 x 128 is in flight where
the cooperative kernel keeps two 64 x 256 ones (CUTLASS
include/cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized_pingpong.hpp, its ordered math barrier),
and each output moves (64 + 128) / (64 x 128), twice the operand rows through shared memory of a
128 x 256 tile's (128 + 256) / (128 x 256). Neither is counted into a rate here. Measured: bf16 ``torch._grouped_mm`` at 128 rows a group on one H200 (54th
session, ``benchmarks/kernels_h200_grouped54.csv``, CUDA graphs) runs 1.5-2.2x the time the
128 x 256 tiles at the dense rate give and 1.1-1.3x its expert weights' HBM time (dense GEMMs that
stream their weights reach the copy rate, ``HBM_EFFICIENCY``: the H100 and H200 files'
m = 64 GEMMs), so the small tile's main loop, not its memory, sets the time. Fitted by
``benchmarks/fit_kernels.py`` on that file's fitted families (``fit_grouped``; 0.61, the
held-out families' 128-row groups then priced within 6.2 %)."""


FP8_TILE_RATE = 1.0
"""Main-loop rate of PyTorch's fp8 CUTLASS grouped kernels on Hopper (``torch._scaled_grouped_mm``,
row-wise scales, fast accumulation on or off) as a fraction of the rate the pricing gives them
otherwise: the 16-bit kernel's fraction (``GROUPED_OF_GEMM``, ``PINGPONG_TILE_RATE``) of the
16-bit MAMF fraction of the fp8 peak (``roofline.gemm_rate``), before the slow-accumulation
promotion and spill. Measured, not priced: 1.0 until its place is known. At 1.0 three sources
price these kernels 9-11 % fast (63rd session: the 60 graphed fp8 rows of one H200,
``h200_2026-11-29_s63/grouped_fp8_graph``; the 54th session's eager H200 run; pytorch/ao #2490's
H100 row with kernels_errata.csv's GPU). ``benchmarks/grouped63_fit.py --fit`` fits 0.913 on the
first (time MAPE 10.8 -> 6.9 %) and holds the others out (49 rows, the five that fit the spill
left out, 11.9 -> 6.6 %; 28.2 -> 21.3 %), but shipped it moves ``benchmarks/fit_kernels.py``'s CUTLASS fraction
from 0.95 to 1.0 (the fp8 rows priced fast had held it down; fitted on the 16-bit rows alone
it is 1.02-1.03, which prices the held-out 63rd-session bf16 rows and pytorch/ao's and VeOmni's
H100 rows faster still). Where the shortfall lies is not settled: PyTorch's fp8 kernel differs
from its bf16 one in its 2 x 2 cluster (bf16 2 x 1), a 64-deep k tile in its 128 x 256 kernel
and the row- and column-broadcast scale epilogue (pytorch/pytorch@e6bab78b
aten/src/ATen/native/cuda/ScaledGroupMM.cu ``Schedule``, ``dispatch_fp8_grouped_gemm_on_tile_size``,
``ScaleA``/``ScaleB``; @117b8633 GroupMM.cu), or every fp8 GEMM without split accumulation on
Hopper may fall short of twice the bf16 fraction (a dense one is priced the same way):
``benchmarks/device_checks63_grouped63.py`` times dense twins beside the grouped kernels."""


MMA_REGISTER_BUDGET = 232
"""32-bit registers each math thread of CUTLASS's SM90 ptr-array cooperative grouped kernel runs
with (``setmaxnreg``; NVIDIA/cutlass@03a26deb include/cutlass/gemm/kernel/
sm90_gemm_array_tma_warpspecialized_cooperative.hpp ``MmaRegisterRequirement = 232``, the
producer warpgroup's ``LoadRegisterRequirement = 40``), whose 256 math threads (two
warpgroups, ``static_assert(size(TiledMma{}) == 256)``) hold one output tile's fp32 sums."""
COOPERATIVE_MMA_THREADS = 256
LOCAL_BYTES_PER_SM_CLOCK = 63.0
"""Bytes a second per SM clock at which one SM stores and reloads a spilled accumulator
(``accumulator_spill_k``): its local memory, cached in the L1 and behind it in the L2. One math
thread's 128-register fragment is 128 KB a CTA, more than the L1 the kernel's shared-memory
stages leave (an H100 SM has 256 KB of L1 and shared memory together, up to 228 KB of it shared),
so the rate lies between the L1's port (32 banks of 32 bits a clock, 128 bytes: CUDA C++
Programming Guide, compute capability 5.x and later, "Shared Memory") and the L2's share of one
SM (~7 TB/s over 132 SMs at 1980 MHz, ~27 bytes). Fitted by ``benchmarks/fp8spill55_fit.py`` to
the five spilling rows of ``benchmarks/kernels_h200_grouped54.csv`` (fp8
``torch._scaled_grouped_mm`` without fast accumulation at Qwen3-30B-A3B's 512-row groups, 8-128
groups, k 768 and 2,048; all of them, none held out): their time MAPE 65.9 % -> 6.1 %. An
effective rate, not the port's: the split between L1 hits and L2 traffic is not measured
(a ``ncu`` reading of the kernel's local loads would give it: RESULTS.md, 55th session)."""
SPILL_REFERENCE_SM_CLOCK_MHZ = 1980.0
"""The clock of the GPU the spilling kernel was measured on (H200 SXM), taken for a GPU that
states no ``GPUSpec.max_sm_clock_mhz``."""


PROMOTION_K = 128
"""k between two promotions of CUTLASS's fp8 mainloop: ``mma_promotion_interval`` 4 wgmma of
32-deep fp8 k (cutlass include/cutlass/gemm/collective/
sm90_mma_array_tma_gmma_ss_warpspecialized_fp8.hpp ``Arguments``, PyTorch passes none), the
128-k block ``roofline.FP8_SCALE_BLOCK_K`` prices the promotion's FADD over."""


def accumulator_spill_k(gpu: GPUSpec, op: Gemm, rows: int, cols: int) -> float:
    """Main-loop k-steps per useful k-step an fp8 CUTLASS grouped GEMM without fast accumulation
    adds by spilling its fp32 sums, on a ``rows x cols`` cooperative tile.

    Slow accumulation keeps two accumulator fragments a thread: the tensor cores' and the fp32
    one it promotes them into every 128 of k (NVIDIA/cutlass@03a62b41 include/cutlass/gemm/
    collective/fp8_accumulation.hpp ``GmmaFP8Accumulation``: ``accum_temp_ =
    make_fragment_like(accum)``, ``promote_core`` adds ``accum_temp_`` into ``accum_`` after
    ``warpgroup_wait<0>``). A fragment is ``rows x cols / 256`` fp32 registers a math thread:
    64 on PyTorch's 128 x 128 slow tile (two fit in ``MMA_REGISTER_BUDGET``), 128 on its
    128 x 256 tile, whose two fragments alone (256) exceed the 232 registers a thread gets
    (PyTorch aten/src/ATen/native/cuda/ScaledGroupMM.cu picks 128 x 128 for its large shapes
    "for slow accum to avoid spilling", and 128 x 256 for the others: ``torch_sm90_tile``).
    The tensor cores write the MMA fragment, so the fp32 one is what lives in local memory: each
    promotion loads it and stores it back, 8 bytes an output element, at
    ``LOCAL_BYTES_PER_SM_CLOCK`` while the tensor cores wait (the promotion is serial). Per
    element and promotion that is 8 / 63 SM clocks against 2 x 128 FLOPs at the main loop's
    rate (the burst one, as ``roofline.block_promotion_k`` prices the promotion itself): on the
    H200 (0.801 x 1979 TFLOP/s over 132 SMs at 1980 MHz, 6,066 FLOP a clock) 3.0 k-steps a
    k-step, the 128 x 256 kernel ~3x its fast-accumulation time (measured 2.6-3.1x). The
    ping-pong tile (64 rows a warpgroup: 64 registers a fragment), the 128 x 128 slow tile and
    fast accumulation (one fragment) spill nothing, as measured (1.06-1.34x, the promotion
    alone). Hopper only (``hopper_tiles``): Blackwell's accumulators live in tensor memory."""
    if op.dtype != "fp8" or op.fp8_fast_accum or op.fp8_block_scales or rows < 128:
        return 0.0
    if 2 * rows * cols // COOPERATIVE_MMA_THREADS <= MMA_REGISTER_BUDGET:
        return 0.0
    clock_hz = (gpu.max_sm_clock_mhz or SPILL_REFERENCE_SM_CLOCK_MHZ) * 1e6
    flops_per_clock = gpu.mamf_fraction * gpu.flops("fp8") / (gpu.num_sms * clock_hz)
    spill_clocks = 2 * 4 / LOCAL_BYTES_PER_SM_CLOCK  # per element and promotion
    mma_clocks = 2 * PROMOTION_K / flops_per_clock
    return spill_clocks / mma_clocks


def torch_sm90_tile(op: Gemm, small_tile_rate: float) -> tuple[int, int, float]:
    """(rows, columns, main-loop rate relative to the 128 x 256 tile) of the CUTLASS kernel
    PyTorch's grouped GEMMs dispatch on Hopper from each group's shape (``op.m`` rows, ``op.n``
    columns, ``op.k`` deep; a weight gradient's groups lie along k): bf16 ``torch._grouped_mm``
    (aten/src/ATen/native/cuda/GroupMM.cu ``dispatch_bf16_grouped_kernel_on_tile_size``, torch
    2.8-2.11) runs 64 x 128 ping-pong tiles where ``m <= 128 or n <= 128``, else 128 x 256
    cooperative ones; fp8 ``torch._scaled_grouped_mm`` (ScaledGroupMM.cu
    ``dispatch_fp8_grouped_gemm_on_tile_size``) the same small tile, and where two of m, n, k
    reach 2,048 ("large") 256 x 128 with fast accumulation or 128 x 128 without ("use smaller
    tile for slow accum to avoid spilling", at ``small_tile_rate``: ``roofline.SMALL_TILE_RATE``),
    else 128 x 256."""
    if op.m <= 128 or op.n <= 128:
        return 64, 128, PINGPONG_TILE_RATE
    if op.dtype == "fp8":
        big = sum(d >= 2048 for d in (op.m, op.n, op.k)) >= 2
        if big:
            return (256, 128, 1.0) if op.fp8_fast_accum else (128, 128, small_tile_rate)
    return 128, 256, 1.0


def _group_row_tiles(op: Gemm, tile: int) -> float:
    """Row tiles one group launches: ragged groups (dropless routing) hold ``m`` rows on
    average, their last tile half full on average (at least one tile)."""
    if op.ragged:
        return max(1.0, op.m / tile + 0.5)
    return float(math.ceil(op.m / tile))


def empty_programs(op: Gemm) -> float:
    """Programs of a ``triton_max_m`` grouped GEMM that return before their main loop.

    VeOmni's MoE experts (ByteDance-Seed/VeOmni@bfe4b650 veomni/ops/fused_moe/group_gemm.py
    ``FusedMoeExpertFunction``: forward L53-97, the input gradients L154-229) call
    ``group_gemm_same_nk`` with ``max_M`` = every routed row (``scatter_output.shape[0]``,
    ``grad_output.shape[0]``), which launches ``cdiv(max_M, BLOCK_M) * cdiv(N, BLOCK_N)``
    programs for each of the ``G`` experts (kernel/group_gemm.py L207-210); a program whose row
    block lies past its expert's rows returns after loading two ``cumsum_M`` entries (L91-98).
    The weight gradients run ``group_gemm_same_mn`` (L357-383), whose grid is each expert's
    full output: the workload gives them ``triton`` (``workload.ops.FULL_GRID``). The real
    programs are each expert's row blocks as ``_group_row_tiles`` counts them (the last one
    half full on average where the routing is dropless, ``Gemm.ragged``)."""
    if op.grouped != "triton_max_m":
        return 0.0
    block_m, block_n = MAX_M_GRID_BLOCK
    cols = math.ceil(op.n / block_n) * op.batch
    launched = math.ceil(op.m * op.batch / block_m) * cols
    return max(0.0, launched - _group_row_tiles(op, block_m) * cols)


def empty_program_s(gpu: GPUSpec, op: Gemm) -> float:
    """Seconds a grouped GEMM's empty programs add to it on ``gpu`` (``EMPTY_PROGRAM_SM_S``
    spread over the SMs), added to the real tiles' time with none of it hidden under them: an
    upper bound. The probe's VeOmni shapes measure 0.58-0.96 (H200) and 0.23-0.95 (H100) of it
    added, the empty programs partly running beside the real tiles
    (``benchmarks/empty_program_check.py``); that share is not priced."""
    return empty_programs(op) * EMPTY_PROGRAM_SM_S / gpu.num_sms


def grouped_efficiency(gpu: GPUSpec, op: Gemm, *, tile: int, overhead_k: float,
                       stretch: float, hopper_tiles: bool = False,
                       small_tile_rate: float = 1.0) -> float:
    """Fraction of the GEMM ceiling a grouped GEMM reaches: useful rows over launched row
    tiles, whole waves, each tile's fixed cost. One-kernel implementations spread every
    group's tiles over the SMs together (no split-k) at ``GROUPED_OF_GEMM`` of the dense
    rate; per-group GEMMs (``GROUPED_STREAMS``) are tiled each on its own, ``streams`` of
    them sharing the SMs at a time (split-k where their tiles leave SMs idle, with its serial
    fix-up: ``compute.split_k``), in ``ceil(groups / streams)`` rounds.

    ``tile`` is the dense GEMM's square output tile, ``overhead_k`` each tile's fixed cost in
    k-steps of its main loop, ``stretch`` the main-loop k-steps per useful k-step (block-scale
    promotion)."""
    sms = gpu.num_sms
    row_tiles = _group_row_tiles(op, tile)
    useful = op.m / tile / row_tiles
    n_tiles = math.ceil(op.n / tile)
    streams = GROUPED_STREAMS.get(op.grouped)
    if streams is None:
        family = RATE_FAMILY.get(op.grouped, op.grouped)
        rate = GROUPED_OF_GEMM.get(family, 1.0)  # userbuffers chunks: dense cuBLAS
        if hopper_tiles and family == "cutlass":  # PyTorch's own tile for the group shape
            rows, cols, tile_rate = torch_sm90_tile(op, small_tile_rate)
            row_tiles = _group_row_tiles(op, rows)
            n_tiles = math.ceil(op.n / cols)
            useful = op.m / rows / row_tiles * op.n / cols / n_tiles
            rate *= tile_rate * (FP8_TILE_RATE if op.dtype == "fp8" else 1.0)
            stretch += accumulator_spill_k(gpu, op, rows, cols)
        waves = op.batch * row_tiles * n_tiles / sms
        if family in TILE_COST_HIDDEN:
            overhead_k = 0.0
        eff = useful * waves / math.ceil(waves) * op.k / (op.k * stretch + overhead_k) * rate
        empty = empty_program_s(gpu, op)
        if empty:
            # the real tiles' time at the rate ``roofline.gemm_rate`` gives a 16-bit or
            # split-accumulator fp8 GEMM (a Triton tile loop's), the empty programs' after it
            real = op.flops / (gpu.gemm_ceiling(op.dtype) * eff)
            eff *= real / (real + empty)
        return eff
    together = min(streams, op.batch)
    tiles = together * row_tiles * n_tiles
    split = split_k.parts(op.k, sms, tiles, overhead_k, stretch)
    waves = tiles * split / sms
    rounds = op.batch / together
    return (useful * waves / math.ceil(waves) * op.k / split
            / split_k.tile_steps(op.k, split, overhead_k, stretch)
            * rounds / math.ceil(rounds))


SETUP_KERNELS = {"cutlass": 1}
"""Kernels a one-kernel grouped implementation launches before its grouped GEMM, on the same
stream. PyTorch's ``torch._grouped_mm`` and ``torch._scaled_grouped_mm`` first run
``prepare_grouped_gemm_data<<<1, group_count>>>``, which writes each group's operand pointers,
strides and problem shape from the offsets into a device buffer, and only then the CUTLASS
ptr-array kernel that reads them (pytorch/pytorch@117b8633 aten/src/ATen/native/cuda/GroupMM.cu
``bf16bf16_grouped_gemm_impl_sm90_sm100``; @e6bab78b ScaledGroupMM.cu
``f8f8bf16_grouped_gemm_impl_sm90``; the kernel in GroupMMCommon.cuh): two kernels a call, each
paying ``roofline.LAUNCH_S``. Measured: graphed bf16 ``torch._grouped_mm`` on one H200 (54th and
63rd sessions, 142 and 62 rows) leaves 7.0 and 8.2 us a call unpriced while one launch (3 us)
was priced (``benchmarks/grouped63_fit.py``, the intercept of each run's fit of the time left
over per call, per wave of tiles and per priced second): the setup kernel's launch is 3 us of
that, the rest is not explained here. No constant."""


def grouped_launches(op: Gemm) -> int:
    """Kernels a GEMM op launches one after another on the GPU (each pays ``LAUNCH_S``): one a
    group's round for per-group GEMMs, one grouped kernel and its setup kernels otherwise."""
    streams = GROUPED_STREAMS.get(op.grouped)
    return math.ceil(op.batch / streams) if streams else 1 + SETUP_KERNELS.get(op.grouped, 0)
