"""Leave one attention source out: the attention constants refitted without each source's rows
in turn, and that source's error under them: the figure for kernels nobody showed the fit.

    python benchmarks/fit_attention.py            # markdown table, one line per source
    python benchmarks/fit_attention.py --per-gpu OUT.json  # attention MAPE per GPU, fit and
        # held out, of `trainsim validate kernels_published.csv --format json > OUT.json`

The fit is ``fit_kernels.fit_attention`` (the same loss, bounds and search as the full fit) on
every attention row ``fit_kernels.split`` does not hold out, less the source left out; the
source's rows are then priced whole (its held-out rows too). Sources as ``fit_kernels`` names
them (``source_key``). The shipped constants are restored afterwards.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fit_kernels as fk
import kernel_rows


def leave_one_out(rows: list[fk.Row]
                  ) -> list[tuple[str, str, int, float, float, list[str], list[float]]]:
    """(source, GPUs, rows, MAPE with the shipped constants, MAPE refitted without it, kernel
    families no fitted row is left for, the refitted constants) per attention source, largest
    first. A family left without rows keeps its shipped constants (``fit_attention``), which
    saw the source: its figure is then not a clean leave-one-out one."""
    held = fk.split(rows)
    attn = fk.attention_rows(rows)
    train = [r for r in attn if not fk.is_held(r, held)]
    shipped = fk.attention_params()
    out = []
    sources = sorted({r.source for r in attn}, key=lambda s: -sum(r.source == s for r in attn))
    try:
        for src in sources:
            mine = [r for r in attn if r.source == src]
            fk.set_attention(np.array(shipped))  # the last fold's refit is not the shipped one
            before = float(np.mean(fk.ape(mine)))
            rest = [r for r in train if r.source != src]
            fk.fit_attention(rest)
            after = float(np.mean(fk.ape(mine)))
            gpus = ",".join(sorted({r.gpu.split("-")[0] for r in mine}))
            fitted = {fk.attention.ATTENTION_FAMILY.get(fk.attention_impl(r)) for r in rest}
            kept = [f for f in fk.ATTN_IMPLS if f not in fitted]
            out.append((src, gpus, len(mine), before, after, kept, fk.attention_params()))
    finally:
        fk.set_attention(np.array(shipped))
    return out


def per_gpu(result: dict, rows: list[fk.Row]) -> list[tuple[str, str, int, float]]:
    """(GPU, 'fit' | 'held-out', n, MAPE) of the attention rows of a ``trainsim validate
    --format json`` result on ``kernels_published.csv`` (each row's ``ape``, the error of the
    rate), split as ``fit_kernels.split`` splits the kernel rows."""
    held = fk.split(rows)
    part = {}
    with open(fk.BUNDLED_DIR / "kernels_published.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            groups = held.get(kernel_rows.DOMAIN.get(r["kind"].strip(), r["kind"].strip()), set())
            src = kernel_rows.source_key(r["source"])
            out = src in groups or f"{src}|{kernel_rows.family(r)}" in groups
            part[r["id"]] = "held-out" if out else "fit"
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in result["rows"]:
        if r["kind"].startswith("attention") and r.get("ape") is not None:
            cells[(r["gpu"], part[r["id"]])].append(r["ape"])
    return [(g, p, len(v), sum(v) / len(v)) for (g, p), v in sorted(cells.items())]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-gpu", metavar="OUT.json",
                    help="attention MAPE per GPU, fit and held out, of a validate JSON result")
    args = ap.parse_args(argv)
    result = None
    if args.per_gpu:  # read before the kernel rows: a wrong file is one usage line at once
        try:
            with open(args.per_gpu, encoding="utf-8") as fh:
                result = json.load(fh)
        except (OSError, ValueError) as exc:
            ap.error(f"--per-gpu {args.per_gpu}: {getattr(exc, 'strerror', None) or exc}")
        if not isinstance(result, dict) or not isinstance(result.get("rows"), list):
            ap.error(f"--per-gpu {args.per_gpu}: not a 'trainsim validate --format json' result")
    rows = fk.load([fk.BUNDLED_DIR / f for f in fk.FILES])
    if result is not None:
        print("| GPU | rows | n | attention MAPE (rate) |\n|---|---|---|---|")
        for g, p, n, mape in per_gpu(result, rows):
            print(f"| {g} | {p} | {n} | {mape:.2%} |")
        return 0
    print("| attention source left out | GPU | n | MAPE, shipped | MAPE, refitted without it |"
          " families kept (no row left) |\n|---|---|---|---|---|---|")
    for src, gpus, n, before, after, kept, _ in leave_one_out(rows):
        print(f"| {src} | {gpus} | {n} | {before:.1%} | {after:.1%} | {', '.join(kept) or '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
