"""Fit ``roofline.COLD_CALL_S``, the cost a cold-L2, one-call-at-a-time kernel benchmark adds to
the call it times, and report fit and held-out errors by source.

    python benchmarks/fit_cold_call.py          # fit, report; writes nothing

Fitted rows: the cold nvbench rows of NVIDIA/cccl #7391 in benchmarks/kernels_memory_published.csv
(cub::DeviceTransform add and exp on B200, 393 KB to 2.1 GB; NVIDIA's own harness, a source in
no other file). Held out, by source: Liger-Kernel's do_bench rows of the shared
kernels_published.csv (A100 and H100, the only rows there that name a cold harness) and quack's
H100 clones. The loss is the fitted rows' MAPE, minimised by golden section over 0-10 us with
every other constant as shipped (``HBM_EFFICIENCY``, ``LAUNCH_S``); then the memory-bound cells
per GPU of both files at the fitted value, at the shipped value and at 0.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict
from pathlib import Path

from trainsim.compute import roofline
from trainsim.validate.kernels import COLD_CALL, L2_RESIDENT, predict_kernel_row

ROOT = Path(__file__).resolve().parents[1]
OWN = ROOT / "benchmarks" / "kernels_memory_published.csv"
SHARED = ROOT.parent.parent / "shared" / "validation" / "kernels_published.csv"
if not SHARED.exists():
    SHARED = Path("/work/shared/validation/kernels_published.csv")


def load(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return [r for r in csv.DictReader(fh)
                if r["kind"] == "memory_bound" and not L2_RESIDENT.search(r["note"])]


def cold(row: dict[str, str]) -> bool:
    return bool(COLD_CALL.search(f"{row['source']} {row['note']}"))


def source(row: dict[str, str]) -> str:
    return row["source"].split()[0]


def errors(rows: list[dict[str, str]], c: float) -> list[float]:
    """Signed errors (predicted / measured - 1) with ``COLD_CALL_S`` = c."""
    keep = roofline.COLD_CALL_S
    roofline.COLD_CALL_S = c
    try:
        out = []
        for r in rows:
            res = predict_kernel_row(r)
            assert res.error is None, (r["id"], res.error)
            out.append(res.predicted / res.measured - 1.0)
        return out
    finally:
        roofline.COLD_CALL_S = keep


def mape(errs: list[float]) -> float:
    return 100.0 * statistics.mean(abs(e) for e in errs)


def golden(f, lo: float, hi: float, tol: float = 1e-8) -> float:
    g = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    while b - a > tol:
        if f(c) < f(d):
            b, d = d, c
            c = b - g * (b - a)
        else:
            a, c = c, d
            d = a + g * (b - a)
    return (a + b) / 2.0


def main() -> None:
    own, shared = load(OWN), load(SHARED)
    fit_rows = [r for r in own if cold(r) and source(r) == "NVIDIA/cccl"]
    best = golden(lambda c: mape(errors(fit_rows, c)), 0.0, 10e-6)
    print(f"fitted COLD_CALL_S = {best * 1e6:.2f} us on {len(fit_rows)} rows "
          f"(shipped {roofline.COLD_CALL_S * 1e6:.2f} us)")
    print("\n| rows | part | n | MAPE at 0 | at fitted | at shipped | signed at shipped |")
    print("|---|---|---|---|---|---|---|")
    groups: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for r in fit_rows:
        groups[(f"cccl nvbench cold, {r['gpu']}", "fit")].append(r)
    for r in own + shared:
        if cold(r) and source(r) != "NVIDIA/cccl":
            groups[(f"{source(r)} {r['gpu']}", "held-out")].append(r)
    for (name, part), rows in groups.items():
        e0, ef, es = (errors(rows, c) for c in (0.0, best, roofline.COLD_CALL_S))
        print(f"| {name} | {part} | {len(rows)} | {mape(e0):.2f} % | {mape(ef):.2f} % | "
              f"{mape(es):.2f} % | {100 * statistics.mean(es):+.2f} % |")
    print("\n| file | GPU | n | memory-bound MAPE at 0 | at shipped |\n|---|---|---|---|---|")
    for label, rows in (("kernels_published", shared), ("kernels_memory_published", own)):
        by_gpu: dict[str, list[dict[str, str]]] = defaultdict(list)
        for r in rows:
            by_gpu[r["gpu"]].append(r)
        for g, rs in sorted(by_gpu.items()):
            print(f"| {label} | {g} | {len(rs)} | {mape(errors(rs, 0.0)):.2f} % | "
                  f"{mape(errors(rs, roofline.COLD_CALL_S)):.2f} % |")


if __name__ == "__main__":
    main()
