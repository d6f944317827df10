"""A validation CSV's text as spreadsheets and other tools write it: its encoding and its
delimiter.

- Encoding: UTF-8 (with or without Excel's byte-order mark); UTF-16 or UTF-32 with a byte-order
  mark (Excel's "Unicode text" export); otherwise Windows-1252 where the bytes decode as it and
  hold no control character (Excel's "CSV" on a Western Windows locale writes ``µs`` and ``©``
  so), said in a warning. Bytes that are none of these stay "not UTF-8 text".
- Delimiter: a comma; where the header holds none of a file kind's columns split by commas but
  all of one kind's required columns split by ``;`` or a tab, that character (Excel writes ``;``
  where the locale's decimal mark is a comma). In a ``;`` file a number cell written with a
  decimal comma (``9,07``) is that decimal (``DECIMAL_COLUMNS``); one whose points may group
  digits (``8.000``) is refused on its row (``decimal_commas``).
"""

from __future__ import annotations

import codecs
import re
import warnings
from pathlib import Path

from trainsim.config.safe_load import read_bytes
from trainsim.errors import ConfigError, TrainsimWarning

BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"))
"""Byte-order marks -> the codec that reads them (UTF-32 LE's begins with UTF-16 LE's: first)."""
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def table_text(path: str | Path, what: str = "validation file") -> str:
    """The text of a CSV file ``path`` (see the module)."""
    raw = read_bytes(path, what)
    for bom, codec in BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(codec).removeprefix("\ufeff")
            except UnicodeDecodeError:
                break
    else:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
        try:
            text = raw.decode("cp1252")
        except UnicodeDecodeError:
            text = None
        if text is not None and not _CONTROL.search(text):
            warnings.warn(f"{path} is not UTF-8 text: read as Windows-1252 (as Excel writes "
                          "CSV on a Western Windows locale); save it as UTF-8 to be sure",
                          TrainsimWarning, stacklevel=3)
            return text
    raise ConfigError(f"{what} {path} is not UTF-8 text")


DELIMITERS = (";", "\t")


def delimiter(text: str, kinds: dict[str, list[str]]) -> str:
    """The delimiter of CSV ``text`` whose first line is its header: ',' unless the header split
    by ',' holds no required column of any kind in ``kinds`` (kind -> its required columns)
    while split by ';' or a tab it holds every required column of one kind."""
    header = next((line for line in text.splitlines() if line.strip()), "")

    def columns(sep: str) -> set[str]:
        return {c.strip().strip('"').strip().lower() for c in header.split(sep)}

    commas = columns(",")
    if any(c.lower() in commas for required in kinds.values() for c in required):
        return ","
    for sep in DELIMITERS:
        cols = columns(sep)
        if any(all(c.lower() in cols for c in required) for required in kinds.values()):
            return sep
    return ","


DECIMAL_COLUMNS = frozenset({"measured_iteration_s", "measured_peak_memory_gib",
                             "nic_gbps_per_gpu", "moe_capacity_factor", "attention_dropout",
                             "hidden_dropout", "measured_busbw_GBps", "measured_value"})
"""Columns of numbers that need not be whole: read with a decimal comma in a ``;`` file."""
_DECIMAL_COMMA = re.compile(r"^\s*[+-]?\d+,\d+\s*$")


_POINT_GROUPS = re.compile(r"^\s*\d{1,3}(?:\.\d{3})+\s*$")
"""``8.000``, ``1.024.000``: digits grouped by points, as a decimal-comma locale writes 8000."""


def decimal_commas(rows: list[dict[str, str]]) -> None:
    """In the rows of a ``;`` file, a decimal comma in a ``DECIMAL_COLUMNS`` cell as a point.

    Where points may group digits there (``8.000``: 8000 where the decimal mark is a comma,
    8 where it is a point), the cell is left as a text that its column's check refuses, saying
    which two numbers: in a count column always (a count is never written ``8.000`` with a
    decimal point), in a ``DECIMAL_COLUMNS`` cell where the file writes decimal commas
    elsewhere (a file with none writes its decimals with points: ``3.528`` s is 3.528)."""
    from trainsim.validate.row_settings import COUNT_COLUMNS, ZERO_COUNT_COLUMNS

    counts = frozenset((*COUNT_COLUMNS, *ZERO_COUNT_COLUMNS))
    commas = any(_DECIMAL_COMMA.match(row[col] or "") for row in rows
                 for col in DECIMAL_COLUMNS & row.keys())
    for row in rows:
        for col in (DECIMAL_COLUMNS | counts) & row.keys():
            cell = row[col] or ""
            if _POINT_GROUPS.match(cell) and (col in counts or commas):
                row[col] = (f"{cell.strip()} (in a ';' file: {cell.strip().replace('.', '')} "
                            f"with digit groups, or {cell.strip()} with a decimal point; write "
                            "the number without digit groups)")
            elif col in DECIMAL_COLUMNS and _DECIMAL_COMMA.match(cell):
                row[col] = cell.replace(",", ".")


__all__ = ["decimal_commas", "delimiter", "table_text"]
