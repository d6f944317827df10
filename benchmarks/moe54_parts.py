"""The MoE block's price part by part against the H200's profiled kernels (run6), and the
``moe_block`` rows of a kernels file in total.

    PYTHONPATH=src python benchmarks/moe54_parts.py                  # run6, part by part
    PYTHONPATH=src python benchmarks/moe54_parts.py --file F.csv     # a file's moe_block rows

Parts (``benchmarks/device_checks54.py`` ``_moe_forward``): the gather (``index_select``), the
grouped GEMMs (CUTLASS), the element-wise kernels (``F.silu`` on the gate half, its product with
the up half, the weights' product: PyTorch's non-vectorized ``elementwise_kernel``), the zero
fill, the combine (``index_add_``: bf16 atomics) and the rest (argsort, counts, offsets). The model's ops
are mapped to the same parts by name.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from trainsim.validate.kernels import _model, kernel_ops

RUN6 = Path(__file__).resolve().parent / "h200_2026-11-28_s54" / "run6"
PARTS = ("gather", "gemm", "elementwise", "zeros", "combine", "rest")
PROFILED = {"vectorized_gather": "gather", "cutlass": "gemm",
            "elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast": "elementwise",
            "FillFunctor<c10::BFloat16": "zeros", "indexFuncLargeIndex<c10::BFloat16": "combine"}
MODELLED = {"permute": "gather", "expert_act": "elementwise", "expert_probs_mul": "elementwise",
            "unpermute.zeros": "zeros", "unpermute": "combine"}


def profiled_parts(kernels: dict[str, float]) -> dict[str, float]:
    out = dict.fromkeys(PARTS, 0.0)
    for name, us in kernels.items():
        part = next((p for key, p in PROFILED.items() if key in name), "rest")
        out[part] += us * 1e-3
    return out


def modelled_parts(row: dict[str, str]) -> dict[str, float]:
    ops, _ = kernel_ops(row)
    model = _model(row["gpu"].strip(), "auto", False, False)
    out = dict.fromkeys(PARTS, 0.0)
    for op in ops:
        part = "gemm" if op.name.startswith(("expert_fc",)) else MODELLED.get(op.name, "rest")
        out[part] += model.explain(op)[0] * 1e3
    return out


def run6() -> None:
    rows = {r["id"].split("-moe-", 1)[1]: r for r in csv.DictReader((RUN6 / "kernels.csv").open())}
    cases = json.loads((RUN6 / "device_checks54.json").read_text())["sections"]["moe_block"]["cases"]
    print("case | " + " | ".join(f"{p} meas/model ms" for p in PARTS) + " | total meas/model ms")
    for label, case in cases.items():
        meas, mod = profiled_parts(case["kernels_us"]), modelled_parts(rows[label])
        total = float(rows[label]["measured_value"])
        cells = " | ".join(f"{meas[p]:.2f} / {mod[p]:.2f}" for p in PARTS)
        print(f"{label} | {cells} | {total:.2f} / {sum(mod.values()):.2f} "
              f"({100 * (sum(mod.values()) / total - 1):+.1f} %)")


def file_rows(path: str) -> None:
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        if (row.get("kind") or "").strip() != "moe_block":
            continue
        mod = modelled_parts(row)
        meas = float(row["measured_value"])
        parts = ", ".join(f"{p} {mod[p]:.2f}" for p in PARTS if mod[p])
        print(f"{row['id']}: {meas:.3f} ms measured, {sum(mod.values()):.3f} predicted "
              f"({100 * (sum(mod.values()) / meas - 1):+.1f} %): {parts}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", help="a kernels file: its moe_block rows in total")
    args = ap.parse_args(argv)
    if args.file:
        file_rows(args.file)
    else:
        run6()
    return 0


if __name__ == "__main__":
    sys.exit(main())
