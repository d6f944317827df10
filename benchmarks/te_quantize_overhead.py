"""Transformer Engine's own GEMM benchmark of one layer, priced by trainsim: the fp8 quantize
overhead per recipe and the GEMMs per pass.

    PYTHONPATH=src python benchmarks/te_quantize_overhead.py

The measurement (TransformerEngine@1609c890e docs/examples/gemm_profiling/gemm_profiling.rst,
"Per-Layer GEMM Time", one B300, CUDA events, 100 iterations): the 12 GEMMs of a layer with
hidden 4096, FFN 16384, 32 heads at 31 x 512 = 15,872 tokens (``benchmark_gemm.py
compute_gemm_shapes``: 4 fprop, 4 dgrad, 4 wgrad shapes), once in "autocast" mode and once
"pre-quantized". Autocast runs each shape (M, K, N) as one ``te.Linear(K, N)`` forward on an
(M, K) input (``benchmark_fp8_current``, ``benchmark_fp8``): the input is quantized row- and
column-wise (the weight requires grad, so the forward keeps it for a wgrad: module/linear.py
298 ``backward_needs_input``, 378-386), the weight row-wise only (the input needs no grad:
409-417), and the weight again at every call (``is_first_microbatch`` None: 421
``update_ws``). Pre-quantized runs ``tex.generic_gemm`` on operands quantized once, one TN
layout and no split accumulator for every shape (``use_split_accumulator`` False). The
difference is the quantize overhead of those 24 casts.

trainsim's cast model, with TE's usages above: per-tensor current scaling reads the 16-bit
input for its amax, computes the scale, then reads it again and writes fp8 (three kernels:
csrc/quantizer.cpp@1609c890e 904-924 ``nvte_compute_amax_with_config``,
``nvte_compute_scale_from_amax``, ``nvte_quantize_v2``), no transpose on Blackwell (289-299
``with_transpose = columnwise_usage && !is_non_tn_fp8_gemm_supported``); MXFP8 casts in one
kernel, writing each layout asked for with its E8M0 scales, the input's scales already in
cuBLAS's layout (linear.py 1931-1933 ``optimize_for_gemm``), so the pre-quantized run's
swizzle of that operand is not in the autocast one. NVFP4 (``NVFP4BlockScaling``) reads the
input for its amax (with the random Hadamard transform, the input's and its transformed
transpose's in one kernel), then quantizes: the input both layouts (the column-wise one
transformed, for the wgrad), the weight row-wise, each an E2M1 nibble plus an E4M3 scale per 16
(csrc/quantizer.cpp@d0067d0d 2508-2735 ``NVFP4Quantizer::quantize_impl``;
``workload.shard.NVFP4_CAST_BYTES``); its pre-quantized operands keep compact scales, so each
GEMM swizzles both (two kernels, as MXFP8's), and te.Linear's input comes pre-swizzled
(linear.py@d0067d0d 2093-2095). The quantize overheads are checks, not inputs; one figure
derives a constant: ``nvfp4_of_fp8_rate`` gives ``compute.roofline.NVFP4_OF_FP8_RATE``,
the NVFP4 GEMM rate (over the 8-bit one) at which trainsim's pricing of the 12 pre-quantized
GEMMs on ``b300-sxm-288gb`` matches the measured NVFP4 / per-tensor time ratio. Another GPU
checks it: ``b200_nvfp4_over_bf16`` prices torchao's B200 benchmark of cuBLASLt NVFP4 against
bf16 GEMMs (pytorch/ao#2427).
"""

from __future__ import annotations

from trainsim.catalog import gpu
from trainsim.compute import roofline
from trainsim.compute.roofline import MXFP8_OF_TENSOR_SCALED, RooflineModel
from trainsim.workload.ops import NVFP4_BLOCK, NVFP4_ELEMENT_BYTES, Elementwise, Gemm
from trainsim.workload.shard import ACT as ACT_BYTES
from trainsim.workload.shard import (
    CAST_KERNEL,
    FP8_CAST_BYTES,
    FP8_CAST_TRANSPOSE_BYTES,
    FP8_RECIPE_EXTRA_BYTES,
    FP8_RECIPE_KERNELS,
    MXFP8_SCALE_BYTES,
    MXFP8_SWIZZLE_KERNEL,
    NVFP4_CAST_BYTES,
)

HIDDEN, FFN, TOKENS = 4096, 16384, 31 * 512
PASSES = {  # (M, K, N) per benchmark_gemm.py compute_gemm_shapes
    "fprop": [(TOKENS, HIDDEN, 3 * HIDDEN), (TOKENS, HIDDEN, HIDDEN), (TOKENS, HIDDEN, FFN),
              (TOKENS, FFN, HIDDEN)],
    "dgrad": [(TOKENS, 3 * HIDDEN, HIDDEN), (TOKENS, HIDDEN, HIDDEN), (TOKENS, FFN, HIDDEN),
              (TOKENS, HIDDEN, FFN)],
    "wgrad": [(HIDDEN, TOKENS, 3 * HIDDEN), (HIDDEN, TOKENS, HIDDEN), (HIDDEN, TOKENS, FFN),
              (FFN, TOKENS, HIDDEN)],
}
# published per-layer ms (B300): pre-quantized per pass, and autocast and pre-quantized totals
PREQUANT = {"current": {"fprop": 2.158, "dgrad": 2.329, "wgrad": 2.325},
            "mxfp8": {"fprop": 2.365, "dgrad": 2.397, "wgrad": 2.400},
            "nvfp4": {"fprop": 1.254, "dgrad": 1.305, "wgrad": 1.205}}
AUTOCAST_TOTAL = {"current": 9.147, "mxfp8": 8.984, "nvfp4": 6.453}
PREQUANT_TOTAL = {"current": 6.812, "mxfp8": 7.161, "nvfp4": 3.764}
NVFP4_GPU = "b300-sxm-288gb"  # the benchmark's own GPU: its fp4 rate is 1.5x B200's
B300_HBM_BPS = 8e12  # NVIDIA HGX B300 datasheet: 8 TB/s HBM3e per GPU
GPU = "b200-sxm-180gb"  # the catalog's Blackwell SXM part; B300 is not in the catalog


def _swizzle_s(model: RooflineModel, elements: float) -> float:
    """One operand's scale swizzle (``workload.shard.mxfp8_swizzle``)."""
    return model.time(Elementwise("s", bytes=2 * MXFP8_SCALE_BYTES * elements,
                                  kernel=MXFP8_SWIZZLE_KERNEL))


def quantize_overhead_s(model: RooflineModel, recipe: str) -> float:
    """trainsim's price of the autocast run's casts (and, for MXFP8, less the input swizzles
    the pre-quantized run pays and the autocast one does not)."""
    shapes = [s for p in PASSES.values() for s in p]
    inputs = sum(m * k for m, k, _ in shapes)
    weights = sum(n * k for _, k, n in shapes)
    if recipe == "current":  # Blackwell: row-wise data only, whatever the usage
        per = FP8_CAST_BYTES + FP8_RECIPE_EXTRA_BYTES["current"]
        kernels = len(shapes) * FP8_RECIPE_KERNELS["current"]
        return sum(model.time(Elementwise("c", bytes=e * per, kernels=kernels, kernel=CAST_KERNEL))
                   for e in (inputs, weights))
    x = model.time(Elementwise("x", bytes=inputs * (FP8_CAST_TRANSPOSE_BYTES
                                                    + FP8_RECIPE_EXTRA_BYTES["mxfp8"]),
                               kernels=len(shapes), kernel=CAST_KERNEL))
    w = model.time(Elementwise("w", bytes=weights * (FP8_CAST_BYTES + MXFP8_SCALE_BYTES),
                               kernels=len(shapes), kernel=CAST_KERNEL))
    return x + w - sum(_swizzle_s(model, m * k) for m, k, _ in shapes)


def nvfp4_swizzles_s(model: RooflineModel) -> float:
    """The pre-quantized NVFP4 run's scale swizzles: both operands of each GEMM, an E4M3 byte per
    16 elements read and written."""
    shapes = [s for p in PASSES.values() for s in p]
    return sum(model.time(Elementwise("s", bytes=2 * e / NVFP4_BLOCK, kernel=MXFP8_SWIZZLE_KERNEL))
               for m, k, n in shapes for e in (m * k, n * k))


def nvfp4_quantize_overhead_s(model: RooflineModel) -> float:
    """trainsim's price of the NVFP4 autocast run's casts: each input both layouts
    (``NVFP4_CAST_BYTES``), each weight its amax read then one layout, two kernels each, less
    the input swizzles the pre-quantized run pays."""
    shapes = [s for p in PASSES.values() for s in p]
    inputs = sum(m * k for m, k, _ in shapes)
    weights = sum(n * k for _, k, n in shapes)
    x = model.time(Elementwise("x", bytes=inputs * NVFP4_CAST_BYTES,
                               kernels=2 * len(shapes), kernel=CAST_KERNEL))
    w = model.time(Elementwise("w", bytes=weights * (2 * ACT_BYTES + NVFP4_ELEMENT_BYTES),
                               kernels=2 * len(shapes), kernel=CAST_KERNEL))
    swz = sum(model.time(Elementwise("s", bytes=2 * m * k / NVFP4_BLOCK,
                                     kernel=MXFP8_SWIZZLE_KERNEL)) for m, k, _ in shapes)
    return x + w - swz


def nvfp4_gemms_s(model: RooflineModel, shapes: list[tuple[int, int, int]]) -> float:
    """trainsim's price of pre-quantized NVFP4 GEMMs."""
    return sum(model.time(Gemm("g", m, n, k, "fp8", fp8_fast_accum=True,
                               fp8_block_scales="nvfp4")) for m, k, n in shapes)


def nvfp4_of_fp8_rate(digits: int = 3) -> float:
    """The NVFP4 GEMM rate, as a multiple of the 8-bit GEMM rate, at which trainsim's price of
    the 12 pre-quantized GEMMs on B300 over its per-tensor fp8 price is the measured NVFP4 (less
    its swizzles) over per-tensor time: bisection on ``roofline.NVFP4_OF_FP8_RATE``."""
    g = gpu(NVFP4_GPU)
    shapes = [s for p in PASSES.values() for s in p]
    target = (PREQUANT_TOTAL["nvfp4"] - nvfp4_swizzles_s(RooflineModel(g)) * 1e3) \
        / PREQUANT_TOTAL["current"]
    per_tensor = gemm_s(RooflineModel(g), shapes, False)
    kept = roofline.NVFP4_OF_FP8_RATE
    lo, hi = 0.1, 6.0
    try:
        for _ in range(60):
            roofline.NVFP4_OF_FP8_RATE = mid = (lo + hi) / 2
            if nvfp4_gemms_s(RooflineModel(g), shapes) / per_tensor > target:
                lo = mid
            else:
                hi = mid
    finally:
        roofline.NVFP4_OF_FP8_RATE = kept
    return round((lo + hi) / 2, digits)


B200_AO = {4096: (97.4e-6, 30.8e-6), 6144: (319e-6, 84.4e-6), 8192: (774e-6, 205e-6)}
"""pytorch/ao#2427 (drisspg, 2025-06-23, merged), its description's run of
``benchmarks/float8/bench_matmul.py --recipe nvfp4`` on an NVIDIA B200: square M = K = N, the
bf16 ``torch.mm`` time then the NVFP4 ``torch._scaled_mm`` (cuBLASLt, E4M3 scales per 16)
time, seconds, as printed (``time_sec 9.74E-05`` ...). The three largest shapes: below 4096
both kernels are a few microseconds (launch-bound)."""


def b200_nvfp4_over_bf16(model: RooflineModel | None = None) -> dict[int, tuple[float, float]]:
    """Per shape of ``B200_AO``: trainsim's NVFP4 / bf16 time on ``b200-sxm-180gb`` and the
    published one."""
    model = model or RooflineModel(gpu(GPU))
    out = {}
    for s, (bf16, nv) in B200_AO.items():
        t_nv = model.time(Gemm("g", s, s, s, "fp8", fp8_fast_accum=True, fp8_block_scales="nvfp4"))
        out[s] = (t_nv / model.time(Gemm("g", s, s, s, "bf16")), nv / bf16)
    return out


def mxfp8_fraction_by_pass(model: RooflineModel) -> dict[str, float]:
    """Pre-quantized per-tensor over MXFP8 GEMM time per pass, the MXFP8 time less its two
    swizzles per GEMM (as ``tests/test_fp8_accumulation.py`` does for the total), those priced
    on ``model``'s GPU and scaled to B300's bandwidth as ``main`` scales the casts."""
    out = {}
    scale = model.gpu.hbm_bw_Bps / B300_HBM_BPS
    for name, shapes in PASSES.items():
        swz = scale * sum(_swizzle_s(model, m * k) + _swizzle_s(model, n * k)
                          for m, k, n in shapes)
        out[name] = PREQUANT["current"][name] / (PREQUANT["mxfp8"][name] - swz * 1e3)
    return out


def gemm_s(model: RooflineModel, shapes: list[tuple[int, int, int]], mx: bool) -> float:
    """trainsim's price of the pre-quantized GEMMs (no split accumulator, as the benchmark)."""
    return sum(model.time(Gemm("g", m, n, k, "fp8", fp8_fast_accum=True,
                               fp8_block_scales="mma" if mx else "")) for m, k, n in shapes)


def main() -> None:
    g = gpu(GPU)
    model = RooflineModel(g)
    scale = g.hbm_bw_Bps / B300_HBM_BPS
    print(f"quantize overhead per layer (ms), trainsim on {GPU} ({g.hbm_bw_Bps / 1e9:.0f} GB/s),"
          f" scaled to B300's 8 TB/s, vs TE's autocast - pre-quantized on B300")
    for recipe in ("current", "mxfp8"):
        t = quantize_overhead_s(model, recipe) * 1e3
        pub = AUTOCAST_TOTAL[recipe] - PREQUANT_TOTAL[recipe]
        print(f"  {recipe:8s} trainsim {t:.3f}  at 8 TB/s {t * scale:.3f}  published {pub:.3f}"
              f"  trainsim/published {t * scale / pub:.3f}")
    print(f"MXFP8 GEMM rate over per-tensor, per pass (one constant: {MXFP8_OF_TENSOR_SCALED})")
    for name, f in mxfp8_fraction_by_pass(model).items():
        print(f"  {name}: {f:.3f}")
    shared = sorted(set(PASSES["fprop"]) & set(PASSES["dgrad"]))
    only = [s for s in PASSES["fprop"] if s not in shared] + \
        [s for s in PASSES["dgrad"] if s not in shared]
    print(f"  fprop and dgrad share {len(shared)} of 4 shapes; they differ by {only[0]} against"
          f" {only[1]}: that pair's dgrad - fprop is"
          f" {PREQUANT['current']['dgrad'] - PREQUANT['current']['fprop']:+.3f} ms per-tensor,"
          f" {PREQUANT['mxfp8']['dgrad'] - PREQUANT['mxfp8']['fprop']:+.3f} ms MXFP8")
    b300 = RooflineModel(gpu(NVFP4_GPU))
    t = nvfp4_quantize_overhead_s(b300) * 1e3
    pub = AUTOCAST_TOTAL["nvfp4"] - PREQUANT_TOTAL["nvfp4"]
    print(f"  nvfp4    trainsim on {NVFP4_GPU} {t:.3f}  published {pub:.3f}"
          f"  trainsim/published {t / pub:.3f}")
    print(f"NVFP4 GEMM rate over the 8-bit rate, derived: {nvfp4_of_fp8_rate()} (in use:"
          f" {roofline.NVFP4_OF_FP8_RATE}); pre-quantized NVFP4 GEMMs per pass (ms), trainsim"
          f" on {NVFP4_GPU} / published less swizzles:")
    swz = nvfp4_swizzles_s(b300) * 1e3 / 3
    for name, shapes in PASSES.items():
        print(f"  {name}: {nvfp4_gemms_s(b300, shapes) * 1e3:.3f} /"
              f" {PREQUANT['nvfp4'][name] - swz:.3f}")
    print("check on B200 (pytorch/ao#2427): NVFP4 / bf16 GEMM time, trainsim / published")
    for s, (ours, pub) in b200_nvfp4_over_bf16(model).items():
        print(f"  {s}^3: {ours:.3f} / {pub:.3f} ({100 * (ours / pub - 1):+.1f} %)")
    print("pre-quantized GEMMs per pass (ms): trainsim on B200 / published on B300")
    for name, shapes in PASSES.items():
        print(f"  {name}: per-tensor {gemm_s(model, shapes, False) * 1e3:.3f} / "
              f"{PREQUANT['current'][name]:.3f}   MXFP8 {gemm_s(model, shapes, True) * 1e3:.3f}"
              f" / {PREQUANT['mxfp8'][name]:.3f}")


if __name__ == "__main__":
    main()
