"""Derive ``trainsim.compute.atomics.ATOMIC_ADDS_PER_SM_CLOCK`` (16-bit atomic adds of PyTorch's
``index_add_`` per SM per SM clock) from the H200's profiled MoE un-permutes, and check it.

Data: benchmarks/h200_2026-11-28_s54/run6/device_checks54.json (section ``moe_block``, the
profiler's kernels of each case, two forwards; ``benchmarks/device_checks54.py`` ``_moe_forward``
ends in ``torch.zeros_like(x).index_add_(0, token, out)`` on bf16) and run6/kernels.csv (each
case's tokens, hidden size and top-k). Each case's adds are its routed rows x hidden
(tokens x top-k x hidden: one atomic per source element); its time is the summed
``indexFuncLargeIndex<c10::BFloat16, ...>`` kernels (the int64 one is the harness's expert count).
The constant is the median over the cases of adds / time / (SMs x max SM clock): the kernel's
own time, without a launch gap (the roofline adds its ``LAUNCH_S`` per kernel as for any op).

    PYTHONPATH=src python benchmarks/atomics54_fit.py           # table and the derived constant
    PYTHONPATH=src python benchmarks/atomics54_fit.py --check   # exit 1 if the module's differs
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import atomics

RUN = Path(__file__).resolve().parent / "h200_2026-11-28_s54" / "run6"
KERNEL = "indexFuncLargeIndex<c10::BFloat16"
GPU = "h200-sxm-141gb"


def cases(run: Path = RUN) -> list[dict[str, float | str]]:
    """Each profiled case: label, adds, the bf16 ``index_add_`` kernels' seconds."""
    report = json.loads((run / "device_checks54.json").read_text())
    shapes = {row["id"].split("-moe-", 1)[1]: row
              for row in csv.DictReader((run / "kernels.csv").open())}
    out: list[dict[str, float | str]] = []
    for label, case in report["sections"]["moe_block"]["cases"].items():
        row = shapes[label]
        us = sum(t for name, t in case["kernels_us"].items() if KERNEL in name)
        adds = int(row["tokens"]) * int(row["top_k"]) * int(row["hidden"])
        out.append({"case": label, "adds": float(adds), "seconds": us * 1e-6})
    return out


def derive(run: Path = RUN) -> tuple[float, list[dict[str, float | str]]]:
    """(adds per SM per SM clock, the cases with their own rate)."""
    gpu = catalog_gpu(GPU)
    assert gpu.max_sm_clock_mhz is not None
    per_clock = gpu.num_sms * gpu.max_sm_clock_mhz * 1e6
    rows = cases(run)
    for r in rows:
        r["rate"] = float(r["adds"]) / float(r["seconds"])
        r["per_sm_clock"] = r["rate"] / per_clock
    return statistics.median(float(r["per_sm_clock"]) for r in rows), rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if compute.atomics.ATOMIC_ADDS_PER_SM_CLOCK is not the derived one")
    args = ap.parse_args(argv)
    value, rows = derive()
    for r in rows:
        print(f"{r['case']:28s} adds {float(r['adds']) / 1e6:8.1f} M  "
              f"{float(r['seconds']) * 1e3:7.3f} ms  {float(r['rate']) / 1e9:6.1f} G/s  "
              f"{float(r['per_sm_clock']):.3f} per SM clock")
    print(f"median {value:.4f} adds per SM per SM clock; module {atomics.ATOMIC_ADDS_PER_SM_CLOCK}")
    if args.check and round(value, 3) != atomics.ATOMIC_ADDS_PER_SM_CLOCK:
        print("compute.atomics.ATOMIC_ADDS_PER_SM_CLOCK differs from the derived value")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
