"""table49: validate's table built of ``Text`` cells prints byte for byte what the markup strings
printed (the old construction is written out below), colours and wrapping included."""

from __future__ import annotations

import random
from typing import Any

import pytest
from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from trainsim.report.table import _cell, render_validation
from trainsim.validate.common import RowResult

TRICKY = ["", "a", "plain id-1.7B", "[red]x[/]", "[/]", "a[b", "]", "x:warning:y", ":smile:",
          "ends\\", "a\\[red]b", "\\\\", "tp=2, read x: 9070 ms -> 9.07", "a:b:c", "ünï côdé 漢字",
          "emoji :thumbs_up: in", "[bold]", " lead and trail ", "tab\tin", "\x1b[31mRED"]


def _old_table(kind: str, rows: list[Any], unit: str,
               summary: dict[str, Any] | None = None) -> Table | Group:
    """render_validation as of main 406e9ec1: markup strings, parsed by rich."""
    t = Table(title=f"validation ({kind})", title_justify="left")
    t.add_column("id")
    t.add_column(f"measured {unit}", justify="right")
    t.add_column(f"predicted {unit}", justify="right")
    t.add_column("error", justify="right")
    t.add_column("chosen / note")
    for r in rows:
        u = f" {r.extra['unit']}" if "unit" in r.extra else ""
        if r.predicted is None:
            t.add_row(escape(r.id), f"{r.measured:g}{u}", "-", "failed", f"[red]{escape(r.error)}[/]")
            continue
        err = (r.predicted - r.measured) / r.measured
        color = "green" if abs(err) <= 0.05 else ("yellow" if abs(err) <= 0.1 else "red")
        assumed = r.extra.get("assumed") or {}
        read = r.extra.get("read_as") or {}
        note = escape(", ".join([f"{k}={v}" for k, v in r.chosen.items()]
                                + list(r.extra.get("notes") or ())
                                + ([f"assumed {', '.join(f'{k}={v}' for k, v in assumed.items())}"]
                                   if assumed else [])
                                + ([f"read {'; '.join(f'{k}: {v}' for k, v in read.items())}"]
                                   if read else [])))
        if r.fits_in_memory is False:
            note = "[red]does not fit in memory[/] " + note
        t.add_row(escape(r.id), f"{r.measured:.4g}{u}", f"{r.predicted:.4g}{u}",
                  f"[{color}]{100 * err:+.1f}%[/]", note)
    tables = []
    for key, title in (("by_source", "error by source"),
                       ("by_kind", "error by kind/implementation/dtype")):
        g = (summary or {}).get(key)
        if not g:
            continue
        e = Table(title=title, title_justify="left")
        e.add_column("group")
        e.add_column("rows", justify="right")
        e.add_column("MAPE", justify="right")
        e.add_column("mean signed error", justify="right")
        for name, v in g.items():
            e.add_row(escape(name), str(v["n"]), f"{100 * v['mape']:.1f}%",
                      f"{100 * v['mean_signed_error']:+.1f}%")
        tables.append(e)
    return Group(t, *tables) if tables else t


def _printed(table: Table | Group, width: int, terminal: bool) -> str:
    console = Console(width=width, record=True, force_terminal=terminal,
                      color_system="truecolor" if terminal else None)
    with console.capture() as got:
        console.print(table)
    return got.get()


def _rows(seed: int) -> tuple[list[RowResult], dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for i, s in enumerate(TRICKY):
        measured = rng.uniform(0.01, 50)
        other = rng.choice(TRICKY)
        if i % 5 == 4:
            rows.append(RowResult(id=s, measured=measured, error=f"{other} failed: {s}",
                                  extra={"unit": "ms"} if i % 2 else {}))
            continue
        rows.append(RowResult(
            id=s or f"r{i}", measured=measured, predicted=measured * rng.uniform(0.8, 1.2),
            chosen={"tp": rng.choice([1, 2, 8]), other: s} if i % 3 else {},
            fits_in_memory=[None, True, False][i % 3],
            extra={"notes": [other, "n=" + s] if i % 2 else [],
                   "assumed": {"grad_reduce_dtype": "fp16", s: other} if i % 4 == 1 else {},
                   "read_as": {"measured_iteration_s": "9070 ms -> 9.07", other: s}
                   if i % 4 == 2 else {}}))
    summary = {"by_source": {s or "empty": {"n": j + 1, "mape": rng.random(),
                                           "mean_signed_error": rng.uniform(-1, 1)}
                             for j, s in enumerate(TRICKY)},
               "by_kind": {"gemm/cublas/bf16": {"n": 3, "mape": 0.05, "mean_signed_error": -0.02}}}
    return rows, summary


@pytest.mark.parametrize("s", TRICKY)
@pytest.mark.parametrize("style", ["", "red", "green", "yellow"])
def test_a_cell_is_the_text_its_markup_parsed_to(s, style):
    want = Text.from_markup(f"[{style}]{escape(s)}[/]" if style else escape(s))
    got = _cell(s, style)
    assert (got.plain, got.spans, got.style, got.justify, got.overflow, got.end) == \
           (want.plain, want.spans, want.style, want.justify, want.overflow, want.end)


def _grid():
    """Every (terminal, width, seed) of the 24: by default the 8 where the seed is the pair's
    place in the grid modulo 3 (each width and each terminal setting printed, each seed's rows
    drawn, ~0.35 CPU s a case on this 2-core host, suite50); the other 16 under ``-m slow``."""
    for i, (terminal, width) in enumerate((t, w) for t in (False, True) for w in (40, 80, 160, 200)):
        for seed in (0, 1, 2):
            marks = () if seed == i % 3 else (pytest.mark.slow,)
            yield pytest.param(seed, width, terminal, marks=marks, id=f"{terminal}-{width}-{seed}")


@pytest.mark.parametrize("seed, width, terminal", list(_grid()))
def test_the_table_prints_as_the_markup_table(seed, width, terminal):
    rows, summary = _rows(seed)
    for kind, unit in (("training", "s/iteration"), ("kernels", "")):
        want = _printed(_old_table(kind, rows, unit, summary), width, terminal)
        assert _printed(render_validation(kind, rows, unit, summary), width, terminal) == want
        assert _printed(render_validation(kind, rows, unit), width, terminal) == \
               _printed(_old_table(kind, rows, unit), width, terminal)
    if width >= 160:  # the rows' cases were printed (not wrapped apart)
        assert "does not fit in memory" in want and "failed" in want
    if terminal:
        assert "\x1b[" in want  # the colours were compared too
