"""Experiments, not in the model: three GEMM shape mechanisms against the kernel rows.

    python benchmarks/gemm_variants.py             # each variant, tile overhead refitted
    python benchmarks/gemm_variants.py --residual  # the shipped model's GEMM residual by structure
    python benchmarks/gemm_variants.py --training  # public and held-out training MAPE per variant

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
from trainsim.compute import roofline
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


VARIANTS: dict[str, Callable[[roofline.RooflineModel, Gemm], float]] = {
    "shipped": SHIPPED, "refitted": SHIPPED, "ramp": ramp_efficiency,
    "tiles192": tile_oracle_efficiency, "two_ctas": two_cta_efficiency}
"""``shipped`` is never refitted (the model as it ships); every other variant is."""

TRAINING_FILES = (BUNDLED_DIR / "training_public.csv",
                  Path(__file__).resolve().parent / "training_heldout.csv")
"""The training files ``--training`` validates (the public file's bundled copy, the same bytes
as shared/validation's; the held-out file kept in benchmarks/)."""


@contextlib.contextmanager
def variant(name: str) -> Iterator[None]:
    """The roofline with ``name``'s GEMM efficiency; the shipped model and constants after."""
    saved = (roofline.GEMM_TILE_OVERHEAD_K, dict(PARAMS))
    roofline.RooflineModel.gemm_efficiency = VARIANTS[name]  # type: ignore[method-assign]
    try:
        yield
    finally:
        roofline.RooflineModel.gemm_efficiency = SHIPPED  # type: ignore[method-assign]
        roofline.GEMM_TILE_OVERHEAD_K = saved[0]
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--residual", action="store_true", help="the shipped model's residual")
    ap.add_argument("--ksweep", action="store_true",
                    help="marginal rate and fixed cost per tile of each measured k sweep")
    ap.add_argument("--training", action="store_true",
                    help="public and held-out training MAPE under each variant")
    ap.add_argument("--training-variant", choices=list(VARIANTS), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.training:
        training(Path(__file__).resolve())
        return 0
    rows = [r for r in fk.load([BUNDLED_DIR / f for f in fk.FILES]) if r.kind == "gemm"]
    held = fk.split(rows)
    if args.residual:
        residual(rows, held)
        return 0
    if args.ksweep:
        k_sweeps(rows)
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
