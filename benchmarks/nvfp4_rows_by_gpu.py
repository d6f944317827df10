"""The Llama NVFP4 rows' signed errors beside their GPU's other Llama rows of the same archive.

    PYTHONPATH=src python benchmarks/nvfp4_rows_by_gpu.py

Megatron-Bridge's performance archive (benchmarks/training_bridge_archive.csv) runs Llama 3 / 3.1
in FP8, MXFP8 and NVFP4 on GB200 and GB300; MLPerf v5.1 (benchmarks/training_mlperf51_nvfp4.csv)
adds NVFP4 Llama 3.1 405B on both. A GEMM rate that is wrong for NVFP4 on one GPU only shows as
an NVFP4 residual (its error less the mean error of the same GPU's non-NVFP4 Llama rows) that
differs between the GPUs; one shared by both points at what NVFP4 adds on every GPU (its casts).
A check on ``compute.roofline.NVFP4_OF_FP8_RATE``, not an input to anything.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from trainsim.validate import validate_file

HERE = Path(__file__).resolve().parent
FILES = ("training_bridge_archive.csv", "training_mlperf51_nvfp4.csv")


def signed_errors(validated: Callable[[Path], Sequence[Any]] = lambda path: validate_file(path)[1]
                  ) -> list[tuple[str, str, str, float]]:
    """(id, gpu, recipe, signed error) of every Llama row of ``FILES`` on GB200 or GB300, the
    rows' results from ``validated`` (a file's ``RowResult`` list)."""
    out = []
    for name in FILES:
        cells = {r["id"]: r for r in csv.DictReader((HERE / name).open())}
        for r in validated(HERE / name):
            row = cells[r.id]
            if "llama" in r.id and row["gpu"] in ("gb200", "gb300") and r.error is None:
                out.append((r.id, row["gpu"], row["fp8_recipe"] or row["dtype"],
                            r.predicted / r.measured - 1))
    return out


def residuals(rows: list[tuple[str, str, str, float]]) -> dict[str, tuple[float, float, int]]:
    """Per GPU: (mean signed error of the non-NVFP4 rows, of the NVFP4 rows, NVFP4 rows)."""
    out = {}
    for gpu in ("gb200", "gb300"):
        other = [e for _, g, rec, e in rows if g == gpu and rec != "nvfp4"]
        nv = [e for _, g, rec, e in rows if g == gpu and rec == "nvfp4"]
        out[gpu] = (sum(other) / len(other), sum(nv) / len(nv), len(nv))
    return out


def main() -> None:
    rows = signed_errors()
    for rid, gpu, rec, e in rows:
        print(f"  {rid:52s} {gpu:6s} {rec:8s} {100 * e:+6.1f} %")
    for gpu, (other, nv, n) in residuals(rows).items():
        print(f"{gpu}: non-NVFP4 Llama rows {100 * other:+.1f} %, NVFP4 ({n}) {100 * nv:+.1f} %,"
              f" NVFP4 residual {100 * (nv - other):+.1f} points")


if __name__ == "__main__":
    main()
