"""Fixed cost per timed call, harness by harness: memory-bound series fitted as a + bytes / rate.

    python benchmarks/harness_floor.py          # each series: harness, sizes, intercept, rate / HBM
    python benchmarks/harness_floor.py --sweep  # memory-bound MAPE per GPU if c us were added
                                                # to every row whose source says do_bench

Four ways of timing the same kind of kernel sit in the files trainsim validates against:

* ``do_bench``: Liger-Kernel's rows (``triton.testing.do_bench``: before every timed call a
  256 MiB ``cache.zero_()`` on the same stream, then CUDA events around that one call; median).
* CUDA-graph batch: ``kernels_h100_measured.csv`` (``measure_kernels.py``: the calls captured in
  a graph and replayed, events around the whole replay, time / calls).
* events per call, queued behind a sleep kernel: the bundled H100 database (``trainsim
  profile``, ``profile/device.py measure``: inputs rotated past the L2).
* Kineto kernel time: vidur's rows (the kernel's own start and end, no launch gap).

A series is one kernel of one source at several sizes (the row id without its size words);
least squares over its sizes gives the intercept (the fixed cost per timed call) and the rate
(its slope, as a fraction of the GPU's HBM peak). A row the file marks L2-resident is left out.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import roofline
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.kernels import L2_RESIDENT, TIME_UNITS, predict_kernel_row

ROOT = Path(__file__).resolve().parents[1]
DB = ROOT / "src" / "trainsim" / "data" / "kernels" / "h100-sxm-80gb.json"
SWEEP_US = (0.0, 1.0, 2.0, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0)


def harness(source: str) -> str:
    """How a row's source timed it, from its source cell."""
    if "do_bench" in source:
        return "do_bench"
    if "Kineto" in source:
        return "kineto"
    if source.startswith("measured on"):
        return "cuda-graph batch"
    return "unstated"


def series_key(row_id: str) -> str:
    """The id without the words that carry a size or a GPU ('liger-a100-rmsnorm-bf16-m2048-
    h1024-liger' -> 'liger-rmsnorm-liger'); vidur's model words go too (its two sizes are two
    models)."""
    words = [w for w in row_id.split("-") if not any(c.isdigit() for c in w)]
    return "-".join(w for w in words if w not in ("llama", "tp", "t"))


def file_points(path: Path) -> dict[tuple[str, str, str], list[tuple[float, float]]]:
    out: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            if r["kind"].strip() != "memory_bound" or L2_RESIDENT.search(r.get("note") or ""):
                continue
            t = float(r["measured_value"]) * TIME_UNITS[r["measured_unit"].strip()]
            key = (harness(r["source"]), r["gpu"].strip(), series_key(r["id"]))
            out[key].append((float(r["bytes"]), t))
    return out


def db_points(path: Path) -> dict[tuple[str, str, str], list[tuple[float, float]]]:
    data = json.loads(path.read_text())
    out: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for rec in data["kernels"]:
        if rec.get("op") == "elementwise":
            key = ("events per call, sleep-queued", data["gpu"],
                   f"{rec['kernel']} ({rec.get('impl', '')})")
            out[key].append((float(rec["bytes"]), float(rec["time_s"])))
    return out


def fit_line(points: list[tuple[float, float]]) -> tuple[float, float] | None:
    """(intercept s, seconds per byte) by least squares; None under two distinct sizes."""
    sizes = sorted({b for b, _ in points})
    if len(sizes) < 2:
        return None
    b = np.array([p[0] for p in points])
    t = np.array([p[1] for p in points])
    slope, intercept = np.polyfit(b, t, 1)
    return float(intercept), float(slope)


def series_table() -> list[tuple[str, str, str, int, float, float, float, float]]:
    points: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for path in (BUNDLED_DIR / "kernels_published.csv", BUNDLED_DIR / "kernels_h100_measured.csv"):
        points.update(file_points(path))
    points.update(db_points(DB))
    rows = []
    for (how, gpu, key), pts in sorted(points.items()):
        line = fit_line(pts)
        if line is None or line[1] <= 0:
            continue
        hbm = catalog_gpu(gpu).hbm_bw_Bps
        rows.append((how, gpu, key, len(pts), min(b for b, _ in pts) / 1e6,
                     max(b for b, _ in pts) / 1e6, line[0] * 1e6, 1.0 / line[1] / hbm))
    return rows


def sweep() -> dict[float, dict[tuple[str, str], float]]:
    """Memory-bound MAPE of kernels_published.csv (priced as ``trainsim validate`` prices it,
    less its ``roofline.COLD_CALL_S``) per (GPU, rows) with ``c`` us added to each do_bench row,
    for each ``c`` in SWEEP_US."""
    priced = []
    with open(BUNDLED_DIR / "kernels_published.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            if r["kind"].strip() != "memory_bound":
                continue
            res = predict_kernel_row(r)
            t_meas = res.measured * TIME_UNITS[r["measured_unit"].strip()]
            # the validator's own cold-call cost taken back out: c is the whole added cost
            t_pred = res.extra["time_s"] - (roofline.COLD_CALL_S if "harness" in res.chosen else 0.0)
            priced.append((r["gpu"].strip(), harness(r["source"]), t_pred, t_meas))
    out: dict[float, dict[tuple[str, str], float]] = {}
    for c in SWEEP_US:
        errs: dict[tuple[str, str], list[float]] = defaultdict(list)
        for gpu, how, t_pred, t_meas in priced:
            t = t_pred + (c * 1e-6 if how == "do_bench" else 0.0)
            e = abs(t / t_meas - 1.0)
            errs[(gpu, "all")].append(e)
            errs[(gpu, how)].append(e)
        out[c] = {k: float(np.mean(v)) for k, v in errs.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sweep", action="store_true",
                    help="memory-bound MAPE per GPU with a fixed cost added per do_bench call")
    args = ap.parse_args(argv)
    if args.sweep:
        table = sweep()
        cols = sorted(next(iter(table.values())))
        print("| added per do_bench call | " + " | ".join(f"{g} {how}" for g, how in cols)
              + " |\n|---|" + "---|" * len(cols))
        for c, cells in table.items():
            print(f"| {c:.1f} us | " + " | ".join(f"{cells[k]:.1%}" for k in cols) + " |")
        return 0
    print("| harness | GPU | series | n | MB from | MB to | intercept (us) | rate / HBM |"
          "\n|---|---|---|---|---|---|---|---|")
    for how, gpu, key, n, lo, hi, a_us, frac in series_table():
        print(f"| {how} | {gpu} | {key} | {n} | {lo:.0f} | {hi:.0f} | {a_us:+.1f} | {frac:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
