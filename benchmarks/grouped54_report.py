"""Where the grouped-GEMM model misses on the 54th session's H200 (``kernels_h200_grouped54.csv``):
each row priced as ``trainsim validate`` prices it, grouped by implementation, the kernel
PyTorch dispatches (``compute.grouped.torch_sm90_tile``), rows a group and whether its model's
family was held out of ``fit_kernels.py``'s grouped fit.

    PYTHONPATH=src:benchmarks python benchmarks/grouped54_report.py   # markdown table

    PYTHONPATH=src:benchmarks python benchmarks/grouped54_report.py --moe   # run 6's MoE kernels

Errors are of the time: signed = predicted / measured - 1 (positive: priced too slow).

``--moe``: a check no constant saw. Runs 5-6 of ``device_checks54.py`` (``moe_block``) timed seven
dropless MoE forwards (torchtitan's ``_moe_forward``: top-k of random logits, so ragged groups of
256-2,048 rows) and read the profiler's kernels a forward; the two ``torch._grouped_mm`` kernels
(fc1 gated, fc2: one CUTLASS kernel name) are priced here as two ragged grouped GEMMs, without
launch gaps (the profiler sums kernel durations).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fit_kernels import GROUPED_FILES, with_grouped_files
from kernel_rows import family, source_key

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import grouped, roofline
from trainsim.validate.kernels import kernel_ops, predict_kernel_row
from trainsim.workload.ops import Gemm

CSV = Path(__file__).resolve().parent / GROUPED_FILES[0]
MOE_RUN = Path(__file__).resolve().parent / "h200_2026-11-28_s54" / "run6" / "device_checks54.json"
MOE_SHAPES = {  # device_checks54.MOE_CASES: (tokens, hidden, expert ffn, experts, top k)
    "qwen3-30b-a3b-t4096": (4096, 2048, 768, 128, 8), "qwen3-30b-a3b-t16384": (16384, 2048, 768, 128, 8),
    "qwen3-30b-a3b-t32768": (32768, 2048, 768, 128, 8), "veomni-e512-t32768": (32768, 2048, 512, 512, 10),
    "deepseek-v3-ep8-t8192": (8192, 7168, 2048, 32, 8), "mixtral-8x7b-t8192": (8192, 4096, 14336, 8, 2),
    "gpt-oss-120b-ep4-t8192": (8192, 2880, 2880, 32, 4)}


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


def moe_kernels(path: Path = MOE_RUN) -> list[tuple[str, int, float, float]]:
    """(case, rows an expert, measured us, priced us) of the two grouped GEMMs of each MoE forward
    (``--moe`` in the module docstring), priced as the kernels validator prices a loop-timed row."""
    cases = json.loads(path.read_text())["sections"]["moe_block"]["cases"]
    gpu = catalog_gpu("h200-sxm-141gb")
    model = roofline.RooflineModel(dataclasses.replace(gpu, sustained_of_burst=1.0),
                                   gpu.sustained_of_burst * gpu.power_scale)
    out = []
    for case, (t, h, f, e, k) in MOE_SHAPES.items():
        measured = sum(us for name, us in cases[case]["kernels_us"].items() if "cutlass" in name)
        rows = t * k // e
        ops = (Gemm("fc1", rows, 2 * f, h, "bf16", e, grouped="cutlass", ragged=True),
               Gemm("fc2", rows, h, f, "bf16", e, grouped="cutlass", ragged=True))
        priced = sum(model.time(op) - roofline.LAUNCH_S * roofline.kernel_launches(op) for op in ops)
        out.append((case, rows, measured, priced * 1e6))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--moe", action="store_true", help="run 6's MoE forwards' grouped-GEMM kernels")
    if ap.parse_args(argv).moe:
        print("| MoE forward | rows an expert | measured (us) | priced (us) | signed |\n|---|---|---|---|---|")
        for case, rows, measured, priced in moe_kernels():
            print(f"| {case} | {rows} | {measured:.1f} | {priced:.1f} | {priced / measured - 1:+.1%} |")
        return 0
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
