"""fp8 GEMMs with and without cuBLAS's split accumulator (issue 17 acceptance 1): the GPU's fp8
MAMF was measured through it; TileLang and DeepGEMM do without it and run at the 16-bit MAMF
fraction of the fp8 peak (``compute.roofline.gemm_rate``)."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import moe_layer_cfg, published_kernel_rows

from trainsim.catalog import gpu
from trainsim.compute.roofline import RooflineModel, block_promotion_k, gemm_rate
from trainsim.validate.kernels import kernel_ops, predict_kernel_row
from trainsim.workload.ops import Elementwise, Gemm


def published(impl: str) -> list[dict[str, str]]:
    return published_kernel_rows(lambda r: r["kind"] == "gemm" and r["implementation"] == impl
                                 and r["dtype"] == "fp8")


def test_fast_accumulation_reaches_the_16_bit_fraction_of_the_fp8_peak():
    h100 = gpu("h100-sxm-80gb")
    split = gemm_rate(h100, Gemm("g", 8192, 8192, 8192, "fp8"))
    fast = gemm_rate(h100, Gemm("g", 8192, 8192, 8192, "fp8", fp8_fast_accum=True))
    assert split == h100.gemm_ceiling("fp8")
    assert fast / split == pytest.approx(h100.mamf_fraction / h100.mamf_fraction_fp8)
    assert fast / split > 1.1  # Hopper: 0.801 / 0.709
    # 16-bit GEMMs and Blackwell's native fp32 accumulation barely notice the flag
    bf16 = Gemm("g", 8192, 8192, 8192, "bf16", fp8_fast_accum=True)
    assert gemm_rate(h100, bf16) == h100.gemm_ceiling("bf16")
    b200 = gpu("b200-sxm-180gb")
    ratio = gemm_rate(b200, Gemm("g", 1, 1, 1, "fp8", fp8_fast_accum=True)) / gemm_rate(
        b200, Gemm("g", 1, 1, 1, "fp8")
    )
    assert ratio < 1.03
    # DeepGEMM's grouped kernels promote on the CUDA cores whoever builds the op
    grouped = Gemm("g", 512, 4096, 7168, "fp8", 8, grouped="deepgemm")
    assert gemm_rate(h100, grouped) == pytest.approx(fast)


def test_rows_name_their_accumulation_by_library():
    (tile,), _ = kernel_ops(published("tilelang")[0])
    (cublas,), _ = kernel_ops(published("cublas")[0])
    assert tile.fp8_fast_accum and not cublas.fp8_fast_accum


@pytest.mark.parametrize("impl,bound", [("tilelang", 0.12), ("deepgemm", 0.075)])
def test_h800_fp8_rows_without_the_split_accumulator(impl, bound, monkeypatch):
    """H800 TileLang and DeepGEMM rows: 17.6 % and 8.7 % MAPE (rate) at cuBLAS's fp8 ceiling,
    10.0 % and 6.3 % without the split accumulator."""
    from trainsim.validate import kernels

    rows = published(impl)
    assert len(rows) >= 7

    def mape() -> float:
        results = [predict_kernel_row(r) for r in rows]
        assert all(r.error is None for r in results)
        return sum(r.ape for r in results) / len(results)

    without = mape()
    monkeypatch.setattr(kernels, "FP8_FAST_ACCUM", frozenset())
    assert without <= bound < mape()


def _moe_run(dtype: str, framework: str | None = "megatron-bridge"):
    return moe_layer_cfg(ep=1, framework=framework, experts=8, topk=2, gpus=1, dtype=dtype)


@pytest.mark.parametrize("framework", ["megatron-bridge", None])
def test_training_fprop_gemms_skip_the_split_accumulator_and_gradients_keep_it(framework):
    """Transformer Engine (``_2X_ACC_FPROP = False``, ``_2X_ACC_DGRAD = _2X_ACC_WGRAD = True``)
    and torchao (``gemm_config_output`` fast, the grad GEMMs not): a layer's forward fp8 GEMMs,
    the MoE experts' grouped ones included, carry the flag; their dgrad and wgrad do not."""
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.shard import shard_of

    cfg = _moe_run("fp8", framework)
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=True)
    gemms = [op for op in fwd if isinstance(op, Gemm) and op.dtype == "fp8"]
    assert {"qkv_proj", "out_proj", "expert_fc1", "expert_fc2"} <= {op.name for op in gemms}
    assert all(op.fp8_fast_accum for op in gemms)
    grads = [op for op in backward_of(fwd, sh) if isinstance(op, Gemm) and op.dtype == "fp8"]
    assert {op.name.rsplit(".", 1)[1] for op in grads} == {"dgrad", "wgrad"}
    assert len(grads) == 2 * len(gemms)
    assert not any(op.fp8_fast_accum for op in grads)
    # the backward is priced slower per FLOP than the forward it mirrors
    h100 = gpu("h100-sxm-80gb")
    assert gemm_rate(h100, grads[0]) < gemm_rate(h100, gemms[-1])


def test_16_bit_training_gemms_never_carry_the_flag():
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.shard import shard_of

    cfg = _moe_run("bf16")
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=True)
    ops = [op for op in fwd + backward_of(fwd, sh) if isinstance(op, Gemm)]
    assert len(ops) > 8 and not any(op.fp8_fast_accum for op in ops)


def test_serial_block_promotion_costs_the_cuda_core_ffma_of_each_128_k_block():
    """CUTLASS's SM90 block-scaled mainloop drains the tensor cores after every 128-deep k tile
    and adds the tile's accumulator, times its scales, on the CUDA cores (one FFMA per element):
    on H100 that is 0.801 x 1979 / 66.9 / 128 = 0.185 of the main loop; DeepGEMM overlaps it."""
    h100 = gpu("h100-sxm-80gb")
    model = RooflineModel(h100)
    fast = Gemm("g", 8192, 8192, 65536, "fp8", fp8_fast_accum=True)
    serial = dataclasses.replace(fast, fp8_fast_accum=False, fp8_block_scales="serial")
    overlapped = dataclasses.replace(serial, fp8_block_scales="overlapped")
    # a block-scaled kernel promotes on its own: no split accumulator, the 16-bit fraction
    assert gemm_rate(h100, serial) == gemm_rate(h100, fast)
    assert model.time(overlapped) == model.time(fast)
    assert 1.15 < model.time(serial) / model.time(fast) < 1.19  # long k: the main loop's share
    # a shallow GEMM's tile overhead dilutes it; 16-bit GEMMs never carry block scales
    short = dataclasses.replace(serial, k=512)
    assert 1.0 < model.time(short) / model.time(dataclasses.replace(fast, k=512)) < 1.15
    assert block_promotion_k(h100, dataclasses.replace(serial, dtype="bf16")) == 0.0
    # more CUDA-core FLOP/s per tensor FLOP/s (MI300X: 163 fp32 vs 2615 fp8) costs less
    assert 0.0 < block_promotion_k(gpu("mi300x"), serial) < block_promotion_k(h100, serial)
    # Blackwell's tensor cores apply block scales in the MMA: nothing to promote
    b200 = gpu("b200-sxm-180gb")
    assert block_promotion_k(b200, serial) == 0.0
    assert RooflineModel(b200).time(serial) == RooflineModel(b200).time(fast)


def test_rows_name_their_block_scales():
    """A row whose note names block scales is block-scaled: DeepGEMM's kernels overlap the
    promotion, any other library's (vLLM's CUTLASS kernel) run it between k blocks."""
    (cutlass, _quant), _ = kernel_ops(published("cutlass")[0])
    assert cutlass.fp8_block_scales == "serial" and not cutlass.fp8_fast_accum
    row = dict(published("deepgemm")[0], note="1x128 and 128x128 block scales")
    assert kernel_ops(row)[0][0].fp8_block_scales == "overlapped"
    assert kernel_ops(published("deepgemm")[0])[0][0].fp8_block_scales == ""
    assert kernel_ops(dict(row, dtype="bf16"))[0][0].fp8_block_scales == ""


def test_w8a8_rows_time_the_activation_quantization_with_the_gemm():
    """vLLM's block-fp8 benchmark (bench_block_fp8_gemm.py, PR #23280) times
    ``W8A8BlockFp8LinearOp.apply`` on a bf16 input: a per-1x128-group quantization kernel (read
    bf16, write fp8 and an fp32 scale per group) and then the GEMM. A "-noquant" column, a note
    that names no W8A8 op, or a GEMM without block scales times the GEMM alone."""
    row = published("cutlass")[0]
    m, k = int(row["m"]), int(row["k"])
    (gemm, quant), flops = kernel_ops(row)
    assert isinstance(gemm, Gemm) and isinstance(quant, Elementwise)
    assert flops == 2.0 * m * int(row["n"]) * k  # the source's rate counts the GEMM alone
    assert quant.bytes == m * k * 3 + m * (k // 128) * 4 and quant.kernels == 1
    for note in ("column w8a8-block-fp8-cutlass-noquant (128x128 block scales)",
                 "128x128 block scales, vLLM CUTLASS kernel"):
        assert len(kernel_ops(dict(row, note=note))[0]) == 1
    assert len(kernel_ops(dict(row, dtype="bf16"))[0]) == 1  # no block scales, no W8A8 op
    # the validator prices both kernels: the quantization moves ~3 bytes per element at HBM speed
    h100 = gpu("h100-sxm-80gb")
    alone = predict_kernel_row(dict(row, note="128x128 block scales"), compute_db=None)
    both = predict_kernel_row(row, compute_db=None)
    quant_s = flops / (both.predicted * 1e12) - flops / (alone.predicted * 1e12)
    assert quant_s == pytest.approx(RooflineModel(h100).time(quant))
    assert quant.bytes / (h100.hbm_bw_Bps * 0.85) < quant_s < quant.bytes / (h100.hbm_bw_Bps * 0.85) + 4e-6


def test_mxfp8_gemms_run_at_te_measured_fraction_of_per_tensor_fp8():
    """Transformer Engine's pre-quantized GEMM benchmark on B300 (gemm_profiling.rst @1609c890e,
    "Per-Layer GEMM Time"): fprop + dgrad + wgrad of one layer (hidden 4096, FFN 16384, 15,872
    tokens) take 2.158 + 2.329 + 2.325 ms with per-tensor FP8 and 2.365 + 2.397 + 2.400 ms with
    MXFP8 (totals 6.812 and 7.161), the MXFP8 time including two scale swizzles per GEMM
    (compact scales: ``tex.generic_gemm`` swizzles them), which trainsim prices apart."""
    from trainsim.compute.roofline import MXFP8_OF_TENSOR_SCALED
    from trainsim.workload.shard import MXFP8_SCALE_BYTES, MXFP8_SWIZZLE_KERNEL

    tensor, mx = 2.158 + 2.329 + 2.325, 2.365 + 2.397 + 2.400
    assert tensor == pytest.approx(6.812) and mx == pytest.approx(7.161, abs=2e-3)
    b200 = gpu("b200-sxm-180gb")
    model = RooflineModel(b200)
    tokens, swizzles = 15872, 0.0
    for k, n in [(4096, 12288), (4096, 4096), (4096, 16384), (16384, 4096)]:
        # fprop: input, weight; dgrad: output gradient, weight; wgrad: output gradient, input
        for elements in (tokens * k, n * k, tokens * n, n * k, tokens * n, tokens * k):
            swizzles += model.time(Elementwise("s", bytes=2 * MXFP8_SCALE_BYTES * elements,
                                               kernel=MXFP8_SWIZZLE_KERNEL))
    assert 0.05e-3 < swizzles < 0.15e-3
    assert MXFP8_OF_TENSOR_SCALED == pytest.approx(6.812 / (7.161 - swizzles * 1e3), abs=1e-3)
    per_tensor = Gemm("g", 8192, 8192, 8192, "fp8", fp8_fast_accum=True)
    mxfp8 = dataclasses.replace(per_tensor, fp8_block_scales="mma")
    assert gemm_rate(b200, mxfp8) == pytest.approx(gemm_rate(b200, per_tensor)
                                                   * MXFP8_OF_TENSOR_SCALED)
    # a split-accumulator pass keeps its own per-tensor rate, times the same fraction
    split = dataclasses.replace(per_tensor, fp8_fast_accum=False)
    assert gemm_rate(b200, dataclasses.replace(split, fp8_block_scales="mma")) == \
        pytest.approx(gemm_rate(b200, split) * MXFP8_OF_TENSOR_SCALED)
    bf16 = dataclasses.replace(mxfp8, dtype="bf16")
    assert gemm_rate(b200, bf16) == b200.gemm_ceiling("bf16")
    # a compute-bound GEMM's time scales by the inverse
    big = dataclasses.replace(per_tensor, m=16384, n=16384, k=16384)
    ratio = model.time(dataclasses.replace(big, fp8_block_scales="mma")) / model.time(big)
    assert ratio == pytest.approx(1 / MXFP8_OF_TENSOR_SCALED, rel=0.01)


@pytest.mark.parametrize("recipe,scales", [("mxfp8", "mma"), ("current", ""),
                                           ("delayed", ""), ("blockwise", "")])
def test_training_gemms_carry_mxfp8_block_scales_into_the_backward(recipe, scales):
    """Under TE's MXFP8BlockScaling every fp8 GEMM of the layer (fprop, dgrad, wgrad) takes
    MXFP8 operands; the per-tensor recipes keep per-tensor scales; 16-bit GEMMs none."""
    from helpers import fp8_slice_cfg, layer_ops

    cfg = fp8_slice_cfg(recipe, "megatron-bridge", "26.06", gpu_name="b200-sxm-180gb")
    fwd, bwd = layer_ops(cfg)
    gemms = [op for op in list(fwd.values()) + bwd if isinstance(op, Gemm)]
    assert len(gemms) >= 12
    assert {op.fp8_block_scales for op in gemms if op.dtype == "fp8"} == {scales}
    assert all(op.fp8_block_scales == "" for op in gemms if op.dtype != "fp8")


def _te_quantize_script():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks/te_quantize_overhead.py"
    spec = importlib.util.spec_from_file_location("te_quantize_overhead", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_current_scaling_quantize_overhead_near_te_benchmark():
    """Transformer Engine's GEMM benchmark (gemm_profiling.rst @1609c890e) on B300: one layer's
    12 ``te.Linear`` forwards take 9.147 ms with FP8 current scaling quantizing in autocast and
    6.812 ms pre-quantized, 2.335 ms of casts (24 of them: each input row- and column-wise, each
    weight row-wise). trainsim's passes for them (amax read, scale, cast read and fp8 write; no
    transpose on Blackwell) on B200's memory system come within 15 % of that, under it."""
    te = _te_quantize_script()
    priced = te.quantize_overhead_s(RooflineModel(gpu("b200-sxm-180gb")), "current") * 1e3
    published = 9.147 - 6.812
    # by hand: 1.495e9 input and 0.988e9 weight elements, 5 bytes each (2 + 2 + 1)
    assert priced == pytest.approx(2.483e9 * 5 / (7.7e12 * 0.85) * 1e3 + 72 * 3e-3, rel=0.01)
    assert 0.85 * published < priced < published


def test_te_benchmark_passes_differ_by_one_shape():
    """The benchmark's pre-quantized fprop and dgrad sums (one TN layout, no split accumulator
    for every shape) share three of their four shapes: their MXFP8 / per-tensor spread (0.92
    against 0.98) is one shape pair's kernel choice, not a property of a pass."""
    te = _te_quantize_script()
    assert len(set(te.PASSES["fprop"]) & set(te.PASSES["dgrad"])) == 3
    fractions = te.mxfp8_fraction_by_pass(RooflineModel(gpu("b200-sxm-180gb")))
    assert fractions["fprop"] < 0.93 and fractions["dgrad"] > 0.98


BENCH_TOKENS, BENCH_H, BENCH_F = 31 * 512, 4096, 16384
BENCH_PASSES = {  # (M, K, N) of TE@1609c890e benchmark_gemm.py compute_gemm_shapes
    "fprop": [(BENCH_TOKENS, BENCH_H, 3 * BENCH_H), (BENCH_TOKENS, BENCH_H, BENCH_H),
              (BENCH_TOKENS, BENCH_H, BENCH_F), (BENCH_TOKENS, BENCH_F, BENCH_H)],
    "dgrad": [(BENCH_TOKENS, 3 * BENCH_H, BENCH_H), (BENCH_TOKENS, BENCH_H, BENCH_H),
              (BENCH_TOKENS, BENCH_F, BENCH_H), (BENCH_TOKENS, BENCH_H, BENCH_F)],
    "wgrad": [(BENCH_H, BENCH_TOKENS, 3 * BENCH_H), (BENCH_H, BENCH_TOKENS, BENCH_H),
              (BENCH_H, BENCH_TOKENS, BENCH_F), (BENCH_F, BENCH_TOKENS, BENCH_H)],
}


@pytest.mark.parametrize("gpu_name", ["b200-sxm-180gb", "gb200"])
def test_te_benchmark_layer_prices_at_the_measured_recipe_ratio_in_training(gpu_name):
    """The 12 GEMMs of TE's benchmarked layer, each with the accumulation training gives its
    pass (TE ``_2X_ACC_FPROP`` False, ``_2X_ACC_DGRAD``/``_2X_ACC_WGRAD`` True), priced with
    per-tensor and with MXFP8 scales: current scaling over MXFP8 is the measured 0.964 (not
    0.977, as when MXFP8's dgrad and wgrad took the fast-accumulate rate)."""
    from trainsim.compute.roofline import MXFP8_OF_TENSOR_SCALED

    model = RooflineModel(gpu(gpu_name))
    totals = {}
    for scales in ("", "mma"):
        totals[scales] = sum(
            model.time(Gemm(f"{p}{i}", m, n, k, "fp8", fp8_fast_accum=p == "fprop",
                            fp8_block_scales=scales))
            for p, shapes in BENCH_PASSES.items() for i, (m, k, n) in enumerate(shapes))
    # tile prologues and memory time do not scale with the rate: within 0.004 (0.977 before)
    assert totals[""] / totals["mma"] == pytest.approx(MXFP8_OF_TENSOR_SCALED, abs=4e-3)
    assert MXFP8_OF_TENSOR_SCALED == pytest.approx(0.964, abs=5e-4)


def test_mxfp8_gemms_take_block_scales_only_on_block_scaled_tensor_cores():
    """``Gemm.fp8_block_scales == "mma"`` needs tensor cores that apply MX scales
    (``GPUSpec.block_scaled_mma``: Blackwell yes, Hopper no); a shard without them keeps
    per-tensor pricing."""
    from helpers import fp8_slice_cfg

    from trainsim.workload.shard import linear, shard_of

    assert gpu("b200-sxm-180gb").block_scaled_mma and not gpu("h100-sxm-80gb").block_scaled_mma
    sh = shard_of(fp8_slice_cfg("mxfp8", "megatron-bridge", "26.06", gpu_name="b200-sxm-180gb"))
    assert sh.mxfp8_mma
    for mma, scales in ((True, "mma"), (False, "")):
        ops: list = []
        linear(ops, dataclasses.replace(sh, mxfp8_mma=mma), "fc1", 1024, 1024, 1024)
        assert [op.fp8_block_scales for op in ops if isinstance(op, Gemm)] == [scales]
