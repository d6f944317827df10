"""Why a row predicted with another framework's mechanisms misses: each such row of a file
predicted named (its own profile) and blind (benchmarks/blind.py's unknown name), side by side
with the settings each took where the row is silent (the tuner's choices and the profile's
defaults), so the cell that sent the fallback rule astray can be read off.

    PYTHONPATH=src:benchmarks python benchmarks/fallback_misses.py heldout [--min 10]
    PYTHONPATH=src:benchmarks python benchmarks/fallback_misses.py public --ids ROW [ROW ...]
    PYTHONPATH=src:benchmarks python benchmarks/fallback_misses.py heldout --min 20 \
        --set options=cuda_graphs;ep_overlap     # a what-if: the blind row with cells stated

``--set COLUMN=VALUE`` (repeatable) states a cell of each blind row before it is predicted, the
row's own value replaced (its named prediction is not): what the fallback would give had the
source stated it, to tell which silent cell the miss comes from.
"""

from __future__ import annotations

import argparse
import csv
import sys

from blind import files

from trainsim.validate.training import predict_training_row

SHOWN = ("attention", "fp8_recipe", "grad_reduce_in_fp32", "moe_token_dispatcher_type",
         "moe_overlap_ep_comm", "cuda_graphs")


def _signed(res) -> str:
    if res.predicted is None:
        return "failed"
    return f"{100 * (res.predicted / res.measured - 1):+6.1f}%"


def _settings(res) -> str:
    got = {**res.chosen, **{k: v for k, v in (res.extra.get("settings") or {}).items()
                            if k in SHOWN}}
    return " ".join(f"{k}={v}" for k, v in got.items())


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("which", help="public, heldout or a path")
    ap.add_argument("--min", type=float, default=10.0, help="blind |error| at least, %%")
    ap.add_argument("--ids", nargs="*", default=None)
    ap.add_argument("--set", action="append", default=[], metavar="COLUMN=VALUE",
                    help="state a cell of each blind row (a what-if)")
    args = ap.parse_args(argv)
    stated = dict(item.split("=", 1) for item in args.set)
    with open(files([args.which])[0], newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        if args.ids is not None and row["id"] not in args.ids:
            continue
        blind = predict_training_row({**row, **stated, "framework": "otherfw"})
        used = blind.chosen.get("framework", "-")
        if args.ids is None and (used == row["framework"] or blind.ape is None
                                 or 100 * blind.ape < args.min):
            continue
        named = predict_training_row(row)
        print(f"{row['id']} ({row['framework']} {row['framework_version']})")
        print(f"  named {_signed(named)}  {_settings(named)}")
        print(f"  blind {_signed(blind)}  {_settings(blind)}" +
              (f"  (with {' '.join(args.set)})" if stated else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
