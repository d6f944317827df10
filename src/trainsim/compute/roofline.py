"""Roofline kernel-time model with shape-dependent efficiency.

time = max(FLOPs / achievable FLOP/s, bytes / achievable B/s) + launch overhead

The constants are global and physical, each with its source:

* GEMM ceiling: the GPU's measured *maximum achievable matmul FLOP/s* (``GPUSpec.mamf_fraction``,
  e.g. A100 267.9 of 312 TFLOP/s, H100 792 of 989; Bekman, ml-engineering MAMF table).
  Below the ceiling, wave quantization: output tiles are spread over the SMs in whole waves,
  so a GEMM with 5.1 waves of tiles runs at 5.1/6 of the ceiling (NVIDIA, *Matrix
  Multiplication Background User's Guide*, "wave quantization"); under two waves the last,
  partial wave is split along k (``SPLIT_K_MAX_WAVES``; the parts' serial fix-up and the
  split a library picks: ``compute.split_k``). The tiles are 128x128, or on Hopper
  whichever of 128x128 (at ``SMALL_TILE_RATE``) and 128x256 / 256x128 runs the GEMM faster
  (``gemm_tiles``).
* Fused attention kernels: ``compute.attention`` (each implementation's fraction of the GEMM
  ceiling over its own tiles, the softmax exponentials, each row's fixed work).
* GEMM tiles carry a fixed prologue/epilogue cost (``GEMM_TILE_OVERHEAD_K``) and split k over
  idle SMs when the output has too few tiles. fp8 GEMMs with a scale per 128-deep k block whose
  kernel promotes the partial sums between blocks (CUTLASS's SM90 block-scaled mainloop) add
  the CUDA cores' FFMA of each block's accumulator to the main loop (``block_promotion_k``);
  MXFP8 GEMMs, scaled per 32 elements of k inside the tensor cores, run at a measured
  fraction of the per-tensor fp8 rate (``MXFP8_OF_TENSOR_SCALED``).
* Grouped GEMMs (an MoE layer's experts) by implementation: ``compute.grouped``, handed the
  dense tile, its fixed cost and the block-scale promotion from here.
* A kernel benchmark that repeats one GEMM back to back slows as the board heats: its GEMMs
  fall from the burst clock toward the sustained one the longer each call runs
  (``loop_clock_factor``, ``LOOP_CLOCK_TAU_S``; ``RooflineModel(loop_toward=...)``, set only
  for kernel rows timed that way, never for training).
* Memory-bound kernels reach ~85 % of HBM bandwidth (STREAM-like copy kernels on A100/H100).
* Each kernel launch costs ~3 us of GPU time that cannot overlap its own work (stream
  serialization, tail effects); NVIDIA Nsight traces of Megatron show 2-5 us gaps.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Protocol

from trainsim.compute import atomics, embedding_bwd, grouped, split_k
from trainsim.compute import attention as _attention
from trainsim.compute.attention import (
    flash1_pass_bytes,
    fused_attention_work,
    gqa_group_sum_bytes,
)
from trainsim.compute.grouped import (  # the constants re-exported for older callers
    GROUPED_OF_GEMM,  # noqa: F401
    GROUPED_STREAMS,  # noqa: F401
    grouped_launches,
)
from trainsim.compute.split_k import SPLIT_K_MIN  # noqa: F401 (re-exported for older callers)
from trainsim.compute.ssd import ssd_bandwidth
from trainsim.config import GPUSpec
from trainsim.workload.elementwise import strided_share
from trainsim.workload.mamba_block import SSD_IMPL
from trainsim.workload.ops import Attention, Elementwise, Gemm

HBM_EFFICIENCY = 0.85
SCALAR_HBM_EFFICIENCY = 0.54
"""Fraction of HBM bandwidth a memory-bound kernel reaches when each thread loads one 16-bit
element at a time (``workload.elementwise.SCALAR_LOADS``: vLLM's early rotary, SiluAndMul and
RMSNorm kernels; PyTorch's non-vectorized path for strided or broadcast operands,
``workload.elementwise.STRIDED_LOADS``) instead of 128-bit vectors: a few bytes in flight per
thread cannot cover the memory latency (Little's law). Fitted by ``benchmarks/fit_kernels.py``
to vidur's A100 and H100 profiles of those kernels and the H100 file's eager chunked SwiGLU and
eager RMSNorm rows (their held-out sources and families excluded)."""
SCALAR_BYTES_PER_SM_CLOCK = 6.96
"""Bytes a GPU's non-vectorized loads (one 16-bit element per thread per instruction:
``workload.elementwise.SCALAR_LOADS``, ``STRIDED_LOADS``) move per SM per SM clock. By Little's
law a path with a few bytes in flight per thread runs at the bytes in flight over the memory
latency, both set by the SMs (resident threads, a latency counted in SM clocks), not by the HBM:
the best rate per GPU of those rows is 0.48 of HBM on A100, 0.54 on H100 and 0.40 on H200, but
6.5, 6.9 and 7.3 bytes per SM clock (``benchmarks/memory_bound_h200.py``), and the chunked eager
SwiGLU runs 1.05x faster on an H200 than on an H100 (the same 132 SMs at 1980 MHz) against their
1.43x HBM. Fitted by ``benchmarks/memory_bound_h200.py`` (golden section) on the rows
``benchmarks/fit_kernels.py`` fits ``SCALAR_HBM_EFFICIENCY`` on (A100 and H100; every H200 row
held out). GPUs that state no ``GPUSpec.max_sm_clock_mhz`` keep ``SCALAR_HBM_EFFICIENCY``."""


def scalar_load_bw(gpu: GPUSpec) -> float:
    """Rate (B/s) of the non-vectorized path on ``gpu``: ``SCALAR_BYTES_PER_SM_CLOCK`` x SMs x
    max SM clock, at most the streaming rate; ``SCALAR_HBM_EFFICIENCY`` of HBM where the GPU
    states no max clock."""
    if gpu.max_sm_clock_mhz is None:
        return gpu.hbm_bw_Bps * SCALAR_HBM_EFFICIENCY
    return min(gpu.hbm_bw_Bps * HBM_EFFICIENCY,
               SCALAR_BYTES_PER_SM_CLOCK * gpu.num_sms * gpu.max_sm_clock_mhz * 1e6)


def full_wave_extra(num_sms: int, held_sms: float) -> int:
    """Extra waves a kernel launched as one full wave of the GPU (``Elementwise.full_wave``: a
    fixed number of CTAs on every one of ``num_sms`` SMs) runs while another kernel holds
    ``held_sms`` of them: its ``k * num_sms`` CTAs fit ``k * (num_sms - held)`` at a time, so
    ``ceil(num_sms / (num_sms - held)) - 1`` more waves, each as long as the first where a CTA's
    rows set its time (the whole-wave quantization of ``tile_grid_efficiency``, applied to the
    memory-bound kernel's own fixed grid; no constant). DeepSeek's profiled DualPipe pair
    (deepseek-ai/profile-data@4496024 train.json; ``benchmarks/deepseek_v3_norms.py``): the
    norm kernels launch 132, 396, 528, 660 and 924 CTAs on the H800's 132 SMs; beside a DeepEP
    kernel (20 SMs) the 132-CTA ``ln_bwd`` over 4096 x 7168 runs 179-184 us against 97-99 us
    without one (1.87x: two waves; the 396-CTA ``ln_fwd`` 1.2-1.6x), where the casts, grids
    sized by their data, run a median 1.21x, about the SMs held (132/112)."""
    free = num_sms - held_sms
    if held_sms <= 0.0 or free <= 0.0:
        return 0
    return math.ceil(num_sms / free - 1e-9) - 1


LAUNCH_S = 3e-6
COLD_CALL_S = 3.2e-6
"""What a kernel benchmark that times one call at a time with a cold L2 adds to that call
(``triton.testing.do_bench``: a 256 MiB ``cache.zero_()`` on the same stream before every
timed call, then CUDA events around the one call; nvbench's cold "GPU Time": the L2 flushed
before each sample, events around one launch held behind a blocking kernel): the first
kernel's ramp from an idle GPU, the write-back of the L2 lines the flush left dirty, and the
events' own resolution, over the ``LAUNCH_S`` a kernel in a stream of kernels costs. NVIDIA's
nvbench tables of ``cub::DeviceTransform`` on B200 show both conditions on the same kernels
(NVIDIA/cccl #7391): an fp16 add over 2^16 elements takes 6.17 us cold and 2.00 us batched
(launches back to back), over 2^20 8.18 / 2.60 us, and a cold series over 6 MB-1.6 GB has an
intercept of +7.9 us at 0.90 of HBM. A training step runs its kernels back to back, so a
simulation never reads it; the kernels validator adds it once to a row whose source or note
names such a harness (``validate.kernels.COLD_CALL``). Fitted by
``benchmarks/fit_cold_call.py`` to the seven cold nvbench rows of
``benchmarks/kernels_memory_published.csv`` alone; held out: every do_bench row (Liger-Kernel's
A100 and H100 rows of the shared file, quack's H100 clones)."""
TILE = 128
GEMM_TILE_OVERHEAD_K = 219
"""Fixed cost of one output tile (prologue: pipeline fill; epilogue: convert and store C), in
k-steps of the 16-bit main loop: a tile's time is ~ (k + 219) / k of its main loop, so
short-k GEMMs fall below the ceiling (measured fp8 M=N=8192 rises from 569 to 1,541 TFLOP/s as
k grows). The cost is a time, the same in every dtype, so in k-steps it scales with the dtype's
rate: x1.77 for fp8 on H100. Fitted by ``benchmarks/fit_kernels.py`` to the GEMM rows of
``kernels_h100_measured.csv`` and ``kernels_published.csv`` (fit sources and shape families;
see RESULTS.md), together with ``SMALL_TILE_RATE``, ``split_k.SPLIT_K_FIXUP`` and
``LOOP_CLOCK_TAU_S`` (250 before the benchmark loop's clock was priced, 28th session; 258
without the split's fix-up, 266 with the 128x128 tile alone)."""
SPLIT_K_MAX_WAVES = 2
"""A GEMM whose tiles fill fewer than this many waves also splits the k loop of its last,
partial wave over the SMs that wave would leave idle: the data-parallel wave runs whole
tiles and the remainder is shared out by k, as stream-K's "data-parallel + stream-K" hybrid
schedules it (Osama et al. 2023, *Stream-K: Work-centric Parallel Decomposition for Dense
Matrix-Matrix Multiplication on the GPU*, §5) and as cuBLAS's split-k kernels do for small
grids. Larger grids run whole waves: a GEMM with 1.2 waves of 128x128 tiles runs near 0.8 of
the ceiling (measured: vidur's A100 and H100 GEMMs and the H100 file's 1-2-wave shapes were
22-37 % faster than whole waves predict), one with 5.2 waves at 5.2/6. Chosen, not fitted:
the GEMM rows' MAPE is 7.87 % with no partial-wave split, 7.44 % at 2 waves, 7.49 % at 3, and
7.87 % with every grid split (benchmarks/fit_kernels.py rows, ``GEMM_TILE_OVERHEAD_K`` = 266);
with the split's serial fix-up (``compute.split_k``, 25th session) 2 still fits best (held-out
GEMM MAPE A100 / H100 / B200 / H200: 8.0 / 10.6 / 10.1 / 9.3 % at 2, 10.6 / 10.7 / 12.4 / 12.5
at 1, 8.0 / 10.4 / 10.2 / 8.8 at 3 with A100's fitted rows 9.8 -> 10.5)."""


SMALL_TILE_RATE = 0.97
"""Main-loop rate of a 128x128 output tile as a fraction of a 128x256 (or 256x128) tile's on
GPUs whose warpgroup MMA reads its operands from shared memory (``smem_fed_mma``). Hopper's
``wgmma`` streams both operands out of shared memory while TMA writes the next stages into it:
per 16-deep k-step a 128x128 tile moves 256 operand rows through shared memory for 128 x 128
outputs, a 128x256 tile 384 for twice as many, so the small tile needs 1.33x the
shared-memory bandwidth per FLOP. The big tiles reach the GPU's GEMM ceiling (the MAMF, the
best shape of a brute-force search). Fitted by ``benchmarks/fit_kernels.py`` together with
``GEMM_TILE_OVERHEAD_K`` (fit sources and shape families; see RESULTS.md)."""


LOOP_CLOCK_TAU_S = 4.7e-3
"""How fast a GPU running one GEMM back to back falls from its boost clock toward its sustained,
power-limited clock (``GPUSpec.sustained_of_burst``), as a time per GEMM: a kernel benchmark that
repeats a GEMM of compute time t without pause runs at 1 / ``loop_clock_factor`` of the burst
rate, 1 + (1 / sustained - 1) x t / (t + tau) (``loop_clock_factor``). The benchmark repeats a
kernel some tens of times after a warm-up, so the longer each call the longer the board has
been at full power when it is timed. Bekman's mamf-finder records both ends on one board
(stas00/ml-engineering, branch fast-mamf, compute/accelerator/README.md: H200 bf16 MAMF 841.9
TFLOP/s at ~176 W and 1980 MHz, its MSMF 708.5 at ~693 W and 1465 MHz). A kernel in a training
step is priced at the sustained clock throughout, so it never reads it
(``RooflineModel(loop_toward=...)``: the kernels validator and ``benchmarks/fit_kernels.py`` set
it for rows timed in such a loop; a database record, timed with the board idle, prices such a
row through the same factor: ``compute.chain``). Fitted by
``benchmarks/fit_kernels.py`` on its fitted GEMM rows with ``GEMM_TILE_OVERHEAD_K``,
``SMALL_TILE_RATE`` and ``split_k.SPLIT_K_FIXUP`` (the 13th session's duration ramp,
``benchmarks/gemm_power_ramp.py``)."""


def loop_clock_factor(seconds: float, sustained_of_burst: float) -> float:
    """Time of ``seconds`` of burst-clock GEMM work repeated back to back, over ``seconds``
    (``LOOP_CLOCK_TAU_S``): 1 for a short kernel, 1 / ``sustained_of_burst`` for a long one."""
    if LOOP_CLOCK_TAU_S <= 0.0 or seconds <= 0.0:
        return 1.0
    return 1.0 + (1.0 / sustained_of_burst - 1.0) * seconds / (seconds + LOOP_CLOCK_TAU_S)


def smem_fed_mma(gpu: GPUSpec) -> bool:
    """Hopper (compute capability 9.x): ``wgmma`` reads both operands from shared memory and
    keeps the accumulator in registers (PTX ISA 8.0). Not Ampere's or Ada's ``mma.sync``
    (register-fed: the same warp tile in any CTA tile), and not Blackwell's ``tcgen05.mma``,
    whose accumulator lives in tensor memory and whose 256-row tiles span two SMs
    (``cta_group::2``, PTX ISA 8.6): a different tile economy, not priced here (its GEMMs
    keep the one 128x128 tile, as its calibration rows were read with)."""
    arch = gpu.sm_arch
    return arch is not None and 90 <= arch < 100


def gemm_tiles(gpu: GPUSpec) -> tuple[tuple[int, int, float], ...]:
    """(rows, columns, main-loop rate as a fraction of the ceiling) of each output tile a GEMM
    library chooses from. Where ``smem_fed_mma``: 128x128 at ``SMALL_TILE_RATE``, 128x256 and
    256x128 at the full rate (NVIDIA CUTLASS's Hopper examples run the cooperative
    warp-specialized kernel on ``TileShape = Shape<_128,_256,_64>``, e.g.
    ``examples/55_hopper_mixed_dtype_gemm``; cuBLAS picks among kernels of such tiles by
    heuristic). On Ampere the big tiles run no faster than 128x128, so they could win only
    where their coarser grid falls under ``SPLIT_K_MAX_WAVES`` and splits k; vidur's A100
    GEMMs show no such gain (A100 GEMM rows of ``benchmarks/fit_kernels.py``: MAPE 9.05 %
    with the 128x128 tile alone, 9.75 % with the choice), so other GPUs keep the one tile."""
    if not smem_fed_mma(gpu):
        return ((TILE, TILE, 1.0),)
    return gemm_tiles_hopper()


def gemm_tiles_hopper() -> tuple[tuple[int, int, float], ...]:
    """``gemm_tiles`` where ``smem_fed_mma``."""
    return ((TILE, TILE, SMALL_TILE_RATE), (TILE, 2 * TILE, 1.0), (2 * TILE, TILE, 1.0))


TRACED_TILE = re.compile(r"nvjet_sm9\d_[a-z]+_(\d+)x(\d+)_")
"""A cuBLAS (12.8 and later) Hopper GEMM kernel's name, ``nvjet_sm90_tst_<R>x<C>_...``: the
output tile its CTA computes (e.g. ``nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT``; the
bundled databases' layer traces, torch 2.11 + CUDA 13, name only such kernels for their
GEMMs)."""


def traced_tiles(kernel_names: Iterable[str]) -> tuple[tuple[int, int, float], ...]:
    """The output tiles beyond ``gemm_tiles``' that a Hopper cuBLAS ran, read from its kernels'
    names (``TRACED_TILE``), each in both orientations (a row-major product is the column-major
    one transposed, and the library picks either kernel), at the full main-loop rate: only
    tiles that move no more operand rows through shared memory per output than 128x256 does
    ((R + C) / (R x C) <= 384 / 32768: 192x192, 320x128; ``SMALL_TILE_RATE`` says why that is
    the rate's measure), so a narrower tile (128x192, 64x256) is left out rather than given a
    rate nobody measured. The 37th session's census of the bundled H100 and H200 databases'
    16 layer traces each (``benchmarks/gemm_catalog_era.py --census``): 320x128 ran 39 / 41 % of
    the GEMM time, 192x192 33 / 31 %, 256x128 28 / 21 %, 128x256 0 / 7 %, 128x128 and the
    narrow ones < 0.3 %."""
    shipped = {(r, c) for r, c, _ in gemm_tiles_hopper()}
    out: list[tuple[int, int, float]] = []
    for name in kernel_names:
        hit = TRACED_TILE.match(name)
        if hit is None:
            continue
        r, c = int(hit.group(1)), int(hit.group(2))
        if (r + c) * 2 * TILE * TILE > r * c * 3 * TILE:  # narrower than 128x256
            continue
        for tile in ((r, c, 1.0), (c, r, 1.0)):
            if tile[:2] not in shipped and tile not in out:
                out.append(tile)
    return tuple(sorted(out))


def tile_grid_efficiency(sms: int, op: Gemm, rows: int, cols: int, overhead_k: float,
                         stretch: float, kernel_k: float = 0.0) -> float:
    """Fraction of its tile's main-loop rate a GEMM cut into ``rows`` x ``cols`` output tiles
    keeps on ``sms`` SMs: useful outputs over the padded tiles', whole waves of tiles (the
    last, partial wave split along k over the SMs it leaves idle when the tiles fill fewer
    than ``SPLIT_K_MAX_WAVES`` waves), each tile's fixed cost ``overhead_k`` and ``stretch``
    main-loop k-steps per useful k-step (block-scale promotion). ``kernel_k``: a cost paid
    once per kernel, in the same k-steps (0 in the model; ``benchmarks/gemm_variants.py``)."""
    tiles = math.ceil(op.m / rows) * math.ceil(op.n / cols) * op.batch
    full, rest = divmod(tiles, sms)
    if full >= SPLIT_K_MAX_WAVES:  # whole waves of whole tiles
        full, rest = math.ceil(tiles / sms), 0
    steps = full * (op.k * stretch + overhead_k) + kernel_k  # time in k-steps of one tile
    if rest:  # the partial wave's tiles split along k over the SMs it leaves idle
        split = split_k.parts(op.k, sms, rest, overhead_k, stretch)
        steps += math.ceil(rest * split / sms) * split_k.tile_steps(op.k, split, overhead_k,
                                                                     stretch)
    useful = op.m * op.n * op.batch / (rows * cols)  # tiles' worth of real outputs
    return useful * op.k / sms / steps


FP8_OWN_PROMOTION = frozenset({"deepgemm"})
"""Kernel libraries (and grouped-GEMM implementations) whose fp8 GEMMs never use cuBLAS's split
accumulator: DeepGEMM promotes the sums on the CUDA cores every 128 k, overlapped with the next
block's tensor-core work (deepseek-ai/DeepGEMM README: "up to 1550 TFLOPS" on H800)."""


FP8_SCALE_BLOCK_K = 128
"""k depth of one scale block of a block-scaled fp8 GEMM (DeepSeek-V3 report §3.3.1: 1x128
activation and 128x128 weight tiles; CUTLASS ``ScaleGranularityK``, vLLM ``block_size``)."""


MXFP8_OF_TENSOR_SCALED = 0.964
"""Rate of an MXFP8 GEMM kernel (``Gemm.fp8_block_scales == "mma"``: an E8M0 scale per 32
elements of k, applied by the tensor cores) as a fraction of the same GEMM with per-tensor fp8
scales (the block-scaled MMA reads both operands' scale factors from tensor memory, so the
kernel copies them there for each k tile beside the operands: PTX ISA 8.7 ``tcgen05.mma ...
block_scale``, ``tcgen05.cp``). Measured by Transformer Engine's GEMM benchmark on one B300
with pre-quantized operands (TransformerEngine@1609c890e docs/examples/gemm_profiling/
gemm_profiling.rst, "Per-Layer GEMM Time", ``benchmark_gemm.py --pre-quantize``, CUDA events):
the 12 GEMMs of a hidden 4096, FFN 16384 layer at 15,872 tokens take 6.812 ms with FP8 current
scaling and 7.161 ms with MXFP8 (fprop 2.158 / 2.365, dgrad 2.329 / 2.397, wgrad 2.325 /
2.400). Its MXFP8 operands carry compact scales (``MXFP8Quantizer`` leaves
``optimize_for_gemm`` off), so each ``tex.generic_gemm`` also ran two scale swizzles, which
trainsim prices as their own kernels (``workload.shard.mxfp8_swizzle``: 24 of them, 0.096 ms
on B200's memory system): 6.812 / (7.161 - 0.096) = 0.964 for the GEMM kernels alone
(``tests/test_fp8_accumulation.py`` recomputes it). One published pair; not fitted to any
training row."""


NVFP4_OF_FP8_RATE = 1.975
"""Rate of an NVFP4 GEMM kernel (``Gemm.fp8_block_scales == "nvfp4"``: E2M1 operands, an E4M3
scale per 16 elements of k applied by the tensor cores, fp32 accumulation) over the GPU's 8-bit
GEMM rate (the 16-bit ceiling times the fp8 / 16-bit peak ratio: what a per-tensor fp8 kernel
without split accumulation runs at, ``gemm_rate``); at most the fp4 ceiling
(:func:`nvfp4_rate`). Derived from Transformer Engine's GEMM benchmark on one B300 with
pre-quantized operands (TransformerEngine@1609c890e docs/examples/gemm_profiling/
gemm_profiling.rst, "Per-Layer GEMM Time", ``benchmark_gemm.py --pre-quantize``): the 12 GEMMs
of a hidden 4096, FFN 16384 layer at 15,872 tokens take 6.812 ms with per-tensor FP8 and 3.764
ms with NVFP4 (fprop 1.254, dgrad 1.305, wgrad 1.205), the NVFP4 time including two scale
swizzles per GEMM (``NVFP4Quantizer`` leaves its scales compact; 0.118 ms on B300's memory
system). 1.975 is the value at which trainsim's own pricing of the 24 GEMMs on
``b300-sxm-288gb`` (tiles, waves, fixed cost per tile) gives the measured NVFP4 / per-tensor
ratio, 3.646 / 6.812: ``benchmarks/te_quantize_overhead.py`` derives it (``nvfp4_of_fp8_rate``),
``tests/test_nvfp4.py`` recomputes it.

Why a multiple of the 8-bit rate and not a fraction of the fp4 peak: B300's fp4 peak is 3x its
fp8 one, B200's 2x, and the kernel runs at about twice the 8-bit rate on both. On one B200,
cuBLASLt's NVFP4 GEMM through ``torch._scaled_mm`` over the bf16 one in the same run
(pytorch/ao#2427, 2025-06-23, ``benchmarks/float8/bench_matmul.py --recipe nvfp4``: 4096^3
30.8 / 97.4 us, 6144^3 84.4 / 319 us, 8192^3 205 / 774 us) is 0.316 / 0.265 / 0.265; this
constant gives 0.311 / 0.285 / 0.275 (-2 / +8 / +4 %), a fraction of the fp4 ceiling fitted on
B300 (0.658) 0.428 / 0.406 / 0.398 (+35 / +53 / +50 %; ``tests/test_nvfp4.py``). On B200 and
GB200 (fp4 = 2x fp8) the kernel so reaches 0.99 of the fp4 ceiling; on B300 and GB300 0.66.
Two published kernel measurements on two GPUs, one deriving and one checking; not fitted to
any training row."""


def nvfp4_rate(gpu: GPUSpec) -> float:
    """FLOP/s of a large NVFP4 GEMM on ``gpu``: ``NVFP4_OF_FP8_RATE`` times its 8-bit GEMM rate,
    at most its fp4 ceiling (the fp4 tensor cores' own rate at the 16-bit MAMF fraction)."""
    fp8 = gpu.gemm_ceiling("bf16") * gpu.flops("fp8") / gpu.flops("bf16")
    return min(fp8 * NVFP4_OF_FP8_RATE, gpu.gemm_ceiling("fp4"))


def gemm_rate(gpu: GPUSpec, op: Gemm) -> float:
    """The GEMM ceiling ``op`` runs at (FLOP/s). The GPU's fp8 MAMF was measured through
    cuBLAS's split accumulator (``torch._scaled_mm`` without ``use_fast_accum``), which
    periodically promotes Hopper's limited-precision fp8 tensor-core sums to fp32 (DeepSeek-V3
    report, §3.3.2): on H100 it keeps 0.709 of the fp8 peak against 0.801 of the 16-bit one.
    A kernel that does without it (``Gemm.fp8_fast_accum``) reaches the 16-bit fraction of the
    fp8 peak; on Blackwell the two fractions nearly agree (0.763, 0.776). A block-scaled kernel
    (``Gemm.fp8_block_scales``) promotes on its own, once per scale block, and pays for that in
    ``block_promotion_k`` instead. An MXFP8 kernel (``"mma"``) keeps the accumulation its
    pass asks for and runs at ``MXFP8_OF_TENSOR_SCALED`` of that pass's per-tensor rate:
    Transformer Engine hands a pass the same ``use_split_accumulator`` under every recipe
    (module/linear.py ``_2X_ACC_FPROP``/``_2X_ACC_DGRAD``/``_2X_ACC_WGRAD``), and the benchmark
    behind the constant compared the two recipes under one setting, so the measured ratio holds
    pass by pass (the block-scaled MMA accumulates in fp32 in tensor memory whatever the flag:
    PTX ISA 8.7 ``tcgen05.mma ... block_scale``, f32 ``D``; it is no fast-accumulate kernel)."""
    if op.fp8_block_scales == "nvfp4":
        return nvfp4_rate(gpu)
    fast = op.fp8_fast_accum or op.grouped in FP8_OWN_PROMOTION or \
        op.fp8_block_scales in ("overlapped", "serial", "outer") or grouped_serial_promotion(op)
    if op.dtype == "fp8" and fast and "fp8" in gpu.peak_flops:
        rate = gpu.gemm_ceiling("bf16") * gpu.flops("fp8") / gpu.flops("bf16")
    else:
        rate = gpu.gemm_ceiling(op.dtype)
    if op.dtype == "fp8" and op.fp8_block_scales == "mma":
        return rate * MXFP8_OF_TENSOR_SCALED
    return rate


def grouped_serial_promotion(op: Gemm) -> bool:
    """A grouped fp8 GEMM without fast accumulation whose kernel promotes its sums itself,
    between k tiles (``grouped.FP8_SERIAL_PROMOTION``: CUTLASS's ptr-array FP8 mainloop):
    priced as a block-scaled ``serial`` kernel (``block_promotion_k``)."""
    return (op.dtype == "fp8" and not op.fp8_fast_accum and not op.fp8_block_scales
            and op.grouped in grouped.FP8_SERIAL_PROMOTION)


def has_block_scaled_mma(gpu: GPUSpec) -> bool:
    """Tensor cores that take per-block scale factors in the MMA itself
    (``GPUSpec.block_scaled_mma``, which the workload reads too)."""
    return gpu.block_scaled_mma


PROMOTION_OPS: dict[str, int] = {"serial": 1, "outer": 3}
"""Issue slots, in fp32 instructions of the whole SM, each accumulator element costs per 128-deep
k block of a kernel that promotes between blocks (``Gemm.fp8_block_scales``). ``serial``: one
FFMA, the block's scale a row's scale times the one scale of the weight's 128x128 block,
multiplied once per row before the tensor cores are waited on (NVIDIA/cutlass@7107b055
include/cutlass/gemm/collective/sm90_mma_tma_gmma_ss_warpspecialized_fp8_blockwise_scaling.hpp
L932-948 then L950-966; deepseek-ai/DeepGEMM@54e22612
deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh L321-336; its scale loads, two rows'
and one or two blocks' per thread per k block at L287-291 and L303-304, are ~0.05 of a slot an
element: left out). ``outer``: both operands' scales vary along the output (1x128 by 1x128), so
each element's scale is its row's times its column's, formed after the wait: an FMUL and an
FFMA per element (cutlass@7107b055 include/cutlass/gemm/collective/fp8_accumulation.hpp L130-131
``accum_(i) += accum_temp_(i) * scaleA(i) * scaleB(i)``, reached from the mainloop's L967-968;
DeepGEMM@54e22612 sm90_fp8_gemm_1d1d.cuh L298-312, ``warpgroup_wait<0>`` then
``final_accum[..] += scale_a * scale_b * accum[..]``), plus the column scales themselves: each
thread reloads its columns' B scales from shared memory every k block, one 8-byte ``float2``
per four of its accumulator elements (1d1d.cuh L255 ``scales_b[kNumAccum / 4]``, L279-281),
issued in each warp's program order before its wgmma (L273-274: "all shared memory read must
be prior to ``warpgroup_arrive``"; CUTLASS loads its per-column scales there too, L895-896
before L917-918). The FMUL and FFMA run on the SM's 4 x 32 fp32 lanes, 128 elements a clock;
the loads on its one shared-memory port, 32 banks of 32 bits a clock (CUDA C++ Programming
Guide, compute capability 5.x and later, "Shared Memory"), one warp request a clock: a request
whose lanes read one ``float2`` per four of them (4 distinct 8-byte words, broadcast) serves
32 x 4 = 128 elements a clock, the same as one fp32 instruction an element: 3 in all. Counted
from the kernels' source, not fitted. That the loads cost their full port time before the wgmma
restarts is the one assumption; as a control ``benchmarks/wgrad41_promotion.py`` fits one count
to each of two independent sets, the other held out: the H200's cuBLASLt 1x128-by-1x128 pairs
(block over per-tensor rate, 48 pairs: 3.19; the nine DeepSeek-V3 rows' times: 2.64) and
DeepSeek's own DeepGEMM W GEMMs on an H800 (profile-data trace: 3.23). At 3 the trace's W
GEMMs are priced 2.5 % fast, at the 40th session's 2 (FMUL + FFMA alone) 15 %."""


def block_promotion_k(gpu: GPUSpec, op: Gemm) -> float:
    """Exposed cost of applying an fp8 GEMM's block scales, in k-steps of its main loop per
    k-step (0 unless ``op.fp8_block_scales`` is ``"serial"`` or ``"outer"``).

    CUTLASS's SM90 block-scaled mainloop (``sm90_mma_tma_gmma_ss_warpspecialized_fp8_blockwise_
    scaling.hpp``, ``GmmaFP8Accumulation::scale_core`` in ``fp8_accumulation.hpp``) runs each
    128-deep k tile's wgmma into a temporary accumulator, then waits for the tensor cores to
    drain (``warpgroup_wait<0>``) and adds it, times its scales, into the fp32 accumulator with
    one FFMA per element before it issues the next tile; the cooperative schedule's two math
    warpgroups share one output tile, so the tensor cores idle meanwhile. A 128x128 tile's
    accumulator is TILE^2 FFMAs at the SM's fp32 rate per TILE^2 x 128 multiply-adds at its
    tensor rate: ``rate / fp32 peak`` k-steps per 128-k block (H100 at the 16-bit MAMF
    fraction of its fp8 peak: 0.801 x 1979 / 66.9 = 23.7 k-steps, 18.5 % of the block), times
    the instructions each element takes (``PROMOTION_OPS``: three times that, 55 %, for
    ``outer``, the 1x128-by-1x128 weight gradient, whose scale product is per element and whose
    column scales are reloaded from shared memory every block). A floor: the
    drain and restart of the tensor-core pipeline come on top and have no measured figure
    here. DeepGEMM (``overlapped``) promotes on the CUDA cores while the other math
    warpgroup's wgmma runs (DeepGEMM README; DeepSeek-V3 §3.3.2) and pays none. Derived from
    the catalog's peaks, not fitted.

    Only GPUs whose tensor cores cannot apply block scales themselves pay it: block-scaled MMA
    came in hardware with the OCP microscaling formats and fp4 (Blackwell's
    ``tcgen05.mma ... block_scale``, PTX ISA 8.7; MI355X's MX instructions), so a GPU that lists
    an fp4 peak multiplies the scales inside the tensor core and promotes nothing."""
    fp32 = gpu.peak_flops.get("fp32")
    ops = PROMOTION_OPS["serial"] if grouped_serial_promotion(op) else \
        PROMOTION_OPS.get(op.fp8_block_scales, 0)
    if op.dtype != "fp8" or not ops or not fp32 or has_block_scaled_mma(gpu):
        return 0.0
    rate = gpu.mamf_fraction * gpu.flops("fp8")  # the burst main-loop rate, like the fp32 peak
    return ops * rate / fp32 / FP8_SCALE_BLOCK_K


def grouped_efficiency(gpu: GPUSpec, op: Gemm) -> float:
    """Fraction of the GEMM ceiling a grouped GEMM reaches (``compute.grouped``), with this
    module's dense tile, its fixed cost and the block-scale promotion handed over."""
    overhead_k = GEMM_TILE_OVERHEAD_K * gemm_rate(gpu, op) / gpu.gemm_ceiling("bf16")
    return grouped.grouped_efficiency(gpu, op, tile=TILE, overhead_k=overhead_k,
                                      stretch=1.0 + block_promotion_k(gpu, op),
                                      hopper_tiles=smem_fed_mma(gpu),
                                      small_tile_rate=SMALL_TILE_RATE)


def kernel_launches(op: Gemm | Attention | Elementwise) -> int:
    """Kernels ``RooflineModel`` charges ``LAUNCH_S`` for in pricing ``op`` (the launch gaps
    between kernels in a stream). A harness that sums the kernels' own durations (a profiler's
    ``device_time_total``, Kineto's kernel events) does not see those gaps
    (``validate.kernels.PROFILER_SUMMED``)."""
    if isinstance(op, Gemm):
        return grouped_launches(op)
    if isinstance(op, Attention):
        if op.impl == "unfused":
            return 4
        if op.impl == "eager":
            return (len(op.score_gemms()) + 1 + 4 + int(op.causal and not op.backward)
                    + int(op.dropout))
        return 1 + (2 if gqa_group_sum_bytes(op) else 0)
    return op.kernels


class ComputeModel(Protocol):
    name: str

    def time(self, op: Gemm | Attention | Elementwise) -> float: ...


class RooflineModel:
    """Prices compute ops on one GPU; pure and cacheable by op."""

    name = "roofline"

    def __init__(self, gpu: GPUSpec, loop_toward: float | None = None,
                 tiles: tuple[tuple[int, int, float], ...] = (), bwd_tail: bool = False) -> None:
        self.gpu = gpu
        self.bwd_tail = bwd_tail or _attention.FA2_BWD_TAIL
        """Whether a causal FlashAttention-2 backward pays its tail (``causal_bwd_tail``): a
        kernel database's reading of its records (``database.RECORD_BWD_TAIL``)."""
        self.loop_toward = loop_toward
        """A kernel benchmark's loop (``loop_clock_factor``): the sustained fraction of the
        burst clock its GEMMs fall toward; None (training, a database's own comparison) for
        none."""
        self.extra_tiles = tiles if smem_fed_mma(gpu) else ()
        """Output tiles a GEMM may choose beside ``gemm_tiles``: on Hopper, ``tiles``
        (``traced_tiles``: those a measured database's own cuBLAS ran)."""
        self._cache: dict[object, float] = {}

    def gemm_efficiency(self, op: Gemm) -> float:
        """Fraction of the GEMM ceiling the library's best output tile (``gemm_tiles``)
        reaches: the tile's main-loop rate times its grid's efficiency
        (``tile_grid_efficiency``: padding, wave quantization with split-k of a small grid's
        last wave, each tile's fixed cost, a block-scaled kernel's serial promotion); a
        grouped GEMM's by its implementation (``compute.grouped``). The chunks of a GEMM
        overlapped with a TP collective (``userbuffers``) are one dense grid of every chunk's
        tiles, each chunk's last row tile filled only as far as its rows go."""
        if op.grouped and op.grouped != "userbuffers":
            return grouped_efficiency(self.gpu, op)
        overhead_k = GEMM_TILE_OVERHEAD_K * (gemm_rate(self.gpu, op)
                                             / self.gpu.gemm_ceiling("bf16"))
        stretch = 1.0 + block_promotion_k(self.gpu, op)  # main-loop k-steps per useful one
        return max(rate * tile_grid_efficiency(self.gpu.num_sms, op, rows, cols, overhead_k,
                                               stretch)
                   for rows, cols, rate in gemm_tiles(self.gpu) + self.extra_tiles)

    def time(self, op: Gemm | Attention | Elementwise) -> float:
        t = self._cache.get(op)
        if t is None:
            t = self._cache[op] = self._time(op)
        return t

    def _time(self, op: Gemm | Attention | Elementwise) -> float:
        bw = self.gpu.hbm_bw_Bps * HBM_EFFICIENCY
        if isinstance(op, Gemm) and op.ssd_bytes:  # a Triton SSD kernel (``compute.ssd``)
            return max(op.ssd_bytes / ssd_bandwidth(self.gpu.hbm_bw_Bps),
                       op.flops / self.gpu.gemm_ceiling("bf16")) + LAUNCH_S
        if isinstance(op, Gemm):
            compute = op.flops / (gemm_rate(self.gpu, op) * self.gemm_efficiency(op))
            if self.loop_toward is not None:  # a benchmark loop: its clock falls as it runs
                compute *= loop_clock_factor(compute, self.loop_toward)
            return max(compute, op.bytes / bw) + LAUNCH_S * grouped_launches(op)
        if isinstance(op, Attention):
            peak = self.gpu.gemm_ceiling("bf16")
            if op.impl == "unfused":  # batched GEMMs for QK^T and AV plus softmax round trips
                return op.flops / peak + op.bytes / bw + 4 * LAUNCH_S
            if op.impl == "eager":
                # the score matmuls as batched GEMMs (tiles, waves: K is the head dim for QK^T
                # and dP), then the score matrix's round trips through memory, kernel by kernel
                gemms = op.score_gemms()
                mma = sum(g.flops / (self.gpu.gemm_ceiling(g.dtype) * self.gemm_efficiency(g))
                          for g in gemms)
                # softmax (or its backward), einsum's four layout copies, the causal mask add
                # (forward) and dropout, as ``Attention.bytes`` counts them
                kernels = len(gemms) + 1 + 4 + int(op.causal and not op.backward) + int(op.dropout)
                return mma + op.bytes / bw + kernels * LAUNCH_S
            work = fused_attention_work(self.gpu, op, self.bwd_tail)
            # no kernel's useful FLOP rate passes the GPU's GEMM ceiling (binds only where a
            # kernel is priced on a GPU it was not written for, e.g. FA4 on an MI300X)
            moved = flash1_pass_bytes(op) if op.impl == "flash1" else op.bytes
            group_sum = gqa_group_sum_bytes(op)
            return (max(work, moved / bw, op.flops / peak) + LAUNCH_S
                    + (group_sum / bw + 2 * LAUNCH_S if group_sum else 0.0))
        if isinstance(op, Elementwise) and op.impl == SSD_IMPL:
            return op.bytes / ssd_bandwidth(self.gpu.hbm_bw_Bps) + op.kernels * LAUNCH_S
        if isinstance(op, Elementwise):
            scatter = embedding_bwd.scatter_time(self.gpu, *op.scatter) if op.scatter else None
            if scatter is not None:
                return scatter + op.kernels * LAUNCH_S
            # bytes moved one element per thread at a time (vLLM's scalar kernels, PyTorch's
            # non-vectorized path for strided or broadcast operands) at their own rate
            strided = strided_share(op)
            scalar_bw = scalar_load_bw(self.gpu)
            moved = op.bytes * (1.0 - strided) / bw + op.bytes * strided / scalar_bw
            # an index_add_ / scatter_add_ kernel: its atomic adds at the L2's rate
            return moved + atomics.atomic_time(self.gpu, op.atomic_adds) + op.kernels * LAUNCH_S
        raise TypeError(f"not a compute op: {op!r}")
