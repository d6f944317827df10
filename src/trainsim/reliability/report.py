"""Terminal tables of a goodput result (rich renderables; printing is the CLI's job)."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from trainsim.reliability.goodput import GoodputResult
from trainsim.report.numbers import amount

DAY_S = 86400.0


def _dur(s: float | None) -> str:
    if s is None or math.isinf(s):
        return "-"
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    if s < 3 * DAY_S:
        return f"{s / 3600:.2f} h"
    if s < 1e6 * DAY_S:
        return f"{s / DAY_S:.2f} d"
    return f"{s / DAY_S:.3g} d"  # not 300 digits (an upload at 1e-300 B/s)


def render_goodput(result: GoodputResult) -> Any:
    s, ck, p = result.summary, result.checkpoint, result.plan
    cfg = result.config
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("run", f"{escape(cfg.model.name)} on {cfg.cluster.num_gpus:,} GPUs "
                        f"({cfg.cluster.num_nodes:,} nodes)")
    if result.tokens is not None and result.ideal_s is not None:
        head.add_row("work", f"{result.tokens:.4g} tokens = {amount(result.ideal_s / DAY_S, 2)} days "
                             f"failure-free ({result.iteration_time_s:.3g} s per iteration)")
    if result.horizon_s is not None:
        head.add_row("window", f"{result.horizon_s / DAY_S:g} days of wall clock")
    head.add_row("failures", f"{result.reliability.failures}: "
                             f"{amount(sum(p.mode_rates) * DAY_S, 2)} interruptions/day, "
                             f"MTBF (unplanned) {_dur(p.mtbf_s)}")
    head.add_row("checkpoint", f"{amount(ck.size_bytes / 1e12, 2)} TB ({amount(ck.per_gpu_bytes / 1e9, 2)} GB "
                               f"per GPU), {ck.mode}: stall {_dur(ck.stall_s)}, upload "
                               f"{_dur(ck.upload_s)}, restore {_dur(ck.restore_s)}")
    head.add_row("interval", f"{_dur(p.effective_interval_s)} used; Young {_dur(result.young_s)},"
                             f" Daly {_dur(result.daly_s)}")
    if p.straggler_factor > 1:
        head.add_row("stragglers", f"steps {p.straggler_factor - 1:.1%} slower")

    budget = Table(title="Time budget (mean over trials)", title_justify="left")
    budget.add_column("where the time goes")
    budget.add_column("days", justify="right")
    budget.add_column("share", justify="right")
    total = sum(s.lost_s.values())
    for name, sec in s.lost_s.items():
        budget.add_row(name.replace("_", " "), amount(sec / DAY_S, 3), f"{sec / total:.1%}")
    budget.add_row("[bold]total[/]", f"[bold]{amount(total / DAY_S, 3)}[/]", "100.0%")

    causes = Table(title="By failure cause (mean per run)", title_justify="left")
    causes.add_column("cause")
    causes.add_column("category")
    causes.add_column("interruptions", justify="right")
    causes.add_column("time lost", justify="right")
    for name, d in sorted(s.by_mode.items(), key=lambda kv: -kv[1]["lost_s"]):
        causes.add_row(escape(name), escape(str(d["category"])), amount(d["interruptions"], 1),
                       _dur(d["lost_s"]))

    parts: list[Any] = [head, budget, causes]
    if result.sweep is not None:
        sw = result.sweep
        sweep = Table(title=f"Checkpoint interval sweep ({sw.trials} trials each)",
                      title_justify="left")
        for col in ("interval", "mean days", "P90 days", "goodput"):
            sweep.add_column(col, justify="right")
        for x, m, q, g in zip(sw.intervals_s, sw.mean_wall_s, sw.p90_wall_s, sw.mean_goodput):
            sweep.add_row(_dur(x), amount(m / DAY_S, 3), amount(q / DAY_S, 3), f"{g:.2%}")
        parts += [sweep, Text(f"simulated optimum {_dur(sw.optimum_s)}; Young "
                              f"{_dur(sw.young_s)}; Daly {_dur(sw.daly_s)}")]
    parts.append(Text.from_markup(
        f"[bold]expected {amount(s.mean_days, 2)} days, P90 {amount(s.p90_days, 2)} days; effective "
        f"training time {s.ettr:.1%}, goodput {s.goodput:.1%}; {amount(s.interruptions, 1)} "
        f"interruptions ({amount(s.unexpected, 1)} unplanned, {amount(s.planned, 1)} planned); {s.trials} trials, "
        f"seed {s.seed}[/]"))
    return Group(*parts)
