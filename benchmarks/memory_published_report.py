"""Memory-bound kernels from published sources outside the shared file, per GPU, and the
fixed cost per timed call each harness shows (benchmarks/kernels_memory_published.csv).

    python benchmarks/memory_published_report.py            # per-GPU MAPE, signed, fits
    python benchmarks/memory_published_report.py --hbm 0.89 # the same with another HBM fraction

Per GPU: MAPE and mean signed error of the rows ``trainsim validate`` counts (L2-resident rows
left out), split into streaming rows (1 GB or more moved) and the rest. Fits: NVIDIA/cccl's B200
nvbench series (cub::DeviceTransform add, fp16), cold and batched, as a + bytes / rate over the
sizes that stream from HBM (``harness_floor.fit_line``), the intercept being the fixed cost per
timed call and the rate a fraction of the catalog HBM peak.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import roofline
from trainsim.validate import validate_file
from trainsim.validate.kernels import L2_RESIDENT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_floor import fit_line

FILE = Path(__file__).resolve().parent / "kernels_memory_published.csv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hbm", type=float, help="roofline.HBM_EFFICIENCY for this run")
    args = ap.parse_args()
    if args.hbm:
        roofline.HBM_EFFICIENCY = args.hbm
    with FILE.open(newline="") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}
    _, results = validate_file(FILE, workers=1)
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in results:
        row = rows[r.id]
        if L2_RESIDENT.search(row["note"]) or r.predicted is None:
            continue
        regime = "streaming (>= 1 GB)" if float(row["bytes"]) >= 1e9 else "under 1 GB"
        signed = r.predicted / r.measured - 1.0
        cells[(row["gpu"], "all")].append(signed)
        cells[(row["gpu"], regime)].append(signed)
    print(f"HBM fraction {roofline.HBM_EFFICIENCY}")
    print("| GPU | rows | n | MAPE | mean signed |\n|---|---|---|---|---|")
    for (g, regime), errs in sorted(cells.items()):
        print(f"| {g} | {regime} | {len(errs)} | {100 * statistics.mean(map(abs, errs)):.2f} % | "
              f"{100 * statistics.mean(errs):+.2f} % |")
    peak = catalog_gpu("b200-sxm-180gb").hbm_bw_Bps
    print("\n| B200 cccl add fp16 | sizes | intercept | rate / HBM |\n|---|---|---|---|")
    for harness in ("cold", "batch"):
        pts = [(float(r["bytes"]), float(r["measured_value"]) * 1e-6) for i, r in rows.items()
               if i.startswith("cccl7391-b200-add-f16") and i.endswith(harness)
               and not L2_RESIDENT.search(r["note"]) and float(r["bytes"]) >= 6e6]
        if len(pts) >= 2:
            a, s_per_byte = fit_line(pts)
            print(f"| {harness} | {len(pts)} ({min(p[0] for p in pts) / 1e6:.0f}-"
                  f"{max(p[0] for p in pts) / 1e6:.0f} MB) | {a * 1e6:+.1f} us | "
                  f"{1.0 / s_per_byte / peak:.3f} |")
        else:
            b, t = pts[0]
            print(f"| {harness} | 1 ({b / 1e6:.0f} MB) | - | {b / t / peak:.3f} (bytes / time) |")


if __name__ == "__main__":
    main()
