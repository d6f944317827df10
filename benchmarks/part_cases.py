"""The harness the ``*_parts.py`` diagnostics share: every row of a training file priced once per
case, each case in a fresh process (trainsim caches prices per process, so a case that patches a
price must not share one with another), the rows of a case on two worker processes.

A script defines ``_scale(label)`` (the patch a case applies) and a row's pricing (id, measured and
predicted seconds: ``priced`` unless it needs its own), then calls ``print_case`` from its
``case`` entry point and ``collect`` from its ``main``.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from collections.abc import Callable, Sequence
from multiprocessing import Pool
from pathlib import Path

Priced = tuple[str, float, float | None]


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def priced(row: dict[str, str]) -> Priced:
    """``row``'s id, measured and predicted seconds as ``trainsim validate`` prices it."""
    from trainsim.validate.training import predict_training_row

    res = predict_training_row(row)
    return row["id"], res.measured, res.predicted


def print_case(one: Callable[[dict[str, str]], Priced], path: Path) -> None:
    """Print ``id,measured,predicted`` for every row of ``path`` (predicted empty when none)."""
    with Pool(2) as pool:
        for rid, m, p in pool.map(one, rows(path)):
            print(f"{rid},{m},{p if p is not None else ''}", flush=True)


def collect(script: str, cases: Sequence[str], path: Path
            ) -> dict[str, dict[str, tuple[float, float | None]]]:
    """Run ``script case LABEL path`` for every case; read back each row's measured and
    predicted seconds."""
    got: dict[str, dict[str, tuple[float, float | None]]] = {}
    for label in cases:
        out = subprocess.run([sys.executable, script, "case", label, str(path)], check=True,
                             capture_output=True, text=True).stdout
        got[label] = {}
        for line in out.splitlines():
            rid, m, p = line.split(",")
            got[label][rid] = (float(m), float(p) if p else None)
    return got


def priced_rows(got: dict[str, dict[str, tuple[float, float | None]]], cases: Sequence[str],
                path: Path):
    """(row, measured, predicted, [seconds each case after the first adds]) for every row of
    ``path`` the first case predicted."""
    for r in rows(path):
        m, p = got[cases[0]][r["id"]]
        if p is None:
            continue
        yield r, m, p, [(got[c][r["id"]][1] or p) - p for c in cases[1:]]


def run(case: Callable[[str, Path], None], main: Callable[[Path], None], default: Path) -> None:
    """A ``*_parts.py`` script's entry point: ``case LABEL FILE`` (one case, in its own process)
    or ``[FILE]`` (every case; ``default`` without one)."""
    if len(sys.argv) > 3 and sys.argv[1] == "case":
        case(sys.argv[2], Path(sys.argv[3]))
    else:
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
