"""The errata of the published kernels file (benchmarks/kernels_errata.csv): each names a cell
that still says what it quotes, once, with its evidence."""

from __future__ import annotations

import csv
from pathlib import Path

from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import read_errata

ERRATA = Path(__file__).resolve().parents[1] / "benchmarks" / "kernels_errata.csv"


def _errata() -> list[dict[str, str]]:
    return list(read_errata(ERRATA).values())


def test_each_cell_is_corrected_once_and_still_says_what_it_quotes():
    with open(BUNDLED_DIR / "kernels_published.csv", newline="") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}
    keys = [(e["id"], e["field"]) for e in _errata()]
    assert len(keys) == len(set(keys))
    for e in _errata():
        assert rows[e["id"]][e["field"]] == e["file_value"], (e["id"], e["field"])
        assert e["corrected_value"] != e["file_value"] and e["evidence"].strip()


def test_the_kernels_errata_apply_to_the_bundled_file(tmp_path):
    from trainsim.validate.errata import corrected_file

    out, withdrawn = corrected_file(BUNDLED_DIR / "kernels_published.csv", ERRATA, tmp_path)
    with open(out, newline="") as fh:
        fixed = {r["id"]: r for r in csv.DictReader(fh)}
    for e in _errata():
        assert fixed[e["id"]][e["field"]] == e["corrected_value"]
    assert withdrawn == []


def test_a_withdrawn_kernel_measurement_takes_its_row_out(tmp_path):
    """Withdrawing a kernel row's ``measured_value`` (an empty corrected value) drops the row,
    as a withdrawn iteration time drops a training row; other rows stay as given."""
    from trainsim.validate.errata import FIELDS, corrected_file

    with open(BUNDLED_DIR / "kernels_published.csv", newline="") as fh:
        first = next(csv.DictReader(fh))
    errata = tmp_path / "errata.csv"
    with open(errata, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(FIELDS)
        w.writerow([first["id"], "measured_value", first["measured_value"], "", "evidence"])
    (tmp_path / "out").mkdir()
    out, withdrawn = corrected_file(BUNDLED_DIR / "kernels_published.csv", errata,
                                    tmp_path / "out")
    with open(out, newline="") as fh:
        ids = [r["id"] for r in csv.DictReader(fh)]
    assert withdrawn == [(first["id"], "measured_value")] and first["id"] not in ids
    assert len(ids) > 600
