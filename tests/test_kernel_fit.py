"""The roofline's fitted kernel constants: their mechanisms, and the script that fits them."""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
from pathlib import Path

import pytest

from trainsim.catalog import gpu
from trainsim.compute import RooflineModel, attention, roofline, split_k
from trainsim.compute import grouped as grouped_mod
from trainsim.config.cluster import SUSTAINED_OF_BURST
from trainsim.workload.ops import Attention, Gemm

ROOT = Path(__file__).resolve().parent.parent


def _rate(op: Gemm | Attention, name: str = "h100-sxm-80gb") -> float:
    return op.flops / RooflineModel(gpu(name)).time(op)


def test_gemm_rate_rises_with_k():
    """Each tile's fixed prologue and epilogue weigh less as the k loop grows (measured fp8
    M=N=8192: 569 -> 1,541 TFLOP/s from short to long k)."""
    rates = [_rate(Gemm("g", 8192, 8192, k, "fp8")) for k in (512, 2048, 8192, 32768)]
    assert rates == sorted(rates) and rates[0] < 0.7 * rates[-1]


def test_split_k_fills_the_gpu_for_few_output_tiles():
    """128 x 2112 outputs are 17 tiles on 132 SMs: split-k keeps the rate well above 17/132
    of a full grid's, its serial fix-ups below 0.3 of it (kernels_h100_measured.csv: 310
    TFLOP/s fp8, 0.24 of the same file's 8192 x 8192 x 7168)."""
    small = _rate(Gemm("g", 128, 2112, 7168, "fp8"))
    big = _rate(Gemm("g", 8192, 8192, 7168, "fp8"))
    assert 1.5 * 17 / 132 * big < small < 0.3 * big


def test_head_dim_64_runs_below_128_and_short_sequences_below_long():
    """One exponential per score costs relatively more at head dim 64; each query row's fixed
    work weighs more on short sequences."""
    def attn(s: int, hd: int) -> Attention:
        return Attention("a", 4, 16, 16, s, s, hd, causal=True, impl="cudnn")
    assert _rate(attn(8192, 64)) < 0.85 * _rate(attn(8192, 128))
    assert _rate(attn(512, 128)) < 0.75 * _rate(attn(8192, 128))


def test_a_causal_forward_with_few_heads_waits_for_its_heaviest_query_blocks():
    """Query block i of a causal forward does i + 1 key blocks and a head's blocks launch
    lightest first: 8 heads of 32 blocks on 132 SMs take 1.66x their mean load, thousands of
    blocks almost none; the same work in 8 sequences of 8 heads runs near the mean."""
    assert attention.causal_forward_tail(8, 32, 132) == pytest.approx(1.66, abs=0.01)
    assert attention.causal_forward_tail(1024, 128, 132) < 1.01
    assert attention.causal_forward_tail(1, 32, 132) == pytest.approx(32 / (32 * 33 / 2 / 132))

    def attn(b: int, backward: bool = False) -> Attention:
        return Attention("a", b, 8, 8, 4096, 4096, 128, causal=True, backward=backward,
                         impl="flash2")
    assert _rate(attn(1)) < 0.7 * _rate(attn(8))
    # the roofline alone prices no backward tail (``attention.FA2_BWD_TAIL``); a database does
    assert _rate(attn(1, True)) > 0.9 * _rate(attn(8, True))


def test_no_attention_main_loop_outruns_the_tensor_cores():
    """A fitted fraction of the GEMM ceiling is capped at the dense peak (1 / MAMF)."""
    for name in ("a100-sxm-80gb", "h100-sxm-80gb", "b200-sxm-180gb"):
        g = gpu(name)
        for impl in attention.ATTENTION_FAMILY:
            assert attention.attention_fraction(impl, False, g) <= 1 / g.mamf_fraction


def test_flops_per_exp_doubles_each_nvidia_generation():
    assert [gpu(n).flops_per_exp for n in ("a100-sxm-80gb", "h100-sxm-80gb",
                                           "b200-sxm-180gb")] == [128, 256, 512]


def test_fit_holds_out_a_fifth_of_each_fitted_kind_by_source(fit_script):
    rows = fit_script.load([fit_script.BUNDLED_DIR / f for f in fit_script.FILES])
    held = fit_script.split(rows)
    for kind in fit_script.FITTED:
        n = sum(fit_script.domain(r) == kind for r in rows)
        out = sum(fit_script.domain(r) == kind and fit_script.is_held(r, held) for r in rows)
        assert out >= 0.2 * n and out < n


def test_no_source_is_fitted_on_more_than_four_fifths_of_its_rows(fit_script):
    """The largest source of each fitted kind (the H100 measured file for GEMMs) stays in
    the fit only in part: whole shape families of it are held out."""
    rows = fit_script.load([fit_script.BUNDLED_DIR / f for f in fit_script.FILES])
    held = fit_script.split(rows)
    for kind in fit_script.FITTED:
        counts: dict[str, list[int]] = {}
        for r in rows:
            if fit_script.domain(r) == kind:
                c = counts.setdefault(r.source, [0, 0])
                c[0] += 1
                c[1] += fit_script.is_held(r, held)
        for source, (n, out) in counts.items():
            assert out >= 0.2 * n, (kind, source, n, out)
        # a family is held out whole or not at all
        fams: dict[str, set[bool]] = {}
        for r in rows:
            if fit_script.domain(r) == kind:
                fams.setdefault(f"{r.source}|{r.family}", set()).add(fit_script.is_held(r, held))
        assert all(len(v) == 1 for v in fams.values())


def test_shape_families_of_the_measured_file(fit_script):
    # the split's module beside fit_kernels.py (which puts benchmarks/ on the path)
    fam = importlib.import_module("kernel_rows").family
    assert fam({"kind": "gemm", "id": "h100m-gemm-bf16-llama3-70b-tp4-qkv-fwd-m1024",
                "note": "llama3-70b-tp4-qkv-fwd-m1024; time 69.0 us"}) == "llama3-70b-tp4"
    assert fam({"kind": "gemm", "id": "h100m-gemm-fp8-odd-m128-n2112-k7168", "note": ""}) == "odd"
    assert fam({"kind": "attention_bwd", "id": "x", "seq_len": "4096"}) == "s4096"


def test_the_shipped_constants_are_what_the_script_fits(fit_script):
    """Re-fitting from the shipped values moves none of them by more than 5 %: the numbers in
    roofline.py and attention.py are the script's output, not typed in."""
    saved = (dict(attention.ATTENTION_OF_GEMM), roofline.GEMM_TILE_OVERHEAD_K,
             attention.AMPERE_KERNEL_ON_HOPPER, attention.FLASH1_OF_FLASH2,
             dict(attention.ATTN_ROW_OVERHEAD_KEYS), attention.SOFTMAX_EXP_EXPOSED)
    mem_efficient = attention.MEM_EFFICIENT_OF_FLASH2
    flash1_mma = attention.FLASH1_MMA_OF_FLASH2
    grouped = dict(roofline.GROUPED_OF_GEMM)
    pingpong = grouped_mod.PINGPONG_TILE_RATE
    scalar = roofline.SCALAR_BYTES_PER_SM_CLOCK
    gemm = (roofline.SMALL_TILE_RATE, split_k.SPLIT_K_FIXUP, roofline.LOOP_CLOCK_TAU_S)
    try:
        rows = fit_script.load([fit_script.BUNDLED_DIR / f for f in fit_script.FILES])
        held = fit_script.split(rows)
        rows = fit_script.with_grouped_files(rows, held)  # the H200 grouped file, as main() adds it
        fitted = fit_script.fit(rows, held)
    finally:
        grouped_mod.PINGPONG_TILE_RATE = pingpong
        roofline.SMALL_TILE_RATE, split_k.SPLIT_K_FIXUP, roofline.LOOP_CLOCK_TAU_S = gemm
        (attn, roofline.GEMM_TILE_OVERHEAD_K, attention.AMPERE_KERNEL_ON_HOPPER,
         attention.FLASH1_OF_FLASH2, rows_keys, attention.SOFTMAX_EXP_EXPOSED) = saved
        attention.ATTENTION_OF_GEMM.clear()
        attention.ATTENTION_OF_GEMM.update(attn)
        attention.ATTN_ROW_OVERHEAD_KEYS.update(rows_keys)
        roofline.GROUPED_OF_GEMM.update(grouped)
        roofline.SCALAR_BYTES_PER_SM_CLOCK = scalar
        attention.MEM_EFFICIENT_OF_FLASH2 = mem_efficient
        attention.FLASH1_MMA_OF_FLASH2 = flash1_mma
    assert fitted["GROUPED_OF_GEMM"] == pytest.approx(grouped, rel=0.05)
    assert fitted["PINGPONG_TILE_RATE"] == pytest.approx(pingpong, rel=0.05)
    assert fitted["MEM_EFFICIENT_OF_FLASH2"] == pytest.approx(mem_efficient, rel=0.05)
    assert fitted["FLASH1_MMA_OF_FLASH2"] == pytest.approx(flash1_mma, rel=0.05)
    assert fitted["SCALAR_BYTES_PER_SM_CLOCK"] == pytest.approx(scalar, rel=0.05)
    assert fitted["GEMM_TILE_OVERHEAD_K"] == pytest.approx(saved[1], rel=0.05)
    assert [fitted[k] for k in ("SMALL_TILE_RATE", "SPLIT_K_FIXUP", "LOOP_CLOCK_TAU_S")] == \
        pytest.approx(list(gemm), rel=0.05)
    for impl, pair in fitted["ATTENTION_OF_GEMM"].items():
        assert pair == pytest.approx(saved[0][impl], rel=0.05)
    for family, pair in fitted["ATTN_ROW_OVERHEAD_KEYS"].items():
        assert pair == pytest.approx(saved[4][family], rel=0.05)
    assert fitted["SOFTMAX_EXP_EXPOSED"] == pytest.approx(saved[5], rel=0.05)
    assert fitted["FLASH1_OF_FLASH2"] == saved[3] == 0.50  # the FA2 paper's 2x, not fitted


@pytest.mark.slow  # a second full refit (9 s here); the shipped-constants refit above stays default
def test_the_attention_fit_moves_a_wrong_start_back(fit_script):
    """The attention search starts from the shipped constants; one of them set wrong is fitted
    back near its shipped value, so the check above is a real refit (a start past a family's
    cap once left every vertex infeasible and returned the start unchanged)."""
    shipped = dict(attention.ATTENTION_OF_GEMM)
    rows_keys = dict(attention.ATTN_ROW_OVERHEAD_KEYS)
    scalars = (attention.FLASH1_OF_FLASH2, attention.SOFTMAX_EXP_EXPOSED,
               roofline.GEMM_TILE_OVERHEAD_K, roofline.SCALAR_BYTES_PER_SM_CLOCK,
               attention.MEM_EFFICIENT_OF_FLASH2, attention.FLASH1_MMA_OF_FLASH2)
    grouped = dict(roofline.GROUPED_OF_GEMM)
    try:
        attention.ATTENTION_OF_GEMM["flash2"] = (1.2, shipped["flash2"][1])
        rows = fit_script.load([fit_script.BUNDLED_DIR / f for f in fit_script.FILES])
        fitted = fit_script.fit(rows, fit_script.split(rows))["ATTENTION_OF_GEMM"]
    finally:
        attention.ATTENTION_OF_GEMM.clear()
        attention.ATTENTION_OF_GEMM.update(shipped)
        roofline.GROUPED_OF_GEMM.update(grouped)
        attention.ATTN_ROW_OVERHEAD_KEYS.update(rows_keys)
        (attention.FLASH1_OF_FLASH2, attention.SOFTMAX_EXP_EXPOSED,
         roofline.GEMM_TILE_OVERHEAD_K, roofline.SCALAR_BYTES_PER_SM_CLOCK,
         attention.MEM_EFFICIENT_OF_FLASH2, attention.FLASH1_MMA_OF_FLASH2) = scalars
    assert fitted["flash2"][0] == pytest.approx(shipped["flash2"][0], rel=0.05)


def test_leave_one_source_out_refits_without_the_source_and_restores(fit_script):
    """Each grouped-GEMM source is priced by constants fitted on the others; the shipped
    constants are back afterwards."""
    shipped = dict(roofline.GROUPED_OF_GEMM)
    rows = fit_script.load([fit_script.BUNDLED_DIR / f for f in fit_script.FILES])
    out = fit_script.leave_one_source_out(rows)
    assert roofline.GROUPED_OF_GEMM == shipped
    by_source = {src: consts for src, _, _, consts in out}
    assert len(by_source) >= 4
    # without DeepGEMM's rows nothing says DeepGEMM runs at the dense rate
    deepgemm = next(c for s, c in by_source.items() if "DeepGEMM" in s)
    assert deepgemm["deepgemm"] < shipped["deepgemm"]



def test_by_source_splits_each_cell_of_the_report_without_losing_a_row(fit_script):
    """``--by-source``: the groups of each (kind, GPU, part) cell hold its rows exactly once,
    their row-weighted MAPE is the cell's, and a GEMM row counts as above the burst ceiling
    only when its measured rate passes the GPU's MAMF for its dtype (H100 bf16: 792 TFLOP/s)."""
    rows = fit_script.load([fit_script.BUNDLED_DIR / f for f in fit_script.FILES])
    held = fit_script.split(rows)
    cells = {(k, g, p): (n, mape) for k, g, p, n, mape in fit_script.report(rows, held)}
    sums: dict[tuple[str, str, str], list[float]] = {}
    for kind, g, p, _src, _dt, n, mape, signed, above in fit_script.by_source(rows, held):
        assert abs(signed) <= mape + 1e-12 and 0 <= above <= n
        acc = sums.setdefault((kind, g, p), [0, 0.0])
        acc[0] += n
        acc[1] += n * mape
    assert sums.keys() == cells.keys()
    for key, (n, total) in sums.items():
        assert n == cells[key][0] and total / n == pytest.approx(cells[key][1])
    only = fit_script.by_source(rows, held, {"moe_block"})
    assert only and {k for k, *_ in only} == {"moe_block"}

    op = Gemm("g", 8192, 8192, 8192, "bf16")
    burst = 0.801 * 989e12  # the catalog's H100 bf16 MAMF fraction of the dense peak
    ceiling = dataclasses.replace(gpu("h100-sxm-80gb"), sustained_of_burst=1.0).gemm_ceiling(
        "bf16")
    assert ceiling == pytest.approx(burst, rel=0.01)
    row = fit_script.Row("gemm", "h100-sxm-80gb", "s", [op], op.flops / (1.01 * ceiling))
    assert fit_script.above_burst_ceiling(row)
    assert not fit_script.above_burst_ceiling(
        dataclasses.replace(row, measured_s=op.flops / (0.99 * ceiling)))
    assert not fit_script.above_burst_ceiling(dataclasses.replace(row, kind="gemm_grouped"))


def test_by_source_names_each_pr_and_rejects_an_unknown_kind(fit_script, capsys):
    """The source column names a row's own source (its first clause), not the split's coarse
    key that lumps one repository's PRs; a misspelt kind is one error line, not an empty table."""
    row = fit_script.Row("gemm", "h100-sxm-80gb", "vllm-project/vllm PR", [], 1.0,
                         full_source="vllm-project/vllm PR #23280 (bench output, H100); N=2112")
    assert fit_script.source_label(row) == "vllm-project/vllm PR #23280"
    assert fit_script.source_label(dataclasses.replace(
        row, full_source="xwhzz/tilelang (fork of tile-ai/tilelang) README.md")) == "xwhzz/tilelang"
    assert fit_script.source_label(dataclasses.replace(row, full_source="")) == row.source
    rows = fit_script.load([fit_script.BUNDLED_DIR / f for f in fit_script.FILES])
    held = fit_script.split(rows)
    vllm = {src for _, _, _, src, *_ in fit_script.by_source(rows, held, {"gemm"})
            if src.startswith("vllm-project/vllm")}
    assert len(vllm) >= 2 and all("#" in src for src in vllm), vllm
    assert fit_script.main(["--no-fit", "--by-source", "gemm,gemm_groupd"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.splitlines()) == 1
    assert out.err.startswith("error: ") and "gemm_groupd" in out.err and "gemm_grouped" in out.err


def test_power_ramp_experiment_slows_only_long_burst_gemms_and_restores(fit_script):
    """benchmarks/gemm_power_ramp.py (an experiment, not the model): a GEMM benchmarked alone
    keeps its boost clock when short and falls to the sustained rate when long; a GEMM priced
    at the sustained clock (training) and attention are untouched; the model is restored."""
    spec = importlib.util.spec_from_file_location("gemm_power_ramp",
                                                  ROOT / "benchmarks" / "gemm_power_ramp.py")
    ramp = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(ramp)  # imports fit_kernels, registered by the fixture
    tau = 4e-3
    factors = [ramp.ramp_factor(t, tau) for t in (0.0, 1e-5, 1e-3, 1e-2, 10.0)]
    assert factors[0] == 1.0 and factors == sorted(factors) and factors[1] < 1.001
    assert factors[-1] == pytest.approx(1 / SUSTAINED_OF_BURST, rel=1e-3)
    specs = (dataclasses.replace(gpu("h100-sxm-80gb"), sustained_of_burst=1.0),
             gpu("h100-sxm-80gb"))
    ops = (Gemm("g", 16384, 16384, 16384, "bf16"), Gemm("g", 1024, 1024, 1024, "bf16"),
           Attention("a", 4, 16, 16, 4096, 4096, 128, causal=True, impl="cudnn"))

    def times() -> list[list[float]]:
        return [[RooflineModel(s).time(op) for op in ops] for s in specs]

    before = times()
    with ramp.power_ramp(tau):
        during = times()
    assert times() == before
    (long_b, short_b, attn_b), sustained_b = before
    (long_d, short_d, attn_d), sustained_d = during
    assert long_d > 1.1 * long_b and short_d < 1.01 * short_b and attn_d == attn_b
    assert sustained_d == sustained_b


def test_activity_clock_experiment_raises_only_idle_gemms_clock(fit_script):
    """benchmarks/gemm_power_ramp.py --activity (an experiment, not the model): under a power
    limit a GEMM whose tensor cores idle part of the time (short k, a partial wave) runs at a
    higher clock, never above the burst clock; full-activity work keeps the sustained clock;
    nothing runs slower and the model is restored."""
    spec = importlib.util.spec_from_file_location("gemm_power_ramp",
                                                  ROOT / "benchmarks" / "gemm_power_ramp.py")
    ramp = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(ramp)
    clocks = [ramp.activity_clock(0.85, e) for e in (1.0, 0.95, 0.8, 0.5, 0.1)]
    assert clocks[0] == pytest.approx(0.85) and clocks == sorted(clocks) and clocks[-1] == 1.0
    training = gpu("h100-sxm-80gb")
    ops = (Gemm("big", 16384, 16384, 16384, "bf16"), Gemm("short_k", 8192, 8192, 512, "bf16"))
    before = [RooflineModel(training).time(op) for op in ops]
    with ramp.power_ramp(0.0, "all"):
        during = [RooflineModel(training).time(op) for op in ops]
    assert [RooflineModel(training).time(op) for op in ops] == before
    (big_b, short_b), (big_d, short_d) = before, during
    assert 0.98 * big_b < big_d <= big_b and short_d < 0.9 * short_b


@pytest.mark.parametrize("name", ["h100-sxm-80gb", "b200-sxm-180gb", "gb200"])
def test_attention_slows_by_the_sustained_clock_as_a_whole(name):
    """A training GPU's power-saturated clock slows a fused attention kernel's matmuls and its
    softmax exponentials alike (both issue per SM clock): the kernel's work at the sustained
    clock is its work alone divided by ``sustained_of_burst``, and a board power limit divides
    it by ``power_scale`` on top. On Blackwell, where an exponential costs as much as a score's
    matmuls (512 FLOPs per exp), pricing the exps at the burst clock made training attention
    ~9 % fast."""
    g = gpu(name)
    alone = dataclasses.replace(g, sustained_of_burst=1.0)
    capped = dataclasses.replace(g, power_limit_w=0.75 * g.tdp_w)
    for bwd, causal in itertools.product((False, True), (False, True)):
        op = Attention("a", 1, 32, 8, 4096, 4096, 128, causal=causal, backward=bwd, impl="cudnn")
        work = attention.fused_attention_work(g, op)
        assert work == pytest.approx(attention.fused_attention_work(alone, op)
                                     / g.sustained_of_burst, rel=1e-12)
        assert attention.fused_attention_work(capped, op) == pytest.approx(
            work / capped.power_scale, rel=1e-12)


def _variants_script(fit_script):
    """benchmarks/gemm_variants.py as a module (``fit_script`` registers fit_kernels first)."""
    spec = importlib.util.spec_from_file_location("gemm_variants",
                                                  ROOT / "benchmarks" / "gemm_variants.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_gemm_variant_experiments_reduce_to_the_model_and_restore_it(fit_script):
    """benchmarks/gemm_variants.py (experiments, not the model): the per-kernel fill/drain
    variant with no per-kernel cost and the shipped per-tile cost is the shipped efficiency;
    a per-kernel cost of b k-steps adds b once to each tile grid's steps (A100's 3 x (k + overhead)
    for 2048 x 2048; on H100 the better of 128x128 and 128x256); the
    tile-shape oracle is never slower than the shipped 128x128 path and wins where 192-wide
    tiles fill the waves (1024 x 9216 on 132 SMs: 576 tiles, 4.36 -> 5 waves; 384 of 128x192
    in 3 waves of 1.5x the work); two CTAs per SM touch A100 only; ``shipped`` is never
    refitted, ``refitted`` is; everything is restored."""
    gv = _variants_script(fit_script)
    h100, a100 = gpu("h100-sxm-80gb"), gpu("a100-sxm-80gb")
    ops = [Gemm("g", m, n, k, dt) for m, n, k, dt in
           ((1024, 9216, 14336, "bf16"), (512, 4096, 1024, "bf16"), (8192, 8192, 512, "fp8"),
            (128, 2112, 7168, "fp8"), (16384, 4096, 2048, "bf16"))]
    before = [[RooflineModel(s).time(op) for op in ops] for s in (h100, a100)]
    shipped = [RooflineModel(h100).gemm_efficiency(op) for op in ops]
    with gv.variant("ramp"):
        gv.PARAMS.update(a=roofline.GEMM_TILE_OVERHEAD_K, b=0.0)
        assert [RooflineModel(h100).gemm_efficiency(op) for op in ops] == pytest.approx(shipped)
        gv.PARAMS.update(b=300.0)
        two_waves = Gemm("g", 2048, 2048, 4096, "bf16")  # 256 tiles: 132 + 124, no split
        k_tile = 4096 + roofline.GEMM_TILE_OVERHEAD_K
        assert RooflineModel(a100).gemm_efficiency(two_waves) == pytest.approx(
            256 * 4096 / 108 / (3 * k_tile + 300))  # A100: 128x128 alone, 3 whole waves
        assert RooflineModel(h100).gemm_efficiency(two_waves) == pytest.approx(max(
            roofline.SMALL_TILE_RATE * 256 * 4096 / 132 / (2 * k_tile + 300),
            128 * 4096 / 132 / (k_tile + 300)))  # 128 tiles of 128x256 in one wave
    with gv.variant("tiles192"):
        oracle = [RooflineModel(h100).gemm_efficiency(op) for op in ops]
        assert all(o >= s for o, s in zip(oracle, shipped))
        k_over = 14336 / (14336 + roofline.GEMM_TILE_OVERHEAD_K)
        assert oracle[0] == pytest.approx(576 / 132 / 4.5 * k_over)
        assert shipped[0] == pytest.approx(roofline.SMALL_TILE_RATE * 576 / 132 / 5 * k_over)
    with gv.variant("two_ctas"):
        assert [RooflineModel(h100).time(op) for op in ops] == before[0]
        assert [RooflineModel(a100).time(op) for op in ops] != before[1]
    assert [[RooflineModel(s).time(op) for op in ops] for s in (h100, a100)] == before
    assert gv.PARAMS == {"a": float(roofline.GEMM_TILE_OVERHEAD_K), "b": 0.0}


def test_gemm_variants_split_experiments_and_tables(fit_script, capsys):
    """gemm_variants.py's split-k experiments: ``no_fixup`` (the model before the serial
    fix-up) prices a 17-tile GEMM faster and a many-wave one the same; ``split_reduce`` (parts
    summed through HBM) prices the 17-tile GEMM slower than ``no_fixup``; both restore the
    fix-up. ``shape_class`` names small, skinny and square grids with their k; ``pairs`` finds
    the same H100 shapes timed by vidur and the team's file."""
    from trainsim.compute import split_k

    gv = _variants_script(fit_script)
    h100 = gpu("h100-sxm-80gb")
    few, many = Gemm("few", 128, 2112, 7168), Gemm("many", 8192, 8192, 7168)
    shipped = [RooflineModel(h100).gemm_efficiency(op) for op in (few, many)]
    with gv.variant("no_fixup"):
        free = [RooflineModel(h100).gemm_efficiency(op) for op in (few, many)]
    with gv.variant("split_reduce"):
        reduced = [RooflineModel(h100).gemm_efficiency(op) for op in (few, many)]
    assert free[0] > shipped[0] and free[1] == shipped[1]
    assert reduced[0] < free[0] and reduced[1] == pytest.approx(shipped[1])
    assert split_k.SPLIT_K_FIXUP > 0
    assert [gv.shape_class(Gemm("g", *mnk)) for mnk in
            ((128, 2112, 7168), (4096, 57344, 8192), (4096, 4096, 512))] == [
        "small-mn k-mid odd", "skinny k>=8192", "square k<=1024"]
    rows = [r for r in fit_script.load([fit_script.BUNDLED_DIR / f for f in fit_script.FILES])
            if r.kind == "gemm"]
    gv.pairs(rows)
    summary = capsys.readouterr().out.split("| pairs |")[1]
    assert "| h100-sxm-80gb | microsoft/vidur" in summary


def test_gemm_variants_training_validates_under_the_variant(fit_script, tmp_path, monkeypatch):
    """``--training``'s per-variant step: ``shipped`` (never refitted) reproduces plain
    ``validate`` of the file; a variant's efficiency reaches the training rows (a per-kernel
    cost of 5,000 k-steps slows every GEMM, so predictions grow); the model is restored."""
    from trainsim.validate import BUNDLED_DIR, summarize, validate_file

    gv = _variants_script(fit_script)
    lines = (BUNDLED_DIR / "training_public.csv").read_text().splitlines()
    small = tmp_path / "training_small.csv"
    small.write_text("\n".join(lines[:4]) + "\n")  # the header and three Megatron rows
    monkeypatch.setattr(gv, "TRAINING_FILES", (small,))
    plain = summarize(validate_file(small)[1])["mape"]
    assert gv.training_mape("shipped", []) == {
        "constants": f"GEMM_TILE_OVERHEAD_K = {roofline.GEMM_TILE_OVERHEAD_K}, as shipped",
        small.name: plain}

    def slow(name, train):
        gv.PARAMS.update(a=roofline.GEMM_TILE_OVERHEAD_K, b=5000.0)
        return "b = 5000"

    monkeypatch.setattr(gv, "refit", slow)
    before = [r.predicted for r in validate_file(small)[1]]
    with gv.variant("ramp"):
        slow("ramp", [])
        after = [r.predicted for r in validate_file(small)[1]]
    assert all(a > b for a, b in zip(after, before))
    assert gv.training_mape("ramp", [])[small.name] != pytest.approx(plain)
    assert [r.predicted for r in validate_file(small)[1]] == before
    assert gv.PARAMS == {"a": float(roofline.GEMM_TILE_OVERHEAD_K), "b": 0.0}


def test_attention_residuals_reports_each_row_under_the_fit_split(fit_script, capsys,
                                                                  monkeypatch):
    """benchmarks/attention_residuals.py prices every attention row of the kernel files, marks
    it fit or held as fit_kernels.py splits them, and the Blackwell file's rows (never fitted)
    held; its table has a row per (GPU, source, kernel, direction, head dim, mask, part)."""
    spec = importlib.util.spec_from_file_location(
        "attention_residuals", ROOT / "benchmarks" / "attention_residuals.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)  # imports fit_kernels, loaded by the fixture
    rows = fit_script.load([fit_script.BUNDLED_DIR / f for f in fit_script.FILES])
    held = fit_script.split(rows)
    bundled = [("held" if fit_script.is_held(r, held) else "fit")
               for r in rows if r.kind.startswith("attention")]
    parts = mod.attention_rows(blackwell=True)
    assert [p for _, p in parts[:len(bundled)]] == bundled
    assert {"fit", "held"} <= set(bundled)
    blackwell = parts[len(bundled):]
    # the file's attention rows: B200, GB200, GB300 and, from the same cuDNN harness, H200
    assert blackwell and all(p == "held" and r.gpu in ("b200-sxm-180gb", "gb200", "gb300",
                                                       "h200-sxm-141gb") for r, p in blackwell)
    # a second file whose path shares its first 50 characters with the first one's: its rows
    # are a group of their own, labelled by the file's name
    first = parts[0][0].source
    assert "/" in first and len(first) > 50
    twin = first.rsplit(".", 1)[0] + "_rerun.png"
    parts = parts + [(dataclasses.replace(r, source=twin), p) for r, p in parts
                     if r.source == first]
    monkeypatch.setattr(mod, "attention_rows", lambda blackwell: parts)
    assert mod.main(["--blackwell"]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    groups = {(r.gpu, r.source, next(o for o in r.ops if hasattr(o, "head_dim")).impl,
               r.kind, next(o for o in r.ops if hasattr(o, "head_dim")).head_dim,
               next(o for o in r.ops if hasattr(o, "head_dim")).causal, p) for r, p in parts}
    assert len(table) == 1 + len(groups)  # the header and one line a group
    labels = {line.split(" | ")[1] for line in table[1:]}
    assert twin.rsplit("/", 1)[-1] in labels and first.rsplit("/", 1)[-1] in labels


def test_by_seq_groups_each_attention_row_once_by_gpu_implementation_kind_and_sequence(
        fit_script, capsys):
    """``--by-seq``: every attention row naming one fused implementation and a sequence length
    lands in exactly one (GPU, implementation, kind, sequence) group, whose mean signed error
    lies between its min and max; a hand-made row priced at twice its measured time reads +100 %."""
    rows = fit_script.load([fit_script.BUNDLED_DIR / f for f in fit_script.FILES])
    attn = [r for r in rows if r.kind.startswith("attention") and fit_script.attention_impl(r)]
    groups = fit_script.by_seq(rows)
    assert sum(n for *_, n, _m, _lo, _hi in groups) == len(attn)
    assert len({g[:4] for g in groups}) == len(groups)
    for *_, n, mean, lo, hi in groups:
        assert n >= 1 and lo - 1e-12 <= mean <= hi + 1e-12
    assert ("h100-sxm-80gb", "flash2", "attention_bwd", 32768) in {g[:4] for g in groups}
    op = Attention("a", batch=1, heads=8, kv_heads=8, q_len=4096, kv_len=4096, head_dim=128,
                   causal=True, impl="cudnn")
    t = RooflineModel(dataclasses.replace(gpu("h100-sxm-80gb"), sustained_of_burst=1.0)).time(op)
    row = fit_script.Row("attention_fwd", "h100-sxm-80gb", "s", [op], t / 2, family="s4096")
    ((*key, n, mean, lo, hi),) = fit_script.by_seq([row])
    assert key == ["h100-sxm-80gb", "cudnn", "attention_fwd", 4096] and n == 1
    assert mean == pytest.approx(1.0) and lo == hi == mean
    assert fit_script.main(["--no-fit", "--by-seq"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert "| GPU | implementation | kind | seq | n | signed | min | max |" in table
    assert sum(line.startswith("| h100-sxm-80gb |") for line in table) == sum(
        g[0] == "h100-sxm-80gb" for g in groups)


def test_the_report_can_price_as_the_validator_does(fit_script, monkeypatch):
    """``--compute-db auto`` prices the report with the compute chain as ``trainsim validate``
    does: rows of a GPU with no bundled database keep the roofline's price, the H100 rows take
    the measured database's; the fit itself always runs on the roofline (``REPORT_DB`` None)."""
    assert fit_script.REPORT_DB is None
    rows = fit_script.load([fit_script.BUNDLED_DIR / f for f in fit_script.FILES])
    a100 = [r for r in rows if r.kind == "gemm" and r.gpu == "a100-sxm-80gb"][:5]
    h100 = [r for r in rows if r.kind == "gemm" and r.gpu == "h100-sxm-80gb"][:40]
    roof_a, roof_h = fit_script.predict(a100), fit_script.predict(h100)
    monkeypatch.setattr(fit_script, "REPORT_DB", "auto")
    assert list(fit_script.predict(a100)) == list(roof_a)
    assert any(abs(x / y - 1) > 1e-6 for x, y in zip(fit_script.predict(h100), roof_h))


def test_many_waves_recovers_the_per_tile_cost_and_rate_it_was_built_with(fit_script):
    """``gemm_variants.many_waves``: rows timed as whole waves of 128x128 tiles of (k + 80)
    k-steps at 0.9 of the burst ceiling (plus the launch) give back c 80 and R 0.9; a grid
    under 8 waves and a group of fewer than 5 rows are left out."""
    import dataclasses

    gv = _variants_script(fit_script)
    spec = dataclasses.replace(gpu("a100-sxm-80gb"), sustained_of_burst=1.0)

    def row(m: int, n: int, k: int, source: str = "synthetic-a") -> object:
        op = Gemm("g", m, n, k, "fp16")
        eff = roofline.tile_grid_efficiency(spec.num_sms, op, 128, 128, 80.0, 1.0)
        t = op.flops / (0.9 * roofline.gemm_rate(spec, op) * eff) + roofline.LAUNCH_S
        return fit_script.Row("gemm", "a100-sxm-80gb", source, [op], t)

    rows = [row(4096, 8192, k) for k in (512, 1024, 2048, 4096, 8192)]
    rows += [row(1024, 1024, 1024), row(4096, 8192, 1024, "synthetic-b")]
    (label, n, c, frac, short, long), = gv.many_waves(rows)
    assert "synthetic-a" in label and n == 5
    assert c == 80 and frac == pytest.approx(0.9, rel=1e-9)
    assert short > 0 > long  # the shipped 250 k-steps at 1.0: short k slow, long k fast


def test_floor_recovers_a_sources_own_tile_cost_and_rate(fit_script):
    """``gemm_variants.floor``: rows priced by the shipped model at a per-tile cost of 120
    k-steps and 0.9 of its rate (plus the launch) fit back to ~0 % at c ~120, R ~0.9 from the
    shipped 250 / 1.0, whose own MAPE on them is not 0; the deep fit (split reach and fix-up)
    runs only for groups of ``deep_min`` rows or more."""
    gv = _variants_script(fit_script)
    spec = dataclasses.replace(gpu("a100-sxm-80gb"), sustained_of_burst=1.0)
    saved = roofline.GEMM_TILE_OVERHEAD_K
    rows = []
    try:
        roofline.GEMM_TILE_OVERHEAD_K = 120
        model = RooflineModel(spec)
        for m, n, k in itertools.product((512, 2048), (1024, 8192), (512, 2048, 8192)):
            op = Gemm("g", m, n, k, "fp16")
            t = (model.time(op) - roofline.LAUNCH_S) / 0.9 + roofline.LAUNCH_S
            # timed with the board idle between calls (``burst``): no loop clock in the way
            rows.append(fit_script.Row("gemm", "a100-sxm-80gb", "synthetic", [op], t,
                                       burst=True))
    finally:
        roofline.GEMM_TILE_OVERHEAD_K = saved
    (gpu_name, src, dtype, n, shipped, _signed, own, deep), = gv.floor(rows, deep_min=100)
    assert (gpu_name, src, dtype, n, deep) == ("a100-sxm-80gb", "synthetic", "fp16", "12", "-")
    assert float(shipped.rstrip("%")) > 1.0
    mape, c, r = gv._own_fit(rows)
    assert mape < 0.005 and abs(c - 120) < 15 and r == pytest.approx(0.9, abs=0.01)
    assert roofline.GEMM_TILE_OVERHEAD_K == saved
    split = (roofline.SPLIT_K_MAX_WAVES, split_k.SPLIT_K_FIXUP)
    (*_, deep), = gv.floor(rows, deep_min=1)
    assert "waves" in deep and float(deep.split("%")[0]) <= float(own.split("%")[0]) + 0.05
    assert (roofline.SPLIT_K_MAX_WAVES, split_k.SPLIT_K_FIXUP) == split
