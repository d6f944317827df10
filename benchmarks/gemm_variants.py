"""Experiments, not in the model: three GEMM shape mechanisms against the kernel rows.

    python benchmarks/gemm_variants.py             # each variant, tile overhead refitted
    python benchmarks/gemm_variants.py --residual  # the shipped model's GEMM residual by structure
    python benchmarks/gemm_variants.py --training  # public and held-out training MAPE per variant
    python benchmarks/gemm_variants.py --by-class  # error per GPU, source, dtype, shape class
    python benchmarks/gemm_variants.py --pairs     # one shape timed on one GPU by two sources
    python benchmarks/gemm_variants.py --many-waves  # tile cost and rate of many-wave grids
    python benchmarks/gemm_variants.py --floor     # each source at its own tile cost and rate
                                                   # (--errata: kernels_errata.csv applied)

Each variant replaces ``RooflineModel.gemm_efficiency`` for dense GEMMs inside a context
manager (grouped GEMMs are untouched; training files only under ``--training``), refits its
constants on ``fit_kernels.py``'s fitted GEMM rows (same rows, same held-out split, time MAPE)
and reports fit / held-out / held-out family MAPE per GPU. The shipped model is restored
after each. ``shipped`` is the model as it ships (``GEMM_TILE_OVERHEAD_K``, not
refitted); ``refitted`` is the same efficiency with the tile overhead refitted on the same
rows. Since the 24th session the shipped model itself chooses among 128x128, 128x256 and
256x128 tiles on Hopper and Blackwell (``roofline.gemm_tiles``); ``ramp`` and ``tiles192``
build on that choice.

``--training`` validates the public and held-out training files under each variant (refitted
as above), each in a fresh process (no price kept from another variant; one worker, so no
pool process misses the patched efficiency), and prints their MAPE.

* ``ramp``: a one-time pipeline fill and drain per kernel (the first tile's prologue and the
  last tile's epilogue of a persistent, warp-specialized kernel cannot overlap other tiles'
  main loops; CUTLASS sm90 ``KernelTmaWarpSpecializedPingpong``/``Cooperative`` overlap
  the others), ``b`` k-steps per kernel, beside a smaller per-tile ``a``: steps =
  waves x (k + a) + b. Both fitted (Nelder-Mead), as a time (x the dtype's rate, like the
  shipped overhead).
* ``tiles192``: cuBLAS's heuristic choosing among tile shapes, priced as an oracle taking the
  fastest of 128x128 (the shipped path, with its split-k), 128x192 and 192x128 (wgmma's N
  runs in multiples of 8 up to 256: PTX ISA ``wgmma.mma_async`` shapes m64nNk16), each
  tile's time and overhead in proportion to its area. (128x256 / 256x128 at the 128x128 tile's
  rate never win: their waves are coarser at the same work; 10th session, RESULTS.md. Since the
  24th session the shipped model runs them at the full rate, the 128x128 tile at
  ``SMALL_TILE_RATE``, on Hopper and Blackwell.)
* ``two_ctas``: on A100 (Ampere's ``cp.async`` multistage kernels, no TMA) two 128x128 CTAs
  share an SM, so waves are counted on 2 x 108 slots at half the rate each.

* ``no_fixup``: split-k without its serial fix-up (``compute.split_k.SPLIT_K_FIXUP`` 0, the
  model before the 25th session): a split tile as deep as the idle SMs and ``SPLIT_K_MIN``
  allow, its parts summed for free.
* ``split_reduce``: the parts summed through memory (fp32 partial tiles written and read back
  at the HBM rate, cuBLASLt's ``CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE``) instead of in turn;
  no constant of its own.

``--by-class`` tabulates the shipped model's time error per GPU, source, dtype and shape class
(small m or n, skinny, square; k <= 1,024, mid, >= 8,192; odd sizes) and part of the split;
``--pairs`` lists the GEMM shapes that two sources timed on the same GPU and the ratio of their
times (vidur's H100 against the team's: what no model of the shape alone can fit).

``--floor`` fits, per GPU, source and dtype, the shipped model's per-tile cost and a rate
(and, for sources of 20 or more rows, the partial-wave split's reach and fix-up) to that
source's rows alone: the MAPE no global constant of the shipped form can beat on them.

``--many-waves`` fits, per GPU, source and dtype, the fixed cost per tile and the rate of the
rows whose 128x128 grid fills 8 or more waves (training's GEMMs, the weight gradients over a
micro-batch's tokens among them), with the shipped model's signed error at short and long k.

``--ksweep`` splits each measured k sweep (one m, n, dtype and source at three or more k)
into a marginal rate (the slope of time against k) and a fixed cost per tile (the intercept
over the whole waves), the two things ``GEMM_TILE_OVERHEAD_K`` and the GEMM ceiling stand for.

What it shows (benchmarks/RESULTS.md, 2026-11-25, 21st session, gemm): on the team's H100 both
move with the number of waves (bf16 marginal 801 -> 708 TFLOP/s and fixed 401 -> ~100 k-steps
from under 2 waves to over 32; fp8 1,574 -> 1,309 and ~350-490 -> ~180-200), so no single
(ceiling, per-tile cost) pair fits short-k and long-k many-wave grids at once; each variant
trades one GPU's or source's rows for another's, and the ``ramp`` variant that lowers the
fitted rows' MAPE (6.45 -> 6.30 %) makes the training files worse (``--training``, ~4 min on
2 cores, at main e4595c8: public 6.501 -> 6.512 %, held-out 4.693 -> 4.736 %; ``tiles192``
6.518 / 4.706 %, ``two_ctas`` 6.645 / 4.693 %; at 987e927 see the fixa block). Nothing here
changes trainsim.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import fit_kernels as fk
import numpy as np

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import roofline, split_k
from trainsim.validate import BUNDLED_DIR, summarize, validate_file
from trainsim.workload.ops import Gemm

SHIPPED = roofline.RooflineModel.gemm_efficiency
PARAMS: dict[str, float] = {"a": float(roofline.GEMM_TILE_OVERHEAD_K), "b": 0.0}
"""The ``ramp`` variant's per-tile and per-kernel overheads (16-bit k-steps)."""


def ramp_efficiency(self: roofline.RooflineModel, op: Gemm) -> float:
    """The shipped efficiency (the best of ``roofline.gemm_tiles``) with a per-tile overhead
    ``a`` and a per-kernel ``b``."""
    if op.grouped and op.grouped != "userbuffers":
        return roofline.grouped_efficiency(self.gpu, op)
    scale = roofline.gemm_rate(self.gpu, op) / self.gpu.gemm_ceiling("bf16")
    stretch = 1.0 + roofline.block_promotion_k(self.gpu, op)
    return max(rate * roofline.tile_grid_efficiency(
        self.gpu.num_sms, op, rows, cols, PARAMS["a"] * scale, stretch, PARAMS["b"] * scale)
        for rows, cols, rate in roofline.gemm_tiles(self.gpu))


def tile_oracle_efficiency(self: roofline.RooflineModel, op: Gemm) -> float:
    """The best of the shipped 128x128 path and whole waves of 128x192 or 192x128 tiles."""
    best = SHIPPED(self, op)
    if op.grouped:
        return best
    sms = self.gpu.num_sms
    scale = roofline.gemm_rate(self.gpu, op) / self.gpu.gemm_ceiling("bf16")
    overhead = roofline.GEMM_TILE_OVERHEAD_K * scale
    for bm, bn in ((128, 192), (192, 128)):
        tiles = math.ceil(op.m / bm) * math.ceil(op.n / bn) * op.batch
        area = bm * bn / roofline.TILE ** 2  # a tile's time, in 128x128 tiles
        steps = math.ceil(tiles / sms) * area * (op.k + overhead)
        best = max(best, op.m * op.n * op.batch / roofline.TILE ** 2 * op.k / sms / steps)
    return best


def two_cta_efficiency(self: roofline.RooflineModel, op: Gemm) -> float:
    """The shipped efficiency with an A100's waves counted on two CTAs per SM."""
    if self.gpu.num_sms != 108:
        return SHIPPED(self, op)
    doubled = roofline.RooflineModel(dataclasses.replace(self.gpu, num_sms=2 * self.gpu.num_sms))
    return SHIPPED(doubled, op)


def reduce_grid_efficiency(sms: int, op: Gemm, rows: int, cols: int, overhead_k: float,
                           stretch: float, part_k: float) -> float:
    """``roofline.tile_grid_efficiency`` with a split partial wave's parts summed through
    memory instead of in turn: each of the ``s`` parts of each of its tiles writes an fp32 tile
    that a reduction reads back, ``part_k`` k-steps per part and tile for the whole GPU; the
    split the one that minimises the time."""
    tiles = math.ceil(op.m / rows) * math.ceil(op.n / cols) * op.batch
    full, rest = divmod(tiles, sms)
    if full >= roofline.SPLIT_K_MAX_WAVES:
        full, rest = math.ceil(tiles / sms), 0
    steps = full * (op.k * stretch + overhead_k)
    if rest:
        top = max(1, min(sms // rest, op.k // split_k.SPLIT_K_MIN))
        steps += min(op.k / s * stretch + overhead_k + (s > 1) * rest * s * part_k
                     for s in range(1, top + 1))
    useful = op.m * op.n * op.batch / (rows * cols)
    return useful * op.k / sms / steps


def split_reduce_efficiency(self: roofline.RooflineModel, op: Gemm) -> float:
    """Split-k's parts summed through memory (cuBLASLt's ``CUBLASLT_REDUCTION_SCHEME_COMPUTE_
    TYPE``: fp32 parts in the workspace, reduced in a separate step) at the HBM rate, in place
    of the shipped serial fix-up; no constant of its own (dense GEMMs only)."""
    if op.grouped and op.grouped != "userbuffers":
        return roofline.grouped_efficiency(self.gpu, op)
    rate = roofline.gemm_rate(self.gpu, op)
    overhead_k = roofline.GEMM_TILE_OVERHEAD_K * rate / self.gpu.gemm_ceiling("bf16")
    stretch = 1.0 + roofline.block_promotion_k(self.gpu, op)
    bw = self.gpu.hbm_bw_Bps * roofline.HBM_EFFICIENCY
    best = 0.0
    for rows, cols, tile_rate in roofline.gemm_tiles(self.gpu):
        kstep_s = 2 * rows * cols * self.gpu.num_sms / (rate * tile_rate)  # one k-step, all SMs
        part_k = 2 * rows * cols * 4 / bw / kstep_s  # an fp32 tile written and read back
        best = max(best, tile_rate * reduce_grid_efficiency(
            self.gpu.num_sms, op, rows, cols, overhead_k, stretch, part_k))
    return best


VARIANTS: dict[str, Callable[[roofline.RooflineModel, Gemm], float]] = {
    "shipped": SHIPPED, "refitted": SHIPPED, "ramp": ramp_efficiency,
    "tiles192": tile_oracle_efficiency, "two_ctas": two_cta_efficiency,
    "no_fixup": SHIPPED, "split_reduce": split_reduce_efficiency}
"""``shipped`` is never refitted (the model as it ships); every other variant is.
``no_fixup`` is the shipped efficiency without split-k's serial fix-up
(``split_k.SPLIT_K_FIXUP`` 0: every split tile as deep as ``SPLIT_K_MIN`` and the idle SMs
allow, free; the model before the 25th session); ``split_reduce`` sums the parts through memory
instead (``split_reduce_efficiency``)."""

TRAINING_FILES = (BUNDLED_DIR / "training_public.csv",
                  Path(__file__).resolve().parent / "training_heldout.csv")
"""The training files ``--training`` validates (the public file's bundled copy, the same bytes
as shared/validation's; the held-out file kept in benchmarks/)."""


@contextlib.contextmanager
def variant(name: str) -> Iterator[None]:
    """The roofline with ``name``'s GEMM efficiency; the shipped model and constants after."""
    saved = (roofline.GEMM_TILE_OVERHEAD_K, dict(PARAMS), split_k.SPLIT_K_FIXUP)
    roofline.RooflineModel.gemm_efficiency = VARIANTS[name]  # type: ignore[method-assign]
    if name in ("no_fixup", "split_reduce"):
        split_k.SPLIT_K_FIXUP = 0.0
    try:
        yield
    finally:
        roofline.RooflineModel.gemm_efficiency = SHIPPED  # type: ignore[method-assign]
        roofline.GEMM_TILE_OVERHEAD_K = saved[0]
        split_k.SPLIT_K_FIXUP = saved[2]
        PARAMS.clear()
        PARAMS.update(saved[1])


def refit(name: str, train: list[fk.Row]) -> str:
    """Fit ``name``'s constants on ``train`` (inside ``variant(name)``); returns them."""
    def mape() -> float:
        return float(np.mean(fk.ape(train)))

    if name == "ramp":
        def loss(x: np.ndarray) -> float:
            if min(x) < 0:
                return 1e9
            PARAMS["a"], PARAMS["b"] = float(x[0]), float(x[1])
            return mape()

        x = fk.nelder_mead(loss, [250.0, 200.0], steps=200, scale=0.5)
        PARAMS["a"], PARAMS["b"] = round(float(x[0])), round(float(x[1]))
        return f"a = {PARAMS['a']:.0f}, b = {PARAMS['b']:.0f} k-steps"

    def tile_loss(k0: float) -> float:
        roofline.GEMM_TILE_OVERHEAD_K = k0
        return mape()

    if name == "shipped":
        return f"GEMM_TILE_OVERHEAD_K = {roofline.GEMM_TILE_OVERHEAD_K}, as shipped"
    roofline.GEMM_TILE_OVERHEAD_K = round(fk.golden(tile_loss, 0.0, 1024.0))
    return f"GEMM_TILE_OVERHEAD_K = {roofline.GEMM_TILE_OVERHEAD_K}"


def training_mape(name: str, train: list[fk.Row]) -> dict[str, object]:
    """``name`` refitted on ``train`` (``shipped``: as is), then each training file validated
    under it: {"constants", file name: MAPE}. Run in a process of its own (``--training``)."""
    out: dict[str, object] = {}
    with variant(name):
        out["constants"] = refit(name, train)
        for path in TRAINING_FILES:
            _, results = validate_file(path)
            out[path.name] = summarize(results)["mape"]
    return out


def training(script: Path) -> None:
    """Each variant's training MAPE, one fresh process per variant (Markdown)."""
    print("| variant | constants | " + " | ".join(p.name for p in TRAINING_FILES) +
          " |\n|---|---|" + "---|" * len(TRAINING_FILES))
    for name in VARIANTS:
        done = subprocess.run([sys.executable, str(script), "--training-variant", name],
                              capture_output=True, text=True, check=True)
        res = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"| {name} | {res['constants']} | " +
              " | ".join(f"{res[p.name]:.3%}" for p in TRAINING_FILES) + " |")


def part(r: fk.Row, held: dict[str, set[str]]) -> str:
    if f"{r.source}|{r.family}" in held.get("gemm", set()):
        return "held-out family"
    return "held-out" if fk.is_held(r, held) else "fit"


def by_gpu(rows: list[fk.Row], held: dict[str, set[str]]) -> dict[tuple[str, str], float]:
    """GEMM time MAPE per (GPU, fit / held-out / held-out family)."""
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r, e in zip(rows, fk.ape(rows)):
        groups[(r.gpu, part(r, held))].append(float(e))
    return {k: float(np.mean(v)) for k, v in sorted(groups.items())}


def residual(rows: list[fk.Row], held: dict[str, set[str]]) -> None:
    """Signed error (predicted / measured - 1) of the shipped model by waves of 128x128 tiles
    and by k, per source (Markdown)."""
    signed = fk.predict(rows) / np.array([r.measured_s for r in rows]) - 1.0
    bins = {"waves": (1, 2, 4, 8, 16, 32, math.inf), "k": (1024, 2048, 4096, 8192, math.inf)}
    for what, edges in bins.items():
        groups: dict[tuple[str, str], list[float]] = defaultdict(list)
        for r, s in zip(rows, signed):
            op = r.ops[0]
            tiles = math.ceil(op.m / roofline.TILE) * math.ceil(op.n / roofline.TILE)
            x = tiles / catalog_gpu(r.gpu).num_sms if what == "waves" else op.k
            edge = next(e for e in edges if x <= e)
            groups[(f"{r.source.split()[0]} {op.dtype}", f"<= {edge:g}")].append(float(s))
        cols = [f"<= {e:g}" for e in edges]
        print(f"\n| source, dtype \\ {what} | " + " | ".join(cols) + " |")
        print("|---" * (len(cols) + 1) + "|")
        for src in sorted({k[0] for k in groups}):
            cells = [f"{np.mean(groups[(src, c)]):+.1%} ({len(groups[(src, c)])})"
                     if (src, c) in groups else "-" for c in cols]
            print(f"| {src} | " + " | ".join(cells) + " |")


def k_sweeps(rows: list[fk.Row], max_k: int = 8192) -> None:
    """Each (GPU, source, dtype, m, n) measured at three or more k <= ``max_k``: a straight line
    through its times (less ``LAUNCH_S``) against k. The slope is the marginal rate (FLOP/s
    per added k); the intercept over the whole waves of 128x128 tiles is the fixed cost of one
    tile, in 16-bit k-steps at the GPU's burst 16-bit ceiling (the shipped model: the dtype's
    ceiling and ``GEMM_TILE_OVERHEAD_K``). Medians by waves (Markdown)."""
    sweeps: dict[tuple[str, str, str, int, int], list[tuple[int, float]]] = defaultdict(list)
    for r in rows:
        op = r.ops[0]
        if op.k <= max_k:
            sweeps[(r.gpu, r.source.split()[0], op.dtype, op.m, op.n)].append(
                (op.k, r.measured_s - roofline.LAUNCH_S))
    groups: dict[tuple[str, str, str, float], list[tuple[float, float]]] = defaultdict(list)
    edges = (2, 4, 8, 16, 32, math.inf)
    for (name, src, dtype, m, n), points in sweeps.items():
        if len({k for k, _ in points}) < 3:
            continue
        spec = catalog_gpu(name)
        k, t = np.array(points).T
        slope, intercept = np.polyfit(k, t, 1)
        tiles = math.ceil(m / roofline.TILE) * math.ceil(n / roofline.TILE)
        # one 16-bit k-step of a wave at the burst ceiling (kernels benchmarked alone)
        step_s = 2 * roofline.TILE ** 2 * spec.num_sms / (
            spec.flops("bf16") * spec.mamf_fraction)
        waves = tiles / spec.num_sms
        edge = next(e for e in edges if waves <= e)
        groups[(name, src, dtype, edge)].append(
            (2.0 * m * n / slope, intercept / math.ceil(waves) / step_s))
    print("\n| GPU, source, dtype | waves | sweeps | marginal rate (TFLOP/s), median |"
          " fixed cost per tile (16-bit k-steps), median |\n|---|---|---|---|---|")
    for (name, src, dtype, w), v in sorted(groups.items()):
        rate, cost = np.median(np.array(v), axis=0)
        print(f"| {name} {src} {dtype} | <= {w:g} | {len(v)} | {rate / 1e12:.0f} | {cost:.0f} |")


MANY_WAVES = 8
"""``many_waves``: the grids counted as many-wave (whole waves of 128x128 tiles, no split)."""


def many_waves(rows: list[fk.Row]) -> list[tuple[str, int, float, float, float, float]]:
    """Per GPU, source and 16-bit or fp8 dtype, the rows whose 128x128 grid fills at least
    ``MANY_WAVES`` waves (training's weight-gradient and forward GEMMs): the fixed cost per
    tile ``c`` (16-bit k-steps, as ``GEMM_TILE_OVERHEAD_K``) and the rate ``R`` (a fraction of
    the dtype's burst ceiling) that fit their times best, each tile taking (k + c) k-steps at
    ``R`` (``roofline.tile_grid_efficiency`` with one 128x128 tile, plus ``LAUNCH_S``; c on a
    5-step grid, R the median ratio, loss the mean absolute log error), and the shipped model's
    mean signed time error (predicted / measured - 1) at k <= 1,024 and k >= 8,192.
    Returns (label, rows, c, R, signed k <= 1,024, signed k >= 8,192)."""
    groups: dict[str, list[tuple[fk.Row, float]]] = defaultdict(list)
    signed = fk.predict(rows) / np.array([r.measured_s for r in rows]) - 1.0
    for r, e in zip(rows, signed):
        op, spec = r.ops[0], catalog_gpu(r.gpu)
        tiles = math.ceil(op.m / roofline.TILE) * math.ceil(op.n / roofline.TILE) * op.batch
        if tiles >= MANY_WAVES * spec.num_sms and not r.sustained and not op.grouped \
                and not op.fp8_block_scales:
            groups[f"{r.gpu} {fk.source_label(r)[:32]} {op.dtype}"].append((r, float(e)))
    out = []
    for label, members in sorted(groups.items()):
        if len(members) < 5:
            continue
        fitted = [r for r, _ in members]
        c = min(range(0, 405, 5), key=lambda x: _tile_fit(fitted, x)[0])
        short = [e for r, e in members if r.ops[0].k <= 1024]
        long = [e for r, e in members if r.ops[0].k >= 8192]
        out.append((label, len(members), float(c), _tile_fit(fitted, c)[1],
                    float(np.mean(short)) if short else math.nan,
                    float(np.mean(long)) if long else math.nan))
    return out


def _tile_fit(rows: list[fk.Row], c: float) -> tuple[float, float]:
    """(mean absolute log error, R) of ``rows`` priced as whole waves of 128x128 tiles of
    (k + ``c``) k-steps at R x the dtype's burst ceiling, R their median ratio."""
    logs = []
    for r in rows:
        op, spec = r.ops[0], dataclasses.replace(catalog_gpu(r.gpu), sustained_of_burst=1.0)
        rate = roofline.gemm_rate(spec, op)
        eff = roofline.tile_grid_efficiency(spec.num_sms, op, roofline.TILE, roofline.TILE,
                                            c * rate / spec.gemm_ceiling("bf16"), 1.0)
        logs.append(math.log(op.flops / (rate * eff) / (r.measured_s - roofline.LAUNCH_S)))
    frac = math.exp(float(np.median(logs)))  # measured rate over the modelled one at R = 1
    return float(np.mean(np.abs(np.array(logs) - math.log(frac)))), frac


def shape_class(op: Gemm) -> str:
    """A GEMM's shape class: ``small-mn`` (m or n <= 256: a row or two of tiles), ``skinny``
    (the longer output side >= 8x the shorter), else ``square``; its k ``k<=1024``,
    ``k>=8192`` or ``k-mid``; ``odd`` where m, n or k is not a multiple of 128."""
    lo, hi = min(op.m, op.n), max(op.m, op.n)
    out = "small-mn" if lo <= 256 else "skinny" if hi >= 8 * lo else "square"
    out += " k<=1024" if op.k <= 1024 else " k>=8192" if op.k >= 8192 else " k-mid"
    return out + (" odd" if any(x % roofline.TILE for x in (op.m, op.n, op.k)) else "")


def by_class(rows: list[fk.Row], held: dict[str, set[str]]) -> None:
    """Time MAPE and mean signed error (predicted / measured - 1) per GPU, source, dtype,
    shape class (``shape_class``) and part of the split, then per GPU and shape class over all
    sources (Markdown)."""
    signed = fk.predict(rows) / np.array([r.measured_s for r in rows]) - 1.0
    fine: dict[tuple[str, ...], list[float]] = defaultdict(list)
    coarse: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for r, e in zip(rows, signed):
        op = r.ops[0]
        fine[(r.gpu, fk.source_label(r)[:48], op.dtype, shape_class(op), part(r, held))].append(
            float(e))
        coarse[(r.gpu, shape_class(op))].append(float(e))
    for title, groups in (("GPU | source | dtype | shape class | rows", fine),
                          ("GPU | shape class", coarse)):
        cols = title.count("|") + 1
        print(f"\n| {title} | n | MAPE (time) | signed |\n" + "|---" * (cols + 3) + "|")
        for key, v in sorted(groups.items()):
            print(f"| {' | '.join(key)} | {len(v)} | {np.mean(np.abs(v)):.1%} | "
                  f"{np.mean(v):+.1%} |")


def pairs(rows: list[fk.Row]) -> None:
    """GEMMs of the same shape (m, n, k, or m and n swapped) measured on the same GPU by two
    sources: the ratio of their times, the spread no model of the shape alone can fit
    (Markdown: each pair, then the mean absolute log ratio per source pair)."""
    first: dict[tuple[str, str, int, int, int], fk.Row] = {}
    found: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    print("\n| GPU | shape (m x n x k) | source a (dtype) | source b (dtype) | time b / a |"
          "\n|---|---|---|---|---|")
    for r in rows:
        op = r.ops[0]
        src = fk.source_label(r)[:40]
        for m, n in ((op.m, op.n), (op.n, op.m)):
            other = first.get((r.gpu, "", m, n, op.k))
            if other is not None and fk.source_label(other)[:40] != src \
                    and other.ops[0].dtype in ("bf16", "fp16") and op.dtype in ("bf16", "fp16"):
                ratio = r.measured_s / other.measured_s
                a = fk.source_label(other)[:40]
                found[(r.gpu, a, src)].append(math.log(ratio))
                print(f"| {r.gpu} | {op.m} x {op.n} x {op.k} | {a} ({other.ops[0].dtype}) | "
                      f"{src} ({op.dtype}) | {ratio:.3f} |")
                break
        first.setdefault((r.gpu, "", op.m, op.n, op.k), r)
    print("\n| GPU | source a | source b | pairs | mean abs log ratio | median ratio |"
          "\n|---|---|---|---|---|---|")
    for (gpu, a, b), v in sorted(found.items()):
        print(f"| {gpu} | {a} | {b} | {len(v)} | {np.mean(np.abs(v)):.1%} | "
              f"{math.exp(float(np.median(v))):.3f} |")


FLOOR_SPLITS = tuple((w, f) for w in (1, 2, 3, 4, 6)
                     for f in sorted({0.0, split_k.SPLIT_K_FIXUP, 1.2, 2.4, 4.8}))
"""``floor``'s grid of (``SPLIT_K_MAX_WAVES``, ``split_k.SPLIT_K_FIXUP``) for the deep fit (the
shipped fix-up among them)."""


def _own_fit(rows: list[fk.Row]) -> tuple[float, float, float]:
    """(time MAPE, c, R): ``rows`` priced by the shipped model (its tile choice and split-k)
    with the per-tile cost ``GEMM_TILE_OVERHEAD_K`` = c and every kernel's compute time / R,
    c (golden section, 0-800) and R (golden section, 0.5-1.5) those that fit them best."""
    meas = np.array([r.measured_s for r in rows])
    launch = roofline.LAUNCH_S
    seen: dict[float, tuple[float, float]] = {}

    def at(c: float) -> float:
        roofline.GEMM_TILE_OVERHEAD_K = c
        pred = fk.predict(rows)

        def loss(r: float) -> float:
            return float(np.mean(np.abs(((pred - launch) / r + launch) / meas - 1.0)))

        r = fk.golden(lambda x: loss(x / 1000), 500.0, 1500.0) / 1000
        seen[c] = (loss(r), r)
        return seen[c][0]

    saved = roofline.GEMM_TILE_OVERHEAD_K
    try:
        c = fk.golden(at, 0.0, 800.0, tol=5.0)
        at(c)
    finally:
        roofline.GEMM_TILE_OVERHEAD_K = saved
    return seen[c][0], c, seen[c][1]


def floor(rows: list[fk.Row], deep_min: int = 20) -> list[tuple[str, ...]]:
    """What the shipped GEMM model's form can reach on each source's own rows: per GPU,
    source and dtype (dense GEMMs), the shipped time MAPE and signed error, the MAPE at the
    source's own per-tile cost c and rate R (``_own_fit``), and for groups of ``deep_min`` or
    more rows also with the partial-wave split's ``SPLIT_K_MAX_WAVES`` and fix-up fitted
    (``FLOOR_SPLITS``). A source that stays above a target at its own constants cannot meet it
    under any global ones of this form. Returns one tuple of cells per group."""
    groups: dict[tuple[str, str, str], list[fk.Row]] = defaultdict(list)
    for r in rows:
        if len(r.ops) == 1 and not r.ops[0].grouped:
            groups[(r.gpu, fk.source_label(r)[:40], r.ops[0].dtype)].append(r)
    out = []
    for (gpu, src, dtype), members in sorted(groups.items()):
        signed = fk.predict(members) / np.array([r.measured_s for r in members]) - 1.0
        own, c, frac = _own_fit(members)
        deep = "-"
        if len(members) >= deep_min:
            saved = (roofline.SPLIT_K_MAX_WAVES, split_k.SPLIT_K_FIXUP)
            try:
                fits = []
                for waves, fixup in FLOOR_SPLITS:
                    roofline.SPLIT_K_MAX_WAVES, split_k.SPLIT_K_FIXUP = waves, fixup
                    fits.append((*_own_fit(members), waves, fixup))
            finally:
                roofline.SPLIT_K_MAX_WAVES, split_k.SPLIT_K_FIXUP = saved
            m, dc, dr, waves, fixup = min(fits)
            deep = f"{m:.1%} (c {dc:.0f}, R {dr:.3f}, waves {waves}, fix-up {fixup})"
        out.append((gpu, src, dtype, str(len(members)), f"{np.mean(np.abs(signed)):.1%}",
                    f"{np.mean(signed):+.1%}", f"{own:.1%} (c {c:.0f}, R {frac:.3f})", deep))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--residual", action="store_true", help="the shipped model's residual")
    ap.add_argument("--ksweep", action="store_true",
                    help="marginal rate and fixed cost per tile of each measured k sweep")
    ap.add_argument("--by-class", action="store_true",
                    help="the shipped model's error per GPU, source, dtype and shape class")
    ap.add_argument("--pairs", action="store_true",
                    help="the same GEMM shape measured on one GPU by two sources")
    ap.add_argument("--many-waves", action="store_true",
                    help="per-tile cost and rate that fit grids of 8 or more waves, per source")
    ap.add_argument("--floor", action="store_true",
                    help="each source's MAPE at its own per-tile cost, rate and split")
    ap.add_argument("--errata", action="store_true",
                    help="apply benchmarks/kernels_errata.csv to the published file first")
    ap.add_argument("--training", action="store_true",
                    help="public and held-out training MAPE under each variant")
    ap.add_argument("--training-variant", choices=list(VARIANTS), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.training:
        training(Path(__file__).resolve())
        return 0
    paths = [BUNDLED_DIR / f for f in fk.FILES]
    if args.errata:  # as fit_kernels.py --errata
        import tempfile

        from trainsim.validate.errata import corrected_file

        errata = Path(__file__).resolve().parent / "kernels_errata.csv"
        paths[0] = corrected_file(paths[0], errata, tempfile.mkdtemp())[0]
    rows = [r for r in fk.load(paths) if r.kind == "gemm"]
    held = fk.split(rows)
    if args.residual:
        residual(rows, held)
        return 0
    if args.ksweep:
        k_sweeps(rows)
        return 0
    if args.by_class:
        by_class(rows, held)
        return 0
    if args.many_waves:
        print(f"\n| GPU, source, dtype (>= {MANY_WAVES} waves) | rows | fixed cost per tile c "
              "(16-bit k-steps) | rate R (of the burst ceiling) | shipped signed, k <= 1,024 | "
              "k >= 8,192 |\n|---|---|---|---|---|---|")
        for label, n, c, frac, short, long in many_waves(rows):
            print(f"| {label} | {n} | {c:.0f} | {frac:.3f} | {short:+.1%} | {long:+.1%} |")
        return 0
    if args.pairs:
        pairs(rows)
        return 0
    if args.floor:
        print("\n| GPU | source | dtype | rows | shipped MAPE (time) | signed | own c and R | "
              "own c, R and split |\n|---|---|---|---|---|---|---|---|")
        for cells in floor(rows):
            print("| " + " | ".join(cells) + " |")
        return 0
    train = [r for r in rows if not fk.is_held(r, held)]
    if args.training_variant:
        print(json.dumps(training_mape(args.training_variant, train)))
        return 0
    results = {}
    for name in VARIANTS:
        with variant(name):
            consts = refit(name, train)
            results[name] = (consts, float(np.mean(fk.ape(train))), by_gpu(rows, held))
    keys = list(results["shipped"][2])
    print("| variant | fitted rows | " +
          " | ".join(f"{g.split('-')[0]} {p}" for g, p in keys) + " |")
    print("|---" * (len(keys) + 2) + "|")
    for name, (consts, fitted, table) in results.items():
        print(f"| {name} ({consts}) | {fitted:.2%} | " +
              " | ".join(f"{table[k]:.1%}" for k in keys) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
