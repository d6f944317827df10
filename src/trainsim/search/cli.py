"""Click commands `search`, `plan` and `sweep` (registered on trainsim's main group).

    trainsim search llama3-70b --gpus 64 --gpu h100-sxm-80gb --global-batch 128 --seq 8192
    trainsim plan llama3-70b --tokens 15T --days 60 --gpu h100-sxm-80gb
    trainsim sweep examples/llama3-70b-h100-64.yaml --vary cluster.nvlink_gbyte_s=300:1800 --out out/
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from trainsim.cli_guard import (
    OUT_DIRECTORY,
    PLOT_FILE,
    POSITIVE,
    POSITIVE_INT,
    FiniteFloat,
    fail,
    renamed_option,
    stdout_console,
)
from trainsim.config.cluster import MAX_PRICE_PER_HOUR, MAX_PUE
from trainsim.errors import ConfigError, TrainsimError
from trainsim.search.cli_inputs import (  # noqa: F401 - re-exported: tests, benchmarks
    build_base,
    check_plan_sets,
    model_spec,
    node_size,
    nothing_found,
    parse_ints,
    parse_reference,
    said_warnings,
    search_space,
)

out = stdout_console()
err = Console(stderr=True, emoji=False)  # a name's ':warning:' printed as written
MAX_GRID_G_PER_KWH = 10_000.0
"""Largest grid carbon intensity plan takes (g CO2e/kWh; coal plants emit about 1,000)."""
MAX_NODE_OVERHEAD = 10.0
"""Largest non-GPU node power per GPU plan takes, as a fraction of the GPU's TDP (CPUs, NICs
and fans of a DGX draw well under one)."""


def _fail(exc: Exception) -> None:
    fail(exc)


@contextmanager
def _progress(label: str) -> Iterator[Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True,
                  disable=not err.is_terminal) as bar:
        tasks: dict[str, Any] = {}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(f"{label}: {phase}", total=total)
            bar.update(tasks[phase], completed=done, total=total)

        yield update


def _common(f):
    for deco in reversed((
        click.argument("model"),
        click.option("--gpu", default="h100-sxm-80gb", show_default=True,
                     help="GPU catalog name, or a YAML file with a GPU spec."),
        click.option("--gpus-per-node", type=POSITIVE_INT, default=None,
                     help="GPUs per node  [default: 8, or 72 under --set "
                          "cluster.topology=nvl72]"),
        renamed_option("--nic-gbit-s", "--nic-gbps", "nic_gbps", 400.0, type=POSITIVE,
                       help="Inter-node Gbit/s per GPU."),
        click.option("--dtype", type=click.Choice(["bf16", "fp16", "fp8"], case_sensitive=False), default="bf16",
                     show_default=True),
        click.option("--set", "overrides", multiple=True, metavar="SECTION.FIELD=VALUE",
                     help="Override a fixed field, e.g. cluster.gpu_overrides.hbm_gbyte_s=4000."),
        click.option("--executor", type=click.Choice(["local", "ray"], case_sensitive=False), default="local",
                     show_default=True, help="Local worker processes, or Ray tasks."),
        click.option("--workers", type=POSITIVE_INT, default=None,
                     help="Worker processes (local) or CPUs of a local Ray instance; default: all."),
        click.option("--ray-address", default=None, help="Join this Ray cluster (ray.init)."),
        click.option("--tp", "tp_", default=None, help="TP sizes to try, e.g. 4,8."),
        click.option("--pp", "pp_", default=None, help="PP sizes to try."),
        click.option("--cp", "cp_", default=None, help="CP sizes to try."),
        click.option("--max-vpp", type=POSITIVE_INT, default=None,
                     help="Most model chunks per pipeline rank (interleaved 1F1B) "
                          "(default: every count that splits a stage's layers where the "
                          "framework overlaps pipeline sends only when interleaved, Megatron; "
                          "else 8)."),
        click.option("--max-micro-batch", type=POSITIVE_INT, default=8, show_default=True),
        click.option("--recompute", default="none,selective,full", show_default=True),
        click.option("--zero", default=None,
                     help="Optimizer sharding: 0 none, 1 distributed optimizer, 2/3 ZeRO "
                          "(default: those the engine runs at the framework's release: "
                          "Megatron 0,1,3, DeepSpeed 0-3, FSDP 2,3, DDP 0; MoE: 1 where it "
                          "has it)."),
        click.option("--overlap", type=click.Choice(["search", "on", "off"], case_sensitive=False), default="search",
                     show_default=True, help="Try overlap switches on and off, or fix them."),
        click.option("--ep", "ep_", default=None,
                     help="Expert-parallel sizes to try (MoE), e.g. 8,16,64."),
        click.option("--etp", "etp_", default=None, help="Expert tensor-parallel sizes (MoE)."),
        click.option("--dispatcher", default=None,
                     help="Token dispatchers to try (MoE): alltoall,allgather,deepep,hybridep "
                          "(default: alltoall, deepep when EP leaves the node, hybridep where "
                          "the framework has it, on sm_90+)."),
        click.option("--schedules", default=None,
                     help="Pipeline schedules to try, e.g. 1f1b,zb_v,dualpipe "
                          "(default: 1F1B; MoE also dualpipe)."),
    )):
        f = deco(f)
    return f


@click.command("search")
@_common
@click.option("--gpus", required=True, help="GPU count, or several to compare: 512,1024.")
@click.option("--global-batch", type=POSITIVE_INT, required=True, help="Sequences per optimizer step.")
@click.option("--seq", type=POSITIVE_INT, required=True, help="Tokens per sequence.")
@click.option("--top", "top_k", type=POSITIVE_INT, default=10, show_default=True)
@click.option("--rank-by", type=click.Choice(["split", "layout", "config"], case_sensitive=False), default="split",
              show_default=True, help="Rank distinct GPU splits, layouts, or every configuration.")
@click.option("--reference", default=None, metavar="tp=8,pp=8,...",
              help="Also rank this configuration (e.g. a published one).")
@click.option("--exhaustive", is_flag=True, help="Simulate every candidate that fits (slow).")
@click.option("--pareto-slowdown", type=FiniteFloat(min=1), default=1.25, show_default=True,
              help="The Pareto front keeps configurations up to this much slower than the best.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"], case_sensitive=False), default="table")
@click.option("--plot", "plot_path", type=PLOT_FILE, default=None,
              help="Write a scatter plot of the simulated configurations (.png, .svg or .pdf "
                   "by the suffix).")
def search_cmd(model, gpu, gpus_per_node, nic_gbps, dtype, overrides, executor, workers,
               ray_address, tp_, pp_, cp_, max_vpp, max_micro_batch, recompute, zero, overlap,
               ep_, etp_, dispatcher, schedules, gpus, global_batch, seq, top_k, rank_by, reference, exhaustive, pareto_slowdown, fmt,
               plot_path):
    """Find the fastest parallel configurations of MODEL on --gpus GPUs."""
    from trainsim.search.core import search
    from trainsim.search.executors import make_executor
    from trainsim.search.render import render_search, search_csv, search_json

    ex = None
    try:
        counts = parse_ints(gpus, "gpus") or ()
        gpus_per_node = node_size(gpus_per_node, overrides)
        with said_warnings() as said:
            base = build_base(model, gpu, counts[0], global_batch, seq, gpus_per_node, nic_gbps,
                              dtype, overrides)
            space = search_space(tp_, pp_, cp_, max_vpp, max_micro_batch, recompute, zero,
                                 overlap, ep_, etp_, dispatcher, schedules, base)
            ref = parse_reference(reference, base, counts[0]) if reference else None
        ex = make_executor(executor, workers, ray_address)
        with _progress("search") as update:
            result = search(base, counts, space, top_k=top_k, executor=ex, rank_by=rank_by,
                            exhaustive=exhaustive, reference=ref, progress=update,
                            pareto_slowdown=pareto_slowdown)
        if not result.top:
            raise nothing_found(result)
        if plot_path:
            from trainsim.report.plots import plot_search

            plot_search(result.evaluated, plot_path, result.pareto, result.best)
    except TrainsimError as exc:
        _fail(exc)
        return
    finally:
        if ex is not None:
            ex.close()
    if fmt == "json":
        click.echo(search_json(result, said))
    elif fmt == "csv":
        click.echo(search_csv(result), nl=False)
    else:
        out.print(render_search(result))
        if plot_path:
            out.print(f"scatter written to {escape(plot_path)}")


@click.command("plan")
@_common
@click.option("--tokens", required=True, help="Training tokens, e.g. 15T.")
@click.option("--days", type=POSITIVE, required=True, help="Wall-clock deadline in days.")
@click.option("--global-batch", type=POSITIVE_INT, default=None,
              help="Sequences per step; default: about 4M tokens (a power of two).")
@click.option("--seq", type=POSITIVE_INT, default=8192, show_default=True)
@click.option("--max-gpus", type=POSITIVE_INT, default=65536, show_default=True)
@click.option("--price", type=FiniteFloat(min=0, max=MAX_PRICE_PER_HOUR), default=None,
              help="USD per GPU-hour (default: catalog).")
@click.option("--pue", type=FiniteFloat(min=1, max=MAX_PUE), default=None, help="Datacenter PUE (default: cluster.pue, 1.2).")
@click.option("--grid", "grid_g", type=FiniteFloat(min=0, max=MAX_GRID_G_PER_KWH), default=400.0,
              show_default=True,
              help="Grid carbon intensity, g CO2e per kWh.")
@click.option("--gpu-idle-fraction", type=FiniteFloat(min=0, max=1), default=0.15, show_default=True)
@click.option("--node-overhead", type=FiniteFloat(min=0, max=MAX_NODE_OVERHEAD), default=0.5,
              show_default=True,
              help="Non-GPU node power per GPU, as a fraction of the GPU's TDP.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"], case_sensitive=False), default="table")
def plan_cmd(model, gpu, gpus_per_node, nic_gbps, dtype, overrides, executor, workers, ray_address,
             tp_, pp_, cp_, max_vpp, max_micro_batch, recompute, zero, overlap, ep_, etp_,
             dispatcher, schedules, tokens, days,
             global_batch, seq, max_gpus, price, pue, grid_g, gpu_idle_fraction, node_overhead, fmt):
    """How many GPUs to train MODEL on --tokens within --days, the best configuration, cost,
    energy and CO2."""
    from trainsim.config.number_text import token_count
    from trainsim.report.numbers import amount
    from trainsim.search.capacity import EnergyModel, plan
    from trainsim.search.executors import make_executor
    from trainsim.search.render import rows_table

    ex = None
    try:
        n_tokens = token_count(tokens, "--tokens")  # goodput's rule and words (robust58)
        check_plan_sets(overrides, pue, price)
        gpus_per_node = node_size(gpus_per_node, overrides)
        gb = global_batch or max(1, 2 ** round(__import__("math").log2(4 * 2**20 / seq)))
        with said_warnings() as said:
            base = build_base(model, gpu, gpus_per_node, gb, seq, gpus_per_node, nic_gbps, dtype,
                              overrides)
            energy = EnergyModel(gpu_idle_fraction, node_overhead, pue, grid_g)
            space = search_space(tp_, pp_, cp_, max_vpp, max_micro_batch, recompute, zero,
                                 overlap, ep_, etp_, dispatcher, schedules, base)
        ex = make_executor(executor, workers, ray_address)
        with _progress("plan") as update:
            result = plan(base, n_tokens, days, space=space, executor=ex, max_gpus=max_gpus,
                          energy=energy, price_per_gpu_hour=price, progress=update)
    except TrainsimError as exc:
        _fail(exc)
        return
    finally:
        if ex is not None:
            ex.close()
    if fmt == "json":
        click.echo(json.dumps({**result.to_dict(), "warnings": said}, indent=2, sort_keys=True))
        if result.best is None:
            no_plan(result, max_gpus)
        return
    steps = [{"GPUs": s.num_gpus, "best configuration": s.best.label if s.best else "no valid configuration fits",
              "days": s.days if s.days is not None else "-",
              "meets deadline": "yes" if s.meets_deadline else "no", "simulated": s.simulated}
             for s in result.steps]
    out.print(rows_table(steps, f"GPU counts tried for {n_tokens:.3g} tokens in {days:g} days "
                                f"({_amount(result.required_tokens_per_s)} tokens/s needed)"))
    if result.best is None or result.cost is None:
        no_plan(result, max_gpus)
    e, c = result.best, result.cost
    nodes = -(-e.num_gpus // gpus_per_node)  # a part-filled node is still a node to rent
    rows = [("GPUs needed", (f"{e.num_gpus:,} ({nodes:,} node{'s' if nodes != 1 else ''} of "
                             f"{gpus_per_node})")),
            ("best configuration", e.label),
            ("iteration", (f"{amount(e.iteration_time_s, 3)} s, MFU {100 * e.mfu:.1f}%, "
                           f"{amount(e.tokens_per_s, tiny=True)} tokens/s")),
            ("wall-clock", f"{_amount(c.days, 1)} days"), ("GPU-hours", _amount(c.gpu_hours)),
            ("cost", f"${amount(c.cost_usd)} at ${c.price_per_gpu_hour:.2f}/GPU-hour"),
            ("power", (f"{c.gpu_power_w:.0f} W per GPU (utilisation {100 * c.utilization:.0f}%), "
                       f"{amount(c.facility_power_w / 1e6, 2)} MW facility at PUE {c.pue:g}")),
            ("energy", f"{_amount(c.energy_mwh)} MWh"),
            ("CO2", f"{_amount(c.co2_tonnes)} t CO2e at {c.grid_gco2_per_kwh:g} g/kWh")]
    out.print(rows_table([{"": k, "plan": v} for k, v in rows], f"plan: {escape(base.model.name)}"
                         f" on {escape(base.cluster.gpu.name)}, batch {gb} x {seq}"))


NO_PLAN_EXIT = 1
"""plan's exit status when it answered but no GPU count meets the deadline (an error is
``cli_guard.USAGE_EXIT``, 2)."""


def no_plan(result: Any, max_gpus: int) -> None:
    """One stderr line saying what plan tried and the fastest it found, then exit
    ``NO_PLAN_EXIT`` (robust52: the table's closing line went to stdout and nothing to stderr,
    and ``--format json`` exited 0 with ``"best": null``)."""
    counts = [s.num_gpus for s in result.steps]
    tried = (f"{counts[0]:,} GPUs" if len(counts) == 1 else
             f"{len(counts)} GPU counts, {min(counts):,} to {max(counts):,}") if counts else \
        "no GPU count"
    deadline = f"{result.deadline_days:g} day{'' if result.deadline_days == 1 else 's'}"
    msg = (f"no GPU count up to {max_gpus:,} meets the deadline of {deadline} for "
           f"{result.tokens:.3g} tokens (tried {tried}); ")
    best = result.closest
    if best is None:
        msg += "no valid configuration fits on any of them"
    else:
        days = result.tokens / best.tokens_per_s / 86400
        text = next((t for p in range(3, 12) if float(t := f"{days:.{p}g}")
                     > result.deadline_days), f"{days!r}")
        msg += f"the fastest found, {best.label} on {best.num_gpus:,} GPUs, takes {text} days"
    try:
        click.echo(f"{click.style('no plan:', fg='red', bold=True)} {msg}", err=True)
    except OSError:  # stderr itself is gone; the exit status still tells
        pass
    sys.exit(NO_PLAN_EXIT)


def _amount(x: float, places: int = 0) -> str:
    """``x`` with ``places`` decimals and thousands separators, or three significant digits
    where that would print under 100 as a rounded figure (a 1e9-token plan's 0.026 MWh and
    0.01 t CO2e printed as "0 MWh", "0 t"), four from ``report.numbers.HUGE`` on (a 1e30-token
    plan's rate needed printed as 26 digits)."""
    from trainsim.report.numbers import amount

    return amount(x, places) if x >= 100 or x == 0 else f"{x:.3g}"


@click.command("sweep")
@click.argument("config", type=click.Path(dir_okay=False))
@click.option("--vary", "varies", multiple=True, required=True, metavar="PATH=LO:HI|a,b,c",
              help="A field to vary (repeatable), e.g. cluster.nvlink_gbyte_s=300:1800.")
@click.option("--steps", type=POSITIVE_INT, default=5, show_default=True, help="Values per LO:HI range.")
@click.option("--set", "overrides", multiple=True, metavar="SECTION.FIELD=VALUE")
@click.option("--out", "out_dir", type=OUT_DIRECTORY, default=None,
              help="Write sweep.csv/.json/.png/.html here.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"], case_sensitive=False), default="table")
@click.option("--plot", "plot_path", type=PLOT_FILE, default=None,
              help="Write a figure: iteration time, tokens/s/GPU, MFU and peak memory against "
                   "the first varied field, a line per value of the others (.png, .svg or "
                   ".pdf by the suffix).")
def sweep_cmd(config, varies, steps, overrides, out_dir, fmt, plot_path):
    """Simulate CONFIG over a grid of varied fields (hardware what-ifs)."""
    from trainsim.catalog import read_config_file
    from trainsim.search.render import render_sweep, rows_csv, sweep_json
    from trainsim.search.whatif import Vary, sweep, write_sweep

    files: list[Path] = []
    try:
        if steps < 1:
            raise ConfigError(f"--steps={steps} must be >= 1")
        vs = [Vary.parse(v, steps) for v in varies]
        raw = read_config_file(config)
        with _progress("sweep") as update:
            result = sweep(raw, vs, overrides, progress=lambda d, t: update("simulate", d, t))
        if out_dir:
            files = write_sweep(result, out_dir)
        if plot_path:
            files.append(result.plot(plot_path, title=f"sweep of {Path(config).name}"))
    except TrainsimError as exc:
        _fail(exc)
        return
    for note in result.notes():  # after the run: an error stays one line (said: as raised)
        click.echo(note, err=True)
    rows = result.rows()
    if fmt == "json":
        click.echo(sweep_json(rows, [v.path for v in result.varies], result.warnings()))
    elif fmt == "csv":
        click.echo(rows_csv(rows), nl=False)
    else:
        out.print(render_sweep(rows, [v.path for v in result.varies],
                               f"sweep of {escape(config)}"))
        for f in files:
            out.print(f"wrote {escape(str(f))}")


COMMANDS = (search_cmd, plan_cmd, sweep_cmd)

__all__ = ["COMMANDS", "build_base", "parse_reference", "plan_cmd", "search_cmd", "sweep_cmd"]
