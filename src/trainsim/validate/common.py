"""What every validation file kind shares: a row's result, cells, and the summary."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainsim.config import ascii_float
from trainsim.config.number_text import OUT_OF_RANGE, whole_value
from trainsim.config.records import MAX_COUNT, MIN_MEASURED, positive_value
from trainsim.errors import ConfigError

GiB = 2**30


@dataclass
class RowResult:
    id: str
    measured: float
    predicted: float | None = None
    error: str | None = None
    chosen: dict[str, Any] = field(default_factory=dict)
    measured_memory_gib: float | None = None
    predicted_memory_gib: float | None = None
    fits_in_memory: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ape(self) -> float | None:
        if self.predicted is None or not self.measured:
            return None
        return abs(self.predicted - self.measured) / self.measured

    @property
    def memory_ape(self) -> float | None:
        if self.predicted_memory_gib is None or not self.measured_memory_gib:
            return None
        return abs(self.predicted_memory_gib - self.measured_memory_gib) / self.measured_memory_gib

    def to_dict(self) -> dict[str, Any]:
        # a measurement refused (-3, 0, 1e400: the row's error says why) is no 0.0 (edge50)
        d = {"id": self.id, "predicted": self.predicted, "measured": self.measured or None,
             "ape": self.ape, "chosen": self.chosen, "error": self.error}
        if self.fits_in_memory is not None:
            d["fits_in_memory"] = self.fits_in_memory
        if self.predicted_memory_gib is not None:
            d["predicted_peak_memory_gib"] = self.predicted_memory_gib
        if self.measured_memory_gib is not None:
            d["measured_peak_memory_gib"] = self.measured_memory_gib
            d["memory_ape"] = self.memory_ape
        d.update(self.extra)
        return d


def _cell(row: dict[str, str], key: str) -> str | None:
    v = (row.get(key) or "").strip()
    return v or None


MIXED_CASE_COLUMNS = {"measured_busbw_gbps": "measured_busbw_GBps"}
"""The format v2 columns whose names are not all lower case, by their lower-case spelling."""


def canonical_column(name: str) -> str:
    """A header name as the readers look it up: surrounding spaces dropped and the case of the
    format's own spelling (``ID``, ``Source`` and `` Measured_Iteration_S `` are ``id``,
    ``source``, ``measured_iteration_s``; a spreadsheet may capitalize a header). A name no
    format knows stays unknown, in lower case."""
    low = name.strip().lower()
    return MIXED_CASE_COLUMNS.get(low, low)


def count_cell(row: dict[str, str], key: str, least: int = 1) -> int:
    """The whole number in ``row[key]`` (a size or a count: GPUs, tp, m, heads), at least
    ``least``; a ConfigError naming the column otherwise (never a ZeroDivisionError later).
    Digits are ASCII, as in a config (``config.ascii_float``): Python's ``float`` also reads
    full-width and other scripts' digits ('\uff12' is 2), which a config refuses."""
    text = _cell(row, key)
    try:
        value = ascii_float(text) if text is not None else math.nan
    except ConfigError as exc:  # '1_0': underscores in threes only (config._build.digit_groups)
        raise ConfigError(f"column '{key}'={exc}") from None
    except ValueError:
        value = math.nan
    # digit text exactly, as a config's count (robust58: '9007199254740993' read through a
    # float was 2**53, within MAX_COUNT)
    exact = whole_value(text) if math.isfinite(value) else None
    if exact is not None and exact > MAX_COUNT:
        raise ConfigError(f"column '{key}'={text!r} {OUT_OF_RANGE}")
    if exact is None or not least <= exact:
        shown = "empty" if text is None else repr(text)
        raise ConfigError(f"column '{key}' is {shown}; it must be a whole number >= {least}")
    return exact


def positive_cell(row: dict[str, str], key: str) -> float:
    """The positive finite number in ``row[key]`` (bytes, Gbit/s), or a ConfigError naming
    the column (ASCII digits, as :func:`count_cell`)."""
    text = _cell(row, key)
    try:
        value = ascii_float(text) if text is not None else math.nan
    except ConfigError as exc:  # '1_0': underscores in threes only (config._build.digit_groups)
        raise ConfigError(f"column '{key}'={exc}") from None
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        shown = "empty" if text is None else repr(text)
        raise ConfigError(f"column '{key}' is {shown}; it must be a positive number")
    return value


def measured_cell(row: dict[str, str], key: str) -> float:
    """A row's measurement in ``row[key]``: a positive finite number of at least MIN_MEASURED,
    or a ConfigError naming the column, as ``validate.read_rows`` refuses a file's row (a row
    given to a predictor directly, not read from a file, was an internal error: fuzz34)."""
    value = positive_value(_cell(row, key))
    if value is None:
        raise ConfigError(f"row {row.get('id') or '?'}: {key}={row.get(key)!r} must be a "
                          f"positive number (>= {MIN_MEASURED:g}): the error is relative to it")
    return value


def error_table(results: list[RowResult], key: Callable[[RowResult], str | None]
                ) -> dict[str, dict[str, Any]]:
    """Rows grouped by ``key`` (rows whose key is None are left out): per group the rows
    priced, their MAPE and their mean signed error (pred - meas) / meas, as fractions."""
    groups: dict[str, list[float]] = {}
    for r in results:
        name = key(r)
        if name is None or r.predicted is None or not r.measured:
            continue
        groups.setdefault(name, []).append((r.predicted - r.measured) / r.measured)
    return {name: {"n": len(errs), "mape": sum(abs(e) for e in errs) / len(errs),
                   "mean_signed_error": sum(errs) / len(errs)}
            for name, errs in sorted(groups.items())}


def _kind_key(r: RowResult) -> str | None:
    """kind/implementation/dtype of a kernels row (None for other files)."""
    e = r.extra
    if "kind" not in e:
        return None
    return f"{e['kind']}/{e.get('implementation', '?')}/{e.get('dtype', '?')}"


def summarize(results: list[RowResult]) -> dict[str, Any]:
    """Counts and errors of a validation run. ``by_source`` groups rows by
    ``extra["source_key"]`` (each predict function sets it: the framework of a training row,
    the implementation of a kernels row); ``by_kind`` groups kernels rows by kind,
    implementation and dtype. Rows marked ``extra["excluded"]`` (a measurement that is not of
    what the model prices) are priced but counted apart."""
    excluded = sum(1 for r in results if r.extra.get("excluded"))
    results = [r for r in results if not r.extra.get("excluded")]
    apes = [r.ape for r in results if r.ape is not None]
    mem = [r.memory_ape for r in results if r.memory_ape is not None]
    return {
        "n": len(results),
        "excluded": excluded,
        "mape": sum(apes) / len(apes) if apes else None,
        "max_ape": max(apes) if apes else None,
        "failed": sum(1 for r in results if r.predicted is None),
        "memory_n": len(mem),
        "memory_mape": sum(mem) / len(mem) if mem else None,
        "memory_max_ape": max(mem) if mem else None,
        "by_source": error_table(results, lambda r: r.extra.get("source_key")),
        "by_kind": error_table(results, _kind_key),
    }


def summary_line(s: dict[str, Any]) -> str:
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}%"

    line = f"{s['n']} rows, MAPE {pct(s['mape'])}, max {pct(s['max_ape'])}"
    if s["failed"]:
        line += f" ({s['failed']} failed)"
    if s.get("excluded"):
        line += f" (+{s['excluded']} excluded)"
    if s["memory_n"]:
        line += (f"; memory: {s['memory_n']} rows, MAPE {pct(s['memory_mape'])}, "
                 f"max {pct(s['memory_max_ape'])}")
    return line


