"""Predict published measurements: training iterations, collective bandwidths and kernels.

The file kind is told by its columns (see shared ``validation/README.md``).
"""

from __future__ import annotations

import collections
import csv
import difflib
import functools
import io
import re
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from trainsim.config.records import positive_value
from trainsim.config.safe_load import read_text
from trainsim.errors import ConfigError, TrainsimError, TrainsimWarning, escaped
from trainsim.validate.collectives import (
    COLLECTIVE_COLUMNS,
    COLLECTIVE_REQUIRED,
    predict_collective_row,
)
from trainsim.validate.common import RowResult, canonical_column, summarize, summary_line
from trainsim.validate.csv_text import decimal_commas, delimiter, table_text
from trainsim.validate.kernel_db import is_kernel_db, layer_count, validate_kernel_db
from trainsim.validate.kernels import KERNEL_COLUMNS, KERNEL_REQUIRED, predict_kernel_row
from trainsim.validate.layers import is_layers_file, validate_layers
from trainsim.validate.row_settings import TRAINING_COLUMNS
from trainsim.validate.training import (
    TRAINING_REQUIRED,
    every_row_warning,
    predict_training_row,
    row_config,
    row_passes,
    tune,
)


def _too_long(path: str | Path, text: str, records: list[list[str]], line: int) -> str:
    """The refusal of a cell over the csv module's field limit, naming its row and column (the
    record read again with the limit lifted for that read only)."""
    limit = csv.field_size_limit()
    try:
        csv.field_size_limit(len(text) + 1)
        record = next((x for i, x in enumerate(csv.reader(io.StringIO(text, newline="")))
                       if i == len(records)), [""])
    finally:
        csv.field_size_limit(limit)
    at = next((i for i, cell in enumerate(record) if len(cell) > limit), len(record) - 1)
    header = [canonical_column(c) for c in records[0]] if records else []
    column = header[at] if records and at < len(header) else f"#{at + 1}"
    rows = sum(1 for r in records[1:] if any(c.strip() for c in r)) + 1
    where = f"row {rows}" if records else "the header"
    return (f"{path} line {line} ({where}), column {column}: a cell of "
            f"{len(record[at]):,} characters, over the CSV field limit of {limit:,}; is it the "
            "right file?")


def read_rows(path: str | Path) -> tuple[str, list[dict[str, str]]]:
    """Read a validation CSV; returns its kind ('training', 'collectives' or 'kernels') and rows."""
    records: list[list[str]] = []
    text = table_text(path)  # UTF-8 (a BOM dropped), UTF-16 with a BOM, Windows-1252
    sep = delimiter(text, {"training": TRAINING_REQUIRED, "collectives": COLLECTIVE_REQUIRED,
                           "kernels": KERNEL_REQUIRED})
    try:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True, delimiter=sep)
        records.extend(reader)
    except csv.Error as exc:  # strict: a quote left open runs to the end, not silently
        if "field limit" in str(exc):  # (fuzz17b: was the open-quote hint)
            raise ConfigError(_too_long(path, text, records, reader.line_num)) from None
        raise ConfigError(f"{path} is not a valid CSV file: line {reader.line_num}: {exc} (is "
                          "a '\"' left open?)") from None
    lines = [r for r in records if any(c.strip() for c in r)]  # blank lines skipped
    columns = [_known_name(canonical_column(c)) for c in lines[0]] if lines else []
    if "measured_iteration_s" in columns:
        kind, required = "training", TRAINING_REQUIRED
    elif "measured_busbw_GBps" in columns:
        kind, required = "collectives", COLLECTIVE_REQUIRED
    elif "measured_unit" in columns and "kind" in columns:
        kind, required = "kernels", KERNEL_REQUIRED
    else:
        header = ",".join(columns)
        hint = "; is it comma-separated?" if any(c in header for c in ";\t|") else ""
        if Path(path).suffix.lower() in (".jsonl", ".json"):  # neither JSON kind was found
            raise ConfigError(f"{path}: no layer record (a layers file holds one JSON object "
                              "per line, the first with \"kind\": \"layer\") and no kernel "
                              "database (trainsim profile's JSON)")
        raise ConfigError(f"{path}: not a training file (needs measured_iteration_s), a "
                          "collectives file (needs measured_busbw_GBps) or a kernels file "
                          f"(needs kind and measured_unit){hint}")
    missing = [c for c in required if c not in columns]
    if missing:
        near = _near(missing[0], [c for c in columns if c not in KNOWN_COLUMNS[kind]])
        raise ConfigError(f"{path}: missing column(s) {', '.join(missing)}"
                          + (f" (the header has {near!r})" if near else ""))
    _check_columns(path, kind, columns)
    rows = _table(path, columns, lines[1:], required)
    if not rows:
        raise ConfigError(f"{path}: no rows under the header; nothing to validate")
    _check_ids(path, rows)
    if sep == ";":
        decimal_commas(rows)
    # a measured cell that is no positive number fails its row (``measured_cell``), not the
    # file: the other rows are still predicted (validation README)
    return kind, rows


def _known_name(column: str) -> str:
    """A header name that spells a known column with spaces, '-' or '.' for '_' ("Num GPUs",
    "global-batch-size") as that column; any other name as it is."""
    if column in ALL_COLUMNS:
        return column
    return canonical_column(_normal(column)) if canonical_column(_normal(column)) in \
        ALL_COLUMNS else column


KNOWN_COLUMNS = {"training": TRAINING_COLUMNS, "collectives": COLLECTIVE_COLUMNS,
                 "kernels": KERNEL_COLUMNS}
"""The columns of each file kind; a header may hold others (notes, links), left unread."""
ALL_COLUMNS = frozenset().union(*KNOWN_COLUMNS.values())
SHOWN_ONLY = {"training": {"source", "note"}, "collectives": {"source"}, "kernels": {"source"}}
"""Known columns no prediction reads: a header column spelt near one is not refused."""


@functools.lru_cache(maxsize=4096)  # the known names, normalised once a header column
def _normal(name: str) -> str:
    return re.sub(r"[\s.-]+", "_", name.strip().lower())


def _one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` one letter dropped, added, changed or two neighbours swapped apart."""
    if len(a) == len(b):
        d = [k for k in range(len(a)) if a[k] != b[k]]
        return len(d) == 1 or (len(d) == 2 and d[1] == d[0] + 1 and a[d[0]] == b[d[1]]
                               and a[d[1]] == b[d[0]])
    long, short = (a, b) if len(a) > len(b) else (b, a)
    return len(long) == len(short) + 1 and any(long[:k] + long[k + 1:] == short
                                               for k in range(len(long)))


def _near(name: str, pool: list[str]) -> str | None:
    """The name of ``pool`` that ``name`` spells with '-', ' ' or '.' for '_', is one edit from
    (4 letters or more: 'noet', 'recomput'), or is close to (difflib ratio at least 0.8:
    'option', 'd_type', 'num_kv_head'); or None."""
    norm = _normal(name)
    same = [c for c in pool if _normal(c) == norm]
    same = same or [c for c in pool if len(c) >= 4 and _one_edit(norm, c)]
    close = same or difflib.get_close_matches(name, pool, n=1, cutoff=0.8)
    return close[0] if close else None


def _check_columns(path: str | Path, kind: str, columns: list[str]) -> None:
    """Refuse a header column that no file of ``kind`` knows but that is a column it reads,
    misspelt (``recomput`` for ``recompute``, ``zero-stage``): its cells would be left unread
    and every row predicted with the column's default, silently. A column unlike any known
    one (a link, a comment) is kept and not read."""
    known = KNOWN_COLUMNS[kind]
    read = sorted(known - set(columns) - SHOWN_ONLY[kind])
    for name in columns:
        close = _near(name, read) if name and name not in known else None
        if close:
            raise ConfigError(f"{path}: column {name!r} is not a {kind} file column; did you "
                              f"mean {close!r}? (cells under another name are not read)")


def _table(path: str | Path, columns: list[str], lines: list[list[str]],
           required: Sequence[str] = ()) -> list[dict[str, str]]:
    """The rows under the header ``columns`` as mappings. A column named twice is refused
    (csv.DictReader kept the last of two equal columns). A row may leave off empty trailing
    cells of optional columns (read as empty, as a text editor's CSV has them) and may end in
    empty extra cells (a trailing comma); a row that leaves off a required column's cell, or
    has extra cells holding text (an unquoted comma), is refused."""
    named = [c for c in columns if c]
    twice = sorted(c for c, n in collections.Counter(named).items() if n > 1)  # linear
    if twice:
        raise ConfigError(f"{path}: column '{twice[0]}' is given twice in the header; give "
                          "each column once")
    rows = []
    for n, cells in enumerate(lines, start=1):
        at = columns.index("id") if "id" in columns else len(cells)
        ident = (cells[at].strip() if at < len(cells) else "") or "?"
        if len(cells) > len(columns):
            if any(c.strip() for c in cells[len(columns):]):
                raise ConfigError(f"{path} row {n} (id {ident}): {len(cells)} cells but the "
                                  f"header has {len(columns)} columns; quote a cell that "
                                  "holds a comma")
            cells = cells[:len(columns)]
        short = [c for c in columns[len(cells):] if c in required]
        if short:
            raise ConfigError(f"{path} row {n} (id {ident}): {len(cells)} cells but the header "
                              f"has {len(columns)} columns: the cell of required column "
                              f"'{short[0]}' is missing")
        cells = cells + [""] * (len(columns) - len(cells))
        row = {c: v for c, v in zip(columns, cells) if c}
        for label in SHOWN_AS_IS & row.keys():  # printed in the report as they are
            row[label] = escaped(row[label])
        rows.append(row)
    return rows


SHOWN_AS_IS = {"id", "source", "note"}
"""Cells the report prints as written: a character that is not printable in one (ESC, a line
break, a bidirectional override) is written as its escape (``errors.escaped``), so it cannot
restyle the terminal. No run setting is read from ``source``; kernel and collective
validation read words of a ``note`` (``validate.kernels``: fast accumulation, block scales, an
MSMF figure, grouped/ragged GEMMs, a memory-bound kernel's variant, which it also reads from
the ``id``; ``validate.collectives``: "per NIC"). Escaping leaves those words as written: it
changes only characters that are not printable."""


def row_count(path: str | Path) -> int:
    """How many rows :func:`validate_file` predicts of ``path``, counted without predicting: a
    CSV's rows (read and checked as :func:`read_rows` does), a layers file's records, a kernel
    database's layer records. (Counting every file with ``read_rows`` refused the bundled
    layers file: a service job validating the bundled files failed before it ran.)"""
    if is_layers_file(path):
        return sum(1 for line in read_text(path, "layers file").splitlines() if line.strip())
    if is_kernel_db(path):
        return layer_count(path)
    return len(read_rows(path)[1])


def _check_ids(path: str | Path, rows: list[dict[str, str]]) -> None:
    """A warning for a row without an id and for two rows with the same id: the report and the
    errata name rows by id, and a row given twice counts twice in the MAPE (both rows are
    still predicted)."""
    seen: dict[str, int] = {}
    for n, row in enumerate(rows, start=1):
        ident = (row.get("id") or "").strip()
        if not ident:
            warnings.warn(f"{path} row {n}: the id cell is empty; give each row an id",
                          TrainsimWarning, stacklevel=2)
        elif ident in seen:
            warnings.warn(f"{path} rows {seen[ident]} and {n} both have id {ident!r}; each "
                          "counts in the summary", TrainsimWarning, stacklevel=2)
        else:
            seen[ident] = n


BUNDLED_DIR = Path(__file__).resolve().parent.parent / "data" / "validation"
BUNDLED_FILES = ("kernels_published.csv", "kernels_h100_measured.csv", "layers_h100_measured.jsonl",
                 "collectives_public.csv", "training_public.csv")
"""Published measurements shipped with the package (a copy of shared/validation, with its
README naming every source), run by ``trainsim validate`` without a file; training last, so
the last line printed is the training summary."""


def bundled_files() -> list[Path]:
    """The bundled published files, in the order ``trainsim validate`` runs them."""
    return [BUNDLED_DIR / name for name in BUNDLED_FILES if (BUNDLED_DIR / name).exists()]


PREDICT: dict[str, Callable[[dict[str, str]], RowResult]] = {
    "training": predict_training_row, "collectives": predict_collective_row,
    "kernels": predict_kernel_row}


def _guarded(predict: Callable[[dict[str, str]], RowResult], row: dict[str, str]) -> RowResult:
    """``predict(row)``; a trainsim bug on one row fails that row (with its reason), not the
    rows after it."""
    try:
        return predict(row)
    except TrainsimError as exc:  # a bad cell read before the predictor's own guard
        measured = row.get("measured_iteration_s") or row.get("measured_busbw_GBps") or \
            row.get("measured_value")
        return RowResult(id=row.get("id") or "?", measured=positive_value(measured) or 0.0,
                         error=str(exc))
    except Exception as exc:  # noqa: BLE001 - reported on the row, as the README asks
        measured = row.get("measured_iteration_s") or row.get("measured_busbw_GBps") or \
            row.get("measured_value")
        return RowResult(id=row.get("id") or "?", measured=positive_value(measured) or 0.0,
                         error=f"internal error: {type(exc).__name__}: {exc} (a trainsim bug; "
                               "please report)")


T = TypeVar("T")
Said = list[tuple[str, type[Warning], str, int]]
"""Warnings a row's prediction raised: (text, category, file, line), picklable from a worker."""


def _said(predict: Callable[[dict[str, str]], RowResult], row: dict[str, str]
          ) -> tuple[RowResult, Said]:
    """``predict(row)`` and every warning it raised, in whichever process predicts the row
    (``validate_file`` says them again in its own, once each)."""
    with warnings.catch_warnings(record=True) as seen, every_row_warning():
        warnings.simplefilter("always")
        res = predict(row)
    return res, [(str(w.message), w.category, w.filename, w.lineno) for w in seen]


def validate_file(path: str | Path, progress: Callable[[int, int], None] | None = None,
                  workers: int = 1, compute_db: str | None = "auto") -> tuple[str, list[RowResult]]:
    """Predict every row of a validation file (a kernel database: its layer records against
    its kernels, ``validate.kernel_db``), in file order; ``workers`` > 1 predicts rows in
    that many processes (the results are the same: each row is predicted alone).
    ``compute_db`` is the kernel database that prices kernel and training rows ('auto': the
    one bundled for each row's GPU; None: the analytic model alone; or a path). The rows'
    warnings are raised again here, after the rows, each once in file order (also those raised
    in a worker process: a caller collecting them, ``said_warnings``, has them all)."""
    checks = ((is_layers_file, functools.partial(validate_layers, compute_db=compute_db)),
              (is_kernel_db, validate_kernel_db))
    for is_kind, check in checks:
        if is_kind(path):  # JSON files, priced whole
            results = check(path)
            if progress:
                progress(len(results), len(results))
            return "kernels", results
    kind, rows = read_rows(path)
    if kind == "training":
        _unnamed_memory_kind(path, rows)
    predict = PREDICT[kind]
    if kind != "collectives":
        predict = functools.partial(predict, compute_db=compute_db)
    predict = functools.partial(_said, functools.partial(_guarded, predict))
    out: list[tuple[RowResult, Said]]
    if workers > 1 and len(rows) > 1:
        out = _in_workers(predict, rows, workers, progress,
                          row_passes if kind == "training" else None)
    else:
        out = []
        for result in map(predict, rows):
            out.append(result)
            if progress:
                progress(len(out), len(rows))
    said: set[tuple[str, type[Warning]]] = set()
    for _, seen in out:
        for text, category, filename, lineno in seen:
            if (text, category) not in said:
                said.add((text, category))
                warnings.warn_explicit(text, category, filename, lineno)
    return kind, [res for res, _ in out]


def _unnamed_memory_kind(path: str | Path, rows: list[dict[str, str]]) -> None:
    """Warn once for the file where rows give ``measured_peak_memory_gib`` with ``memory_kind``
    empty: they are compared with the allocated peak plus the CUDA context
    (``StageMemory.total``, what must fit in HBM), which is none of the README's kinds
    (allocated, reserved, device). The comparison itself is unchanged."""
    unnamed = [r for r in rows if (r.get("measured_peak_memory_gib") or "").strip()
               and not (r.get("memory_kind") or "").strip()]
    if unnamed:
        warnings.warn(f"{path}: {len(unnamed)} row(s) give measured_peak_memory_gib with column "
                      "memory_kind empty (first: id "
                      f"{unnamed[0].get('id') or '?'}); compared with the allocated peak plus "
                      "the CUDA context, which is none of allocated, reserved or device: name "
                      "the kind the figure counts", TrainsimWarning, stacklevel=3)


def _in_workers(predict: Callable[[dict[str, str]], T], rows: list[dict[str, str]],
                workers: int, progress: Callable[[int, int], None] | None,
                cost: Callable[[dict[str, str]], float] | None) -> list[T]:
    """``predict`` of every row in ``workers`` processes, returned in file order. Rows are
    handed out by ``cost`` (a rough estimate of their work), the largest first, so that a
    long row is not left last while the other processes idle."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    order = sorted(range(len(rows)), key=lambda i: -cost(rows[i])) if cost else range(len(rows))
    pool = ProcessPoolExecutor(min(workers, len(rows)))
    try:
        futures = {i: pool.submit(predict, rows[i]) for i in order}
        for done, _ in enumerate(as_completed(futures.values()), start=1):
            if progress:
                progress(done, len(rows))
        out = [futures[i].result() for i in range(len(rows))]
    except BaseException:
        # Ctrl-C or a failure here (the progress callback): drop the rows not started instead
        # of predicting them all first. A row's own errors come back as its result
        # (``_guarded``); anything else a worker raises surfaces at ``result()``, after the rest
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return out


__all__ = ["BUNDLED_DIR", "RowResult", "bundled_files", "predict_collective_row", "predict_kernel_row", "predict_training_row",
           "read_rows", "row_config", "row_count", "summarize", "summary_line", "tune", "validate_file"]
