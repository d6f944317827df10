"""PNG plots of a goodput result: the time budget of the run and the checkpoint-interval sweep.

matplotlib is imported here, lazily, and drawn with the Agg canvas (no display needed).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainsim.errors import TrainsimError

if TYPE_CHECKING:
    from trainsim.reliability.goodput import GoodputResult
    from trainsim.reliability.montecarlo import Sweep

DAY_S = 86400.0
_COLORS = {"training": "#4c9a2a", "straggler": "#a3c586", "checkpoint": "#f2c14e",
           "lost_work": "#d1495b", "detection": "#8e7dbe", "diagnosis": "#5f4b8b",
           "replacement": "#2e86ab", "restart": "#f18f01", "init": "#c73e1d",
           "restore": "#6c757d"}


def _figure(ncols: int) -> tuple[Any, list[Any]]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - depends on the environment
        raise TrainsimError("plotting needs matplotlib: pip install matplotlib") from None
    fig = Figure(figsize=(6.5 * ncols, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def _budget(ax: Any, result: GoodputResult) -> None:
    s = result.summary
    items = [(k, v / DAY_S) for k, v in s.lost_s.items() if v > 0]
    left = 0.0
    for name, days in items:
        ax.barh([0], [days], left=left, color=_COLORS.get(name, "#999999"),
                label=f"{name.replace('_', ' ')}: {days:.2f} d")
        left += days
    lost = [(n, d) for n, d in items if n != "training"]
    if lost:
        ax.barh([-1 - i for i in range(len(lost))], [d for _, d in lost],
                color=[_COLORS.get(n, "#999999") for n, _ in lost])
        ax.set_yticks([0] + [-1 - i for i in range(len(lost))],
                      ["whole run"] + [n.replace("_", " ") for n, _ in lost])
    else:
        ax.set_yticks([0], ["whole run"])
    ax.set_xlabel("days (mean over trials)")
    what = (f"{result.tokens:.3g} tokens" if result.tokens else
            f"{(result.horizon_s or 0) / DAY_S:g}-day window")
    ax.set_title(f"Time budget: {what} on {result.config.cluster.num_gpus:,} GPUs\n"
                 f"ETTR {s.ettr:.1%}, goodput {s.goodput:.1%}, expected {s.mean_days:.1f} d, "
                 f"P90 {s.p90_days:.1f} d, {s.interruptions:.0f} interruptions", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
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
    ax.set_xscale("log")
    ax.set_xlabel("checkpoint interval (minutes of training)")
    ax.set_ylabel("wall-clock days (mean)")
    ax.set_title("Checkpoint interval sweep", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")


def plot_goodput(result: GoodputResult, path: str | Path) -> Path:
    """Write the time budget (and the interval sweep, when the result has one) to ``path``."""
    fig, axes = _figure(2 if result.sweep is not None else 1)
    _budget(axes[0], result)
    if result.sweep is not None:
        _sweep(axes[1], result.sweep, result.plan.effective_interval_s)
    return _save(fig, path)


def plot_sweep(sweep: Sweep, path: str | Path) -> Path:
    """Write the interval sweep alone to ``path``."""
    fig, axes = _figure(1)
    _sweep(axes[0], sweep)
    return _save(fig, path)


def _save(fig: Any, path: str | Path) -> Path:
    path = Path(path)
    try:
        fig.savefig(path, dpi=120)
    except OSError as exc:
        raise TrainsimError(f"cannot write plot {path}: {exc.strerror or exc}") from None
    return path
