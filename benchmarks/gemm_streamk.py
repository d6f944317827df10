"""Experiment, not the model: a stream-K partial wave against the GEMM rows, by GPU generation.

    python benchmarks/gemm_streamk.py               # GEMM time MAPE per GPU / source / dtype
    python benchmarks/gemm_streamk.py --training    # + the training files under each variant
    python benchmarks/gemm_streamk.py --features    # signed residual against shape features
    python benchmarks/gemm_streamk.py --waves 8     # the stream-K wave also behind 2-7 whole waves

The shipped model (``roofline.tile_grid_efficiency``) runs a grid of under
``SPLIT_K_MAX_WAVES`` waves as whole tiles and splits the last, partial wave's k loop into an
integer number of parts over the SMs it leaves idle (``split_k.parts``): 96 output tiles on a
148-SM B200 run unsplit (148 // 96 = 1 part), so 52 SMs idle for the whole kernel. A
stream-K hybrid (Osama et al. 2023, *Stream-K*, §5 "data-parallel + one stream-K wave";
CUTLASS ``PersistentTileSchedulerSm90StreamK`` and ``sm100_tile_scheduler_stream_k.hpp``)
instead shares the partial wave's k iterations out evenly over every SM: each SM runs
rest x k / SMs k-steps, and every tile's fix-up is paid by the parts it was cut into (the
shipped serial fix-up, ``split_k.SPLIT_K_FIXUP`` per part beyond the first). The library
picks the faster of the two (``max`` below), so the variant never slows a GEMM.

Variants (``VARIANTS``): ``shipped``; ``blackwell`` (the stream-K partial wave on compute
capability 10.x only); ``all`` (every GPU). Nothing is refitted: the per-tile cost and the
fix-up stay as shipped, so the figures show the mechanism alone.

``--features`` prints, per source, GPU and dtype, the correlation of the shipped model's log
time ratio with the log of each shape feature (operand bytes over the L2, arithmetic
intensity, measured duration, k, m / n, waves of 128x128 tiles) and its mean over the
feature's terciles: a feature that carries a missing mechanism shows the same sign in every
source that measured the same library.

What it shows: benchmarks/RESULTS.md, 2026-11-26 (27th session, gemm27). Nothing here changes
trainsim.
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
from collections.abc import Iterator
from pathlib import Path

import fit_kernels as fk
import numpy as np

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import roofline, split_k
from trainsim.validate import BUNDLED_DIR, kernels, summarize, validate_file
from trainsim.workload.ops import Gemm

SHIPPED_GRID = roofline.tile_grid_efficiency
SHIPPED_EFF = roofline.RooflineModel.gemm_efficiency
VARIANTS = ("shipped", "blackwell", "all")
REACH = {"waves": float(roofline.SPLIT_K_MAX_WAVES)}
"""Grids of fewer whole waves than this run their partial wave stream-K (``--waves``; the
shipped split's reach, ``SPLIT_K_MAX_WAVES``, unless asked)."""
TORCHAO_B200_BF16 = {1024: 5.08e-6, 1536: 7.87e-6, 2048: 1.52e-5, 3072: 3.84e-5, 4096: 9.74e-5,
                     6144: 3.19e-4, 8192: 7.74e-4}
"""A source no variant was chosen on: pytorch/ao PR #2427 (2025-06-23), ``python
benchmarks/float8/bench_matmul.py --recipe nvfp4`` on 'gpu_name: NVIDIA B200', the
``torch.bfloat16`` reference (``nn.Linear``, M = K = N) ``time_sec`` per size. The script's
``use_gpu_kernel_time`` defaults to True (profiler kernel time) at pytorch/ao 00c0bf10; the PR's
own revision was not read. Square grids of 128x128 tiles: 64 (1024), 144 (1536), 256 (2048:
1.7 waves on 148 SMs), then many waves."""
TRAINING_FILES = (BUNDLED_DIR / "training_public.csv",
                  Path(__file__).resolve().parent / "training_heldout.csv")


def streamk_grid_efficiency(sms: int, op: Gemm, rows: int, cols: int, overhead_k: float,
                            stretch: float, kernel_k: float = 0.0) -> float:
    """``roofline.tile_grid_efficiency`` with a grid of under ``SPLIT_K_MAX_WAVES`` waves run
    as its whole waves plus one stream-K wave (the partial wave's k-steps shared evenly by all
    ``sms`` SMs, each tile's parts paying the serial fix-up), when that is the faster."""
    shipped = SHIPPED_GRID(sms, op, rows, cols, overhead_k, stretch, kernel_k)
    tiles = math.ceil(op.m / rows) * math.ceil(op.n / cols) * op.batch
    full, rest = divmod(tiles, sms)
    if full >= REACH["waves"] or rest == 0:
        return shipped
    pieces = math.ceil(sms / rest)  # parts each partial-wave tile is cut into
    steps = (full * (op.k * stretch + overhead_k) + rest * op.k * stretch / sms
             + overhead_k * (1.0 + (pieces - 1) * split_k.SPLIT_K_FIXUP) + kernel_k)
    useful = op.m * op.n * op.batch / (rows * cols)
    return max(shipped, useful * op.k / sms / steps)


def _applies(name: str, gpu_arch: int | None) -> bool:
    return name == "all" or (name == "blackwell" and (gpu_arch or 0) >= 100)


@contextlib.contextmanager
def variant(name: str) -> Iterator[None]:
    """The roofline with ``name``'s partial wave on the GPUs it applies to; shipped after."""
    def efficiency(self: roofline.RooflineModel, op: Gemm) -> float:
        if not _applies(name, self.gpu.sm_arch):
            return SHIPPED_EFF(self, op)
        roofline.tile_grid_efficiency = streamk_grid_efficiency
        try:
            return SHIPPED_EFF(self, op)
        finally:
            roofline.tile_grid_efficiency = SHIPPED_GRID

    roofline.RooflineModel.gemm_efficiency = efficiency  # type: ignore[method-assign]
    try:
        yield
    finally:
        roofline.RooflineModel.gemm_efficiency = SHIPPED_EFF  # type: ignore[method-assign]
        roofline.tile_grid_efficiency = SHIPPED_GRID


def gemm_rows() -> list[fk.Row]:
    rows = fk.load([BUNDLED_DIR / f for f in fk.FILES])
    return [r for r in rows if r.kind == "gemm"]


def by_source(rows: list[fk.Row], held: dict[str, set[str]]) -> dict[tuple[str, ...], float]:
    """Time MAPE per (GPU, fit / held-out / held-out family, source, dtype)."""
    groups: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for r, e in zip(rows, fk.ape(rows)):
        groups[(r.gpu, fk.cell_part(r, held), fk.source_label(r)[:44],
                r.ops[0].dtype)].append(float(e))
    return {k: float(np.mean(v)) for k, v in sorted(groups.items())}


def kernels_file_by_gpu() -> dict[str, float]:
    """GEMM MAPE per GPU as ``trainsim validate`` scores kernels_published.csv (its priced
    models dropped first: they cache each op's time)."""
    kernels._model.cache_clear()
    _, results = validate_file(BUNDLED_DIR / "kernels_published.csv")
    groups: dict[str, list[float]] = defaultdict(list)
    for r in results:
        if r.extra.get("kind") == "gemm" and r.predicted and r.measured:
            groups[str(r.extra["gpu"])].append(abs(r.predicted / r.measured - 1.0))
    return {g: float(np.mean(v)) for g, v in sorted(groups.items())}


def torchao_b200() -> dict[int, float]:
    """Signed time error (predicted / measured - 1) of ``TORCHAO_B200_BF16`` at the burst clock."""
    gpu = dataclasses.replace(catalog_gpu("b200-sxm-180gb"), sustained_of_burst=1.0)
    return {n: roofline.RooflineModel(gpu).time(Gemm("g", n, n, n, "bf16")) / t - 1.0
            for n, t in TORCHAO_B200_BF16.items()}


def features(rows: list[fk.Row]) -> None:
    """Correlation of log(predicted / measured) with each shape feature, per source."""
    names = ("operands/L2", "FLOP/byte", "duration", "k", "m/n", "waves")
    ratio = np.log(fk.predict(rows) / np.array([r.measured_s for r in rows]))
    groups: dict[str, list[tuple[float, list[float]]]] = defaultdict(list)
    for r, y in zip(rows, ratio):
        op, gpu = r.ops[0], catalog_gpu(r.gpu)
        size = 1 if op.dtype == "fp8" else 2
        x = [(op.m + op.n) * op.k * size * op.batch / gpu.l2_bytes, op.flops / op.bytes,
             r.measured_s, op.k, op.m / op.n,
             math.ceil(op.m / 128) * math.ceil(op.n / 128) / gpu.num_sms]
        groups[f"{fk.source_label(r)[:30]} {r.gpu[:5]} {op.dtype}"].append((float(y), x))
    print("| source GPU dtype | n | mean | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 3) + "|")
    for key, vals in sorted(groups.items()):
        if len(vals) < 10:
            continue
        y = np.array([v[0] for v in vals])
        cells = []
        for j in range(len(names)):
            x = np.log([v[1][j] for v in vals])
            q = np.quantile(x, [1 / 3, 2 / 3])
            terc = [y[x <= q[0]], y[(x > q[0]) & (x <= q[1])], y[x > q[1]]]
            cells.append(f"r {np.corrcoef(x, y)[0, 1]:+.2f} ("
                         + " / ".join(f"{t.mean():+.1%}" if len(t) else "-" for t in terc) + ")")
        print(f"| {key} | {len(vals)} | {y.mean():+.1%} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--training", action="store_true")
    ap.add_argument("--features", action="store_true")
    ap.add_argument("--waves", type=float, default=REACH["waves"],
                    help="stream-K the partial wave of grids under this many whole waves")
    ap.add_argument("--training-variant", choices=VARIANTS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    REACH["waves"] = args.waves
    if args.training_variant:  # one fresh process per variant (no price cached across)
        with variant(args.training_variant):
            out = {p.name: summarize(validate_file(p)[1])["mape"] for p in TRAINING_FILES}
        print(json.dumps(out))
        return 0
    rows = gemm_rows()
    if args.features:
        features(rows)
        return 0
    held = fk.split(fk.load([BUNDLED_DIR / f for f in fk.FILES]))
    tables = {}
    for name in VARIANTS:
        with variant(name):
            tables[name] = (by_source(rows, held), kernels_file_by_gpu(), torchao_b200())
    print("| GPU | part | source | dtype | " + " | ".join(VARIANTS) + " |")
    print("|---" * (4 + len(VARIANTS)) + "|")
    for key in tables["shipped"][0]:
        print("| " + " | ".join(key) + " | "
              + " | ".join(f"{tables[v][0][key]:.1%}" for v in VARIANTS) + " |")
    print("\n| kernels_published.csv GEMM (as validated) | " + " | ".join(VARIANTS) + " |")
    print("|---" * (1 + len(VARIANTS)) + "|")
    for g in tables["shipped"][1]:
        print(f"| {g} | " + " | ".join(f"{tables[v][1][g]:.1%}" for v in VARIANTS) + " |")
    print("\n| pytorch/ao #2427 B200 bf16 M = K = N | " + " | ".join(VARIANTS) + " |")
    print("|---" * (1 + len(VARIANTS)) + "|")
    for n in TORCHAO_B200_BF16:
        print(f"| {n} | " + " | ".join(f"{tables[v][2][n]:+.1%}" for v in VARIANTS) + " |")
    print("| MAPE | " + " | ".join(f"{np.mean(np.abs(list(tables[v][2].values()))):.1%}"
                                   for v in VARIANTS) + " |")
    if args.training:
        print("\n| variant | " + " | ".join(p.name for p in TRAINING_FILES) + " |")
        print("|---" * (1 + len(TRAINING_FILES)) + "|")
        for name in VARIANTS:
            done = subprocess.run([sys.executable, __file__, "--training-variant", name],
                                  capture_output=True, text=True, check=True)
            res = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"| {name} | " + " | ".join(f"{res[p.name]:.3%}" for p in TRAINING_FILES)
                  + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
