"""Which software era each GPU's GEMM ceiling comes from, and what cuBLAS's own tiles say about
the model's tile set (issue 17 item 1: GEMM MAPE per GPU).

    python benchmarks/gemm_catalog_era.py            # --eras and --census
    python benchmarks/gemm_catalog_era.py --eras     # MAMF rows by table / software vs the catalog
    python benchmarks/gemm_catalog_era.py --census   # cuBLAS tiles in the bundled databases
    python benchmarks/gemm_catalog_era.py --tiles    # the model with cuBLAS 13's tiles, refitted

**Eras** (``--eras``). The catalog's ``mamf_fraction`` / ``mamf_fraction_fp8`` are the GPU's
maximum achievable matmul rate over its dense peak, read from Bekman's MAMF tables
(stas00/ml-engineering compute/accelerator/README.md): the 2024 "v1" table (no cache reset, CUDA
12.1 / ROCm 6.2), the @744d01e1 "v2" table (mean of 100 calls after 50 warm-up, torch 2.5-2.7)
and the fast-mamf branch @082816f9 (burst-validated MAMF and sustained MSMF, torch 2.13). Each
MAMF row of ``kernels_published.csv`` is listed beside the catalog fraction of its GPU, and the
project's own H100 and H200 files (one script, torch 2.11 + CUDA 13, the same shapes) give the
two GPUs' rate ratio with the software held fixed and each file's best GEMM rate.

**Census** (``--census``). The bundled kernel databases (``trainsim profile``, torch 2.11 + CUDA
13 on one H100 and one H200) keep each profiled layer's kernels by name; cuBLAS's Hopper GEMM
kernels are named ``nvjet_sm90_tst_<M>x<N>_...``, the CTA tile first. Counted over every layer
record: which tiles cuBLAS ran, by calls and by GEMM time.

**Tiles** (``--tiles``). The shipped tile choice on Hopper (``roofline.gemm_tiles``: 128x128 at
``SMALL_TILE_RATE``, 128x256 and 256x128) with the census's large tiles added at the full rate
(192x192; 320x128 and 128x320; both), each refitted the way ``fit_kernels.py`` fits the GEMM
constants (``GEMM_TILE_OVERHEAD_K``, ``SMALL_TILE_RATE``, ``split_k.SPLIT_K_FIXUP``,
``LOOP_CLOCK_TAU_S``, golden sections in turn, on its fitted GEMM rows), then scored as
``fit_kernels.py`` reports (roofline, time MAPE per GPU and part) and as ``trainsim validate``
scores the three kernel files' GEMM rows (``gemm_hypotheses.cells``). The shipped constants are
restored after each variant.

What it shows: benchmarks/RESULTS.md, 2026-11-27 (37th session, gemm37). Nothing here changes
trainsim.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import csv
import json
import math
import re
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fit_kernels as fk
from kernel_rows import FILES, is_held, load, split

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import roofline, split_k
from trainsim.validate import BUNDLED_DIR

PUBLISHED = BUNDLED_DIR / "kernels_published.csv"
H100_FILE = BUNDLED_DIR / "kernels_h100_measured.csv"
H200_FILE = HERE / "kernels_h200_measured.csv"
DATABASES = tuple(sorted((BUNDLED_DIR.parent / "kernels").glob("*.json")))
"""The kernel databases bundled with trainsim (``src/trainsim/data/kernels``)."""

MAMF_ID = re.compile(r"^(mamf|msmf)-")
NVJET = re.compile(r"^nvjet_sm(\d+)_[a-z]+_(\d+)x(\d+)_")
SOFTWARE = re.compile(r"(torch [\w.+]+|CUDA-[\d.]+|ROCm-[\d.]+)")


def table_of(row: dict[str, str]) -> str:
    """Which MAMF table a row was read from: 'v1', 'v2' or 'fast' (its id's last word)."""
    return row["id"].rsplit("-", 1)[-1]


def rate(row: dict[str, str]) -> float:
    """A GEMM row's measured rate (FLOP/s)."""
    value = float(row["measured_value"])
    if row["measured_unit"] == "TFLOP/s":
        return value * 1e12
    scale = {"ms": 1e-3, "us": 1e-6, "s": 1.0}[row["measured_unit"]]
    batch = int(row.get("batch") or 1)
    return 2.0 * int(row["m"]) * int(row["n"]) * int(row["k"]) * batch / (value * scale)


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def eras() -> list[tuple[str, str, str, str, float, float, float]]:
    """(GPU, dtype, table, software, measured TFLOP/s, its fraction of the dense peak, the
    catalog's fraction) for every MAMF / MSMF row of the published file."""
    out = []
    for r in _read(PUBLISHED):
        if r["kind"] != "gemm" or not MAMF_ID.match(r["id"]):
            continue
        gpu = catalog_gpu(r["gpu"])
        dtype = r["dtype"]
        frac = gpu.mamf_fraction_fp8 if dtype == "fp8" and gpu.mamf_fraction_fp8 else \
            gpu.mamf_fraction
        soft = SOFTWARE.search(r["note"]) or SOFTWARE.search(r["source"])
        label = ("MSMF " if r["id"].startswith("msmf") else "") + table_of(r)
        out.append((r["gpu"], dtype, label, soft.group(1) if soft else "?",
                    rate(r) / 1e12, rate(r) / gpu.flops(dtype), frac))
    return sorted(out)


def same_harness() -> dict[str, tuple[int, float, float, float]]:
    """Per dtype: (shapes both measured files timed, geometric-mean H200 / H100 rate, the
    H100 file's best rate, the H200 file's best rate), TFLOP/s. One script, torch, CUDA and
    shape list on both GPUs: the ratio is the GPU's."""
    def by_shape(path: Path) -> dict[str, dict[str, str]]:
        return {r["id"].split("-", 1)[1]: r for r in _read(path) if r["kind"] == "gemm"}
    a, b = by_shape(H100_FILE), by_shape(H200_FILE)
    out = {}
    for dtype in ("bf16", "fp8"):
        keys = [k for k in a if k in b and a[k]["dtype"] == dtype]
        logs = [math.log(rate(b[k]) / rate(a[k])) for k in keys]
        out[dtype] = (len(keys), math.exp(statistics.mean(logs)),
                      max(rate(a[k]) for k in a if a[k]["dtype"] == dtype) / 1e12,
                      max(rate(b[k]) for k in b if b[k]["dtype"] == dtype) / 1e12)
    return out


def census(path: Path) -> tuple[dict[str, float], dict[str, float], str]:
    """(calls per tile, share of GEMM time per tile, 'torch / CUDA') of cuBLAS's ``nvjet``
    kernels over every layer record of one kernel database."""
    db = json.loads(path.read_text())
    calls: dict[str, float] = collections.Counter()
    time_s: dict[str, float] = collections.Counter()
    for layer in db.get("layers", []):
        for k in layer["kernels"]:
            m = NVJET.match(k["name"])
            if m:
                tile = f"{m.group(2)}x{m.group(3)}"
                calls[tile] += k["calls"]
                time_s[tile] += k["time_s"]
    total = sum(time_s.values()) or 1.0
    return dict(calls), {t: v / total for t, v in time_s.items()}, \
        f"torch {db.get('torch')}, CUDA {db.get('cuda')}"


TILE_VARIANTS: dict[str, tuple[tuple[int, int, float], ...]] = {
    "shipped": (),
    "+192x192": ((192, 192, 1.0),),
    "+320x128, 128x320": ((320, 128, 1.0), (128, 320, 1.0)),
    "+both": ((192, 192, 1.0), (320, 128, 1.0), (128, 320, 1.0)),
}
"""Tiles added on Hopper to ``roofline.gemm_tiles`` at the big tiles' full rate (each moves
more outputs per operand row through shared memory than 128x256: 96 and 91 against 85)."""

GEMM_CONSTANTS = ((roofline, "GEMM_TILE_OVERHEAD_K"), (roofline, "SMALL_TILE_RATE"),
                  (split_k, "SPLIT_K_FIXUP"), (roofline, "LOOP_CLOCK_TAU_S"),
                  (roofline, "gemm_tiles"))


@contextlib.contextmanager
def tile_variant(extra: tuple[tuple[int, int, float], ...]) -> Iterator[None]:
    """``roofline.gemm_tiles`` with ``extra`` tiles on Hopper inside the block; every GEMM
    constant (``GEMM_CONSTANTS``) restored after."""
    saved = [(mod, name, getattr(mod, name)) for mod, name in GEMM_CONSTANTS]
    shipped = roofline.gemm_tiles

    def gemm_tiles(gpu):
        tiles = shipped(gpu)
        return tiles + extra if roofline.smem_fed_mma(gpu) else tiles
    roofline.gemm_tiles = gemm_tiles
    try:
        yield
    finally:
        for mod, name, value in saved:
            setattr(mod, name, value)


def refit_gemm(train: list, rounds: int = 2) -> float:
    """The four GEMM constants by golden section in turn on ``train`` (as ``fit_kernels.fit``
    does, ``rounds`` rounds); returns the fitted rows' MAPE."""
    def loss() -> float:
        return float(np.mean(fk.ape(train)))

    def by(mod, name, scale=1.0):
        def f(x: float) -> float:
            setattr(mod, name, x * scale)
            return loss()
        return f
    for _ in range(rounds):
        roofline.GEMM_TILE_OVERHEAD_K = round(fk.golden(by(roofline, "GEMM_TILE_OVERHEAD_K"),
                                                        0.0, 1024.0))
        roofline.SMALL_TILE_RATE = round(fk.golden(by(roofline, "SMALL_TILE_RATE"), 0.7, 1.0,
                                                   tol=0.005), 2)
        split_k.SPLIT_K_FIXUP = round(fk.golden(by(split_k, "SPLIT_K_FIXUP"), 0.0, 2.0,
                                                tol=0.01), 2)
        roofline.LOOP_CLOCK_TAU_S = round(fk.golden(by(roofline, "LOOP_CLOCK_TAU_S", 1e-3),
                                                    0.1, 50.0, tol=0.05), 1) * 1e-3
    return loss()


def tiles(names: list[str] | None = None) -> list[tuple[str, str, list, dict]]:
    """Per variant: (name, refitted constants, ``fit_kernels.report`` GEMM cells, validator
    GEMM cells per file)."""
    from gemm_hypotheses import cells  # imports trainsim.validate's pricer

    rows = load([BUNDLED_DIR / f for f in FILES])
    held = split(rows)
    rows = fk.with_gpu_files(rows, held)
    gemms = [r for r in rows if r.kind == "gemm"]
    train = [r for r in gemms if not is_held(r, held)]
    out = []
    for name in names or list(TILE_VARIANTS):
        with tile_variant(TILE_VARIANTS[name]):
            loss = refit_gemm(train)
            consts = (f"K {roofline.GEMM_TILE_OVERHEAD_K}, small tile "
                      f"{roofline.SMALL_TILE_RATE}, fix-up {split_k.SPLIT_K_FIXUP}, "
                      f"tau {roofline.LOOP_CLOCK_TAU_S * 1e3:.1f} ms; fitted rows {loss:.2%}")
            out.append((name, consts, fk.report(gemms, held),
                        {f.name: cells(f) for f in (PUBLISHED, H100_FILE, H200_FILE)}))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eras", action="store_true")
    ap.add_argument("--census", action="store_true")
    ap.add_argument("--tiles", action="store_true")
    args = ap.parse_args(argv)
    every = not (args.eras or args.census or args.tiles)
    if args.eras or every:
        print("| GPU | dtype | table | software | MAMF TFLOP/s | of peak | catalog |\n"
              "|---|---|---|---|---|---|---|")
        for g, dtype, table, soft, tf, frac, cat in eras():
            print(f"| {g} | {dtype} | {table} | {soft} | {tf:.1f} | {frac:.3f} | {cat:.3f} |")
        print("\n| dtype | shapes | H200 / H100 (same script) | H100 file best | H200 file best |"
              "\n|---|---|---|---|---|")
        for dtype, (n, ratio, a, b) in same_harness().items():
            print(f"| {dtype} | {n} | {ratio:.3f} | {a:.1f} | {b:.1f} |")
    if args.census or every:
        for path in DATABASES:
            calls, share, soft = census(path)
            print(f"\n{path.name} ({soft}): cuBLAS tile, calls, share of GEMM time")
            for tile, s in sorted(share.items(), key=lambda kv: -kv[1]):
                print(f"  {tile:8s} {calls[tile]:5.0f} {s:6.1%}")
    if args.tiles:
        for name, consts, table, files in tiles():
            print(f"\n{name}: {consts}")
            print("  fit_kernels (roofline, time): " + "; ".join(
                f"{g} {p} {m:.1%}" for _, g, p, _, m in table))
            for fname, c in files.items():
                print(f"  validate {fname}: " + ", ".join(
                    f"{g} {v:.2%}" for g, v in sorted(c.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
