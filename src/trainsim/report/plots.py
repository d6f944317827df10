"""Plots of typed results: PNG with matplotlib (headless, Agg canvas) and self-contained HTML.

* :func:`plot_breakdown` — where the iteration time goes, one stacked bar per result.
* :func:`plot_timeline` — the pipeline timeline (``simulate(cfg, keep_timeline=True)``).
* :func:`plot_memory` — the memory stack of each pipeline stage against the GPU's HBM.
* :func:`plot_result` — one simulation: where the iteration time goes and the memory per GPU by
  part (``trainsim simulate --plot``).
* :func:`plot_search` — a search's throughput vs memory headroom, Pareto front marked.
* :func:`plot_sweep` / :func:`write_sweep_html` — a what-if sweep, PNG and interactive HTML.

Each ``plot_*`` writes the figure its ``*_figure`` function builds (returned, unsaved, so a test
can read what was drawn); the file's suffix picks the format (.png, .svg, .pdf, ...).

matplotlib is imported inside the functions, and only its object-oriented API with the Agg
canvas is used: no display is needed and no global backend is switched.
"""

from __future__ import annotations

import html
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from trainsim.config.safe_load import write_output
from trainsim.result import Result

GiB = 2**30
PARTS = (("compute_s", "compute", "#4c72b0"), ("tp", "exposed TP comm", "#dd8452"),
         ("cp", "exposed CP comm", "#937860"), ("ep", "exposed EP comm", "#ccb974"),
         ("pp", "exposed PP comm", "#8172b3"),
         ("dp", "exposed DP comm", "#c44e52"), ("pipeline_bubble_s", "pipeline bubble", "#bbbbbb"),
         ("optimizer_s", "optimizer step", "#55a868"), ("data_loading_s", "data loading", "#64b5cd"),
         ("other_s", "other", "#da8bc3"))
MEMORY_PARTS = (("weights", "#4c72b0"), ("gradients", "#dd8452"), ("optimizer", "#55a868"),
                ("activations", "#c44e52"), ("buffers", "#8172b3"), ("context", "#8c8c8c"))
PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
           "#8c8c8c", "#ccb974", "#64b5cd")


def _figure(width: float, height: float, constrained: bool = False):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110,
                 layout="constrained" if constrained else None)
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    buf = io.BytesIO()  # matplotlib's savefig(path) passed over a failed write (/dev/full)
    fig.savefig(buf, format=path.suffix[1:].lower() or "png")
    write_output(path, buf.getvalue())
    return path


def _parts_of(r: Result) -> list[float]:
    out = []
    for key, _, _ in PARTS:
        out.append(r.exposed_comm.get(key, 0.0) if key in r.exposed_comm
                   else r.breakdown.get(key, 0.0))
    return out


def plot_breakdown(results: Result | Sequence[Result], path: str | Path,
                   labels: Sequence[str] | None = None, title: str | None = None) -> Path:
    """Stacked horizontal bars of the iteration time of each result, by part."""
    rs = [results] if isinstance(results, Result) else list(results)
    if not rs:
        raise ValueError("plot_breakdown needs at least one result")
    labels = list(labels) if labels else [_short_label(r) for r in rs]
    fig = _figure(11, 1.8 + 0.45 * len(rs))
    ax = fig.add_subplot()
    left = [0.0] * len(rs)
    ys = list(range(len(rs)))[::-1]
    for i, (_, name, color) in enumerate(PARTS):
        widths = [_parts_of(r)[i] for r in rs]
        if not any(w > 0 for w in widths):
            continue
        ax.barh(ys, widths, left=left, color=color, label=name, height=0.6)
        left = [a + b for a, b in zip(left, widths)]
    for y, r in zip(ys, rs):
        ax.text(r.iteration_time_s, y, f" {r.iteration_time_s:.3g} s, MFU {100 * r.mfu:.1f}%",
                va="center", fontsize=8)
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_xlabel("seconds per iteration")
    ax.set_xlim(0, max(r.iteration_time_s for r in rs) * 1.3)
    ax.set_title(title or "where the iteration time goes")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, path)


def _short_label(r: Result) -> str:
    c, p = r.config, r.config.parallel
    return f"{c.model.name} TP{p.tp} PP{p.pp} CP{p.cp} DP{c.dp}"


def _task_color(stream: str, label: str) -> str:
    if stream == "compute":
        if label.startswith("F"):
            return "#4c72b0"
        if label.startswith("B"):
            return "#55a868"
        if "optimizer" in label:
            return "#c44e52"
        return "#8172b3"
    return {"dp": "#dd8452", "dp_rep": "#dd8452", "edp": "#dd8452", "pp": "#8172b3"}.get(
        stream, "#937860")


def plot_timeline(result: Result, path: str | Path, title: str | None = None) -> Path:
    """Gantt chart of the simulated iteration: one row per (stage, stream), forward passes
    blue, backward green, optimizer red, data-parallel communication orange."""
    tl = result.timeline
    if tl is None:
        raise ValueError("the result has no timeline: simulate(cfg, keep_timeline=True)")
    rows = sorted({t.stream for t in tl.tasks}, key=lambda s: (s[0], s[1] != "compute", s[1]))
    index = {s: i for i, s in enumerate(rows)}
    bars: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for i, t in enumerate(tl.tasks):
        if t.duration_s <= 0:
            continue
        key = (index[t.stream], _task_color(t.stream[1], t.label))
        bars.setdefault(key, []).append((tl.start_s[i], t.duration_s))
    fig = _figure(12, 1.4 + 0.28 * len(rows))
    ax = fig.add_subplot()
    for (row, color), spans in bars.items():
        ax.broken_barh(spans, (len(rows) - 1 - row - 0.4, 0.8), facecolors=color, linewidth=0)
    ax.set_yticks([len(rows) - 1 - i for i in range(len(rows))],
                  [f"stage {s} {name}" for s, name in rows], fontsize=7)
    ax.set_xlabel("seconds")
    ax.set_xlim(0, max(tl.makespan_s, 1e-12))
    ax.set_ylim(-0.6, len(rows) - 0.4)
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=c, label=n) for n, c in
                       (("forward", "#4c72b0"), ("backward", "#55a868"), ("optimizer", "#c44e52"),
                        ("DP comm", "#dd8452"), ("PP send", "#8172b3"))],
              fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0))
    p = result.config.parallel
    ax.set_title(title or f"pipeline timeline: PP {p.pp} x VPP {p.vpp}, "
                 f"{result.config.num_microbatches} micro-batches, "
                 f"{result.iteration_time_s:.3g} s")
    return _save(fig, path)


def plot_memory(result: Result, path: str | Path, title: str | None = None) -> Path:
    """Stacked memory of each pipeline stage's representative rank, with the HBM capacity."""
    mems = result.memory
    fig = _figure(max(5.0, 1.5 + 0.35 * len(mems)), 4.2)
    ax = fig.add_subplot()
    xs = list(range(len(mems)))
    bottom = [0.0] * len(mems)
    for name, color in MEMORY_PARTS:
        vals = [getattr(m, name) / GiB for m in mems]
        ax.bar(xs, vals, bottom=bottom, color=color, label=name, width=0.7)
        bottom = [a + b for a, b in zip(bottom, vals)]
    hbm = result.config.cluster.gpu.hbm_bytes / GiB
    ax.axhline(hbm, color="black", linestyle="--", linewidth=1)
    ax.text(len(mems) - 0.5, hbm, f"HBM {hbm:.0f} GiB", ha="right", va="bottom", fontsize=8)
    ax.set_xticks(xs, [str(i) for i in xs], fontsize=7 if len(mems) > 16 else 9)
    ax.set_xlabel("pipeline stage")
    ax.set_ylabel("GiB per GPU")
    ax.set_ylim(0, max(hbm, max(bottom)) * 1.15)
    ax.set_title(title or f"memory per GPU by stage (peak {result.peak_memory_bytes / GiB:.1f} GiB)")
    ax.legend(fontsize=7, ncols=3, loc="upper left")
    return _save(fig, path)


MEMORY_STACK = (("weights", "weights", "#4c72b0"), ("gradients", "gradients", "#dd8452"),
                ("optimizer", "optimizer state", "#55a868"),
                ("activations", "activations", "#c44e52"), ("buffers", "buffers", "#8172b3"),
                ("cached", "allocator cache (to reserved)", "#d5d5d5"),
                ("context", "CUDA context (to device)", "#8c8c8c"))
"""The parts of one rank's memory, bottom up: the first five sum to ``allocated``, the cache
takes it to ``reserved``, the context to ``device`` (``memory.MemoryBreakdown``)."""


def result_figure(result: Result, title: str | None = None):
    """The Figure :func:`plot_result` writes: the parts of the iteration time (the bars sum to
    ``iteration_time_s``) and each pipeline stage's memory per GPU by part, stacked up to
    allocated, reserved and device, against the GPU's HBM."""
    from trainsim.report.table import _fmt_s

    fig = _figure(13, 4.8, constrained=True)
    ax_t, ax_m = fig.subplots(1, 2, width_ratios=(1.15, 1))
    total = result.iteration_time_s
    parts = [(name, color, v) for (key, name, color), v in zip(PARTS, _parts_of(result))
             if v > 0 or key == "compute_s"]
    ys = list(range(len(parts)))[::-1]
    ax_t.barh(ys, [v for *_, v in parts], color=[c for _, c, _ in parts], height=0.6)
    for y, (_, _, v) in zip(ys, parts):
        ax_t.text(v, y, f" {_fmt_s(v)} ({100 * v / total:.1f}%)", va="center", fontsize=8)
    ax_t.set_yticks(ys, [n for n, _, _ in parts], fontsize=9)
    ax_t.set_xlabel("seconds per iteration")
    ax_t.set_xlim(0, max(v for *_, v in parts) * 1.4)
    ax_t.grid(axis="x", alpha=0.3)
    ax_t.set_title(f"where the {_fmt_s(total)} iteration goes (critical stage "
                   f"{result.critical_stage})", fontsize=10)

    mems = result.memory
    xs = list(range(len(mems)))
    bottom = [0.0] * len(mems)
    for name, label, color in MEMORY_STACK:
        vals = [getattr(m, name) / GiB for m in mems]
        if name in ("cached", "context") and not any(vals):
            continue
        ax_m.bar(xs, vals, bottom=bottom, color=color, label=label, width=0.7)
        bottom = [a + b for a, b in zip(bottom, vals)]
    hbm = result.config.cluster.gpu.hbm_bytes / GiB
    ax_m.axhline(hbm, color="black", linestyle="--", linewidth=1, label=f"HBM {hbm:.0f} GiB")
    ax_m.set_xticks(xs, [str(i) for i in xs], fontsize=7 if len(mems) > 16 else 9)
    ax_m.set_xlabel("pipeline stage (one representative GPU each)")
    ax_m.set_ylabel("GiB per GPU")
    ax_m.set_ylim(0, max(hbm, max(bottom)) * 1.08)
    peak = mems[result.peak_memory_stage]
    ax_m.set_title(f"memory per GPU by part; stage {result.peak_memory_stage}: allocated "
                   f"{peak.allocated / GiB:.1f}, reserved {peak.reserved / GiB:.1f}, device "
                   f"{peak.device / GiB:.1f} GiB", fontsize=10)
    handles, labels = ax_m.get_legend_handles_labels()  # top of the stack first, as drawn
    ax_m.legend(handles[:1] + handles[:0:-1], labels[:1] + labels[:0:-1], fontsize=7,
                loc="upper left", bbox_to_anchor=(1.01, 1.0))
    c, p = result.config, result.config.parallel
    fig.suptitle(title or f"{c.model.name} on {c.cluster.num_gpus} x {c.cluster.gpu.name}: "
                 f"TP {p.tp} PP {p.pp} CP {p.cp} DP {c.dp}, {result.tokens_per_s_per_gpu:,.0f} "
                 f"tokens/s/GPU, MFU {100 * result.mfu:.1f}%", fontsize=11)
    return fig


def plot_result(result: Result, path: str | Path, title: str | None = None) -> Path:
    """Write :func:`result_figure` to ``path`` (``trainsim simulate --plot``)."""
    return _save(result_figure(result, title), path)


class ScatterPoint(Protocol):
    """What plot_search needs of a search evaluation."""

    tokens_per_s: float
    memory_headroom_bytes: float

    @property
    def num_gpus(self) -> int: ...

    @property
    def label(self) -> str: ...


def plot_search(points: Sequence[ScatterPoint], path: str | Path,
                pareto: Sequence[ScatterPoint] = (), best: ScatterPoint | None = None,
                title: str | None = None) -> Path:
    """Scatter of every simulated configuration: tokens/s per GPU against memory headroom,
    coloured by GPU count, the Pareto front joined and the best one starred."""
    if not points:
        raise ValueError("plot_search needs at least one point")
    fig = _figure(8, 5)
    ax = fig.add_subplot()
    counts = sorted({p.num_gpus for p in points})
    for i, n in enumerate(counts):
        sel = [p for p in points if p.num_gpus == n]
        ax.scatter([p.memory_headroom_bytes / GiB for p in sel],
                   [p.tokens_per_s / p.num_gpus for p in sel], s=9, alpha=0.45,
                   color=PALETTE[i % len(PALETTE)], label=f"{n} GPUs", linewidths=0)
    if pareto:
        front = sorted(pareto, key=lambda p: p.memory_headroom_bytes)
        ax.plot([p.memory_headroom_bytes / GiB for p in front],
                [p.tokens_per_s / p.num_gpus for p in front], "o-", color="black", markersize=4,
                linewidth=1, label="Pareto front")
    if best is not None:
        ax.scatter([best.memory_headroom_bytes / GiB], [best.tokens_per_s / best.num_gpus],
                   marker="*", s=220, color="gold", edgecolors="black", zorder=5,
                   label=f"best: {best.label}")
    ax.set_xlabel("memory headroom per GPU (GiB)")
    ax.set_ylabel("tokens/s per GPU")
    ax.set_title(title or f"search: {len(points)} simulated configurations")
    ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    return _save(fig, path)


@dataclass(frozen=True)
class SweepSeries:
    """One line of a sweep: each metric at each value of the varied field ``x`` (numbers, or
    names drawn on a categorical axis). A metric left empty is not drawn."""

    name: str
    x: tuple[Any, ...]
    iteration_time_s: tuple[float, ...]
    mfu: tuple[float, ...]
    tokens_per_s_per_gpu: tuple[float, ...] = ()
    peak_memory_gib: tuple[float, ...] = ()
    fits_in_memory: tuple[bool, ...] = ()


SWEEP_METRICS = (("iteration_time_s", "iteration time (s)", 1.0),
                 ("tokens_per_s_per_gpu", "tokens/s per GPU", 1.0),
                 ("mfu", "MFU (%)", 100.0),
                 ("peak_memory_gib", "peak memory per GPU (GiB)", 1.0))
"""What a sweep figure plots, in panel order: (SweepSeries field, axis label, scale)."""


def is_number(v: object) -> bool:
    """A value drawn on a numeric axis: a finite int or float (not a bool, not a name)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _spans_decades(values: Sequence[float]) -> bool:
    return bool(values) and min(values) > 0 and max(values) / min(values) >= 10


def _log_x(values: Sequence[float]) -> bool:
    """A varied field's axis is logarithmic where it spans a decade, or where it doubles at
    least three times over powers of two (TP 1, 2, 4, 8: parallel sizes, batch sizes)."""
    doubling = len(values) >= 3 and all(v > 0 and math.log2(v).is_integer() for v in values) \
        and max(values) / min(values) >= 8
    return _spans_decades(values) or doubling


def sweep_figure(series: Sequence[SweepSeries], x_label: str, title: str | None = None,
                 categories: Sequence[Any] | None = None, notes: Sequence[str] = ()):
    """The Figure :func:`plot_sweep` writes: one panel per metric the series carry (iteration
    time, tokens/s per GPU, MFU, peak memory) against the varied field, one line per series.
    ``x`` values that are not all numbers (or given ``categories``, in their order) go on a
    categorical axis; a numeric axis spanning a decade or more is logarithmic. Points that do
    not fit in HBM are crossed in the memory panel; ``notes`` (failed points) go under the
    title."""
    if not series:
        raise ValueError("plot_sweep needs at least one series")
    from matplotlib.ticker import FuncFormatter, NullFormatter, NullLocator

    metrics = [m for m in SWEEP_METRICS
               if all(len(getattr(s, m[0])) == len(s.x) > 0 for s in series)]
    xs_all = [x for s in series for x in s.x]
    categorical = categories is not None or not all(is_number(x) for x in xs_all)
    cats = [str(c) for c in (categories if categories is not None else
                             dict.fromkeys(str(x) for x in xs_all))]

    def place(x: Any) -> float:
        return float(cats.index(str(x))) if categorical else float(x)

    cols = 1 if len(metrics) == 1 else 2
    rows = (len(metrics) + 1) // 2
    fig = _figure(5.0 * cols + 2.2, 3.4 * rows + 0.7, constrained=True)
    axes = list(fig.subplots(rows, cols, squeeze=False).ravel())
    for ax in axes[len(metrics):]:
        ax.remove()
    unfit_label = "does not fit in HBM"
    # on a categorical axis the series sit side by side around their category (equal values
    # would hide each other) and are joined by a dotted line: categories have no order
    dodge = min(0.1, 0.6 / len(series)) if categorical else 0.0
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        xs = [place(x) + dodge * (i - (len(series) - 1) / 2) for x in s.x]
        for ax, (key, _, scale) in zip(axes, metrics):
            ys = [scale * v for v in getattr(s, key)]
            ax.plot(xs, ys, "o:" if categorical else "o-", color=color,
                    label=s.name or x_label, markersize=4)
            if key == "peak_memory_gib" and s.fits_in_memory:
                bad = [(x, y) for x, y, ok in zip(xs, ys, s.fits_in_memory) if not ok]
                if bad:
                    ax.plot(*zip(*bad), "x", color="#c44e52", markersize=9, mew=2,
                            linestyle="none", label=unfit_label)
                    unfit_label = "_"
    numeric = sorted({float(x) for x in xs_all}) if not categorical else []
    for ax, (key, label, _) in zip(axes, metrics):
        ax.set_ylabel(label)
        ax.set_xlabel(x_label)
        ax.grid(alpha=0.3)
        if categorical:
            ax.set_xticks(range(len(cats)), cats, fontsize=8,
                          rotation=25 if sum(map(len, cats)) > 40 else 0)
            ax.set_xlim(-0.5, len(cats) - 0.5)
        else:
            if _log_x(numeric):
                ax.set_xscale("log")
                ax.xaxis.set_minor_formatter(NullFormatter())
            if len(numeric) <= 12:  # the swept values themselves, and no others
                ax.set_xticks(numeric, [f"{v:g}" for v in numeric], fontsize=8)
                ax.xaxis.set_minor_locator(NullLocator())
        if key == "iteration_time_s" and _spans_decades([v for s in series for v in s.iteration_time_s]):
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes[1:len(metrics)]:  # the memory panel's cross, where it is drawn
        h, lab = ax.get_legend_handles_labels()
        handles += [a for a, b in zip(h, lab) if b == "does not fit in HBM"]
        labels += [b for b in lab if b == "does not fit in HBM"]
    if len(series) > 1 or series[0].name or len(handles) > len(series):
        fig.legend(handles, labels, loc="outside right upper", fontsize=8)
    head = title or f"sweep of {x_label}"
    fig.suptitle("\n".join([head, *notes]), fontsize=10)
    return fig


def plot_sweep(series: Sequence[SweepSeries], x_label: str, path: str | Path,
               title: str | None = None, categories: Sequence[Any] | None = None,
               notes: Sequence[str] = ()) -> Path:
    """Write :func:`sweep_figure` to ``path`` (``trainsim sweep --plot`` and ``--out``'s
    sweep.png)."""
    return _save(sweep_figure(series, x_label, title, categories, notes), path)


# ----------------------------------------------------------------- self-contained HTML

def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if not math.isfinite(lo) or not math.isfinite(hi):
        return [0.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=10 * mag)
    start = math.floor(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 2)]


def _svg_chart(series: Sequence[SweepSeries], values: str, y_label: str, x_label: str,
               scale: float = 1.0, width: int = 520, height: int = 320) -> str:
    ml, mr, mt, mb = 64, 16, 16, 44
    xs = [x for s in series for x in s.x]
    ys = [v * scale for s in series for v in getattr(s, values)]
    xt, yt = _nice_ticks(min(xs), max(xs)), _nice_ticks(min(ys), max(ys))
    x0, x1, y0, y1 = xt[0], xt[-1], yt[0], yt[-1]

    def px(x: float) -> float:
        return ml + (x - x0) / ((x1 - x0) or 1) * (width - ml - mr)

    def py(y: float) -> float:
        return height - mb - (y - y0) / ((y1 - y0) or 1) * (height - mt - mb)

    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" font-family="sans-serif" font-size="11">')]
    for t in xt:
        out.append(f'<line x1="{px(t):.1f}" y1="{mt}" x2="{px(t):.1f}" y2="{height - mb}" '
                   f'stroke="#eee"/><text x="{px(t):.1f}" y="{height - mb + 14}" '
                   f'text-anchor="middle">{t:g}</text>')
    for t in yt:
        out.append(f'<line x1="{ml}" y1="{py(t):.1f}" x2="{width - mr}" y2="{py(t):.1f}" '
                   f'stroke="#eee"/><text x="{ml - 4}" y="{py(t) + 4:.1f}" '
                   f'text-anchor="end">{t:.4g}</text>')
    out.append(f'<text x="{(ml + width - mr) / 2}" y="{height - 8}" text-anchor="middle">'
               f'{html.escape(x_label)}</text>')
    out.append(f'<text transform="translate(14 {(mt + height - mb) / 2}) rotate(-90)" '
               f'text-anchor="middle">{html.escape(y_label)}</text>')
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        pts = [(px(x), py(v * scale)) for x, v in zip(s.x, getattr(s, values))]
        out.append(f'<g class="series s{i}">')
        out.append('<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>'.format(
            color, " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)))
        for (a, b), x, v in zip(pts, s.x, getattr(s, values)):
            tip = html.escape(f"{s.name} {x_label}={x:g}: {y_label} {v * scale:.4g}".strip())
            out.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="4" fill="{color}">'
                       f'<title>{tip}</title></circle>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;margin:24px;color:#222}} .charts{{display:flex;gap:24px;
flex-wrap:wrap}} table{{border-collapse:collapse;font-size:12px;margin-top:16px}}
td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}} .legend span{{cursor:pointer;
margin-right:14px;user-select:none}} .off{{opacity:.3}} .hidden{{display:none}}</style>
</head><body><h2>{title}</h2>
<p>Hover a point for its value; click a legend entry to hide or show a line.</p>
<div class="legend">{legend}</div><div class="charts">{charts}</div>
<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
<script>const data={data};
document.querySelectorAll('.legend span').forEach(el=>el.addEventListener('click',()=>{{
el.classList.toggle('off');document.querySelectorAll('.'+el.dataset.s).forEach(
g=>g.classList.toggle('hidden'));}}));</script></body></html>
"""


def write_sweep_html(series: Sequence[SweepSeries], x_label: str, path: str | Path,
                     rows: Sequence[dict[str, object]] = (), title: str | None = None) -> Path:
    """A self-contained HTML page (inline SVG, a few lines of JS, no external files) with the
    iteration time and MFU against the varied field, hover tooltips and the sweep's table."""
    if not series:
        raise ValueError("write_sweep_html needs at least one series")
    title = title or f"sweep of {x_label}"
    legend = "".join(f'<span data-s="s{i}" style="color:{PALETTE[i % len(PALETTE)]}">&#9679; '
                     f'{html.escape(s.name or x_label)}</span>' for i, s in enumerate(series))
    charts = (_svg_chart(series, "iteration_time_s", "iteration time (s)", x_label)
              + _svg_chart(series, "mfu", "MFU (%)", x_label, scale=100.0))
    cols = list(rows[0]) if rows else []
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(c)))}</td>" for c in cols)
                   + "</tr>" for r in rows)
    data = json.dumps([{"name": s.name, "x": s.x, "iteration_time_s": s.iteration_time_s,
                        "mfu": s.mfu} for s in series])
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_HTML.format(title=html.escape(title), legend=legend, charts=charts,
                                 head=head, body=body, data=data.replace("</", "<\\/")))
    return path


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


__all__ = ["ScatterPoint", "SweepSeries", "is_number", "plot_breakdown", "plot_memory",
           "plot_result", "plot_search", "plot_sweep", "plot_timeline", "result_figure",
           "sweep_figure", "write_sweep_html"]
