"""The published training file with its known errata applied, side by side with the file.

    python benchmarks/errata.py [training.csv]   # default: the copy bundled with trainsim
    python benchmarks/errata.py kernels_published.csv   # its errata: kernels_errata.csv

``benchmarks/training_errata.csv`` (and ``kernels_errata.csv`` for a file in the kernels
format) lists cells of the shared file that its own sources
contradict (each with the evidence; ``trainsim.validate.errata`` applies them). The scoreboard
stays the file as given; this script shows what the errors (time, and memory where rows
publish it) become once the cells say what the sources say. Nothing here is fed back into
trainsim.
"""

from __future__ import annotations

import csv
import sys
import tempfile
from pathlib import Path

from trainsim.validate import BUNDLED_DIR, summarize, validate_file
from trainsim.validate.errata import corrected_file, read_errata

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else BUNDLED_DIR / "training_public.csv"
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        kind = "kernels" if "measured_value" in (reader.fieldnames or []) else "training"
        ids = {row["id"] for row in reader}
    errata = HERE / f"{kind}_errata.csv"
    if not ids & {row_id for row_id, _ in read_errata(errata)}:
        # errata name the rows of the file they were written for; stale ones there are errors
        print(f"{errata.name} corrects no row of {path.name}: the file as given")
        fixed, withdrawn = None, []
    else:
        fixed, withdrawn = corrected_file(path, errata, tempfile.mkdtemp())
    for label, p in (("as given", path), ("errata applied", fixed)):
        if p is None:
            continue
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
    for row_id, field in withdrawn:
        print(f"withdrawn: {row_id}.{field}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
