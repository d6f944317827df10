"""Error of the collectives model on benchmarks/collectives_published.csv, by collective, scale
(nodes), GPU, message size and the rows' ``added`` date: MAPE and signed mean error.

Rows whose ``comparable`` cell is ``no`` (their note says why: e.g. a single-thread ``-g N``
launch floor, a setup the source's thread shows faulty) are the ones the validator excludes
from its summary (``extra["excluded"]``): summed apart here as "excluded" and kept out of every
other group.

    PYTHONPATH=src python benchmarks/collectives_report.py [CSV] [--rows]

CSV: a collectives validation file (default: the bundled collectives_published.csv).
"""

from __future__ import annotations

import argparse
import collections
import csv
import sys
from pathlib import Path

from trainsim.errors import TrainsimError
from trainsim.validate import validate_file

PUBLISHED = Path(__file__).resolve().parent / "collectives_published.csv"


def _scale(nodes: int) -> str:
    return "1 node" if nodes == 1 else "2 nodes" if nodes == 2 else \
        "3-8 nodes" if nodes <= 8 else "> 8 nodes"


def _size(size: int) -> str:
    return "<= 64 KiB" if size <= 2**16 else "<= 64 MiB" if size <= 2**26 else "> 64 MiB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="?", default=str(PUBLISHED),
                    help="a collectives validation file (default: the bundled one)")
    ap.add_argument("--rows", action="store_true", help="print every row's error too")
    args = ap.parse_args(argv)
    path, show_rows = Path(args.csv), args.rows
    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = {r["id"]: r for r in csv.DictReader(f)}
    except (OSError, UnicodeDecodeError) as exc:
        ap.error(f"{path}: {getattr(exc, 'strerror', None) or exc}")
    except KeyError:
        ap.error(f"{path}: no id column (not a validation file)")
    if not rows or not all("message_bytes" in r for r in rows.values()):
        ap.error(f"{path}: not a collectives validation file (no message_bytes column)")
    try:  # the validator's own refusal (e.g. no measured_busbw_GBps), in one line
        _, results = validate_file(path)
    except TrainsimError as exc:
        ap.error(str(exc))
    groups: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for res in results:
        m = rows[res.id]
        if res.error:
            print(f"FAILED {res.id}: {res.error}")
            continue
        n, k, size = int(m["num_gpus"]), int(m["gpus_per_node"]), int(m["message_bytes"])
        signed = (res.predicted - res.measured) / res.measured
        if res.extra.get("excluded"):  # the validator's reading of ``comparable = no``
            groups[("excluded", "not comparable")].append(signed)
        else:
            for key in (("all", "comparable"), ("added", m.get("added") or "?"),
                        ("collective", m["collective"]), ("scale", _scale(max(1, n // k))),
                        ("gpu", m["gpu"]), ("size", _size(size))):
                groups[key].append(signed)
        if show_rows:
            print(f"{res.id:42s} {m['collective']:14s} n={n:5d} {size:>11d} B "
                  f"measured {res.measured:9.4g} predicted {res.predicted:9.4g} "
                  f"{100 * signed:+7.1f} % {res.chosen.get('algorithm', '')}")
    for (what, value), errs in sorted(groups.items()):
        mape = 100 * sum(map(abs, errs)) / len(errs)
        print(f"{what:10s} {value:20s} n={len(errs):3d}  MAPE {mape:6.2f} %  "
              f"signed {100 * sum(errs) / len(errs):+6.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
