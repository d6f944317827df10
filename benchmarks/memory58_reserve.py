"""The caching allocator's reserve on Megatron rows (58th session, memory58): which rows with a
memory figure report which kind, and, where a source measured both torch figures (MooreThreads/
SimuMax's B200 runs of Megatron-LM core_r0.14.0: ``real_alloc_gib`` and ``real_reserved_gib`` per
case, the largest rank's), trainsim's allocated and reserved beside them.

    PYTHONPATH=src:benchmarks python benchmarks/memory58_reserve.py            # kinds
    PYTHONPATH=src:benchmarks python benchmarks/memory58_reserve.py --simumax  # + reserve table

trainsim's reserved (``memory.allocator.reserved_bytes``) for a Megatron row is the larger of
the backward's and the optimizer step's allocated peaks, plus the step's buffers where they could
not reuse freed blocks (no expandable segments), plus side-stream pools: the reserve it prices.
"""

from __future__ import annotations

import collections
import csv
import json
import re
import sys
import warnings
from pathlib import Path

import mirror_rows

ROOT = Path(__file__).resolve().parents[1]
GiB = 2**30
SIMUMAX = ("MooreThreads+SimuMax", "4dcaae5")
SUMMARY = "docs/b200/b200_release_v1.2_summary.json"
FILES = [ROOT.parent / "shared" / "validation" / "training_public.csv",
         ROOT / "benchmarks" / "training_heldout.csv"] + sorted(
    p for p in (ROOT / "benchmarks").glob("training_*.csv")
    if "heldout" not in p.name and "errata" not in p.name)


def kinds() -> list[str]:
    """Rows with a measured memory figure, by file, framework and memory kind."""
    count: collections.Counter[tuple[str, str, str]] = collections.Counter()
    for path in FILES:
        if not path.exists():
            continue
        for r in csv.DictReader(path.open()):
            if r.get("measured_peak_memory_gib"):
                count[(path.name, r.get("framework", ""), r.get("memory_kind") or "?")] += 1
    return ["| file | framework | memory kind | rows |", "|---|---|---|---|"] + [
        f"| {f} | {fw} | {k} | {n} |" for (f, fw, k), n in sorted(count.items())]


def _predicted(row: dict[str, str]) -> tuple[float, float]:
    """(allocated, reserved) GiB at the stage whose allocated figure is largest."""
    from trainsim.validate import training as T
    from trainsim.validate.row_settings import counts_checked
    from trainsim.validate.vocab import normalized_training_row

    r, _ = normalized_training_row(row, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _cfg, _choice, res = T._tuned_layout(counts_checked(r), "auto")
    m = max(res.memory, key=lambda x: x.allocated)
    return m.allocated / GiB, m.reserved / GiB


def simumax() -> list[str]:
    """SimuMax's measured allocated and reserved (largest rank) beside trainsim's, per row of
    training_simumax_b200.csv that carries memory."""
    summary = json.loads(mirror_rows.show(*SIMUMAX, SUMMARY))
    cases = {r["case"]: r for r in summary["rows"]}
    out = [("| row | allocated: measured / trainsim | reserved: measured / trainsim | "
            "reserve GiB: measured / trainsim |"), "|---|---|---|---|"]
    for row in csv.DictReader((ROOT / "benchmarks" / "training_simumax_b200.csv").open()):
        if not row["measured_peak_memory_gib"]:
            continue
        case = cases[re.search(r"case '([^']+)'", row["source"]).group(1)]
        ma, mr = case["real_alloc_gib"], case.get("real_reserved_gib")
        if mr is None:
            continue
        pa, pr = _predicted(row)
        out.append(f"| {row['id'][13:]} | {ma:.1f} / {pa:.1f} | {mr:.1f} / {pr:.1f} "
                   f"({100 * (pr / mr - 1):+.1f} %) | {mr - ma:.2f} / {pr - pa:.2f} |")
    return out


if __name__ == "__main__":
    print("\n".join(kinds()))
    if "--simumax" in sys.argv:
        print()
        print("\n".join(simumax()))
