"""Figures of a validation run: each row's prediction against its measurement.

One panel per quantity the file measured, on log-log axes with the y = x line and the ±10 % and
±20 % bands: a training file's iteration time, and its peak memory per GPU where rows measured
it; a collectives file's bus bandwidth; a kernels file's times and its TFLOP/s apart (a marker
shape per kernel kind); a layers file's fwd+bwd time and the activations it saved. A colour per
group: the framework of a training row, the implementation of a kernel row (the summary's
``by_source``), the collective of a collectives row, the family and mode of a layer. Rows the
summary counts apart (``excluded``) are hollow; failed rows are listed under the panels.

The points are the rows ``validate_file`` returned, the ones the table and the JSON print (the
CLI hands the same list to both); only a kernel time is rescaled to ms, both sides alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainsim.report.plots import PALETTE, _figure, _save
from trainsim.validate.common import RowResult
from trainsim.validate.kernels import RATE_UNIT, TIME_UNITS

BANDS = ((0.2, "#f0f0f0", "±20 %"), (0.1, "#dcdcdc", "±10 %"))
"""The error bands around y = x, widest first: (relative error, colour, label)."""
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "h", "<", ">", "p", "d", "H", "8")
MAX_LISTED = 12
"""Failed rows named under the figure; the rest are counted."""
WORST_LABELLED = 3
"""The rows furthest outside the ±20 % band whose id is written beside their point."""


@dataclass(frozen=True)
class Point:
    """One row on one panel: its id, colour group, marker group, measured and predicted (in
    the panel's unit), its error, and whether the summary counts it apart."""

    id: str
    group: str
    marker: str
    measured: float
    predicted: float
    ape: float
    excluded: bool = False


@dataclass(frozen=True)
class Panel:
    """One predicted-against-measured panel."""

    quantity: str
    unit: str
    points: list[Point] = field(default_factory=list)

    @property
    def counted(self) -> list[Point]:
        return [p for p in self.points if not p.excluded]


def _group(kind: str, r: RowResult) -> str:
    if kind == "collectives":
        return str(r.extra.get("collective", "?"))
    return str(r.extra.get("source_key") or "?")


def _points(kind: str, rows: Sequence[RowResult], scale: Callable[[RowResult], float] = lambda r: 1.0,
            memory: bool = False) -> list[Point]:
    """The rows predicted (their memory, with ``memory``) as points, both sides times
    ``scale(row)``; a row without a positive finite pair (failed) has none."""
    out = []
    for r in rows:
        m, p, ape = ((r.measured_memory_gib, r.predicted_memory_gib, r.memory_ape) if memory
                     else (r.measured, r.predicted, r.ape))
        if p is None or m is None or ape is None or not (0 < m < math.inf and 0 < p < math.inf):
            continue
        s = scale(r)
        out.append(Point(r.id, _group(kind, r), str(r.extra.get("kind", "")) if kind == "kernels"
                         else "", m * s, p * s, ape, bool(r.extra.get("excluded"))))
    return out


def panels(kind: str, results: Sequence[RowResult]) -> list[Panel]:
    """The panels of a file of ``kind`` (as ``validate_file`` names it: a layers file and a
    kernel database are 'kernels' whose rows are of kind 'layer')."""
    if kind == "training":
        out = [Panel("iteration time", "s", _points(kind, results))]
        mem = _points(kind, results, memory=True)
        if mem:
            out.append(Panel("peak memory per GPU", "GiB", mem))
        return out
    if kind == "collectives":
        return [Panel("bus bandwidth", "GB/s", _points(kind, results))]
    layers = [r for r in results if r.extra.get("kind") == "layer"]
    kernels = [r for r in results if r.extra.get("kind") != "layer"]
    out = []
    if layers:
        out.append(Panel("fwd+bwd time of one layer", "ms",
                         _points("layers", layers, lambda r: 1e3)))
        mem = _points("layers", layers, memory=True)
        if mem:
            out.append(Panel("activations saved for backward", "GiB", mem))
    timed = [r for r in kernels if r.extra.get("unit") in TIME_UNITS]
    if timed:
        out.append(Panel("kernel time", "ms", _points(
            kind, timed, lambda r: TIME_UNITS[r.extra["unit"]] * 1e3)))
    rated = [r for r in kernels if r.extra.get("unit") == RATE_UNIT]
    if rated:
        out.append(Panel("kernel throughput", RATE_UNIT, _points(kind, rated)))
    return out or [Panel("measured value", "", [])]


MORE_COLORS = ("#1b9e77", "#e7298a", "#66a61e", "#e6ab02", "#17becf", "#7570b3", "#a6761d",
               "#bcbd22", "#d62728", "#222222")
"""After the report's palette: saturated colours a small marker still shows (not tab20's pale
halves); beyond these they repeat."""


def _colors(n: int) -> list[str]:
    pool = PALETTE + MORE_COLORS
    return [pool[i % len(pool)] for i in range(n)]


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _draw(ax: Any, panel: Panel, color: dict[str, Any], marker: dict[str, str]) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    pts = panel.points
    label = f"{panel.quantity} ({panel.unit})" if panel.unit else panel.quantity
    ax.set_xlabel(f"measured {label}")
    ax.set_ylabel(f"predicted {label}")
    counted = panel.counted
    head = f"{panel.quantity}: {len(counted)} rows"
    if counted:
        head += (f", MAPE {_pct(sum(p.ape for p in counted) / len(counted))}, "
                 f"max {_pct(max(p.ape for p in counted))}")
    if len(counted) < len(pts):
        head += f" (+{len(pts) - len(counted)} excluded)"
    ax.set_title(head, fontsize=9)
    if not pts:
        ax.text(0.5, 0.5, "no row was predicted", ha="center", va="center",
                transform=ax.transAxes)
        return
    values = [v for p in pts for v in (p.measured, p.predicted)]
    lo, hi = min(values) / 1.3, max(values) * 1.3
    log = panel.unit != "GiB" or hi / lo >= 10  # memory of one GPU: linear unless decades
    if not log:  # the rows' range, not from zero: GPUs' memory clusters near their HBM
        lo, hi = min(values) / 1.15, max(values) * 1.08
    for b, shade, name in BANDS:
        ax.fill_between([lo, hi], [lo * (1 - b), hi * (1 - b)], [lo * (1 + b), hi * (1 + b)],
                        color=shade, linewidth=0, zorder=0, label=name)
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=0.8, zorder=1, label="y = x")
    for (g, mk), sel in _by(pts).items():
        ours = [p for p in sel if not p.excluded]
        theirs = [p for p in sel if p.excluded]
        if ours:
            ax.scatter([p.measured for p in ours], [p.predicted for p in ours], s=22,
                       marker=marker.get(mk, "o"), color=color[g], alpha=0.85,
                       edgecolors="white", linewidths=0.4, zorder=3, label=g)
        if theirs:
            ax.scatter([p.measured for p in theirs], [p.predicted for p in theirs], s=22,
                       marker=marker.get(mk, "o"), facecolors="none", edgecolors=color[g],
                       linewidths=0.9, zorder=2, label=f"{g} (excluded)")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
        decades = math.log10(hi / lo)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if decades <= 3 else
                                              (1.0,), numticks=9))
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(NullFormatter())
    ax.grid(alpha=0.3, which="major")
    def frac(v: float) -> float:  # where on the axis, 0 to 1
        return math.log(v / lo) / math.log(hi / lo) if log else (v - lo) / (hi - lo)

    worst = sorted((p for p in counted if p.ape > BANDS[0][0]), key=lambda p: -p.ape)
    labelled: list[tuple[float, float]] = []
    for p in worst:
        at = (frac(p.measured), frac(p.predicted))
        if len(labelled) == WORST_LABELLED:
            break
        if any(abs(at[0] - x) < 0.25 and abs(at[1] - y) < 0.04 for x, y in labelled):
            continue  # its label would be written over a worse row's
        labelled.append(at)
        right = at[0] > 0.5  # written toward the middle of the panel, not off it
        note = ax.annotate(f"{p.id} ({100 * (p.predicted / p.measured - 1):+.0f} %)",
                    (p.measured, p.predicted), xytext=(-5 if right else 5, 0),
                    textcoords="offset points", ha="right" if right else "left",
                    va="center", fontsize=6, color="#333333", zorder=4,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.75, "lw": 0})
        note.set_in_layout(False)  # a long id must not shrink the panel


def _by(pts: Sequence[Point]) -> dict[tuple[str, str], list[Point]]:
    out: dict[tuple[str, str], list[Point]] = {}
    for p in pts:
        out.setdefault((p.group, p.marker), []).append(p)
    return out


def _failed_note(results: Sequence[RowResult]) -> str:
    failed = [r.id for r in results if r.predicted is None and not r.extra.get("excluded")]
    if not failed:
        return ""
    listed = ", ".join(failed[:MAX_LISTED])
    more = f" and {len(failed) - MAX_LISTED} more" if len(failed) > MAX_LISTED else ""
    return f"failed ({len(failed)}, not plotted; see the table): {listed}{more}"


def validation_figure(kind: str, results: Sequence[RowResult], title: str | None = None) -> Any:
    """The Figure :func:`plot_validation` writes (returned unsaved: its Axes hold the points)."""
    ps = panels(kind, results)
    groups = sorted({p.group for panel in ps for p in panel.points})
    color = dict(zip(groups, _colors(len(groups))))
    kinds = sorted({p.marker for panel in ps for p in panel.points} - {""})
    marker = {k: MARKERS[i % len(MARKERS)] for i, k in enumerate(kinds)}
    fig = _figure(5.0 * len(ps) + 2.4, 5.2, constrained=True)
    axes = fig.subplots(1, len(ps), squeeze=False)[0]
    for ax, panel in zip(axes, ps):
        _draw(ax, panel, color, marker)
    _legend(fig, kind, results, ps, color, marker)
    note = _failed_note(results)
    name = title or f"validation ({kind})"
    fig.suptitle(name + (f"\n{note}" if note else ""), fontsize=10)
    return fig


def _legend(fig: Any, kind: str, results: Sequence[RowResult], ps: Sequence[Panel],
            color: dict[str, Any], marker: dict[str, str]) -> None:
    """One legend for the figure: the bands and y = x, each colour group with its rows and
    MAPE on the first panel, each marker's kernel kind, and the excluded rows' look."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [Line2D([], [], color="black", linewidth=0.8, label="y = x")]
    handles += [Patch(color=shade, label=name) for _, shade, name in reversed(BANDS)]
    # each group's rows and MAPE over the panels of the file's own measure (not memory): for
    # a training or kernels file, the table's "error by source"
    counted = [p for panel in ps if panel.unit != "GiB" for p in panel.counted]
    for g, c in color.items():
        mine = [p for p in counted if p.group == g]
        stat = f" ({len(mine)}, {_pct(sum(p.ape for p in mine) / len(mine))})" if mine else ""
        handles.append(Line2D([], [], marker="o", linestyle="none", color=c, label=g + stat))
    handles += [Line2D([], [], marker=m, linestyle="none", color="#555555", label=k)
                for k, m in marker.items()]
    if any(p.excluded for panel in ps for p in panel.points):
        handles.append(Line2D([], [], marker="o", linestyle="none", markerfacecolor="none",
                              color="#555555", label="excluded (not in MAPE)"))
    what = {"training": "framework (rows, MAPE)", "collectives": "collective (rows, MAPE)"}
    fig.legend(handles=handles, loc="outside right upper", fontsize=7,
               title=what.get(kind, "source (rows, MAPE)"), title_fontsize=7)


def plot_validation(kind: str, results: Sequence[RowResult], path: str | Path,
                    title: str | None = None) -> Path:
    """Write :func:`validation_figure` to ``path``; its suffix picks the format."""
    return _save(validation_figure(kind, results, title), path)


def per_file_path(path: str | Path, data_file: str | Path) -> Path:
    """Where the figure of ``data_file`` goes when one ``--plot`` names several files' figures
    (``trainsim validate --plot out.png`` over the bundled files): ``out-<file>.png``."""
    path = Path(path)
    return path.with_name(f"{path.stem}-{Path(data_file).stem}{path.suffix}")


__all__ = ["Panel", "Point", "panels", "per_file_path", "plot_validation", "validation_figure"]
