"""Terminal tables, JSON and CSV of search, plan and sweep results."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from trainsim.report.numbers import amount, seconds
from trainsim.search.core import SearchResult
from trainsim.search.evaluation import Evaluation

GiB = 2**30


_t = seconds


def _label(e: Evaluation, r: SearchResult) -> str:
    """A candidate's label, with the layout its layers run by (fixed with --set, or the uneven
    rule the search placed them by: ``Candidate.run_layout``), which ``simulate`` needs."""
    rule = e.candidate.run_layout(r.base)
    return e.candidate.label(r.base.zero1_as_stage) + (f" layout={rule}" if rule else "")


def render_search(r: SearchResult, pareto: bool = True) -> Group:
    b = r.base
    counts = ", ".join(str(n) for n in r.gpu_counts)
    what = {"split": "GPU splits (tp, pp, cp, dp), each with its fastest settings",
            "layout": "layouts (split, vpp, micro batch), each with its fastest settings",
            "config": "configurations"}[r.rank_by]
    # names and values a user wrote are escaped: rich reads "[...]" as markup ("[/]" raised)
    top = Table(title=f"top {len(r.top)} {what}: {escape(b.model.name)} on {counts} x "
                f"{escape(b.cluster.gpu.name)}, "
                f"batch {b.training.global_batch_size} x {b.training.seq_length}, "
                f"{b.training.dtype}"
                + (", fixed: " + escape(", ".join(f"{k}={v}" for k, v in b.fixed))
                   if b.fixed else ""),
                title_justify="left")
    many = len(r.gpu_counts) > 1
    top.add_column("#", justify="right")
    if many:
        top.add_column("GPUs", justify="right")
    for col, just in (("configuration", "left"), ("iteration", "right"),
                      ("tokens/s/GPU", "right"), ("MFU", "right"), ("mem GiB", "right"),
                      ("vs best", "right")):
        top.add_column(col, justify=just)  # type: ignore[arg-type]
    best = r.best
    for row in r.top:
        e = row.evaluation
        vs = "" if best is None or row.rank == 1 else \
            f"+{amount(100 * (e.iteration_time_s / best.iteration_time_s - 1), 1)}%"
        top.add_row(str(row.rank), *([str(e.num_gpus)] if many else []), escape(_label(e, r)),
                    _t(e.iteration_time_s),
                    amount(e.tokens_per_s / e.num_gpus, tiny=True), f"{100 * e.mfu:.1f}%",
                    amount(e.peak_memory_bytes / GiB, 1), vs)
    parts: list[Any] = [top]
    why = [f"  #{row.rank}: " + "; ".join(row.reasons) for row in r.top[1:]]
    if why:
        parts.append(Text("why each is slower than #1:\n" + "\n".join(why)))
    if r.reference is not None:
        ref = r.reference
        e = ref.evaluation
        rank = f"{ref.rank}" if ref.exact else f"> {ref.rank - 1} (at least {ref.rank})"
        t = Table(title="reference configuration", show_header=False, title_justify="left")
        t.add_column("k", style="bold")
        t.add_column("v")
        t.add_row("configuration", escape(_label(e, r)) + ("" if e.fits else "  [red](does not fit)[/]"))
        t.add_row("iteration", f"{_t(e.iteration_time_s)}, MFU {100 * e.mfu:.1f}%")
        t.add_row("rank as given", rank)
        if ref.group_rank is not None:
            t.add_row(f"rank of its {r.rank_by}", f"{ref.group_rank} (with its fastest settings)")
        if ref.reasons:
            t.add_row("why slower than #1", "; ".join(ref.reasons))
        parts.append(t)
    if pareto and r.pareto:
        p = Table(title="Pareto front (tokens/s up, memory headroom up, GPUs down)",
                  title_justify="left")
        for col in ("configuration", "GPUs", "iteration", "tokens/s", "headroom GiB"):
            p.add_column(col, justify="left" if col == "configuration" else "right")
        for e in r.pareto:
            p.add_row(escape(_label(e, r)), str(e.num_gpus), _t(e.iteration_time_s), amount(e.tokens_per_s, tiny=True),
                      amount(e.memory_headroom_bytes / GiB, 1))
        parts.append(p)
    parts.append(stats_line(r))
    return Group(*parts)


def stats_line(r: SearchResult) -> str:
    s = r.stats
    return (f"{s.enumerated:,} candidates enumerated: {s.memory_pruned:,} pruned by memory, "
            f"{s.bound_pruned:,} by the time bound, {s.simulated:,} simulated"
            f"{f' ({s.cache_hits:,} cached)' if s.cache_hits else ''} in {s.elapsed_s:.1f} s "
            f"({s.candidates_per_s:,.0f} candidates/s, {s.simulated_per_s:,.1f} simulations/s, "
            f"{s.executor} x {s.workers})")


def search_json(r: SearchResult, warnings: Sequence[str] = ()) -> str:
    """``r`` as JSON with the ``warnings`` said while its inputs were read
    (``cli_inputs.said_warnings``): what a search's user reads of them where stderr is not
    theirs (a service job)."""
    return json.dumps({**r.to_dict(), "warnings": list(warnings)}, indent=2, sort_keys=True)


def sweep_json(rows: list[dict[str, Any]], varied: Sequence[str],
               warnings: Sequence[str] = ()) -> str:
    """A sweep's rows as JSON, with the fields ``varied`` and the ``warnings`` its ``--vary``
    lists gave (``Vary.note``: repeated values dropped): what the CLI says on stderr, where a
    service job's user does not read it. ``--format json``, a sweep job's result and the
    ``--out`` file ``sweep.json`` (``whatif.write_sweep``) are this object."""
    return json.dumps({"varied": list(varied), "rows": rows, "warnings": list(warnings)},
                      indent=2)


CSV_COLUMNS = ("rank", "num_gpus", "tp", "pp", "cp", "dp", "vpp", "micro_batch_size", "recompute",
               "sequence_parallel", "optimizer_sharding", "overlap_grad_reduce",
               "overlap_param_gather", "tp_comm_overlap", "overlap_p2p_comm", "ep", "etp",
               "moe_token_dispatcher_type", "pipeline_schedule", "moe_overlap_ep_comm",
               "pipeline_model_parallel_layout", "iteration_time_s",
               "tokens_per_s", "mfu", "peak_memory_bytes", "memory_headroom_bytes",
               "compute_s", "pipeline_bubble_s", "exposed_tp_s", "exposed_cp_s", "exposed_pp_s",
               "exposed_dp_s", "optimizer_s", "why_slower")


def _csv_row(rank: int | str, e: Evaluation, why: Sequence[str], r: SearchResult
             ) -> dict[str, Any]:
    b, x = e.breakdown, e.exposed_comm
    return {"rank": rank, **e.candidate.to_dict(r.base.zero1_as_stage),
            "pipeline_model_parallel_layout": e.candidate.run_layout(r.base) or "",
            "iteration_time_s": e.iteration_time_s,
            "tokens_per_s": e.tokens_per_s, "mfu": e.mfu, "peak_memory_bytes": e.peak_memory_bytes,
            "memory_headroom_bytes": e.memory_headroom_bytes,
            "compute_s": b.get("compute_s", 0.0), "pipeline_bubble_s": b.get("pipeline_bubble_s", 0.0),
            "exposed_tp_s": x.get("tp", 0.0), "exposed_cp_s": x.get("cp", 0.0),
            "exposed_pp_s": x.get("pp", 0.0), "exposed_dp_s": x.get("dp", 0.0),
            "optimizer_s": b.get("optimizer_s", 0.0), "why_slower": "; ".join(why)}


def search_csv(r: SearchResult) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for row in r.top:
        w.writerow(_csv_row(row.rank, row.evaluation, row.reasons, r))
    if r.reference is not None:
        w.writerow(_csv_row("reference", r.reference.evaluation, r.reference.reasons, r))
    return buf.getvalue()


def rows_csv(rows: Sequence[dict[str, Any]]) -> str:
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return buf.getvalue()


def rows_table(rows: Sequence[dict[str, Any]], title: str) -> Table:
    t = Table(title=title, title_justify="left")
    if not rows:
        return t
    for col, v in rows[0].items():
        t.add_column(col, justify="left" if isinstance(v, str) else "right")
    for r in rows:
        t.add_row(*(f"{v:.4g}" if isinstance(v, float) else escape(str(v)) for v in r.values()))
    return t


def render_sweep(rows: Sequence[dict[str, Any]], varied: Sequence[str], title: str) -> Table:
    """The sweep as a compact table: varied values, iteration time, MFU, memory."""
    t = Table(title=title, title_justify="left")
    for v in varied:
        name = v.split(".")[-1]
        t.add_column(name, justify="right", min_width=len(name))
    for col in ("iteration", "MFU", "tokens/s", "peak GiB"):
        t.add_column(col, justify="right", min_width=len(col))
    t.add_column("note", max_width=32)
    for r in rows:
        vals = [escape(str(r[v])) for v in varied]
        if r.get("iteration_time_s") is None:
            why = escape(str(r.get("error")).split(";")[0])
            t.add_row(*vals, "-", "-", "-", "-", f"[red]{why}[/]")
            continue
        note = "" if r.get("fits_in_memory") else "[red]does not fit[/]"
        t.add_row(*vals, _t(r["iteration_time_s"]), f"{100 * r['mfu']:.1f}%",
                  amount(r["tokens_per_s"], tiny=True), amount(r["peak_memory_gib"], 1), note)
    return t


__all__ = ["render_search", "render_sweep", "rows_csv", "rows_table", "search_csv", "search_json", "stats_line",
           "sweep_json"]
