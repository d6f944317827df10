"""The published training file with its known errata applied, side by side with the file.

    python benchmarks/errata.py [training.csv]   # default: the copy bundled with trainsim

``benchmarks/training_errata.csv`` lists cells of the shared file that its own sources
contradict (each with the evidence). The scoreboard stays the file as given; this script
shows what the errors (time, and memory where rows publish it) become once the cells say what
the sources say; a corrected value left empty withdraws a measurement the source contradicts.
Nothing here is fed back into trainsim.
"""

from __future__ import annotations

import csv
import sys
import tempfile
from pathlib import Path

from trainsim.validate import BUNDLED_DIR, summarize, validate_file

HERE = Path(__file__).resolve().parent


def corrected(path: Path, errata: Path) -> Path:
    """A copy of ``path`` with every erratum applied (a stale erratum is an error)."""
    with open(errata, newline="") as fh:
        fixes = {(e["id"], e["field"]): e for e in csv.DictReader(fh)}
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        fields, rows = list(reader.fieldnames or []), list(reader)
    for row in rows:
        for field in fields:
            e = fixes.pop((row["id"], field), None)
            if e is not None:
                if row[field] != e["file_value"]:
                    raise SystemExit(
                        f"erratum {row['id']}.{field}: the file now says "
                        f"{row[field]!r}, not {e['file_value']!r}"
                    )
                row[field] = e["corrected_value"]
    if fixes:
        raise SystemExit(f"errata for rows not in the file: {sorted(fixes)}")
    out = Path(tempfile.mkdtemp()) / path.name
    with open(out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return out


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else BUNDLED_DIR / "training_public.csv"
    for label, p in (
        ("as given", path),
        ("errata applied", corrected(path, HERE / "training_errata.csv")),
    ):
        s = summarize(validate_file(p, workers=2)[1])
        print(
            f"{label}: {s['n']} rows, {s['failed']} failed, MAPE {s['mape']:.2%}, "
            f"max {s['max_ape']:.1%}"
        )
        if s.get("memory_n"):
            print(
                f"  memory: {s['memory_n']} rows, MAPE {s['memory_mape']:.2%}, "
                f"max {s['memory_max_ape']:.1%}"
            )
        for name, v in sorted(s["by_source"].items()):
            print(
                f"  {name:20s} n={v['n']:3d} MAPE {v['mape']:6.1%} "
                f"mean signed {v['mean_signed_error']:+6.1%}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
