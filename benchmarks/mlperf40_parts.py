"""The MLPerf GPT-3 175B rows taken apart (40th session, mlperf40; a diagnostic: nothing here
feeds trainsim).

    PYTHONPATH=src python benchmarks/mlperf40_parts.py            # ~1 min
    PYTHONPATH=src python benchmarks/mlperf40_parts.py --no-variants

Meant to be run with ``benchmarks/candidates/mlperf_fixed_dropout.patch`` applied (the MLPerf
configs' dropout 0.0) and without it, to compare. For every MLPerf GPT-3 row (the public file's
``mlperf3*/4*-gpt3-175b`` rows with ``benchmarks/training_errata.csv`` applied, and the GPT-3 rows
of ``benchmarks/training_mlperf_partners.csv``) it prints:

1. the predicted step by part (``step_parts.parts``: compute, exposed TP / PP / DP communication,
   bubble, optimizer, host) beside the measured step, the gap (measured - predicted, seconds) and
   the gap as a share of the predicted compute (the GEMM/attention slowdown that alone would close
   it);
2. the bubble the engine charges beside the interleaved-1F1B formula
   (p - 1) / (v m) x compute, m = micro-batches per rank (``formula_bubble``);
3. what-ifs on the source settings, each a change of one cell: TP overlap off (``-tp_overlap``),
   p2p overlap off (``-pp_overlap``), DP overlap off (``-dp_overlap``), and the other attention
   kernel (cudnn <-> flash2): the signed error of each, so a candidate mechanism's size reads
   against the row's gap;
4. for pairs of rows of one round and layout that differ only in micro-batches per rank (``PAIRS``),
   the step split into a per-micro-batch slope and a fixed part (``two_point``), measured and
   predicted: a gap in the slope is a per-micro-batch cost (compute, TP, p2p), one in the fixed
   part a per-step cost (bubble, DP, optimizer).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from step_parts import PUBLIC, parts, read

HERE = Path(__file__).resolve().parent
PARTNERS = str(HERE / "training_mlperf_partners.csv")
OPTIONS = ("tp_overlap", "pp_overlap", "dp_overlap")


def is_gpt3_mlperf(row_id: str) -> bool:
    """An MLPerf GPT-3 175B row id (``mlperfNN[-submitter]-gpt3-175b-...``)."""
    return row_id.startswith("mlperf") and "-gpt3-175b" in row_id


def gpt3_ids(path: str) -> list[str]:
    with open(path, newline="") as fh:
        return [r["id"] for r in csv.DictReader(fh) if is_gpt3_mlperf(r["id"])]


def micro_batches(gbs: int, mbs: int, dp: int) -> int:
    """Micro-batches each pipeline rank runs per step."""
    return gbs // (mbs * dp)


def formula_bubble(compute_s: float, pp: int, vpp: int, m: int) -> float:
    """Interleaved 1F1B bubble (Narayanan et al. 2021, SC21, section 2.2.2): (p - 1) / (v m)
    of the ideal step, taken here as the rank's compute."""
    if pp <= 1 or m <= 0:
        return 0.0
    return compute_s * (pp - 1) / (max(vpp, 1) * m)


def gap_share(measured: float, predicted: float, compute: float) -> float:
    """The gap as a fraction of the predicted compute: how much slower compute alone would have
    to be priced to close it (positive: the row is priced fast)."""
    return (measured - predicted) / compute if compute else 0.0


def two_point(m1: int, t1: float, m2: int, t2: float) -> tuple[float, float]:
    """The line t = fixed + m x per_mb through two steps of one configuration that differ in
    micro-batches per rank only: (per_mb, fixed) in seconds."""
    per_mb = (t1 - t2) / (m1 - m2)
    return per_mb, t1 - m1 * per_mb


PAIRS = (("mlperf31-gpt3-175b-512", "mlperf31-gpt3-175b-4096"),
         ("mlperf31-gpt3-175b-4096", "mlperf31-gpt3-175b-10240"),
         ("mlperf41-gpt3-175b-h100-256", "mlperf41-gpt3-175b-h100-512"))
"""Rows of one round and layout (tp, pp, vpp, mbs) that differ in micro-batches per rank."""


def pair_lines(got: dict[str, dict[str, Any]]) -> list[str]:
    lines = [("| pair (m) | measured per mb ms | predicted per mb ms | measured fixed s | "
             "predicted fixed s |"), "|---|---|---|---|---|"]
    for a, b in PAIRS:
        if a not in got or b not in got:
            continue
        ga, gb = got[a], got[b]
        mm = two_point(ga["m"], ga["measured"], gb["m"], gb["measured"])
        pm = two_point(ga["m"], ga["predicted"], gb["m"], gb["predicted"])
        lines.append(f"| {a} ({ga['m']}) / {b} ({gb['m']}) | {1e3 * mm[0]:.1f} | "
                     f"{1e3 * pm[0]:.1f} | {mm[1]:.3f} | {pm[1]:.3f} |")
    return lines


def without_option(row: dict[str, str], option: str) -> dict[str, str]:
    out = dict(row)
    out["options"] = ";".join(o for o in row.get("options", "").split(";") if o and o != option)
    return out


def other_attention(row: dict[str, str]) -> dict[str, str] | None:
    swap = {"cudnn": "flash2", "flash2": "cudnn"}
    if row.get("attention") not in swap:
        return None
    return {**row, "attention": swap[row["attention"]]}


def signed(g: dict[str, Any]) -> float:
    return 100.0 * (g["predicted"] / g["measured"] - 1.0)


def rows() -> list[tuple[str, dict[str, str]]]:
    out = []
    for path in (PUBLIC, PARTNERS):
        for row_id in gpt3_ids(path):
            row = read(row_id, path, True) or read(row_id, path, False)
            if row is not None:
                out.append((Path(path).name.split("_")[1].split(".")[0], row))
    return out


def parts_table(todo: list[tuple[str, dict[str, str]]],
                got: dict[str, dict[str, Any]] | None = None) -> list[str]:
    lines = [("| row | file | tp/pp/vpp/dp | m | attn | measured s | predicted s | err % | "
             "compute | xtp | xpp | xdp | bubble | formula bubble | optim | host | gap s | "
             "gap / compute |"), "|---" * 18 + "|"]
    for name, row in todo:
        g = parts(row)
        if got is not None:
            got[row["id"]] = g
        if "error" in g:
            lines.append(f"| {row['id']} | {name} | {g['error']} |")
            continue
        dp = int(row["num_gpus"]) // (int(row["tp"]) * int(row["pp"]) * int(row["cp"] or 1))
        vpp = int(row["vpp"] or 1)
        fb = formula_bubble(g["compute"], int(row["pp"]), vpp, g["m"])
        lines.append(
            f"| {row['id']} | {name} | {row['tp']}/{row['pp']}/{vpp}/{dp} | {g['m']} | "
            f"{row['attention']} | {g['measured']:.3f} | {g['predicted']:.3f} | {signed(g):+.1f} | "
            f"{g['compute']:.3f} | {g['tp']:.3f} | {g['pp']:.3f} | {g['dp']:.3f} | "
            f"{g['bubble']:.3f} | {fb:.3f} | {g['optimizer']:.3f} | {g['host']:.3f} | "
            f"{g['measured'] - g['predicted']:+.3f} | "
            f"{100 * gap_share(g['measured'], g['predicted'], g['compute']):+.1f} % |")
    return lines


def variants_table(todo: list[tuple[str, dict[str, str]]]) -> list[str]:
    heads = ["as is"] + [f"-{o}" for o in OPTIONS] + ["other attention"]
    lines = ["| row | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]
    for _, row in todo:
        cells = []
        for v in [row] + [without_option(row, o) for o in OPTIONS] + [other_attention(row)]:
            if v is None:
                cells.append("-")
                continue
            g = parts(v)
            cells.append(g["error"][:20] if "error" in g else f"{signed(g):+.1f}")
        att = other_attention(row)
        lines.append(f"| {row['id']} | " + " | ".join(cells[:-1])
                     + f" | {cells[-1]}{' (' + att['attention'] + ')' if att else ''} |")
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-variants", action="store_true")
    a = ap.parse_args(argv)
    todo = rows()
    got: dict[str, dict[str, Any]] = {}
    print("\n".join(parts_table(todo, got)))
    print()
    print("\n".join(pair_lines(got)))
    if not a.no_variants:
        print()
        print("\n".join(variants_table(todo)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
