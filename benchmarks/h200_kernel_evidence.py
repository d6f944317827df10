"""What the 36th session's H200 (a GPU no compute constant was fitted to) says about the GEMM
and attention models, against the project's H100 timed by the same script at the same shapes.

    python benchmarks/h200_kernel_evidence.py            # every table below
    python benchmarks/h200_kernel_evidence.py --ratios   # H200 / H100 rate, measured and priced
    python benchmarks/h200_kernel_evidence.py --gemm-k   # device_checks' 1024 x 8192 x k sweep
    python benchmarks/h200_kernel_evidence.py --ceiling  # the H200 file priced at H100's MAMF

**Ratios** (``--ratios``). ``kernels_h200_measured.csv`` and ``kernels_h100_measured.csv`` were
timed by the same ``measure_kernels.py`` (torch 2.11, CUDA 13, cuDNN 9.19, CUDA events) at the
same shapes, so a row's H200 / H100 rate ratio cancels the harness, the library release and the
shape: what is left is the GPU. Both have 132 SMs at the same clocks and dense peaks; the H200's
HBM is 4.8 against 3.35 TB/s. Grouped by kind, implementation, head dim and sequence length,
the measured geometric-mean ratio beside the model's for the same rows (roofline, burst clock,
as the validator prices a kernel row).

**GEMM by k** (``--gemm-k``). ``device_checks.py``'s ``gemm_by_k`` section: fp16/bf16 1024 x
8192 x k, k 3,584-28,672, nn/nt, four harnesses (warm/cold L2, eager/CUDA graph; its ``HARNESS``
dict). Each cell the rate over the same dtype and layout's warm-eager rate at k = 8,192, the
model's the same way.

**Ceiling** (``--ceiling``). The H200 file's GEMM rows priced with the catalog's H200 GEMM
ceiling (since the 37th session the H100's ``mamf_fraction`` 0.801 and ``mamf_fraction_fp8``
0.709: ``benchmarks/gemm_catalog_era.py``) and with Bekman's own H200 MAMF (0.835, 0.734, the
entry's values before): MAPE and mean signed error of the time (positive: priced too slow).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fit_kernels
from kernel_rows import load

from trainsim.catalog import gpu as catalog_gpu
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.kernels import L2_RESIDENT

H100_FILE = BUNDLED_DIR / "kernels_h100_measured.csv"
H200_FILE = HERE / "kernels_h200_measured.csv"
DEVICE_CHECKS = HERE / "h200_2026-11-27" / "device_checks_kernels.csv"


def shape_key(row: dict[str, str]) -> str:
    """A measured row's id without its GPU prefix (``h100m-``, ``h200m-``): the shape."""
    return row["id"].split("-", 1)[1]


def group_of(row: dict[str, str]) -> str:
    """Kind / implementation / dtype, and for attention the head dim and a sequence bucket."""
    name = f"{row['kind']}/{row['implementation']}/{row['dtype']}"
    if row["kind"].startswith("attention"):
        name += f"/d{row['head_dim']}/" + ("s<=1k" if int(row["seq_len"]) <= 1024 else "s>1k")
    return name


def rows_by_id(path: Path) -> tuple[dict[str, object], dict[str, dict[str, str]]]:
    """A kernels file's rows as ``kernel_rows.load`` reads them, and its CSV cells, by row id
    (L2-resident rows left out, as ``load`` leaves them)."""
    with open(path, newline="") as fh:
        raw = [r for r in csv.DictReader(fh) if not L2_RESIDENT.search(r.get("note") or "")]
    rows = load([path])
    assert len(rows) == len(raw), path
    return {r["id"]: row for r, row in zip(raw, rows)}, {r["id"]: r for r in raw}


def ratios(kind: str = "") -> list[tuple[str, int, float, float, float]]:
    """(group, n, measured H200/H100 rate, priced H200/H100 rate, sd of the measured log
    ratio) per group (``group_of``) of the shapes both files timed (those whose kind starts
    with ``kind``), geometric means."""
    a_rows, a_raw = rows_by_id(H100_FILE)
    b_rows, b_raw = rows_by_id(H200_FILE)
    b_by_shape = {shape_key(r): i for i, r in b_raw.items()}
    pairs = [(i, b_by_shape[shape_key(r)]) for i, r in a_raw.items()
             if shape_key(r) in b_by_shape and r["kind"].startswith(kind)]
    a = [a_rows[i] for i, _ in pairs]
    b = [b_rows[j] for _, j in pairs]
    pa, pb = fit_kernels.predict(a), fit_kernels.predict(b)
    groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for (i, _), ra, rb, ta, tb in zip(pairs, a, b, pa, pb):
        measured = math.log(ra.measured_s / rb.measured_s)  # rate ratio = inverse time ratio
        priced = math.log(ta / tb)
        groups[group_of(a_raw[i])].append((measured, priced))
    return [(g, len(v), math.exp(statistics.mean(m for m, _ in v)),
             math.exp(statistics.mean(p for _, p in v)), statistics.pstdev([m for m, _ in v]))
            for g, v in sorted(groups.items())]


def gemm_by_k() -> tuple[list[int], dict[tuple[str, str, str], dict[int, tuple[float, float]]]]:
    """The device checks' GEMM rows: per (dtype, layout, harness) and k, (measured, priced)
    rate over the same dtype and layout's warm-eager rate at k = 8,192."""
    with open(DEVICE_CHECKS, newline="") as fh:
        raw = [r for r in csv.DictReader(fh) if r["id"].split("-")[2] == "gemm"]
    rows = [r for r in load([DEVICE_CHECKS]) if r.kind == "gemm"]
    gemm_rows = [r for r in rows if r.ops[0].m == 1024 and r.ops[0].n == 8192]
    assert len(gemm_rows) == len(raw), "device_checks GEMM rows and their ids out of step"
    priced = fit_kernels.predict(gemm_rows)
    cells: dict[tuple[str, str, str], dict[int, tuple[float, float]]] = defaultdict(dict)
    for r, row, t in zip(raw, gemm_rows, priced):
        parts = r["id"].split("-")  # dc-h200-gemm-fp16-m1024-n8192-k3584-nn-warm-eager
        dtype, k, layout, harness = parts[3], int(parts[6][1:]), parts[7], "-".join(parts[8:])
        cells[(dtype, layout, harness)][k] = (row.ops[0].flops / row.measured_s,
                                              row.ops[0].flops / t)
    ks = sorted({k for c in cells.values() for k in c})
    out: dict[tuple[str, str, str], dict[int, tuple[float, float]]] = {}
    for (dtype, layout, harness), c in cells.items():
        ref_m, ref_p = cells[(dtype, layout, "warm-eager")][8192]
        out[(dtype, layout, harness)] = {k: (m / ref_m, p / ref_p) for k, (m, p) in c.items()}
    return ks, out


BEKMAN_H200 = (0.835, 0.734)
"""The H200 entry's bf16 / fp8 fractions before the 37th session: 825.8 of 989.4 TFLOP/s
(stas00/ml-engineering branch fast-mamf, GPU0 while all 8 busy) and 1453.4 of 1979 (v2 table,
torch 2.7.1+cu128)."""


def ceiling_whatif() -> list[tuple[str, str, int, float, float]]:
    """(ceiling, dtype, n, MAPE, mean signed) of the H200 file's GEMM rows priced with the
    catalog's H200 MAMF fractions and with Bekman's H200 MAMF (``BEKMAN_H200``)."""
    rows = [r for r in load([H200_FILE]) if r.kind == "gemm"]
    measured = np.array([r.measured_s for r in rows])
    cat = catalog_gpu("h200-sxm-141gb")
    out = []
    shipped = fit_kernels.catalog_gpu
    for label, spec in ((f"catalog ({cat.mamf_fraction} / {cat.mamf_fraction_fp8})", None),
                        ("Bekman's H200 MAMF ({} / {})".format(*BEKMAN_H200), BEKMAN_H200)):
        def lookup(name: str, spec=spec):
            g = shipped(name)
            if spec is None or name != "h200-sxm-141gb":
                return g
            return dataclasses.replace(g, mamf_fraction=spec[0], mamf_fraction_fp8=spec[1])
        fit_kernels.catalog_gpu = lookup
        try:
            signed = fit_kernels.predict(rows) / measured - 1.0
        finally:
            fit_kernels.catalog_gpu = shipped
        for dtype in ("bf16", "fp8"):
            sel = np.array([r.ops[0].dtype == dtype for r in rows])
            out.append((label, dtype, int(sel.sum()), float(np.mean(np.abs(signed[sel]))),
                        float(np.mean(signed[sel]))))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ratios", action="store_true")
    ap.add_argument("--gemm-k", action="store_true")
    ap.add_argument("--ceiling", action="store_true")
    args = ap.parse_args(argv)
    every = not (args.ratios or args.gemm_k or args.ceiling)
    if every or args.ratios:
        print("| group | n | measured H200/H100 rate | priced | sd (log) |\n|---|---|---|---|---|")
        for g, n, m, p, sd in ratios():
            print(f"| {g} | {n} | {m:.3f} | {p:.3f} | {sd:.3f} |")
    if every or args.gemm_k:
        ks, cells = gemm_by_k()
        print("\n| dtype | layout | harness | " + " | ".join(f"k {k}" for k in ks)
              + " |\n|---|---|---|" + "---|" * len(ks))
        for (dtype, layout, harness), c in sorted(cells.items()):
            print(f"| {dtype} | {layout} | {harness} | "
                  + " | ".join(f"{c[k][0]:.3f} ({c[k][1]:.3f})" for k in ks) + " |")
        print("(measured (priced), each over the warm-eager rate at k 8192)")
    if every or args.ceiling:
        print("\n| H200 GEMM ceiling | dtype | n | MAPE (time) | signed |\n|---|---|---|---|---|")
        for label, dtype, n, mape, signed in ceiling_whatif():
            print(f"| {label} | {dtype} | {n} | {mape:.1%} | {signed:+.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
