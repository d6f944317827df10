"""Numbers as published tables write them, read as the plain numbers a training row holds.

A table from another source writes ``1,024`` GPUs, a ``4096 tokens`` sequence, an ``8k``
context, ``9070 ms`` an iteration or ``400 Gb/s`` a NIC, where the shared validation README's
columns hold plain numbers in fixed units. Each reading here is exact (a unit converted by its
definition, digit groups dropped) and is reported on the row (``read_as``); what could mean two
numbers stays a one-line error that says which two:

- ``2k`` is 2,048 as a sequence length (every framework config and model card counts context in
  powers of two: Llama 3.1's "128K" is ``max_position_embeddings`` 131072), but 2,000 or 2,048
  elsewhere (Llama 2's "32k" vocabulary is 32,000);
- a memory in ``GB`` is 10^9 or 2^30 bytes as its source meant it, the column is GiB;
- ``1.024`` with a comma-separated file's decimal point is 1.024 (not a count);
- ``1,024`` is 1,024 in a column of counts, but 1,024 or 1.024 in a measurement's column (a
  decimal comma in a comma-separated file, the cell quoted).

Two labels are read as well: a parallel degree written with its own name (``TP2`` in ``tp``,
``VP 5`` in ``vpp``, as Megatron-Bridge's and NeMo's performance tables head their cells), and an
InfiniBand generation in ``nic_gbps_per_gpu`` (``NDR``: the IBTA data rate of a 4x port, one port
a GPU as on DGX A100 / H100 / B200; ``NDR200``, a split port, at its written rate; the reading is
printed on the row).
"""

from __future__ import annotations

import re

from trainsim.errors import ConfigError
from trainsim.validate.csv_text import DECIMAL_COLUMNS

GROUPED = re.compile(r"^[+]?\d{1,3}(?:([,\u00a0\u202f\u2009' ])\d{3})(?:\1\d{3})*(\.\d+)?$")
"""Digits in groups of three split by one separator used throughout: a comma, a space (plain,
no-break, narrow no-break, thin) or an apostrophe."""
_NUMBER = r"[+]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_UNIT = re.compile(rf"^({_NUMBER})\s*([A-Za-z\u00b5\u03bc/%]+(?:\s*/\s*[A-Za-z]+)?)\.?$")
_KILO = re.compile(rf"^({_NUMBER})\s*([kK])$")
_POWER = re.compile(r"^(\d+)\s*(?:\^|\*\*)\s*(\d+)$")
_PRODUCT = re.compile(r"^(\d+)\s*[x\u00d7*]\s*(\d+)$")
_ABOUT = re.compile(r"^(?:~|\u2248|ca\.?\s|approx\.?\s)\s*")
_LABELLED = re.compile(r"^([A-Za-z]+)\s*[=:]?\s*(\d+)$")
LABELS = {"tp": {"tp"}, "pp": {"pp"}, "cp": {"cp"}, "ep": {"ep"}, "vpp": {"vpp", "vp"},
          "dp": {"dp"}, "etp": {"etp"}}
"""A parallel column -> the labels a table writes before its degree (Megatron-Bridge's performance
summary: TP / PP / CP / VP / EP columns): ``TP2`` in ``tp`` is 2; a label of another column is
left for the column's check to refuse."""
IB_GBPS = {"edr": 100, "hdr": 200, "ndr": 400, "xdr": 800}
"""InfiniBand generations -> Gb/s of a 4x port (IBTA roadmap; NVIDIA ConnectX-6 HDR 200, ConnectX-7
NDR 400, ConnectX-8 XDR 800 data sheets)."""

UNITS: dict[str, dict[str, float]] = {
    "num_gpus": {"gpus": 1, "gpu": 1, "devices": 1, "accelerators": 1},
    "gpus_per_node": {"gpus": 1, "gpu": 1, "gpus/node": 1},
    "seq_length": {"tokens": 1, "token": 1, "tok": 1},
    "global_batch_size": {"sequences": 1, "sequence": 1, "seqs": 1, "samples": 1, "sample": 1},
    "micro_batch_size": {"sequences": 1, "sequence": 1, "seqs": 1, "samples": 1, "sample": 1},
    "measured_iteration_s": {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
                             "ms": 1e-3, "msec": 1e-3, "milliseconds": 1e-3,
                             "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "min": 60},
    "measured_peak_memory_gib": {"gib": 1, "mib": 2**-10, "tib": 2**10},
    # Gbit/s; a byte rate (capital B) is 8 bits a byte
    "nic_gbps_per_gpu": {"gbps": 1, "gb/s": 1, "gbit/s": 1, "gbit": 1, "g": 1, "gbits/s": 1,
                         "gbe": 1},
}
"""A column's unit words (lower case) -> the factor to the column's own unit."""
BYTE_RATES = {"GB/s": 8, "GBps": 8, "GByte/s": 8}
"""NIC rates written in bytes (case matters: GB/s is bytes, Gb/s bits) -> bits a byte."""
AMBIGUOUS_UNITS = {
    ("measured_peak_memory_gib", "gb"): "'GB' is 10^9 or 2^30 bytes as its source meant it; "
    "the column is GiB (2^30 bytes): write the figure in GiB",
    ("measured_peak_memory_gib", "mb"): "'MB' is 10^6 or 2^20 bytes as its source meant it; "
    "the column is GiB (2^30 bytes): write the figure in GiB",
}
BINARY_KILO = frozenset({"seq_length"})
"""Columns whose ``Nk`` is N x 1024 (context lengths are powers of two in every framework
config: Megatron ``--seq-length 8192`` for "8k", Llama 3.1 "128K" = 131072 positions)."""
PRODUCTS = frozenset({"num_gpus"})
"""Columns where ``AxB`` is a product: ``4x8`` GPUs is 4 nodes of 8."""
APPROXIMATE = frozenset({"measured_iteration_s", "measured_peak_memory_gib"})
"""Measurements a table may mark approximate (``~9.1``): the figure is read as given."""


def _plain(value: float) -> str:
    return str(int(value)) if value == int(value) and abs(value) < 2**53 else repr(value)


def plain_number(column: str, text: str) -> tuple[str, bool]:
    """(``text`` of ``column`` as a plain number, whether it was rewritten). Text that is no
    number in any of the ways above is returned as it is (the column's own check refuses it);
    a ConfigError where it could be two numbers."""
    cell = text.strip()
    if not cell:
        return text, False
    about = _ABOUT.match(cell)
    if about and column in APPROXIMATE:
        cell = cell[about.end():]
    if (m := _LABELLED.match(cell)) and m.group(1).lower() in LABELS.get(column, ()):
        cell = m.group(2)
    if column == "nic_gbps_per_gpu" and (ib := re.fullmatch(r"(?i)(?:infiniband\s+)?([a-z]dr)"
                                                           r"(?:\s*\d+)?", cell)) \
            and ib.group(1).lower() in IB_GBPS:
        gbps = IB_GBPS[ib.group(1).lower()]
        written = re.search(r"\d+", cell)
        if written and int(written.group()) != gbps:  # NDR200: a split port, as written
            gbps = int(written.group())
        return _plain(gbps), True
    grouped = GROUPED.match(cell)
    if grouped:
        if grouped.group(1) == "," and cell.count(",") == 1 and not grouped.group(2) \
                and column in DECIMAL_COLUMNS:
            # "9,070" s: 9070 with a digit group, or 9.070 with a decimal comma (a ';' file's
            # decimal commas are read before this, ``csv_text.decimal_commas``)
            whole = cell.replace(",", "")
            raise ConfigError(f"column '{column}' is {text.strip()!r}: a comma may group digits "
                              f"or mark decimals here ({whole} or {cell.replace(',', '.')}); "
                              "write the number with a decimal point and no digit groups")
        cell = cell.replace(grouped.group(1), "")
    if (m := _POWER.match(cell)) and int(m.group(2)) <= 64:
        cell = str(int(m.group(1)) ** int(m.group(2)))
    elif column in PRODUCTS and (m := _PRODUCT.match(cell)):
        cell = str(int(m.group(1)) * int(m.group(2)))
    elif m := _KILO.match(cell):
        if column not in BINARY_KILO:
            n = float(m.group(1))
            raise ConfigError(f"column '{column}' is {text.strip()!r}: 'k' may be 1,000 or 1,024 "
                              f"here ({_plain(n * 1000)} or {_plain(n * 1024)}); write the "
                              "number")
        cell = _plain(float(m.group(1)) * 1024)
    elif m := _UNIT.match(cell):
        number, unit = m.group(1), re.sub(r"\s+", "", m.group(2))
        factor = BYTE_RATES.get(unit) if column == "nic_gbps_per_gpu" else None
        factor = factor or UNITS.get(column, {}).get(unit.lower())
        if factor is None:
            why = AMBIGUOUS_UNITS.get((column, unit.lower()))
            if why:
                raise ConfigError(f"column '{column}' is {text.strip()!r}: {why}")
            return text, False  # the column's check names it
        cell = _plain(float(number) * factor)
    return (cell, True) if cell != text.strip() else (text, False)


NUMBER_COLUMNS = ("nic_gbps_per_gpu", "measured_iteration_s", "measured_peak_memory_gib")
"""Training columns holding a number that is not a count (the counts: ``COUNT_COLUMNS``)."""


def written_numbers(row: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(``row`` with each number cell plain (``plain_number``), {column: 'as written -> as
    read'} for each cell rewritten)."""
    from trainsim.validate.row_settings import COUNT_COLUMNS, ZERO_COUNT_COLUMNS

    out = dict(row)
    read: dict[str, str] = {}
    for col in (*COUNT_COLUMNS, *ZERO_COUNT_COLUMNS, *NUMBER_COLUMNS):
        text = row.get(col)
        if text and text.strip():
            plain, changed = plain_number(col, text)
            if changed:
                out[col] = plain
                read[col] = f"{text.strip()} -> {plain}"
    return out, read


__all__ = ["NUMBER_COLUMNS", "plain_number", "written_numbers"]
