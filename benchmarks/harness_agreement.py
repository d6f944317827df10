"""How far two measurements of the same GEMMs on the same H100 agree.

    python benchmarks/harness_agreement.py [kernels_h100_measured.csv]

The bundled kernel database (``trainsim profile``: rotating inputs, median of repeats, each
queued behind a sleep kernel) and ``kernels_h100_measured.csv`` (``measure_kernels.py``: the same
inputs repeated, CUDA-graph replay, mean of a loop) share 116 GEMM shapes per dtype. Their time
ratio, shape by shape, bounds what any model can reach against one of them while priced from the
other: issue 24 asks for GEMM MAPE <= 5 % against the second with the first bundled.
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DB = ROOT / "src" / "trainsim" / "data" / "kernels" / "h100-sxm-80gb.json"
SHARED = ROOT.parent / "shared" / "validation" / "kernels_h100_measured.csv"
BUNDLED = ROOT / "src" / "trainsim" / "data" / "validation" / "kernels_h100_measured.csv"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else (SHARED if SHARED.exists() else BUNDLED)
    measured: dict[tuple, float] = {}
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            if r["kind"] == "gemm" and r["measured_unit"] == "TFLOP/s":
                m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
                measured[(r["dtype"], m, n, k)] = 2 * m * n * k / float(r["measured_value"]) / 1e12
    records = json.loads(DB.read_text())["kernels"]
    print(f"{path.name} against {DB.name} (time ratio database / measured, same shape)")
    for dtype in ("bf16", "fp8"):
        ratios = [rec["time_s"] / measured[key] for rec in records
                  if rec.get("op") == "gemm" and rec.get("batch", 1) in (1, None)
                  and (key := (rec.get("dtype", "bf16"), rec.get("m"), rec.get("n"), rec.get("k")))
                  in measured and key[0] == dtype]
        if not ratios:
            continue
        med = statistics.median(ratios)
        mape = statistics.mean(abs(x - 1) for x in ratios)
        spread = statistics.mean(abs(x / med - 1) for x in ratios)
        print(f"  {dtype}: {len(ratios)} shapes, median ratio {med:.3f}, MAPE {mape:.1%}, "
              f"MAPE after the median offset {spread:.1%}, range {min(ratios):.2f}-{max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
