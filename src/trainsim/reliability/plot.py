"""PNG plots of a goodput result: the time budget of the run and the checkpoint-interval sweep.

matplotlib is imported here, lazily, and drawn with the Agg canvas (no display needed).
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainsim.config.safe_load import write_output
from trainsim.errors import TrainsimError

if TYPE_CHECKING:
    from trainsim.reliability.goodput import GoodputResult
    from trainsim.reliability.montecarlo import Sweep

DAY_S = 86400.0
_COLORS = {"training": "#4c9a2a", "straggler": "#a3c586", "checkpoint": "#f2c14e",
           "lost_work": "#d1495b", "detection": "#8e7dbe", "diagnosis": "#5f4b8b",
           "replacement": "#2e86ab", "restart": "#f18f01", "init": "#c73e1d",
           "restore": "#6c757d"}


def _figure(sweep: bool, budget: bool = True) -> tuple[Any, dict[str, Any]]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - depends on the environment
        raise TrainsimError("plotting needs matplotlib: pip install matplotlib") from None
    ncols = int(budget) + int(sweep)
    fig = Figure(figsize=(6.5 * ncols, 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(2, ncols, height_ratios=(1, 4))
    axes: dict[str, Any] = {}
    if budget:
        axes["whole"] = fig.add_subplot(grid[0, 0])
        axes["causes"] = fig.add_subplot(grid[1, 0])
    if sweep:
        axes["sweep"] = fig.add_subplot(grid[:, ncols - 1])
    return fig, axes


def _budget(whole: Any, ax: Any, result: GoodputResult) -> None:
    s = result.summary
    total = sum(s.lost_s.values())
    left = 0.0
    for name, sec in s.lost_s.items():
        if sec > 0:
            whole.barh([0], [sec / DAY_S], left=left, color=_COLORS.get(name, "#999999"))
            left += sec / DAY_S
    whole.set_yticks([0], ["whole run"])
    whole.set_xlabel("days (mean over trials)", fontsize=8)
    what = (f"{result.tokens:.3g} tokens" if result.tokens else
            f"{(result.horizon_s or 0) / DAY_S:g}-day window")
    whole.set_title(f"Time budget: {what} on {result.config.cluster.num_gpus:,} GPUs\n"
                    f"ETTR {s.ettr:.1%}, goodput {s.goodput:.1%}, expected {s.mean_days:.1f} d,"
                    f" P90 {s.p90_days:.1f} d, {s.interruptions:.0f} interruptions", fontsize=9)
    lost = [(n, sec) for n, sec in s.lost_s.items() if n != "training"]
    ys = list(range(len(lost)))[::-1]
    ax.barh(ys, [sec / 3600 for _, sec in lost],
            color=[_COLORS.get(n, "#999999") for n, _ in lost])
    ax.set_yticks(ys, [n.replace("_", " ") for n, _ in lost])
    for y, (_, sec) in zip(ys, lost):
        ax.annotate(f" {sec / 3600:.1f} h ({sec / total:.1%})", (sec / 3600, y),
                    va="center", fontsize=7)
    ax.set_xlabel("hours lost per run (mean over trials)")
    ax.margins(x=0.25)
    ax.grid(axis="x", alpha=0.3)


def _sweep(ax: Any, sw: Sweep, used_s: float | None = None) -> None:
    xs = [x / 60 for x in sw.intervals_s]
    ax.plot(xs, [y / DAY_S for y in sw.mean_wall_s], "o-", color="#2e86ab",
            label=f"Monte Carlo mean ({sw.trials} trials)")
    ax.plot(xs, [y / DAY_S for y in sw.p90_wall_s], "--", color="#2e86ab", alpha=0.5,
            label="Monte Carlo P90")
    lines = [(sw.young_s, "Young", "#f18f01", ":"), (sw.daly_s, "Daly", "#c73e1d", "--"),
             (sw.optimum_s, "simulated optimum", "#4c9a2a", "-")]
    if used_s is not None and not math.isinf(used_s):
        lines.append((used_s, "used", "#6c757d", "-."))
    for x, name, color, style in lines:
        if not math.isinf(x):
            ax.axvline(x / 60, color=color, linestyle=style, label=f"{name}: {x / 60:.1f} min")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("checkpoint interval (minutes of training)")
    ax.set_ylabel(sw.cost_label)
    ax.set_title("Checkpoint interval sweep", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")


def plot_goodput(result: GoodputResult, path: str | Path) -> Path:
    """Write the time budget (and the interval sweep, when the result has one) to ``path``."""
    fig, axes = _figure(sweep=result.sweep is not None)
    _budget(axes["whole"], axes["causes"], result)
    if result.sweep is not None:
        _sweep(axes["sweep"], result.sweep, result.plan.effective_interval_s)
    return _save(fig, path)


def plot_sweep(sweep: Sweep, path: str | Path) -> Path:
    """Write the interval sweep alone to ``path``."""
    fig, axes = _figure(sweep=True, budget=False)
    _sweep(axes["sweep"], sweep)
    return _save(fig, path)


def _save(fig: Any, path: str | Path) -> Path:
    path = Path(path)
    buf = io.BytesIO()  # matplotlib's savefig(path) passed over a failed write (/dev/full)
    fig.savefig(buf, dpi=120, format=path.suffix[1:].lower() or "png")
    try:
        write_output(path, buf.getvalue())
    except OSError as exc:
        raise TrainsimError(f"cannot write plot {path}: {exc.strerror or exc}") from None
    return path
