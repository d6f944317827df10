"""GEMM records read against the tiles their own cuBLAS ran (``compute.database.TRACED_TILES``).

    PYTHONPATH=src python benchmarks/gemm41_tiles.py              # all parts (~30 s)
    PYTHONPATH=src python benchmarks/gemm41_tiles.py --tiles      # the GPT-3 TP 8 shapes' grids
    PYTHONPATH=src python benchmarks/gemm41_tiles.py --left-out   # priced without own record
    PYTHONPATH=src python benchmarks/gemm41_tiles.py --cells      # validator cells, flag off / on

A database record prices a GEMM it did not time through the log of measured over modelled time
of its neighbours (``compute.database``): the analytic model's wave quantization is carried from
the records to the op. The bundled H100 and H200 databases were written by cuBLAS 13, whose layer
traces name ``nvjet_sm90_tst_320x128`` and ``_192x192`` kernels for most of the GEMM time (37th
session's census), while the roofline chooses among 128x128, 128x256 and 256x128 alone. A shape
that fills whole waves only with a traced tile (GPT-3 175B's TP 8 qkv forward, 2,048 x 4,608 x
12,288: 2.18 waves of 128x256 tiles, exactly 2 of 192x192) is then priced with a wave penalty its
kernel never paid.

**Tiles** (``--tiles``): each GEMM of ``benchmarks/h200_2026-11-27_s41/kernels_h200_s41.csv`` (the
H200's GPT-3 TP 8 GEMMs, measured this session, never fitted) with each tile's waves and grid
efficiency (``roofline.tile_grid_efficiency`` x the tile's main-loop rate).

**Left out** (``--left-out``): every GEMM of the two 377-shape measured files and the TP 8 rows,
priced from its database with that shape's own record left out (the database as it would price a
shape it never timed; the validator's loop clock on top), under three references: the shipped
tiles, the traced tiles (``TRACED_TILES``), and fractional waves (no wave quantization at all
above one wave: the alternative reading that cuBLAS never pays for a partial wave). Mean and sd
of log(priced / measured) time: the sd is the shape structure the reference leaves.

**Cells** (``--cells``): ``trainsim validate`` GEMM MAPE per GPU of ``kernels_published.csv`` and
per dtype of the measured files, with ``TRACED_TILES`` off and on.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import chain, database, roofline
from trainsim.compute.roofline import RooflineModel
from trainsim.validate import BUNDLED_DIR, validate_file
from trainsim.validate import kernels as vk
from trainsim.workload.ops import Gemm

HERE = Path(__file__).resolve().parent
S41 = HERE / "h200_2026-11-27_s41" / "kernels_h200_s41.csv"
FILES = {"h100-sxm-80gb": (BUNDLED_DIR / "kernels_h100_measured.csv",),
         "h200-sxm-141gb": (HERE / "kernels_h200_measured.csv", S41)}
WIDTH = database.NEIGHBOUR_FACTOR


@contextlib.contextmanager
def traced(on: bool) -> Iterator[None]:
    """``database.TRACED_TILES`` set, every cached database and model dropped around it."""
    saved = database.TRACED_TILES
    database.TRACED_TILES = on
    chain._LOADED.clear()
    vk._model.cache_clear()
    try:
        yield
    finally:
        database.TRACED_TILES = saved
        chain._LOADED.clear()
        vk._model.cache_clear()


def bundled(gpu_name: str) -> database.KernelDatabase:
    spec = catalog_gpu(gpu_name)
    path = chain.bundled_database(spec)
    assert path is not None, gpu_name
    return database.KernelDatabase.load(path, catalog_gpu)


def gemm_rows(path: Path) -> list[dict]:
    """The cuBLAS GEMM rows of a kernels file (op, measured seconds, dtype, id)."""
    out = []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["kind"] != "gemm" or row["implementation"] not in ("cublas", "torch"):
                continue
            op = vk.kernel_ops(row)[0][0]  # the validator's op (fp8 accumulation from the note)
            assert isinstance(op, Gemm)
            out.append({"id": row["id"], "op": op, "dtype": row["dtype"],
                        "seconds": op.flops / (float(row["measured_value"]) * 1e12)})
    return out


def tile_table(path: Path = S41, gpu_name: str = "h200-sxm-141gb") -> list[dict]:
    """Each GEMM shape of ``path`` (once per shape): per tile of the shipped and traced sets,
    the tiles' waves on the GPU and the grid efficiency; which tile each set picks."""
    spec = catalog_gpu(gpu_name)
    tiles = roofline.gemm_tiles(spec) + bundled(gpu_name).tiles
    shipped = set(roofline.gemm_tiles(spec))
    overhead = roofline.GEMM_TILE_OVERHEAD_K
    out, seen = [], set()
    for row in gemm_rows(path):
        op = row["op"]
        if row["dtype"] != "bf16" or (op.m, op.n, op.k) in seen:
            continue
        seen.add((op.m, op.n, op.k))
        grid = {}
        for r, c, rate in tiles:
            n_tiles = math.ceil(op.m / r) * math.ceil(op.n / c)
            grid[f"{r}x{c}"] = {"waves": n_tiles / spec.num_sms, "shipped": (r, c, rate) in shipped,
                                "eff": rate * roofline.tile_grid_efficiency(
                                    spec.num_sms, op, r, c, overhead, 1.0)}
        best = max(grid, key=lambda t: grid[t]["eff"])
        best_shipped = max((t for t in grid if grid[t]["shipped"]), key=lambda t: grid[t]["eff"])
        out.append({"id": row["id"].removesuffix("-bf16"), "shape": (op.m, op.n, op.k),
                    "grid": grid, "shipped": best_shipped, "traced": best,
                    "measured_rate": op.flops / row["seconds"] / 1e12})
    return out


def _fractional(sms: int, op: Gemm, rows: int, cols: int, overhead_k: float, stretch: float,
                kernel_k: float = 0.0) -> float:
    """``tile_grid_efficiency`` without wave quantization above one wave of tiles."""
    tiles = math.ceil(op.m / rows) * math.ceil(op.n / cols) * op.batch
    if tiles < sms:
        return SHIPPED_GRID(sms, op, rows, cols, overhead_k, stretch, kernel_k)
    useful = op.m * op.n * op.batch / (rows * cols)
    return useful * op.k / sms / (tiles / sms * (op.k * stretch + overhead_k))


SHIPPED_GRID = roofline.tile_grid_efficiency


def left_out(reference: str) -> dict[tuple[str, str, str], dict[str, float]]:
    """{(gpu, file, dtype): n, mean and sd of log(priced / measured)}: each measured GEMM priced
    from its database with its own shape's record left out, ``reference`` one of ``shipped``,
    ``traced``, ``fractional``."""
    out = {}
    grid: Callable = _fractional if reference == "fractional" else SHIPPED_GRID
    roofline.tile_grid_efficiency = grid
    try:
        for gpu_name, paths in FILES.items():
            spec = catalog_gpu(gpu_name)
            with traced(reference == "traced"):
                db = bundled(gpu_name)
            tiles = db.tiles if reference == "traced" else ()
            burst = RooflineModel(dataclasses.replace(spec, sustained_of_burst=1.0),
                                  None, tiles)
            loop = RooflineModel(burst.gpu, spec.sustained_of_burst * spec.power_scale, tiles)
            kinds: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
            for family, kind in db.kinds.items():
                if family[0] != "gemm":
                    continue
                pts = np.array(kind.coords)
                ops = [Gemm("db", *(round(math.exp(c)) for c in x[:3]), family[1],
                            round(math.exp(x[3])), fp8_fast_accum=bool(family[2]))
                       for x in kind.coords]
                measured = [db.modelled(o) * math.exp(r) for o, r in zip(ops, kind.log_ratio)]
                ratios = np.log([t / burst.time(o) for o, t in zip(ops, measured)])
                kinds[family] = (pts, ratios)
                errs = []  # each record priced from the others (leave one out)
                for i in range(len(ratios)):
                    keep = np.arange(len(ratios)) != i
                    w = np.exp(-0.5 * (((pts[keep] - pts[i]) / math.log(WIDTH)) ** 2).sum(axis=1))
                    est = (w @ ratios[keep] + database.PRIOR_WEIGHT * ratios[keep].mean()) / (
                        w.sum() + database.PRIOR_WEIGHT)
                    errs.append(est - ratios[i])
                a = np.array(errs)
                tag = family[1] + (" fast-accum" if family[2] else "")
                out[(gpu_name, "records (left out)", tag)] = {
                    "n": len(a), "mean": float(a.mean()), "sd": float(a.std()),
                    "mape": float(np.mean(np.abs(np.exp(a) - 1)))}
            for path in paths:
                logs: dict[str, list[float]] = defaultdict(list)
                for row in gemm_rows(path):
                    op = row["op"]
                    pts, r = kinds[database._family(op)]
                    x = np.array(database._coords(op))
                    other = ((pts - x) ** 2).sum(axis=1) > 1e-12
                    w = np.exp(-0.5 * (((pts[other] - x) / math.log(WIDTH)) ** 2).sum(axis=1))
                    ratio = (w @ r[other] + database.PRIOR_WEIGHT * r[other].mean()) / (
                        w.sum() + database.PRIOR_WEIGHT)
                    logs[row["dtype"]].append(math.log(loop.time(op) / row["seconds"]) + ratio)
                for dtype, v in logs.items():
                    a = np.array(v)
                    out[(gpu_name, path.name, dtype)] = {
                        "n": len(a), "mean": float(a.mean()), "sd": float(a.std()),
                        "mape": float(np.mean(np.abs(np.exp(a) - 1)))}
    finally:
        roofline.tile_grid_efficiency = SHIPPED_GRID
    return out


def cells(path: Path) -> dict[str, float]:
    """GEMM MAPE per GPU and dtype of a kernels file (validator)."""
    _, results = validate_file(path)
    apes: dict[str, list[float]] = defaultdict(list)
    for res in results:
        if res.error or res.predicted is None or res.extra.get("kind") != "gemm":
            continue
        apes[f"{res.extra['gpu']} {res.extra.get('dtype', '')}".strip()].append(res.ape)
        apes[res.extra["gpu"]].append(res.ape)
    return {g: sum(v) / len(v) for g, v in sorted(apes.items())}


def cells_table() -> dict[str, dict[str, dict[str, float]]]:
    files = {"kernels_published": BUNDLED_DIR / "kernels_published.csv",
             "h100 measured": FILES["h100-sxm-80gb"][0],
             "h200 measured": FILES["h200-sxm-141gb"][0],
             "h200 s41": S41, "h200 dsv3": HERE / "kernels_h200_dsv3_measured.csv"}
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, path in files.items():
        out[name] = {}
        for on in (False, True):
            with traced(on):
                out[name]["traced" if on else "shipped"] = cells(path)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiles", action="store_true")
    ap.add_argument("--left-out", action="store_true")
    ap.add_argument("--cells", action="store_true")
    args = ap.parse_args()
    every = not (args.tiles or args.left_out or args.cells)
    if every or args.tiles:
        print("| GEMM (bf16) | m x n x k | measured TFLOP/s | " +
              "shipped pick (waves, eff) | traced pick (waves, eff) |\n|---|---|---|---|---|")
        for t in tile_table():
            s, b = t["grid"][t["shipped"]], t["grid"][t["traced"]]
            print(f"| {t['id']} | {' x '.join(map(str, t['shape']))} | {t['measured_rate']:.1f} | "
                  f"{t['shipped']} ({s['waves']:.2f}, {s['eff']:.3f}) | "
                  f"{t['traced']} ({b['waves']:.2f}, {b['eff']:.3f}) |")
    if every or args.left_out:
        refs = ("shipped", "traced", "fractional")
        res = {ref: left_out(ref) for ref in refs}
        print("\n| GPU, file, dtype (n) | " + " | ".join(f"{r}: mean / sd / MAPE" for r in refs)
              + " |\n|---|---|---|---|")
        for key in res["shipped"]:
            cols = " | ".join(f"{res[r][key]['mean']:+.4f} / {res[r][key]['sd']:.4f} / "
                              f"{100 * res[r][key]['mape']:.2f}" for r in refs)
            print(f"| {key[0][:4]} {key[1]} {key[2]} ({res['shipped'][key]['n']}) | {cols} |")
    if every or args.cells:
        table = cells_table()
        print("\n| file | cell | shipped | traced |\n|---|---|---|---|")
        for name, by in table.items():
            for cell, v in by["shipped"].items():
                print(f"| {name} | {cell} | {100 * v:.2f} | {100 * by['traced'][cell]:.2f} |")


if __name__ == "__main__":
    main()
