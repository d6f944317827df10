"""Fit ``compute.grouped.LOCAL_BYTES_PER_SM_CLOCK``: the rate at which PyTorch's fp8
``torch._scaled_grouped_mm`` without fast accumulation moves its spilled fp32 accumulator
(``compute.grouped.accumulator_spill_k``) on Hopper (55th session, fp8moe55).

    PYTHONPATH=src:benchmarks python benchmarks/fp8spill55_fit.py [--check]

The rows: every row of ``benchmarks/kernels_h200_grouped54.csv`` whose kernel spills (fp8, fast
accumulation off, PyTorch's 128 x 256 tile: Qwen3-30B-A3B's 512-row groups, five rows; the
54th session's H200 run 1, eager CUDA events). Nothing else in the file moves with the constant
(the test checks it). The rate is fitted by golden-section search on the mean absolute error of
the five rows' times, priced as ``benchmarks/fit_kernels.py`` prices a kernel row (the roofline
alone, the GPU at its burst clock slowed by the benchmark loop's). ``--check`` exits 1 unless the
shipped constant is the fit (to 1 byte a clock).

Printed: each spilling row (measured, priced with the fit, without the spill), the fitted rate,
and the two hardware bounds it should lie between: the L1's port (128 bytes a clock) and the
L2's share of one SM (~7 TB/s over 132 SMs at 1980 MHz, ~27 bytes a clock).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import fit_kernels as fk
import numpy as np

from trainsim.compute import grouped
from trainsim.compute.grouped import torch_sm90_tile
from trainsim.compute.roofline import SMALL_TILE_RATE

HERE = Path(__file__).resolve().parent
FILE = HERE / "kernels_h200_grouped54.csv"


def spilling(row: fk.Row) -> bool:
    """Whether the row's grouped GEMM runs the spilling tile (fp8, slow accumulation, 128 x 256)."""
    return any(getattr(op, "grouped", "") == "cutlass" and op.dtype == "fp8"
               and not op.fp8_fast_accum and torch_sm90_tile(op, SMALL_TILE_RATE)[:2] == (128, 256)
               for op in row.ops)


def rows() -> list[fk.Row]:
    """The file's rows, each with its ops as the validator builds them."""
    return fk.load([FILE])


def mean_ape(rs: list[fk.Row], rate: float) -> float:
    saved = grouped.LOCAL_BYTES_PER_SM_CLOCK
    grouped.LOCAL_BYTES_PER_SM_CLOCK = rate
    try:
        return float(np.mean(fk.ape(rs)))
    finally:
        grouped.LOCAL_BYTES_PER_SM_CLOCK = saved


def fit(rs: list[fk.Row]) -> float:
    """The rate (bytes per SM clock, to 0.5) that minimises the spilling rows' mean error."""
    return fk.golden(lambda x: mean_ape(rs, x), 8.0, 256.0, tol=0.5)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 unless the shipped rate is the fit")
    args = ap.parse_args(argv)
    rs = [r for r in rows() if spilling(r)]
    rate = fit(rs)
    shipped = grouped.LOCAL_BYTES_PER_SM_CLOCK
    big = 1e12  # a spill at no cost
    saved = grouped.LOCAL_BYTES_PER_SM_CLOCK
    try:
        grouped.LOCAL_BYTES_PER_SM_CLOCK = rate
        with_fit = fk.predict(rs)
        grouped.LOCAL_BYTES_PER_SM_CLOCK = big
        without = fk.predict(rs)
    finally:
        grouped.LOCAL_BYTES_PER_SM_CLOCK = saved
    print(f"{'grouped GEMM (groups x m x n x k)':36s} {'measured us':>11s} {'fit us':>8s} "
          f"{'no spill us':>11s}")
    for r, t, t0 in zip(rs, with_fit, without, strict=True):
        op = r.ops[-1]
        shape = f"{op.batch} x {op.m} x {op.n} x {op.k}"
        print(f"{shape:36s} {1e6 * r.measured_s:11.1f} {1e6 * t:8.1f} {1e6 * t0:11.1f}")
    print(f"rows {len(rs)}; MAPE with the fit {100 * mean_ape(rs, rate):.1f} %, shipped "
          f"({shipped:g}) {100 * mean_ape(rs, shipped):.1f} %, without the spill "
          f"{100 * mean_ape(rs, big):.1f} %")
    print(f"fitted LOCAL_BYTES_PER_SM_CLOCK = {rate:.1f} bytes a clock (L1 port 128; "
          f"L2 share ~{7e12 / 132 / 1.98e9:.0f})")
    if args.check and abs(rate - shipped) > 1.0:
        print(f"shipped {shipped} is not the fit {rate:.1f}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
