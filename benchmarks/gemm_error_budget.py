"""Where each GPU's GEMM error in the published kernels file comes from, as `trainsim validate`
scores it, and how much of it any model of the shape can remove.

    python benchmarks/gemm_error_budget.py                 # every GPU: sources, classes, worst rows
    python benchmarks/gemm_error_budget.py --errata        # kernels_errata.csv applied first
    python benchmarks/gemm_error_budget.py --gpu h100-sxm-80gb --worst 15
    python benchmarks/gemm_error_budget.py --pairs         # the bound from shapes two sources timed
    python benchmarks/gemm_error_budget.py --gpu h100-sxm-80gb --shapes  # source x shape class
    python benchmarks/gemm_error_budget.py --file kernels_h100_measured.csv --shapes
    python benchmarks/gemm_error_budget.py --harness       # what any per-source harness term can reach
    python benchmarks/gemm_error_budget.py --truth         # published rows against the project's own H100

**Budget.** The validator's per-GPU GEMM MAPE (its own prices: the compute chain with the bundled
kernel database where a GPU has one; the error of the rate for a TFLOP/s row, of the time for a
time row) is split into *points*: a group's points are its rows' summed error over the GPU's row
count, so a GPU's groups add up to its MAPE, and ``without`` is the GPU's MAPE with the group's
rows left out (what pricing that group exactly would give at best). Groups: the source (as
``fit_kernels.source_label`` names it) and dtype; then shape classes of the analytic model's own
choice (``roofline.gemm_tiles``: the tile it picks, its waves of tiles on the GPU's SMs, whether the
last wave's k loop is split, the share of each tile's time its fixed cost takes) and of the
measured kernel's length.

**Pairs** (``--pairs``). A shape (m, n, k; m and n swapped is the same product transposed, 16-bit
dtypes) timed on one GPU by two sources puts a floor under every model of the shape alone: for
times a and b and any prediction p, |p/a - 1| + |p/b - 1| >= |a - b| / max(a, b) (equality at p =
max(a, b)). Reported per source pair over both kernel files (``fit_kernels.FILES``): that floor as
a mean over the paired rows of both sources, and the second source's time MAPE on its paired
rows when the first source's time is matched exactly (the fitted source, as ``fit_kernels.py``
splits them, is listed first where one of the two is fitted).

**Shape classes** (``--shapes``): each source's rows by the classes a GEMM library tiles
differently (``shape_class``): small m (m <= 512: one or a few row tiles), odd n (n not a multiple
of 128: a padded last column tile), large k (k >= 8,192: the main loop dominates every tile),
the rest; crossed with the dtype (fp8 against 16-bit).

**Last wave** (a class of the budget): the share of the SMs the last wave of the chosen tiles
fills (``full``: whole waves), the wave-quantization residue a library's tile choice, split-k or
stream-K would act on.

**Harness oracle** (``--harness``): a measurement condition of a source (a cold L2, one call
timed, a clock, a profiler's launch gaps, a library release's fixed costs) moves every row of
that source by the same law. The most any such term can do is bounded by giving each source and
dtype its own best factor on the predicted time (a clock, a rate) and its own best factor plus
a time added per call (a per-call cost), chosen on that group's own rows
(``own_harness``): a GPU whose MAPE stays above a target with every source at its own best pair
has its error inside the sources (shape by shape), where no harness term can reach.

**Ground truth** (``--truth``): the published rows of a GPU whose shape (m, n, k, or n, m, k;
16-bit) the project's own measurement (``kernels_h100_measured.csv``: CUDA 13, CUDA-graph loop,
the same H100 SXM) also timed, scored three ways: with the model's price, with the measured
time of that shape as the price (the best any model that matches the project's GPU exactly
can do there), and with the best affine map a x t + b of those measured times (any harness law
of one clock factor and one time per call); then the log of the published over the measured
time against what each candidate mechanism would make it follow (Pearson r over the pairs):
the operands' bytes at HBM bandwidth over the kernel time (a cold L2 in the profiled source),
k (a small-k epilogue), the output tiles (m x n) and the model's waves (tile choice, wave
quantization), a split last wave, the kernel's length (a clock), and the model's own error on
the measured row (a fast or slow measured row).

Nothing here changes trainsim; it reads the model and the files as they stand.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import fit_kernels as fk

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import roofline, split_k
from trainsim.validate import BUNDLED_DIR, validate_file
from trainsim.validate.errata import corrected_file
from trainsim.validate.kernels import TIME_UNITS
from trainsim.workload.ops import Gemm

HERE = Path(__file__).resolve().parent
PUBLISHED = BUNDLED_DIR / "kernels_published.csv"
SOURCE_WIDTH = 48
ORDER: dict[str, int] = {}
"""Each bucket label's place among its class's buckets (``bucket``), for printing in order."""


class GemmRow(NamedTuple):
    """One dense GEMM row as the validator scored it."""

    id: str
    gpu: str
    source: str
    dtype: str
    m: int
    n: int
    k: int
    ape: float  # |predicted / measured - 1| as the validator scores it (its rate or its time)
    signed: float  # predicted over measured *time*, less 1 (positive: too slow), any unit
    time_s: float  # the measured kernel time
    rate: bool = False  # scored by its rate (a TFLOP/s row), not its time


def tile_choice(gpu_name: str, op: Gemm) -> tuple[str, float, int, float]:
    """(tile, waves, split parts, fixed-cost share) of the analytic model's best tile for ``op``
    on ``gpu_name`` alone (burst clock): the tile ``RooflineModel.gemm_efficiency`` takes, its
    tiles over the SMs, the parts the last wave's k loop splits into (1: none) and the tile's
    fixed cost over its main loop plus that cost."""
    spec = dataclasses.replace(catalog_gpu(gpu_name), sustained_of_burst=1.0)
    overhead = roofline.GEMM_TILE_OVERHEAD_K * roofline.gemm_rate(spec, op) / spec.gemm_ceiling(
        "bf16")
    stretch = 1.0 + roofline.block_promotion_k(spec, op)
    best = max(roofline.gemm_tiles(spec), key=lambda t: t[2] * roofline.tile_grid_efficiency(
        spec.num_sms, op, t[0], t[1], overhead, stretch))
    rows, cols, _ = best
    tiles = math.ceil(op.m / rows) * math.ceil(op.n / cols) * op.batch
    full, rest = divmod(tiles, spec.num_sms)
    parts = 1
    if rest and full < roofline.SPLIT_K_MAX_WAVES:
        parts = split_k.parts(op.k, spec.num_sms, rest, overhead, stretch)
    return f"{rows}x{cols}", tiles / spec.num_sms, parts, overhead / (op.k * stretch + overhead)


def gemm_rows(path: Path) -> list[GemmRow]:
    """The dense GEMM rows of a kernels file, priced by ``trainsim validate``'s own chain."""
    with open(path, newline="") as fh:
        cells = {r["id"]: r for r in csv.DictReader(fh)}
    _, results = validate_file(path)
    out = []
    for res in results:
        row = cells[res.id]
        if res.error or res.predicted is None or res.extra.get("excluded") \
                or res.extra.get("kind") != "gemm":
            continue
        rate = res.extra["unit"] == "TFLOP/s"
        time_s = float(res.extra["time_s"]) * res.predicted / res.measured if rate \
            else res.measured * TIME_UNITS[res.extra["unit"]]
        label = fk.source_label(fk.Row("", "", "", [], 0.0, full_source=row["source"]))
        out.append(GemmRow(res.id, res.extra["gpu"], label[:SOURCE_WIDTH], res.extra["dtype"],
                           int(row["m"]), int(row["n"]), int(row["k"]),
                           abs(res.predicted / res.measured - 1.0),
                           float(res.extra["time_s"]) / time_s - 1.0, time_s, rate))
    return out


def bucket(x: float, edges: tuple[float, ...], unit: str = "") -> str:
    """``x``'s bucket among ``edges``: '<=e' for the first edge at or above it, else '>last'."""
    labels = [f"<={e:g}{unit}" for e in edges] + [f">{edges[-1]:g}{unit}"]
    for i, label in enumerate(labels):
        ORDER.setdefault(label, i)
    return next((f"<={e:g}{unit}" for e in edges if x <= e), labels[-1])


def classes(r: GemmRow) -> dict[str, str]:
    """The row's shape classes (see the module docstring)."""
    tile, waves, parts, fixed = tile_choice(r.gpu, Gemm("g", r.m, r.n, r.k, r.dtype))
    return {"m": bucket(r.m, (256, 1024, 4096)), "n": bucket(r.n, (2048, 4096, 8192)),
            "k": bucket(r.k, (1024, 4096, 8192)), "tile": tile,
            "waves": bucket(waves, (1, 2, 4, 8)), "last wave": last_wave(waves),
            "split": "split k" if parts > 1 else "whole",
            "fixed cost": bucket(fixed, (0.05, 0.1, 0.2)),
            "measured": bucket(r.time_s * 1e6, (30, 100, 300, 1000), "us")}


def last_wave(waves: float) -> str:
    """The share of the SMs the last wave of tiles fills: 'full' for whole waves, else its
    bucket (the last of under one wave is the only one)."""
    rest = waves - math.floor(waves)
    ORDER.setdefault("full", 9)
    return "full" if rest < 1e-9 else bucket(rest, (0.25, 0.5, 0.75))


FACTORS = tuple(0.70 + 0.005 * i for i in range(141))
"""Factors on the predicted time the harness oracle tries (0.70-1.40)."""
ADDED_S = tuple(-12e-6 + 0.5e-6 * i for i in range(49))
"""Times per call the harness oracle adds to the predicted time (-12 to +12 us)."""


def harness_ape(rows: list[GemmRow], factor: float, added_s: float) -> float:
    """Mean APE of ``rows`` (scored as the validator scores each: rate or time) with every
    predicted time t priced as factor x t + added_s."""
    out = 0.0
    for r in rows:
        pred = max(1e-12, factor * (r.time_s * (1.0 + r.signed)) + added_s)
        ratio = pred / r.time_s  # predicted over measured time
        out += abs(1.0 / ratio - 1.0) if r.rate else abs(ratio - 1.0)
    return out / len(rows)


def own_harness(rows: list[GemmRow]) -> tuple[float, float, float, float, float]:
    """(best factor, its MAPE, best factor with a per-call time, that time, their MAPE) of one
    source's rows (``--harness``; module docstring): the grids ``FACTORS`` x ``ADDED_S``."""
    f1 = min(FACTORS, key=lambda f: harness_ape(rows, f, 0.0))
    f2, b2 = min(((f, b) for f in FACTORS[::2] for b in ADDED_S),
                 key=lambda fb: harness_ape(rows, *fb))
    return f1, harness_ape(rows, f1, 0.0), f2, b2, harness_ape(rows, f2, b2)


SMALL_M = 512
LARGE_K = 8192


def shape_class(r: GemmRow) -> str:
    """The row's shape class for ``--shapes`` (module docstring): the first that applies of
    small m, odd n, large k; else 'regular'; with '8-bit' or '16-bit'."""
    if r.m <= SMALL_M:
        cls = f"m<={SMALL_M}"
    elif r.n % roofline.TILE:
        cls = "odd n"
    elif r.k >= LARGE_K:
        cls = f"k>={LARGE_K}"
    else:
        cls = "regular"
    return f"{cls}, {'8-bit' if r.dtype == 'fp8' else '16-bit'}"


def budget(rows: list[GemmRow], key) -> list[tuple[str, int, float, float, float, float]]:
    """(group, n, MAPE, mean signed time error, points, MAPE without) per group ``key(row)`` of
    ``rows`` (one GPU's): points (fractions; x 100 in print) add up to the rows' MAPE."""
    total = sum(r.ape for r in rows)
    groups: dict[str, list[GemmRow]] = defaultdict(list)
    for r in rows:
        groups[key(r)].append(r)
    out = []
    for name, g in sorted(groups.items(), key=lambda kv: (ORDER.get(kv[0], -1), kv[0])):
        ape = sum(r.ape for r in g)
        rest = len(rows) - len(g)
        out.append((name, len(g), ape / len(g), sum(r.signed for r in g) / len(g),
                    ape / len(rows), (total - ape) / rest if rest else 0.0))
    return out


def pair_floor(a: float, b: float) -> float:
    """The least |p/a - 1| + |p/b - 1| over every prediction p (at p = max(a, b))."""
    return abs(a - b) / max(a, b)


def pairs(files: list[Path]) -> list[tuple[str, str, str, int, float, float]]:
    """(GPU, source a, source b, pairs, floor of the mean time APE over both sources' paired
    rows, b's time MAPE with a matched exactly) per source pair (module docstring); a is the
    source with the larger share of rows in ``fit_kernels.py``'s fit."""
    rows = [r for r in fk.load(files) if r.kind == "gemm" and len(r.ops) == 1]
    held = fk.split(rows)
    fitted: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        fitted[label(r)].append(not fk.is_held(r, held))
    share = {src: sum(v) / len(v) for src, v in fitted.items()}
    first: dict[tuple, fk.Row] = {}
    found: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        op = r.ops[0]
        if op.dtype not in ("bf16", "fp16") or getattr(op, "grouped", ""):
            continue
        for m, n in ((op.m, op.n), (op.n, op.m)):
            other = first.get((r.gpu, m, n, op.k))
            if other is not None and label(other) != label(r):
                a, b = sorted((other, r), key=lambda x: (-share[label(x)], label(x)))
                found[(r.gpu, label(a), label(b))].append((a.measured_s, b.measured_s))
                break
        first.setdefault((r.gpu, op.m, op.n, op.k), r)
    return [(g, a, b, len(v), sum(pair_floor(x, y) for x, y in v) / (2 * len(v)),
             sum(abs(x / y - 1.0) for x, y in v) / len(v))
            for (g, a, b), v in sorted(found.items())]


TRUTH = BUNDLED_DIR / "kernels_h100_measured.csv"


def pearson(x: list[float], y: list[float]) -> float:
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx, syy = sum((a - mx) ** 2 for a in x), sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else 0.0


def affine_map(measured: list[float], published: list[float]) -> tuple[float, float]:
    """(a, b) of the least squares of a x measured + b - published relative to published."""
    xs = [(m / p, 1.0 / p) for m, p in zip(measured, published)]
    s11 = sum(u * u for u, _ in xs)
    s12 = sum(u * v for u, v in xs)
    s22 = sum(v * v for _, v in xs)
    r1, r2 = sum(u for u, _ in xs), sum(v for _, v in xs)
    det = s11 * s22 - s12 * s12
    return (r1 * s22 - r2 * s12) / det, (s11 * r2 - s12 * r1) / det


def geomean_row(rows: list[GemmRow]) -> GemmRow:
    """One row for a shape timed more than once: the geometric mean of the times, the
    model's signed error taken against it."""
    t = math.exp(sum(math.log(r.time_s) for r in rows) / len(rows))
    predicted = rows[0].time_s * (1.0 + rows[0].signed)  # the same product: the same price
    return rows[0]._replace(time_s=t, signed=predicted / t - 1.0, ape=abs(predicted / t - 1.0))


def truth(rows: list[GemmRow], own: list[GemmRow]) -> dict:
    """The published rows of ``own``'s GPU paired with ``own``'s 16-bit rows of the same shape
    (module docstring, ``--truth``)."""
    gpu_name = own[0].gpu
    timed: dict[tuple[int, int, int], list[GemmRow]] = defaultdict(list)
    for r in own:  # a shape and its transpose: the same product
        if r.dtype in ("bf16", "fp16"):
            timed[(r.m, r.n, r.k)].append(r)
            if r.m != r.n:
                timed[(r.n, r.m, r.k)].append(r)
    measured = {shape: geomean_row(v) for shape, v in timed.items()}
    cell = [r for r in rows if r.gpu == gpu_name]
    paired = [(r, measured[(r.m, r.n, r.k)]) for r in cell
              if r.dtype in ("bf16", "fp16") and (r.m, r.n, r.k) in measured]
    at_truth = {r.id: abs(t.time_s / r.time_s - 1.0) for r, t in paired}
    a, b = affine_map([t.time_s for _, t in paired], [r.time_s for r, _ in paired])
    spec = catalog_gpu(gpu_name)
    log_ratio = [math.log(r.time_s / t.time_s) for r, t in paired]
    mean = sum(log_ratio) / len(log_ratio)
    covariates = {
        "operand bytes at HBM bandwidth over the measured time (cold L2)": [
            math.log(2 * (r.m * r.k + r.n * r.k + r.m * r.n) / spec.hbm_bw_Bps / t.time_s)
            for r, t in paired],
        "log k (small-k epilogue)": [math.log(r.k) for r, _ in paired],
        "log m x n (output tiles)": [math.log(r.m * r.n) for r, _ in paired],
        "log waves of the model's tile (wave quantization)": [
            math.log(tile_choice(gpu_name, Gemm("g", r.m, r.n, r.k, r.dtype))[1])
            for r, _ in paired],
        "split last wave (0/1)": [
            float(tile_choice(gpu_name, Gemm("g", r.m, r.n, r.k, r.dtype))[2] > 1)
            for r, _ in paired],
        "log measured time (clock)": [math.log(t.time_s) for _, t in paired],
        "model's signed error on the measured row": [t.signed for _, t in paired],
    }
    return {
        "gpu": gpu_name, "cell_n": len(cell), "n": len(paired),
        "cell": sum(r.ape for r in cell) / len(cell),
        "cell_at_truth": sum(at_truth.get(r.id, r.ape) for r in cell) / len(cell),
        "model": sum(r.ape for r, _ in paired) / len(paired),
        "truth": sum(at_truth.values()) / len(paired),
        "affine": (a, b, sum(abs((a * t.time_s + b) / r.time_s - 1.0) for r, t in paired)
                   / len(paired)),
        "own_model": sum(abs(t.signed) for _, t in paired) / len(paired),
        "log_mean": mean,
        "log_sd": math.sqrt(sum((x - mean) ** 2 for x in log_ratio) / (len(log_ratio) - 1)),
        "r": {name: pearson(v, log_ratio) for name, v in covariates.items()},
        "by_waves": by_waves(paired, gpu_name),
    }


def by_waves(paired: list[tuple[GemmRow, GemmRow]], gpu_name: str
             ) -> list[tuple[str, int, float, float, float, float]]:
    """(waves of the model's tile, pairs, mean and sd of log(published / measured time), the
    model's MAPE on the published rows, the MAPE at the measured time) per class."""
    out = []
    for name, lo, hi in (("< 1", 0.0, 1.0), ("1-2", 1.0, 2.0), (">= 2", 2.0, math.inf)):
        sel = [(r, t) for r, t in paired
               if lo <= tile_choice(gpu_name, Gemm("g", r.m, r.n, r.k, r.dtype))[1] < hi]
        if not sel:
            continue
        x = [math.log(r.time_s / t.time_s) for r, t in sel]
        mean = sum(x) / len(x)
        sd = math.sqrt(sum((v - mean) ** 2 for v in x) / max(len(x) - 1, 1))
        out.append((name, len(sel), mean, sd, sum(r.ape for r, _ in sel) / len(sel),
                    sum(abs(t.time_s / r.time_s - 1.0) for r, t in sel) / len(sel)))
    return out


def print_truth(rows: list[GemmRow]) -> None:
    t = truth(rows, gemm_rows(TRUTH))
    a, b, affine = t["affine"]
    print(f"### {t['gpu']}: {t['n']} of the cell's {t['cell_n']} rows timed by {TRUTH.name} too\n")
    print("| the paired rows priced by | their MAPE | the GPU's GEMM cell |\n|---|---|---|")
    print(f"| the model | {t['model']:.1%} | {t['cell']:.2%} |")
    print(f"| the measured time of the shape | {t['truth']:.1%} | {t['cell_at_truth']:.2%} |")
    print(f"| {a:.3f} x the measured time + {b * 1e6:.2f} us (best affine map) | {affine:.1%} | |")
    print(f"\nThe model on the measured rows themselves: {t['own_model']:.1%}. Published over "
          f"measured time, log: mean {t['log_mean']:+.3f}, sd {t['log_sd']:.3f}.\n")
    print("| mechanism the ratio would follow | Pearson r |\n|---|---|")
    for name, r in t["r"].items():
        print(f"| {name} | {r:+.2f} |")
    print("\n| waves of the model's tile | pairs | log ratio mean | sd | model MAPE | MAPE at the "
          "measured time |\n|---|---|---|---|---|---|")
    for name, n, mean, sd, model, at in t["by_waves"]:
        print(f"| {name} | {n} | {mean:+.3f} | {sd:.3f} | {model:.1%} | {at:.1%} |")


def print_shapes(rows: list[GemmRow], worst: int) -> None:
    """One GPU's rows by source and shape class (``shape_class``), each class's worst rows."""
    print("| source | shape class | n | MAPE | signed (time) | points | worst (signed time) |\n"
          "|---|---|---|---|---|---|---|")
    for name, n, mape, signed, pts, _ in budget(rows, lambda r: f"{r.source}|{shape_class(r)}"):
        src, cls = name.split("|")
        mine = sorted((r for r in rows if r.source == src and shape_class(r) == cls),
                      key=lambda r: -r.ape)[:max(0, min(worst, 3))]
        tops = "; ".join(f"{r.m}x{r.n}x{r.k} {r.signed:+.0%}" for r in mine)
        print(f"| {src} | {cls} | {n} | {mape:.1%} | {signed:+.1%} | {100 * pts:.2f} | {tops} |")


def print_harness(rows: list[GemmRow]) -> None:
    """One GPU's rows with each source (and dtype) at its own best harness term
    (``own_harness``), and the GPU's MAPE were every source priced so."""
    print("| source (dtype) | n | MAPE | own factor | MAPE | own factor, per-call time | MAPE |\n"
          "|---|---|---|---|---|---|---|")
    groups: dict[str, list[GemmRow]] = defaultdict(list)
    for r in rows:
        groups[f"{r.source} ({r.dtype})"].append(r)
    at_factor = at_both = 0.0
    for name, g in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        f1, m1, f2, b2, m2 = own_harness(g)
        at_factor += m1 * len(g)
        at_both += m2 * len(g)
        print(f"| {name} | {len(g)} | {sum(r.ape for r in g) / len(g):.1%} | {f1:.3f} | {m1:.1%} |"
              f" {f2:.2f}, {b2 * 1e6:+.1f} us | {m2:.1%} |")
    print(f"\nevery source at its own factor: {at_factor / len(rows):.2%}; at its own factor and "
          f"per-call time: {at_both / len(rows):.2%}")


def label(r: fk.Row) -> str:
    return fk.source_label(r)[:SOURCE_WIDTH]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--errata", action="store_true", help="apply kernels_errata.csv first")
    ap.add_argument("--gpu", help="one GPU (catalog name); default every GPU")
    ap.add_argument("--worst", type=int, default=8, help="worst rows listed per GPU")
    ap.add_argument("--pairs", action="store_true", help="the two-source floor only")
    ap.add_argument("--shapes", action="store_true", help="each source's rows by shape class")
    ap.add_argument("--harness", action="store_true",
                    help="each source at its own best time factor and per-call time")
    ap.add_argument("--truth", action="store_true",
                    help="the published rows the project's own measurement timed too")
    ap.add_argument("--file", default=PUBLISHED.name,
                    help="a bundled kernels file (default kernels_published.csv)")
    args = ap.parse_args(argv)
    path = BUNDLED_DIR / args.file
    if args.errata and path != PUBLISHED:
        ap.error("--errata corrects kernels_published.csv only")
    if args.errata:
        path = corrected_file(PUBLISHED, HERE / "kernels_errata.csv", tempfile.mkdtemp())[0]
    if args.pairs:
        files = [path] + [BUNDLED_DIR / f for f in fk.FILES[1:]]
        print("| GPU | source a (fitted first) | source b | pairs | floor, mean APE of both |"
              " b's MAPE at a's time |\n|---|---|---|---|---|---|")
        for g, a, b, n, floor, at_a in pairs(files):
            print(f"| {g} | {a} | {b} | {n} | {floor:.1%} | {at_a:.1%} |")
        return 0
    rows = gemm_rows(path)
    if args.truth:
        print_truth(rows)
        return 0
    gpus = sorted({r.gpu for r in rows} if not args.gpu else {args.gpu})
    print(f"{path.name}{' (errata applied)' if args.errata else ''}: GEMM rows per GPU")
    for g in gpus:
        mine = [r for r in rows if r.gpu == g]
        if not mine:
            continue
        print(f"\n### {g}: {len(mine)} rows, MAPE {sum(r.ape for r in mine) / len(mine):.2%}\n")
        if args.shapes:
            print_shapes(mine, args.worst)
            continue
        if args.harness:
            print_harness(mine)
            continue
        cls = {r.id: classes(r) for r in mine}
        print("| group | class | n | MAPE | signed (time) | points | MAPE without |\n"
              "|---|---|---|---|---|---|---|")
        keys = [("source", lambda r: f"{r.source} ({r.dtype})")] + [
            (c, lambda r, c=c, cls=cls: cls[r.id][c]) for c in next(iter(cls.values()))]
        for label, key in keys:
            for name, n, mape, signed, pts, without in budget(mine, key):
                print(f"| {label} | {name} | {n} | {mape:.1%} | {signed:+.1%} | {100 * pts:.2f} | "
                      f"{without:.1%} |")
        print("\n| worst rows | m x n x k | dtype | signed (time) | tile, waves, split, fixed | "
              "measured |\n|---|---|---|---|---|---|")
        for r in sorted(mine, key=lambda r: -r.ape)[:args.worst]:
            c = cls[r.id]
            print(f"| {r.id} | {r.m} x {r.n} x {r.k} | {r.dtype} | {r.signed:+.1%} | "
                  f"{c['tile']}, {c['waves']}, {c['split']}, {c['fixed cost']} | "
                  f"{r.time_s * 1e6:.0f} us |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
