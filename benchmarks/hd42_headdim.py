"""Attention at head dims that are not a power of two, against the 41st session's H200 rows
(42nd session, hd42).

    PYTHONPATH=src python benchmarks/hd42_headdim.py             # both tables, markdown
    PYTHONPATH=src python benchmarks/hd42_headdim.py --json      # the same as JSON

Rows: ``benchmarks/h200_2026-11-27_s41/kernels_h200_s41_hd.csv`` (run 7: head dims 96, 160, 192)
and ``kernels_h200_s41.csv`` (runs 1-2: 64, 128, 256); the FA3 paper's Fig. 5 grid, 16k tokens,
heads = 2,048 // head dim, causal or not, SDPA's FLASH_ATTENTION (FlashAttention-2, PyTorch's
copy) and CUDNN_ATTENTION (cuDNN 9.19) backends, forward and backward.

1. ``signed``: trainsim's predicted over measured rate - 1 (positive: priced fast), mean and
   range per backend, pass and head dim.
2. ``width``: the kernel-width evidence. At a hidden width of 1,920 (12 heads of 160, 10 of
   192) both head dims do the same FLOPs, so the measured time ratio t(160) / t(192) is what the
   160-wide heads cost beyond their FLOPs; a kernel that runs them padded to 192
   (``compute.attention_head_dims``) costs 12 x 192 / (10 x 192) = 1.2x. Likewise 21 heads of
   96 against 16 of 128 (FLOPs 2,016 / 2,048), padded to 128: 2,688 / 2,048.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from collections import defaultdict
from pathlib import Path

from trainsim.compute.attention_head_dims import kernel_head_dims
from trainsim.validate.kernels import _attention, predict_kernel_row

HERE = Path(__file__).resolve().parent / "h200_2026-11-27_s41"
FILES = (HERE / "kernels_h200_s41_hd.csv", HERE / "kernels_h200_s41.csv")
PAIRS = ((160, 192), (96, 128))


def load_rows(files: tuple[Path, ...] = FILES) -> list[dict[str, str]]:
    """The attention rows of ``files``."""
    rows: list[dict[str, str]] = []
    for f in files:
        with open(f, newline="") as fh:
            rows += [r for r in csv.DictReader(fh) if r["kind"].startswith("attention")]
    return rows


def key(row: dict[str, str]) -> tuple[str, str, bool, int]:
    """(backend, pass, causal, head dim) of a row."""
    return (row["implementation"], row["kind"].removeprefix("attention_"),
            row["causal"].strip() == "1", int(row["head_dim"]))


def measured_time_s(row: dict[str, str]) -> float:
    """The row's time from its rate and the validation README's FLOP convention."""
    b, s, h, d = (int(row[c]) for c in ("batch", "seq_len", "heads", "head_dim"))
    flops = 4.0 * b * s * s * h * d * (0.5 if row["causal"].strip() == "1" else 1.0)
    if row["kind"] == "attention_bwd":
        flops *= 2.5
    return flops / (float(row["measured_value"]) * 1e12)


def signed(rows: list[dict[str, str]]) -> dict[str, dict[str, float]]:
    """Predicted over measured rate - 1 per 'backend pass hdD': mean, min, max, n."""
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        res = predict_kernel_row(row)
        if res.predicted is None:
            continue
        impl, part, _, d = key(row)
        groups[f"{impl} {part} hd{d}"].append(res.predicted / res.measured - 1.0)
    return {k: {"mean": statistics.fmean(v), "min": min(v), "max": max(v), "n": len(v)}
            for k, v in sorted(groups.items())}


def width(rows: list[dict[str, str]]) -> dict[str, dict[str, float]]:
    """Per backend, pass and pair of head dims (``PAIRS``): the measured time ratio of the
    narrower heads over the wider at the same backend, pass, mask and sequence length (range
    and mean over the grid), beside the FLOP ratio and the ratio of the kernels' padded widths
    (``kernel_head_dims``, query/key and value)."""
    by = {(key(r), int(r["seq_len"])): r for r in rows}
    out: dict[str, dict[str, float]] = {}
    for (impl, part, causal, d), s in sorted(by):
        for lo, hi in PAIRS:
            if d != lo or ((impl, part, causal, hi), s) not in by:
                continue
            a, b = by[((impl, part, causal, lo), s)], by[((impl, part, causal, hi), s)]
            ratio = measured_time_s(a) / measured_time_s(b)
            ops = [_attention(r, part == "bwd") for r in (a, b)]
            flops = ops[0].flops / ops[1].flops
            padded = [op.heads * sum(kernel_head_dims(op)) for op in ops]
            entry = out.setdefault(f"{impl} {part} hd{lo}/hd{hi}", {
                "measured": [], "flops": flops, "kernel_width": padded[0] / padded[1]})
            entry["measured"].append(ratio)  # type: ignore[union-attr]
    for entry in out.values():
        m = entry.pop("measured")
        entry.update(mean=statistics.fmean(m), min=min(m), max=max(m), n=len(m))  # type: ignore[arg-type]
    return out


def markdown(sig: dict[str, dict[str, float]], wid: dict[str, dict[str, float]]) -> str:
    lines = ["| backend pass head dim | n | predicted / measured rate - 1: mean (min..max) |",
             "|---|---|---|"]
    lines += [f"| {k} | {v['n']} | {v['mean']:+.1%} ({v['min']:+.1%}..{v['max']:+.1%}) |"
              for k, v in sig.items()]
    lines += ["", ("| backend pass pair | n | measured time ratio: mean (min..max) | FLOPs | "
                   "kernel widths |"), "|---|---|---|---|---|"]
    lines += [f"| {k} | {v['n']} | {v['mean']:.3f} ({v['min']:.3f}..{v['max']:.3f}) | "
              f"{v['flops']:.3f} | {v['kernel_width']:.3f} |" for k, v in wid.items()]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="JSON instead of markdown")
    args = ap.parse_args()
    rows = load_rows()
    sig, wid = signed(rows), width(rows)
    print(json.dumps({"signed": sig, "width": wid}, indent=1) if args.json
          else markdown(sig, wid))


if __name__ == "__main__":
    main()
