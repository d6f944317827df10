"""The best-shape reading of Bekman's MAMF / MSMF rows (``validate.best_shape``), row by row.

    PYTHONPATH=src python benchmarks/gemm43_best_shape.py            # rows and per-GPU cells
    PYTHONPATH=src python benchmarks/gemm43_best_shape.py --grid   # + grid steps 2048 / 512

Each row whose note says its shape is the winner of a shape search is priced two ways: at its
named shape (the reading before the 43rd session) and as the model's own best over the finder's
grid (the validator's reading now). ``ceiling source`` marks a row whose value is the catalog's
GEMM ceiling for its GPU and dtype (``GPUSpec.mamf_fraction`` x the peak, within 0.1 %): there the
searched reading is near the ceiling by construction (the tile cost at k = 19,456 and a database's
records aside), so the table shows the per-GPU cells with and without those rows' change. The
per-GPU cells are the validator's dense-GEMM MAPE (as ``gemm_error_budget.py`` scores them), with
``kernels_errata.csv`` applied in the last column. Nothing here changes trainsim.
"""

from __future__ import annotations

import argparse
import csv
import tempfile
from collections import defaultdict
from pathlib import Path

from trainsim.catalog import gpu as catalog_gpu
from trainsim.validate import best_shape, kernels
from trainsim.validate.errata import corrected_file

HERE = Path(__file__).resolve().parent
PUBLISHED = HERE.parent.parent / "shared" / "validation" / "kernels_published.csv"


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["kind"].strip() == "gemm"]


def at_shape(row: dict[str, str]) -> float:
    """The row priced at its named shape (its note without the best-shape words)."""
    plain = dict(row, note=best_shape.BEST_SHAPE.sub("shape", row.get("note") or ""))
    return kernels.predict_kernel_row(plain).predicted


def ceiling_source(row: dict[str, str]) -> bool:
    """Whether the row's value is its GPU's catalog GEMM ceiling for the row's dtype."""
    spec = catalog_gpu(row["gpu"].strip())
    dtype = row["dtype"].strip()
    frac = (spec.mamf_fraction_fp8 or spec.mamf_fraction) if dtype == "fp8" else spec.mamf_fraction
    ceiling = spec.flops(dtype) * frac / 1e12  # the burst MAMF the catalog holds
    return abs(ceiling / float(row["measured_value"]) - 1) < 0.001


def cells(rows: list[dict[str, str]], price) -> dict[str, float]:
    by: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        p, m = price(r), float(r["measured_value"])
        by[r["gpu"].strip()].append(abs(p / m - 1))
    return {g: 100 * sum(v) / len(v) for g, v in sorted(by.items())}


def grid_variant(step: int, rows: list[dict[str, str]]) -> dict[str, float]:
    """The best-shape rows' searched prices on a grid of another step (the same range)."""
    saved = best_shape.SEARCH_GRID
    best_shape.SEARCH_GRID = tuple(range(step, 20480, step))
    best_shape._best.cache_clear()
    try:
        return {r["id"]: kernels.predict_kernel_row(r).predicted for r in rows}
    finally:
        best_shape.SEARCH_GRID = saved
        best_shape._best.cache_clear()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", action="store_true", help="also search grids of step 2048 and 512")
    args = ap.parse_args(argv)
    rows = _rows(PUBLISHED)
    best = [r for r in rows if best_shape.BEST_SHAPE.search(r.get("note") or "")]
    print("| row | GPU | dtype | named shape | measured | at shape | searched | model's best shape "
          "| ceiling source |")
    print("|---|---|---|---|---|---|---|---|---|")
    old: dict[str, float] = {}
    for r in best:
        res = kernels.predict_kernel_row(r)
        old[r["id"]] = at_shape(r)
        m = float(r["measured_value"])
        shape = res.chosen["harness"].split(": ")[-1].rstrip(")")
        print(f"| {r['id']} | {r['gpu']} | {r['dtype']} | {r['m']}x{r['n']}x{r['k']} | {m:.1f} | "
              f"{old[r['id']]:.1f} ({100 * (old[r['id']] / m - 1):+.1f} %) | {res.predicted:.1f} "
              f"({100 * (res.predicted / m - 1):+.1f} %) | {shape} ({res.chosen['model']}) | "
              f"{'yes' if ceiling_source(r) else ''} |")
    errata_path = corrected_file(PUBLISHED, HERE / "kernels_errata.csv", tempfile.mkdtemp())[0]
    errata_rows = _rows(Path(errata_path))

    def new(r):
        return kernels.predict_kernel_row(r).predicted

    def before(r):
        return old.get(r["id"]) or new(r)

    def sources_at_shape(r):
        return old[r["id"]] if r["id"] in old and ceiling_source(r) else new(r)

    print("\n| dense GEMM MAPE per GPU | " + " | ".join(cells(rows, new)) + " |")
    print("|---|" + "---|" * len(cells(rows, new)))
    for name, table, price in (("named shape (before)", rows, before),
                               ("searched (now)", rows, new),
                               ("searched, ceiling-source rows at their shape", rows,
                                sources_at_shape),
                               ("named shape, errata applied", errata_rows, before),
                               ("searched, errata applied", errata_rows, new)):
        c = cells(table, price)
        print(f"| {name} | " + " | ".join(f"{v:.2f}" for v in c.values()) + " |")
    if args.grid:
        print("\n| grid step | " + " | ".join(r["id"] for r in best) + " |")
        print("|---|" + "---|" * len(best))
        for step in (2048, 1024, 512):
            got = grid_variant(step, best) if step != 1024 else {r["id"]: new(r) for r in best}
            errs = (100 * (got[r["id"]] / float(r["measured_value"]) - 1) for r in best)
            print(f"| {step} | " + " | ".join(f"{e:+.1f}" for e in errs) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
