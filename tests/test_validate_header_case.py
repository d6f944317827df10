"""A validation CSV's header is read case-insensitively and without surrounding spaces
(a spreadsheet may write ``ID,Source,...``): each format v2 file predicts the same with its
header in upper case, title case or padded; a column named twice in two cases is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainsim.errors import ConfigError
from trainsim.validate import read_rows, validate_file
from trainsim.validate.common import canonical_column

DATA = Path(__file__).resolve().parents[1] / "src" / "trainsim" / "data" / "validation"
FILES = ["training_public.csv", "collectives_public.csv", "kernels_published.csv"]


def _head(name: str, n: int = 4) -> tuple[str, list[str]]:
    lines = (DATA / name).read_text().splitlines()
    return lines[0], lines[1:n + 1]


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("spell", [str.upper, str.title, lambda h: ", ".join(h.split(","))])
def test_a_header_in_another_case_predicts_as_the_original(tmp_path, name, spell):
    header, body = _head(name)
    plain, odd = tmp_path / "plain.csv", tmp_path / "odd.csv"
    plain.write_text("\n".join([header, *body]) + "\n")
    odd.write_text("\n".join([spell(header), *body]) + "\n")
    kind, rows = read_rows(odd)
    assert (kind, rows) == read_rows(plain)
    a, b = validate_file(plain)[1], validate_file(odd)[1]
    assert any(r.predicted for r in a)
    assert [r.predicted for r in a] == [r.predicted for r in b]


def test_canonical_column_keeps_the_formats_spelling():
    assert canonical_column(" ID ") == "id"
    assert canonical_column("MEASURED_BUSBW_GBPS") == "measured_busbw_GBps"
    assert canonical_column("Bogus_Col") == "bogus_col"  # unknown stays unknown


def test_one_column_given_in_two_cases_is_refused(tmp_path):
    header, body = _head("training_public.csv", 1)
    f = tmp_path / "twice.csv"
    f.write_text(f"{header},ID\n{body[0]},x\n")
    with pytest.raises(ConfigError, match="given twice"):
        read_rows(f)
