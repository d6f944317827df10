"""Issue 16, acceptance 1: the published peak-memory figures of the public training file,
compared as each row's ``memory_kind`` says, with the memory errata of
``benchmarks/training_errata.csv`` applied (a withdrawn figure is a cell its source contradicts)."""

from __future__ import annotations

import csv
from pathlib import Path

from trainsim.validate import BUNDLED_DIR, summarize, validate_file

ERRATA = Path(__file__).resolve().parents[1] / "benchmarks" / "training_errata.csv"
MEMORY = "measured_peak_memory_gib"


def _memory_rows_with_errata(tmp_path: Path) -> tuple[Path, set[str]]:
    """The public rows that publish memory, with the memory errata applied; and the ids whose
    figure an erratum withdrew."""
    with open(ERRATA, newline="") as fh:
        fixes = {e["id"]: e for e in csv.DictReader(fh) if e["field"] == MEMORY}
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        fields, rows = list(reader.fieldnames or []), [r for r in reader if r[MEMORY].strip()]
    withdrawn = set()
    for row in rows:
        if row["id"] in fixes:
            assert row[MEMORY] == fixes[row["id"]]["file_value"]
            row[MEMORY] = fixes[row["id"]]["corrected_value"]
            if not row[MEMORY]:
                withdrawn.add(row["id"])
    out = tmp_path / "memory_rows.csv"
    with open(out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return out, withdrawn


def test_published_memory_within_issue_16_bounds_once_errata_are_applied(tmp_path):
    """MAPE <= 5 % and max <= 10 % over the figures the sources stand behind (10 of BLOOM's 11
    nvidia-smi readings: 3.09 % and 9.0 % at 2026-11-24, the max the 181B pp12 mb1 reading); the one withdrawn figure (196B pp6 mb2,
    65 GB above its own mb4 sibling's 56 GB) stays out of the bound, not out of the file."""
    path, withdrawn = _memory_rows_with_errata(tmp_path)
    assert withdrawn == {"bloom-sweep-196B-tp8-pp6-dp8-mb2"}
    _, res = validate_file(path, workers=2)
    s = summarize(res)
    assert s["failed"] == 0 and s["memory_n"] == 10
    assert s["memory_mape"] <= 0.05 and s["memory_max_ape"] <= 0.10
