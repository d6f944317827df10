"""Were the bundled kernel databases' GEMM records timed in a loop? The evidence, and what
reading them so (``compute.database.RECORD_LOOP``) would do to the kernel files.

    PYTHONPATH=src python benchmarks/gemm39_db_loop.py              # records, pairs, what-if
    PYTHONPATH=src python benchmarks/gemm39_db_loop.py --records    # one part only
    PYTHONPATH=src python benchmarks/gemm39_db_loop.py --pairs
    PYTHONPATH=src python benchmarks/gemm39_db_loop.py --whatif     # ~15 s
    PYTHONPATH=src python benchmarks/gemm39_db_loop.py --priced     # the H100 rows a database prices
    PYTHONPATH=src python benchmarks/gemm39_db_loop.py --width      # interpolation width, left out
    PYTHONPATH=src python benchmarks/gemm39_db_loop.py --fp8        # the fp8 MAMF rows' K term

``trainsim profile`` times each kernel's repeats back to back behind one sleep kernel
(``profile/device.py`` ``measure``), so a long GEMM's median repeat runs on a board that has been
at full power for tens of calls, while ``compute.database`` reads every record as a burst-clock
time (its analytic reference is the roofline at ``sustained_of_burst`` 1, no loop).

**Records** (``--records``): for each bundled database (H100 SXM, H200 SXM) and GEMM kind, the log
of the record's time over the analytic model's under the two readings: the burst roofline (as
shipped) and the roofline of a benchmark loop toward the GPU's sustained clock
(``roofline.loop_clock_factor``, the law and tau the kernel validator already gives looped rows).
A record set timed in a loop shows, against the burst reading, a log ratio that rises with the
kernel's length (Pearson r with log time), and a smaller spread under the loop reading.

**Pairs** (``--pairs``): the same shapes timed by ``measure_kernels.py`` (a CUDA graph of 10 or 30
calls replayed three times: a loop) over the records. Two loops agree at every length; a loop
over a burst record would pull apart as the kernel lengthens (up to 1 / sustained_of_burst).

**What-if** (``--whatif``): MAPE of ``kernels_published.csv`` and the two measured files (GEMM per
GPU, each other kind) as shipped, with ``RECORD_LOOP`` and with ``RECORD_GAPS`` (a
record read as the kernel's time without the launch gap the model charges). The training board's
figures for the two switches are in benchmarks/RESULTS.md (39th session, gemm39) and in each
switch's docstring: they are why neither is shipped.

**Priced** (``--priced``): which H100 rows of ``kernels_published.csv`` a database prices at all
(vidur's fp16 GEMMs have no record of their dtype: roofline), and for those the analytic price,
the database's ratio and its heaviest neighbours: whether the interpolation is the H100 error.

**Width** (``--width``): the interpolation's grid question. Each record predicted from the others
(leave one out) at ``NEIGHBOUR_FACTOR`` widths 1.25-4 and infinite (the kind's mean ratio alone),
and each GEMM of the measured file whose shape has a record priced with that shape's record left
out (the database as it would price a shape it never measured), beside the roofline alone.

**fp8** (``--fp8``): each fp8 MAMF row of ``kernels_published.csv`` through the roofline: its tile,
waves, the share of its time the per-tile fixed cost takes (``GEMM_TILE_OVERHEAD_K`` in the
dtype's k-steps: the K-dependent pipeline fill the fp8 path already has) and its rate with that
cost and with it removed.

Nothing here changes trainsim's predictions.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import itertools
import math
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import chain, database, roofline
from trainsim.compute.roofline import RooflineModel
from trainsim.validate import BUNDLED_DIR, validate_file
from trainsim.validate import kernels as vk
from trainsim.workload.ops import Gemm

HERE = Path(__file__).resolve().parent
GPUS = ("h100-sxm-80gb", "h200-sxm-141gb")
MEASURED = {"h100-sxm-80gb": BUNDLED_DIR / "kernels_h100_measured.csv",
            "h200-sxm-141gb": HERE / "kernels_h200_measured.csv"}
BINS_S = (0.0, 1e-4, 3e-4, 1e-3, 3e-3, math.inf)


def bundled(gpu_name: str) -> database.KernelDatabase:
    """The bundled database of ``gpu_name`` as the validator loads it."""
    spec = catalog_gpu(gpu_name)
    path = chain.bundled_database(spec)
    assert path is not None, gpu_name
    return database.KernelDatabase.load(path, catalog_gpu)


def loop_roofline(spec) -> RooflineModel:
    """The roofline of a benchmark loop on ``spec`` at its boost clock (as the validator's)."""
    return RooflineModel(dataclasses.replace(spec, sustained_of_burst=1.0),
                         spec.sustained_of_burst * spec.power_scale)


def gemm_records(db: database.KernelDatabase) -> dict[tuple, list[tuple[Gemm, float]]]:
    """Each GEMM kind's records as (op, measured seconds)."""
    out: dict[tuple, list[tuple[Gemm, float]]] = {}
    for family, kind in db.kinds.items():
        if family[0] != "gemm":
            continue
        rows = []
        for coords, log_ratio in zip(kind.coords, kind.log_ratio):
            m, n, k, b = (round(math.exp(c)) for c in coords)
            op = Gemm("db", m, n, k, family[1], b, fp8_fast_accum=bool(family[2]))
            rows.append((op, db.modelled(op) * math.exp(log_ratio)))
        out[family] = rows
    return out


@dataclasses.dataclass(frozen=True)
class Spread:
    """A set of log ratios against the log of each kernel's time."""

    n: int
    mean: float
    sd: float
    r: float
    by_bin: tuple[tuple[int, float], ...]  # (rows, mean log ratio) per ``BINS_S`` bin


def spread(times: list[float], log_ratios: list[float]) -> Spread:
    t, y = np.array(times), np.array(log_ratios)
    r = float(np.corrcoef(np.log(t), y)[0, 1]) if len(y) > 2 else float("nan")
    bins = []
    for lo, hi in itertools.pairwise(BINS_S):
        sel = (t >= lo) & (t < hi)
        bins.append((int(sel.sum()), float(y[sel].mean()) if sel.any() else float("nan")))
    return Spread(len(y), float(y.mean()), float(y.std()), r, tuple(bins))


def record_spreads(gpu_name: str) -> dict[tuple, dict[str, Spread]]:
    """Per GEMM kind of the bundled database: the records' log(measured / modelled) against the
    burst roofline (shipped) and against the loop roofline."""
    db = bundled(gpu_name)
    loop = loop_roofline(catalog_gpu(gpu_name))
    out = {}
    for family, rows in gemm_records(db).items():
        times = [t for _, t in rows]
        burst = [math.log(t / db.analytic.time(op)) for op, t in rows]
        looped = [math.log(t / loop.time(op)) for op, t in rows]
        out[family] = {"burst": spread(times, burst), "loop": spread(times, looped)}
    return out


def pair_spread(gpu_name: str) -> Spread:
    """log(measured file's time / record's time) over the GEMM shapes both timed."""
    db = bundled(gpu_name)
    times, ratios = [], []
    with open(MEASURED[gpu_name], newline="") as fh:
        for row in csv.DictReader(fh):
            if row["kind"] != "gemm":
                continue
            op = Gemm("x", int(row["m"]), int(row["n"]), int(row["k"]), row["dtype"])
            t = db.exact.get(database._exact_key(op))
            if t is None:
                continue
            measured = op.flops / (float(row["measured_value"]) * 1e12)
            times.append(t)
            ratios.append(math.log(measured / t))
    return spread(times, ratios)


@contextlib.contextmanager
def reading(loop: bool = False, gaps: bool = False) -> Iterator[None]:
    """``database.RECORD_LOOP`` and ``RECORD_GAPS`` set, every cached database and model
    dropped before and after."""
    saved = database.RECORD_LOOP, database.RECORD_GAPS
    database.RECORD_LOOP, database.RECORD_GAPS = loop, gaps
    chain._LOADED.clear()
    vk._model.cache_clear()
    try:
        yield
    finally:
        database.RECORD_LOOP, database.RECORD_GAPS = saved
        chain._LOADED.clear()
        vk._model.cache_clear()


def record_loop(on: bool) -> contextlib.AbstractContextManager[None]:
    """``reading`` with ``RECORD_LOOP`` alone."""
    return reading(loop=on)


READINGS = {"shipped": {}, "RECORD_LOOP": {"loop": True}, "RECORD_GAPS": {"gaps": True}}


def cells(path: Path) -> dict[str, float]:
    """MAPE per GEMM GPU (``gemm <gpu>``) and per other kernel kind of a kernels file."""
    _, results = validate_file(path)
    apes: dict[str, list[float]] = defaultdict(list)
    for res in results:
        if res.error or res.predicted is None:
            continue
        kind = res.extra.get("kind")
        apes[f"gemm {res.extra['gpu']}" if kind == "gemm" else str(kind)].append(res.ape)
    return {g: sum(v) / len(v) for g, v in apes.items()}


def whatif() -> dict[str, dict[str, dict[str, float]]]:
    """{file: {reading: {cell: MAPE}}} for the published and the two measured files."""
    files = {"kernels_published": BUNDLED_DIR / "kernels_published.csv",
             **{f"{g} measured": p for g, p in MEASURED.items()}}
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, path in files.items():
        out[name] = {}
        for label, flags in READINGS.items():
            with reading(**flags):
                out[name][label] = cells(path)
    return out


def priced_rows(gpu_name: str = "h100-sxm-80gb") -> list[dict]:
    """The published GEMM rows of ``gpu_name`` with the model that priced each, and for the
    database-priced ones the analytic price and the interpolation's ratio."""
    _, results = validate_file(BUNDLED_DIR / "kernels_published.csv")
    db = bundled(gpu_name)
    with open(BUNDLED_DIR / "kernels_published.csv", newline="") as fh:
        shapes = {r["id"]: r for r in csv.DictReader(fh)}
    out = []
    for res in results:
        if res.extra.get("kind") != "gemm" or res.extra.get("gpu") != gpu_name:
            continue
        model = str(res.chosen.get("model", ""))
        row = {"id": res.id, "model": model, "signed": res.predicted / res.measured - 1}
        if model.startswith("database"):
            s = shapes[res.id]
            op = Gemm("x", int(s["m"]), int(s["n"]), int(s["k"]), vk._dtype(s))
            t, _ = db.lookup(op)
            row["analytic_TFLOPs"] = op.flops / db.analytic.time(op) / 1e12
            row["ratio"] = t / db.analytic.time(op)
        out.append(row)
    return out


WIDTHS = (1.25, 1.5, 2.0, 3.0, 4.0, math.inf)


def _estimate(pts: np.ndarray, r: np.ndarray, x: np.ndarray, width: float) -> float:
    """``database._Kind.ratio`` at ``x`` from records ``pts``/``r`` at another width."""
    if math.isinf(width):
        return float(r.mean())
    d2 = (((pts - x) / math.log(width)) ** 2).sum(axis=1)
    w = np.exp(-0.5 * d2)
    return float((w @ r + database.PRIOR_WEIGHT * r.mean()) / (w.sum() + database.PRIOR_WEIGHT))


def width_table(gpu_name: str) -> dict[str, dict]:
    """Per GEMM dtype of the bundled database: leave-one-out MAPE of the records at each width,
    the measured file's MAPE with each shape's own record left out, and the roofline alone's."""
    spec = catalog_gpu(gpu_name)
    db = bundled(gpu_name)
    loop = loop_roofline(spec)
    with open(MEASURED[gpu_name], newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["kind"] == "gemm"]
    out = {}
    for family, kind in db.kinds.items():
        if family[0] != "gemm" or family[2]:
            continue
        pts, r = np.array(kind.coords), np.array(kind.log_ratio)
        file_ops = []
        for row in rows:
            op = Gemm("x", int(row["m"]), int(row["n"]), int(row["k"]), row["dtype"])
            if database._family(op) == family:
                file_ops.append((op, op.flops / (float(row["measured_value"]) * 1e12)))
        loo, held = {}, {}
        for width in WIDTHS:
            keep = np.ones(len(r), bool)
            errs = []
            for i in range(len(r)):
                keep[i] = False
                errs.append(abs(math.exp(_estimate(pts[keep], r[keep], pts[i], width) - r[i]) - 1))
                keep[i] = True
            loo[width] = float(np.mean(errs))
            errs = []
            for op, measured in file_ops:
                x = np.array(database._coords(op))
                other = ((pts - x) ** 2).sum(axis=1) > 1e-12
                ratio = math.exp(_estimate(pts[other], r[other], x, width))
                # a looped row priced from a record as shipped: the record's ratio to the
                # burst roofline on the loop's roofline
                errs.append(abs(loop.time(op) * ratio / measured - 1))
            held[width] = float(np.mean(errs))
        alone = float(np.mean([abs(loop.time(op) / t - 1) for op, t in file_ops]))
        out[family[1]] = {"n": len(r), "file_n": len(file_ops), "loo": loo, "held": held,
                          "roofline": alone}
    return out


def fp8_rows() -> list[dict]:
    """The fp8 MAMF rows of kernels_published.csv through the roofline's tile model."""
    out = []
    with open(BUNDLED_DIR / "kernels_published.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["kind"] != "gemm" or vk._dtype(row) != "fp8" or not row["id"].startswith("mamf-"):
                continue
            spec = dataclasses.replace(catalog_gpu(row["gpu"]), sustained_of_burst=1.0)
            op = Gemm("x", int(row["m"]), int(row["n"]), int(row["k"]), "fp8")
            rate = roofline.gemm_rate(spec, op)
            overhead_k = roofline.GEMM_TILE_OVERHEAD_K * rate / spec.gemm_ceiling("bf16")
            best = max(((tr * roofline.tile_grid_efficiency(spec.num_sms, op, a, b, overhead_k,
                                                            1.0), a, b, tr)
                        for a, b, tr in roofline.gemm_tiles(spec)))
            eff, a, b, tr = best
            bare = tr * roofline.tile_grid_efficiency(spec.num_sms, op, a, b, 0.0, 1.0)
            tiles = math.ceil(op.m / a) * math.ceil(op.n / b)
            out.append({"id": row["id"], "gpu": row["gpu"], "shape": (op.m, op.n, op.k),
                        "measured": float(row["measured_value"]), "ceiling": rate / 1e12,
                        "tile": f"{a}x{b}", "waves": tiles / spec.num_sms,
                        "overhead_k": overhead_k, "with_cost": rate * eff / 1e12,
                        "without_cost": rate * bare / 1e12})
    return out


def _bins(s: Spread) -> str:
    return " | ".join(f"{n}: {100 * m:+.1f}" for n, m in s.by_bin)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for part in ("records", "pairs", "whatif", "priced", "width", "fp8"):
        ap.add_argument(f"--{part}", action="store_true")
    args = ap.parse_args()
    every = not (args.records or args.pairs or args.whatif or args.priced or args.width
                 or args.fp8)
    edges = ["<0.1 ms", "0.1-0.3", "0.3-1", "1-3", ">3 ms"]
    if every or args.records:
        print("## Records: log(record / analytic) by reading (mean, sd, r with log time; "
              "rows: mean % per length bin)\n")
        print("| GPU | kind | reading | n | mean | sd | r | " + " | ".join(edges) + " |")
        print("|---|---|---|---|---|---|---|" + "---|" * len(edges))
        for g in GPUS:
            for family, by in record_spreads(g).items():
                kind = family[1] + (" fast-accum" if family[2] else "")
                for reading, s in by.items():
                    print(f"| {g} | {kind} | {reading} | {s.n} | {100 * s.mean:+.1f} % | "
                          f"{s.sd:.3f} | {s.r:+.2f} | {_bins(s)} |")
        print()
    if every or args.pairs:
        print("## Pairs: log(measured file / record) at the shapes both timed\n")
        print("| GPU | n | mean | sd | r | " + " | ".join(edges) + " |")
        print("|---|---|---|---|---|" + "---|" * len(edges))
        for g in GPUS:
            s = pair_spread(g)
            print(f"| {g} | {s.n} | {100 * s.mean:+.1f} % | {s.sd:.3f} | {s.r:+.2f} | "
                  f"{_bins(s)} |")
        print()
    if every or args.whatif:
        print("## What-if: MAPE by reading of the records (GEMM per GPU, other kinds)\n")
        for name, by in whatif().items():
            print(f"| {name} | " + " | ".join(READINGS) + " |")
            print("|---|" + "---|" * len(READINGS))
            for cell in sorted(by["shipped"]):
                print(f"| {cell} | " + " | ".join(f"{100 * by[r][cell]:.2f}" for r in READINGS)
                      + " |")
            print()
    if every or args.priced:
        rows = priced_rows()
        models: dict[str, int] = defaultdict(int)
        for r in rows:
            models[r["model"]] += 1
        print("## H100 published GEMM rows by pricing model: " +
              ", ".join(f"{m} {n}" for m, n in sorted(models.items())) + "\n")
        for r in rows:
            if "ratio" in r:
                print(f"- {r['id']}: {100 * r['signed']:+.1f} % (rate), analytic "
                      f"{r['analytic_TFLOPs']:.0f} TFLOP/s x database rate factor "
                      f"{1 / r['ratio']:.3f} ({r['model']})")
        print()
    if every or args.width:
        print("## Width: interpolation MAPE, each record / each measured-file shape left out\n")
        print("| GPU | dtype | records | file rows | " +
              " | ".join(f"width {w:g}" for w in WIDTHS) + " | roofline alone |")
        print("|---|---|---|---|" + "---|" * (len(WIDTHS) + 1))
        for g in GPUS:
            for dtype, t in width_table(g).items():
                cells = " | ".join(f"{100 * t['loo'][w]:.2f} / {100 * t['held'][w]:.2f}"
                                   for w in WIDTHS)
                print(f"| {g} | {dtype} | {t['n']} | {t['file_n']} | {cells} | "
                      f"{100 * t['roofline']:.2f} |")
        print()
    if every or args.fp8:
        print("## fp8 MAMF rows through the roofline (burst; TFLOP/s)\n")
        print("| row | m x n x k | measured | ceiling | tile, waves | fixed cost (k-steps) | "
              "tile model (no launch) | without the fixed cost |")
        print("|---|---|---|---|---|---|---|---|")
        for r in fp8_rows():
            print(f"| {r['id']} | {' x '.join(map(str, r['shape']))} | {r['measured']:.0f} | "
                  f"{r['ceiling']:.0f} | {r['tile']}, {r['waves']:.2f} | {r['overhead_k']:.0f} "
                  f"| {r['with_cost']:.0f} ({100 * (r['with_cost'] / r['measured'] - 1):+.1f} %)"
                  f" | {r['without_cost']:.0f} "
                  f"({100 * (r['without_cost'] / r['measured'] - 1):+.1f} %) |")


if __name__ == "__main__":
    main()
