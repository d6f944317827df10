"""Known errata of a published validation file applied to a copy of it.

An errata file (``benchmarks/training_errata.csv`` for the training file,
``benchmarks/kernels_errata.csv`` for the published kernels: id, field, file_value,
corrected_value and the evidence) lists cells that their own sources contradict. The scoreboard
stays the file as given; this shows what the errors become once the cells say what the sources
say. An empty corrected value withdraws a measurement: a withdrawn peak memory leaves the row's
time; a withdrawn iteration time or kernel measurement takes the row out (it has nothing left
to compare).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

from trainsim.errors import ConfigError
from trainsim.validate.common import canonical_column

FIELDS = ["id", "field", "file_value", "corrected_value", "evidence"]
MEASURED = frozenset({"measured_iteration_s", "measured_value"})
"""A row's own measurement (training, kernels): withdrawing it takes the row out."""


def read_errata(path: str | Path) -> dict[tuple[str, str], dict[str, str]]:
    """The errata of ``path`` by (row id, field); one cell corrected twice is an error."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames != FIELDS:
            raise ConfigError(f"{path}: errata columns are {', '.join(FIELDS)}, not "
                              f"{', '.join(reader.fieldnames or [])}")
        for line, e in enumerate(reader, start=2):
            key = (e["id"], e["field"])
            if key in out:
                raise ConfigError(f"{path} line {line}: a second erratum for {key[0]}.{key[1]}")
            out[key] = e
    return out


def corrected_file(path: str | Path, errata: str | Path, out_dir: str | Path,
                   keep: Callable[[dict[str, str]], bool] | None = None
                   ) -> tuple[Path, list[tuple[str, str]]]:
    """A copy of ``path`` in ``out_dir`` with every erratum applied, only the rows ``keep``
    accepts (as given), and the (id, field) cells withdrawn. An erratum whose cell no longer
    says its ``file_value``, or whose row is not in the file, is an error: it is stale."""
    fixes = read_errata(errata)
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        reader.fieldnames = [canonical_column(f) for f in reader.fieldnames or []]
        fields, rows = list(reader.fieldnames), list(reader)
    kept, withdrawn = [], []
    for row in rows:
        wanted = keep is None or keep(row)
        for field in fields:
            e = fixes.pop((row["id"], field), None)
            if e is None:
                continue
            if row[field] != e["file_value"]:
                raise ConfigError(f"erratum {row['id']}.{field}: the file now says "
                                  f"{row[field]!r}, not {e['file_value']!r}")
            row[field] = e["corrected_value"]
            if wanted and not row[field].strip():
                withdrawn.append((row["id"], field))
        if wanted and not any((row["id"], f) in withdrawn for f in MEASURED):
            kept.append(row)
    if fixes:
        raise ConfigError(f"errata for rows not in the file: {sorted(fixes)}")
    out = Path(out_dir) / Path(path).name
    with open(out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(kept)
    return out, withdrawn
