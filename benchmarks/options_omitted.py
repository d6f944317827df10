"""Rows whose stated options cell leaves out an option their framework turns on by default.

    PYTHONPATH=src python benchmarks/options_omitted.py [FILE.csv ...]   # default: every training file

A stated options cell is the complete list of the run's features (validation README, options:
"features the run used"; ``trainsim.validate.row_settings.stated_options``): a default the cell
leaves out is read as off. That is right where the run turned the default off (NeMo's
nemotron4-340b-synth.yaml, ``overlap_p2p_comm: False``), wrong where the cell was copied from a
command line's flags, which never name the defaults the command left on (Megatron-LM's
``--no-overlap-p2p-communication`` is the only way to turn the interleaved pipeline's overlap
off). Each listed row needs its source read; nothing here changes a row.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from trainsim.validate.row_settings import omitted_defaults

HERE = Path(__file__).resolve().parent


def omitted(paths: list[Path]) -> list[tuple[str, str, str, str, int]]:
    """(file, row id, stated cell, omitted options, data-parallel size) for each such row."""
    out = []
    for path in paths:
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                try:
                    missing = omitted_defaults(row)
                except Exception as exc:  # noqa: BLE001 - a row validate refuses: say so, go on
                    print(f"{path.name} {row.get('id')}: {exc}", file=sys.stderr)
                    continue
                if missing:
                    tp, pp = int(row["tp"] or 1), int(row["pp"] or 1)
                    dp = int(row["num_gpus"]) // (tp * pp * int(row.get("cp") or 1))
                    out.append((path.name, row["id"], row["options"],
                                ";".join(sorted(missing)), dp))
    return out


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or \
        [HERE.parent.parent / "shared/validation/training_public.csv",
         *sorted(HERE.glob("training_*.csv"))]
    rows = omitted([p for p in paths if p.exists()])
    print("| file | row | stated | omitted default | dp |\n|---|---|---|---|---|")
    for name, row_id, stated, missing, dp in rows:
        print(f"| {name} | {row_id} | {stated} | {missing} | {dp} |")
    print(f"{len(rows)} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
