"""A Triton grouped GEMM's fixed cost per output tile, read from the empty-program probe's runs.

    PYTHONPATH=src python benchmarks/triton_tile_cost.py            # table
    PYTHONPATH=src python benchmarks/triton_tile_cost.py --markdown

The probe (``empty_program_probe.py``, run on one H100 and one H200 by the 36th session; its
JSONs are ``benchmarks/h100_2026-11-27`` and ``h200_2026-11-27/empty_program_probe.json``) timed
VeOmni's Triton grouped GEMM (128 x 128 x 32 tiles, 4 warps, 3 stages, bf16) over the real row
blocks of two MoE shapes, each at two k: 128 experts x 2,048 rows (gate/up n 768 k 2,048, down
n 2,048 k 768) and 512 experts x 640 rows (n 512 k 2,048, n 2,048 k 512). Routing is even, so
every block is full and the launch is ``tiles`` programs of equal work.

If each tile costs its main loop plus a fixed cost ``o`` in k-steps (the dense model's
``roofline.GEMM_TILE_OVERHEAD_K``, 219, fitted to cuBLAS), then time = tiles x (k + o) x c on
one GPU, and each pair of k solves for ``o``:

    o = (k1 - r k2) / (r - 1),   r = (t1 / tiles1) / (t2 / tiles2)

The script prints ``o`` for every pair and the shipped model's error on each launch (the rows
priced as the validator prices a ``gemm_grouped`` ``triton`` row, roofline only). The result
is what ``compute.grouped.TILE_COST_HIDDEN`` states: a Triton grouped GEMM shows no fixed cost
per tile to measure. Nothing is fitted here.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

from trainsim.compute.roofline import GEMM_TILE_OVERHEAD_K
from trainsim.validate.kernels import predict_kernel_row

HERE = Path(__file__).resolve().parent
PROBES = (HERE / "h100_2026-11-27" / "empty_program_probe.json",
          HERE / "h200_2026-11-27" / "empty_program_probe.json")
GPUS = {"NVIDIA H200": "h200-sxm-141gb", "NVIDIA H100 80GB HBM3": "h100-sxm-80gb"}
"""The catalog GPU of each probe's ``device``."""


def real_launches(probe: dict) -> dict[tuple[int, int, int, int], float]:
    """(groups, rows, n, k) -> median seconds of the probe's real-block launches."""
    times: dict[tuple[int, int, int, int], list[float]] = {}
    for x in probe["launches"]:
        if x["part"].endswith("-real") and "seconds" in x:
            times.setdefault((x["groups"], x["rows"], x["n"], x["k"]), []).append(x["seconds"])
    return {key: statistics.median(v) for key, v in times.items()}


def tiles(groups: int, rows: int, n: int, block: int = 128) -> int:
    """Output tiles of an even grouped GEMM: each group's rows and ``n`` in 128 x 128 blocks."""
    return groups * math.ceil(rows / groups / block) * math.ceil(n / block)


def fixed_cost(a: tuple[int, float, int], b: tuple[int, float, int]) -> float:
    """``o`` (k-steps) from two launches (tiles, seconds, k) on one GPU."""
    (t1, s1, k1), (t2, s2, k2) = a, b
    r = (s1 / t1) / (s2 / t2)
    return (k1 - r * k2) / (r - 1.0)


def priced(gpu: str, groups: int, rows: int, n: int, k: int, seconds: float) -> float:
    """The shipped model's time for the launch, as the validator prices a ``triton`` row."""
    row = {"id": f"probe-{groups}e-n{n}-k{k}", "source": "empty_program_probe.py",
           "gpu": gpu, "kind": "gemm_grouped", "implementation": "triton", "dtype": "bf16",
           "m": str(rows), "n": str(n), "k": str(k), "groups": str(groups),
           "measured_value": repr(seconds), "measured_unit": "s", "note": ""}
    res = predict_kernel_row(row, compute_db=None)
    if res.predicted is None:
        raise SystemExit(f"{row['id']}: {res.error}")
    return res.predicted


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    sep = " | " if args.markdown else "  "
    if args.markdown:
        print("| GPU | experts | n x k | tiles | measured ms | priced ms | error | fixed cost o "
              "(k-steps) |\n|---|---|---|---|---|---|---|---|")
    errors = []
    for path in PROBES:
        probe = json.loads(path.read_text())
        gpu = GPUS[probe["device"]]
        launches = real_launches(probe)
        for groups in sorted({g for g, _, _, _ in launches}):
            pair = sorted(((tiles(g, rows, n), s, k, n, rows) for (g, rows, n, k), s
                           in launches.items() if g == groups), key=lambda x: -x[2])
            o = fixed_cost(pair[0][:3], pair[1][:3]) if len(pair) == 2 else float("nan")
            for t, s, k, n, rows in pair:
                p = priced(gpu, groups, rows, n, k, s)
                errors.append(abs(p / s - 1.0))
                cells = [gpu, str(groups), f"{n} x {k}", f"{t:,}", f"{s * 1e3:.3f}",
                         f"{p * 1e3:.3f}", f"{p / s - 1:+.1%}", f"{o:+.0f}"]
                print(("| " if args.markdown else "") + sep.join(cells)
                      + (" |" if args.markdown else ""))
    print(f"\ndense fixed cost (cuBLAS fit): {GEMM_TILE_OVERHEAD_K} k-steps; "
          f"shipped model on the {len(errors)} launches: MAPE {statistics.fmean(errors):.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
