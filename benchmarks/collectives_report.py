"""Error of the collectives model on benchmarks/collectives_published.csv, by collective, scale
(nodes), GPU, message size and the rows' ``added`` date: MAPE and signed mean error.

    PYTHONPATH=src python benchmarks/collectives_report.py [--rows]
"""

from __future__ import annotations

import collections
import csv
import sys
from pathlib import Path

from trainsim.validate import validate_file

PUBLISHED = Path(__file__).resolve().parent / "collectives_published.csv"


def _scale(nodes: int) -> str:
    return "1 node" if nodes == 1 else "2 nodes" if nodes == 2 else \
        "3-8 nodes" if nodes <= 8 else "> 8 nodes"


def _size(size: int) -> str:
    return "<= 64 KiB" if size <= 2**16 else "<= 64 MiB" if size <= 2**26 else "> 64 MiB"


def main(show_rows: bool = False) -> None:
    rows = {r["id"]: r for r in csv.DictReader(PUBLISHED.open())}
    _, results = validate_file(PUBLISHED)
    groups: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for res in results:
        m = rows[res.id]
        if res.error:
            print(f"FAILED {res.id}: {res.error}")
            continue
        n, k, size = int(m["num_gpus"]), int(m["gpus_per_node"]), int(m["message_bytes"])
        signed = (res.predicted - res.measured) / res.measured
        for key in (("all", ""), ("added", m.get("added") or "?"), ("collective", m["collective"]),
                    ("scale", _scale(max(1, n // k))), ("gpu", m["gpu"]), ("size", _size(size))):
            groups[key].append(signed)
        if show_rows:
            print(f"{res.id:42s} {m['collective']:14s} n={n:5d} {size:>11d} B "
                  f"measured {res.measured:9.4g} predicted {res.predicted:9.4g} "
                  f"{100 * signed:+7.1f} % {res.chosen.get('algorithm', '')}")
    for (what, value), errs in sorted(groups.items()):
        mape = 100 * sum(map(abs, errs)) / len(errs)
        print(f"{what:10s} {value:20s} n={len(errs):3d}  MAPE {mape:6.2f} %  "
              f"signed {100 * sum(errs) / len(errs):+6.2f} %")


if __name__ == "__main__":
    main("--rows" in sys.argv[1:])
