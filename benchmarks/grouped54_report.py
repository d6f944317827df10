"""Where the grouped-GEMM model misses on the 54th session's H200 (``kernels_h200_grouped54.csv``):
each row priced as ``trainsim validate`` prices it, grouped by implementation, the kernel
PyTorch dispatches (``compute.grouped.torch_sm90_tile``), rows a group and whether its model's
family was held out of ``fit_kernels.py``'s grouped fit.

    PYTHONPATH=src:benchmarks python benchmarks/grouped54_report.py   # markdown table

Errors are of the time: signed = predicted / measured - 1 (positive: priced too slow).
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fit_kernels import GROUPED_FILES, with_grouped_files
from kernel_rows import family, source_key

from trainsim.compute import grouped
from trainsim.validate.kernels import kernel_ops, predict_kernel_row

CSV = Path(__file__).resolve().parent / GROUPED_FILES[0]


def held_families() -> set[str]:
    """``source|family`` keys ``fit_kernels.py`` holds out of the grouped fit."""
    held: dict[str, set[str]] = {}
    with_grouped_files([], held)
    return held.get("grouped", set())


def category(row: dict[str, str]) -> str:
    """The row's kernel: implementation, direction, dtype and PyTorch's tile for CUTLASS."""
    impl, rid = row["implementation"], row["id"]
    if row["kind"] == "gemm":
        return "dense cuBLAS (wgrad twin)"
    op = kernel_ops(row)[0][0]
    rows = f"r{op.m}" if not rid.endswith("-wgrad") else f"r{op.k} along k"
    if impl != "cutlass":
        return f"{impl} bf16 {rows}"
    r, c, _ = grouped.torch_sm90_tile(op, 1.0)
    what = "wgrad" if rid.endswith("-wgrad") else "ragged" if rid.endswith("-ragged") else "fwd"
    if op.dtype == "fp8":
        what = f"fp8 fast{int(op.fp8_fast_accum)}"
    return f"cutlass {what} {r}x{c}" + ("" if what.startswith(("fp8", "ragged")) else f" {rows}")


def table(path: Path = CSV) -> list[tuple[str, str, int, float, float]]:
    """(category, 'fit' | 'held-out family', n, MAPE, mean signed error) of the time."""
    held = held_families()
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            res = predict_kernel_row(row, compute_db=None)
            if res.error:
                raise SystemExit(f"{row['id']}: {res.error}")
            signed = res.measured / res.predicted - 1.0  # a rate: the time's inverse
            part = "held-out family" if f"{source_key(row['source'])}|{family(row)}" in held \
                else "fit"
            if row["implementation"] in grouped.GROUPED_STREAMS or row["kind"] == "gemm":
                part = "unfitted"
            groups[(category(row), part)].append(signed)
    return [(cat, part, len(v), sum(map(abs, v)) / len(v), sum(v) / len(v))
            for (cat, part), v in sorted(groups.items())]


def main() -> int:
    rows = table()
    print("| kernel | rows | n | MAPE (time) | signed |\n|---|---|---|---|---|")
    for cat, part, n, mape, mean in rows:
        print(f"| {cat} | {part} | {n} | {mape:.1%} | {mean:+.1%} |")
    for part in ("fit", "held-out family"):
        cells = [(n, mape) for cat, p, n, mape, _ in rows if p == part and cat.startswith("cutlass")]
        n = sum(c[0] for c in cells)
        print(f"| **cutlass, all** | {part} | {n} | {sum(c[0] * c[1] for c in cells) / n:.1%} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
