"""Rich terminal tables for a simulation result and a validation run."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Span, Text

from trainsim.report.numbers import amount, seconds
from trainsim.result import Result

GiB = 2**30
_fmt_s = seconds  # the name plots.py imports


def render_result(r: Result) -> Group:
    c = r.config
    p = c.parallel
    # names a user wrote are escaped: rich reads "[...]" in a cell as markup ("[/]" raised)
    head = Table(title=f"trainsim: {escape(c.model.name)} on {c.cluster.num_gpus} x "
                 f"{escape(c.cluster.gpu.name)}",
                 show_header=False, title_justify="left")
    head.add_column("metric", style="bold")
    head.add_column("value", justify="right")
    head.add_row("parallelism", f"TP {p.tp}  PP {p.pp}  CP {p.cp}  DP {c.dp}  VPP {p.vpp}  "
                 f"SP {'on' if p.sequence_parallel else 'off'}  recompute {p.recompute}")
    if p.pp > 1:
        layers = c.stage_layer_counts
        split = (f"{layers[0]} per stage" if len(set(layers)) == 1
                 else " / ".join(str(n) for n in layers) + " (uneven)")
        head.add_row("layers per pipeline stage", split)
    head.add_row("batch", f"global {c.training.global_batch_size} x {c.training.seq_length} tokens, "
                 f"micro {c.training.micro_batch_size}, {c.num_microbatches} micro-batches/pipeline")
    head.add_row("iteration time", _fmt_s(r.iteration_time_s))
    head.add_row("tokens/s", amount(r.tokens_per_s, tiny=True))
    head.add_row("tokens/s/GPU", amount(r.tokens_per_s_per_gpu, 1, tiny=True))
    head.add_row("model TFLOP/s per GPU", amount(r.model_tflops_per_gpu, 1, tiny=True))
    head.add_row("MFU / HFU", f"{100 * r.mfu:.1f}% / {100 * r.hfu:.1f}%"
                 + (f" of the {r.config.training.dtype} peak ({100 * r.mfu_16bit:.1f}% / "
                    f"{100 * r.hfu_16bit:.1f}% of the 16-bit peak)"
                    if r.peak_flops != r.peak_flops_16bit else ""))
    run = r.run_estimate()
    if run:
        head.add_row("whole run", f"{amount(run['days'], 1)} days, {amount(run['gpu_hours'])} "
                     f"GPU-hours, ${amount(run['cost_usd'])}, {amount(run['energy_mwh'], 1)} MWh")

    time = Table(title="time of one iteration (critical stage "
                 f"{r.critical_stage})", title_justify="left")
    time.add_column("part")
    time.add_column("seconds", justify="right")
    time.add_column("share", justify="right")
    rows = [("compute", r.breakdown["compute_s"])]
    rows += [(f"exposed {k.upper()} communication", v) for k, v in r.exposed_comm.items() if v > 0]
    rows += [("pipeline bubble", r.breakdown["pipeline_bubble_s"]),
             ("optimizer step", r.breakdown["optimizer_s"])]
    if r.breakdown.get("data_loading_s", 0) > 1e-9:
        rows.append(("data loading", r.breakdown["data_loading_s"]))
    if r.breakdown.get("other_s", 0) > 1e-9:
        rows.append(("other", r.breakdown["other_s"]))
    for name, v in rows:
        time.add_row(name, amount(v, 4), f"{100 * v / r.iteration_time_s:.1f}%")

    m = r.memory[r.peak_memory_stage]
    mem = Table(title=f"peak memory per GPU (stage {r.peak_memory_stage})", title_justify="left")
    mem.add_column("part")
    mem.add_column("GiB", justify="right")
    for name, v in (("weights", m.weights), ("gradients", m.gradients), ("optimizer state", m.optimizer),
                    ("activations", m.activations), ("buffers", m.buffers)):
        mem.add_row(name, amount(v / GiB, 2))
    for name, v in m.temporaries[:3]:
        mem.add_row(f"  [dim]{name}[/]", f"[dim]{amount(v / GiB, 2)}[/]")
    mem.add_row("allocated (torch max_memory_allocated)", amount(m.allocated / GiB, 2))
    mem.add_row("reserved (caching allocator)", amount(m.reserved / GiB, 2))
    mem.add_row("device (nvidia-smi: reserved + CUDA context)", amount(m.device / GiB, 2))
    hbm = c.cluster.gpu.hbm_bytes / GiB
    verdict = "[green]fits[/]" if r.fits_in_memory else "[bold red]DOES NOT FIT[/]"
    mem.add_row("[bold]needed (allocated + context)[/]",
                f"[bold]{amount(m.total / GiB, 2)}[/] of {hbm:.0f} {verdict}")
    if m.peak_at:
        mem.caption = f"peak during the {m.peak_at}"
        mem.caption_justify = "left"
    return Group(head, time, mem)


def _cell(s: str, style: str = "") -> Text:
    """The ``Text`` rich would parse from the markup ``f"[{style}]{escape(s)}[/]"`` (``escape(s)``
    without a style), built without parsing where the parse is the identity: no ``[`` (markup),
    no ``:`` (an emoji code such as ``:warning:``) and no backslash (``escape`` doubles a
    trailing one). A validation table is ~750 cells, and rich parsed each string cell up to 3
    times, serially after the last row (rich 15.0.0: measured, measure.py:99; measured again
    when the table is wider than the console, table.py:570; rendered, console.py:1321; the
    parse and its shortcut, markup.py:106-130)."""
    if "[" not in s and ":" not in s and "\\" not in s:
        return Text(s, spans=[Span(0, len(s), style)] if style else None)
    return Text.from_markup(f"[{style}]{escape(s)}[/]" if style else escape(s))


def render_validation(kind: str, rows: list[Any], unit: str,
                      summary: dict[str, Any] | None = None) -> Table | Group:
    """The rows, then (given the summary) the error of each source and, for kernels, of each
    kind/implementation/dtype. Cells are ``Text`` (``_cell``), the output as of markup strings."""
    t = Table(title=f"validation ({kind})", title_justify="left")
    t.add_column("id")
    t.add_column(f"measured {unit}", justify="right")
    t.add_column(f"predicted {unit}", justify="right")
    t.add_column("error", justify="right")
    t.add_column("chosen / note")
    for r in rows:
        u = f" {r.extra['unit']}" if "unit" in r.extra else ""
        if r.predicted is None:
            shown = f"{r.measured:g}{u}" if r.measured else "refused"  # the error says why
            t.add_row(_cell(r.id), _cell(shown), _cell("-"), _cell("failed"),
                      _cell(r.error, "red"))
            continue
        err = (r.predicted - r.measured) / r.measured
        color = "green" if abs(err) <= 0.05 else ("yellow" if abs(err) <= 0.1 else "red")
        assumed = r.extra.get("assumed") or {}  # empty cells taken as a default, not tuned
        read = r.extra.get("read_as") or {}  # cells written otherwise, as they were read
        note = _cell(", ".join([f"{k}={v}" for k, v in r.chosen.items()]
                               + list(r.extra.get("notes") or ())  # replaced settings
                               + ([f"assumed {', '.join(f'{k}={v}' for k, v in assumed.items())}"]
                                  if assumed else [])
                               + ([f"read {'; '.join(f'{k}: {v}' for k, v in read.items())}"]
                                  if read else [])))
        if r.fits_in_memory is False:
            note = Text.assemble(_cell("does not fit in memory", "red"), " ", note)
        t.add_row(_cell(r.id), _cell(f"{r.measured:.4g}{u}"), _cell(f"{r.predicted:.4g}{u}"),
                  _cell(f"{100 * err:+.1f}%", color), note)
    groups = [(title, (summary or {}).get(key)) for key, title in
              (("by_source", "error by source"), ("by_kind", "error by kind/implementation/dtype"))]
    tables = [_error_table(title, g) for title, g in groups if g]
    return Group(t, *tables) if tables else t


def _error_table(title: str, groups: dict[str, dict[str, Any]]) -> Table:
    t = Table(title=title, title_justify="left")
    t.add_column("group")
    t.add_column("rows", justify="right")
    t.add_column("MAPE", justify="right")
    t.add_column("mean signed error", justify="right")
    for name, g in groups.items():
        t.add_row(_cell(name), _cell(str(g["n"])), _cell(f"{100 * g['mape']:.1f}%"),
                  _cell(f"{100 * g['mean_signed_error']:+.1f}%"))
    return t
