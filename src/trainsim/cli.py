"""Command line: a thin layer over the public API (simulate, validate, collective, catalog)."""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from trainsim.cli_guard import (
    OUT_FILE,
    PLOT_FILE,
    POSITIVE,
    POSITIVE_INT,
    GuardedGroup,
    fail,
    renamed_option,
    stdout_console,
)
from trainsim.config import ascii_float
from trainsim.config.cluster import FABRICS
from trainsim.config.fabric_rules import reduction_problem, transport_problem
from trainsim.config.safe_load import as_regular_file
from trainsim.cpus import cpus
from trainsim.errors import ConfigError, TrainsimError

# Wide enough for validation ids and notes when output goes to a file or a pipe (rich
# defaults to 80 columns there and would cut them).
out = stdout_console()
err = Console(stderr=True, emoji=False)  # a name's ':warning:' printed as written


def _fail(exc: Exception) -> None:
    fail(exc)


COLLECTIVE_OPTIONS = {"num_gpus": "--gpus", "gpus_per_node": "--gpus-per-node",
                      "topology": "--topology", "fabric": "--fabric",
                      "network_backend": "--backend", "nvls": "--nvls",
                      "in_network_reduction": "--in-network-reduction",
                      "nic_gbit_s_per_gpu": "--nic-gbps", "gpu": "--gpu"}
"""``trainsim collective``'s option for each cluster field it sets: a refusal of the cluster it
builds names the option typed (robust62: it named cluster.topology, cluster.fabric, ...)."""
COLLECTIVE_OPTION = re.compile(r"\bcluster\.(" + "|".join(
    sorted(COLLECTIVE_OPTIONS, key=len, reverse=True)) + r")\b")


@contextlib.contextmanager
def _forced_named(algorithm: str, protocol: str) -> Iterator[None]:
    """A collective's refusal prefixed with the ``--algorithm`` / ``--protocol`` forced
    (robust62: "algorithm 'pat' cannot run all_reduce ..." named no option), as
    ``network.analytical`` names ``cluster.nccl_algo``; nothing forced: raised as it is."""
    try:
        yield
    except TrainsimError as exc:
        forced = [f"{o}={v.strip()}" for o, v in (("--algorithm", algorithm),
                                                  ("--protocol", protocol))
                  if v.strip().lower() != "auto"]
        if not forced:
            raise
        raise TrainsimError(f"{' and '.join(forced)}: {exc}") from None


MAX_MESSAGE_BYTES = 2**50
"""Largest message `collective` prices (1 PiB; nccl-tests sizes are at most a few GiB)."""


def _size(text: str) -> int:
    """'8', '64K', '1M', '8G' (binary multiples, as nccl-tests' -b/-e)."""
    t = text.strip().upper().rstrip("B")
    mult = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    scale = mult[t[-1]] if t and t[-1] in mult else 1
    try:
        value = ascii_float(t[:-1] if scale > 1 else t)  # ASCII digits only, as a config
    except ValueError:
        value = math.nan
    if not 0 < value * scale <= MAX_MESSAGE_BYTES:
        raise TrainsimError(f"bad size '{text}': use bytes or a K/M/G/T suffix, from 1 byte "
                            "to 1 PiB")
    if value * scale != int(value * scale):  # nccl-tests' sscanf reads '8.5' as 8: a typo
        raise TrainsimError(f"bad size '{text}': {value * scale:g} bytes is not a whole number "
                            "of bytes")
    return int(value * scale)


@click.group(cls=GuardedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="trainsim")
def main() -> None:
    """trainsim: predict LLM training time, memory and cost before renting a GPU."""


@main.command()
@click.argument("config", type=click.Path(dir_okay=False))
@click.option("--set", "overrides", multiple=True, metavar="SECTION.FIELD=VALUE",
              help="Override a config field, e.g. --set parallel.tp=4 (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"], case_sensitive=False),
              default="table")
@click.option("--trace", "trace_path", type=OUT_FILE, default=None,
              help="Write a Chrome/Perfetto trace of the simulated timeline.")
@click.option("--max-tasks", type=POSITIVE_INT, default=None,
              help="Refuse iterations estimated above this many tasks (default 500,000; "
                   "TRAINSIM_MAX_TASKS).")
@click.option("--plot", "plot_path", type=PLOT_FILE, default=None,
              help="Write a figure: where the iteration time goes and the memory per GPU by "
                   "part (.png, .svg or .pdf by the suffix).")
def simulate(config: str, overrides: tuple[str, ...], fmt: str, trace_path: str | None,
             max_tasks: int | None, plot_path: str | None) -> None:
    """Simulate one training iteration of CONFIG (YAML or JSON).

    CONFIG has sections model, parallel, training and cluster; a top-level key starting with
    x- is not read (it holds YAML anchors, as in a Docker Compose file)."""
    from trainsim.limits import set_limit

    set_limit("TRAINSIM_MAX_TASKS", max_tasks)
    from trainsim.catalog import load_run_config
    from trainsim.report import render_result, write_chrome_trace
    from trainsim.search.cli_inputs import said_warnings
    from trainsim.simulator import simulate as run_sim

    try:
        with said_warnings() as said:  # printed as raised; the JSON carries them too
            cfg = load_run_config(config, overrides)
            result = run_sim(cfg, keep_timeline=trace_path is not None)
        if trace_path and result.timeline is not None:
            write_chrome_trace(result.timeline, trace_path, title=cfg.model.name,
                               info=result.simulation)
        if plot_path:
            from trainsim.report.plots import plot_result

            plot_result(result, plot_path)
    except TrainsimError as exc:
        _fail(exc)
        return
    if not result.fits_in_memory:
        err.print(f"warning: {result.peak_memory_bytes / 2**30:.1f} GiB per GPU does not fit the "
                  f"{cfg.cluster.gpu.hbm_bytes / 2**30:.0f} GiB of {escape(cfg.cluster.gpu.name)} "
                  "(fits_in_memory: false)", highlight=False, soft_wrap=True)
    if fmt == "json":
        click.echo(json.dumps({**result.to_dict(), "warnings": said}, indent=2, sort_keys=True))
    else:
        out.print(render_result(result))
        if trace_path:
            out.print(f"trace written to {escape(trace_path)} (open in https://ui.perfetto.dev)")
        if plot_path:
            out.print(f"plot written to {escape(plot_path)}")


@main.command()
@click.argument("csv_file", type=click.Path(dir_okay=False), required=False)
@click.option("--format", "fmt", type=click.Choice(["table", "json"], case_sensitive=False),
              default="table")
@click.option("--compute-db", default="auto", show_default=True, metavar="auto|none|PATH",
              help="Kernel database pricing kernel and training rows: auto (the one bundled "
                   "for the row's GPU; GPUs without one use the analytic model), none (the "
                   "analytic model alone) or a trainsim profile JSON.")
@click.option("--workers", type=POSITIVE_INT, default=None,
              help="Processes predicting rows side by side (each row is predicted alone: the "
                   "same results); default: the CPUs this process may use, at most 8.")
@click.option("--plot", "plot_path", type=PLOT_FILE, default=None,
              help="Also write a figure of the rows: predicted against measured (log-log, "
                   "y = x, +-10/20 % bands), a colour per framework or implementation "
                   "(.png, .svg or .pdf by the suffix). Without CSV_FILE, one figure per "
                   "bundled file: PLOT's name with -<file> added.")
def validate(csv_file: str | None, fmt: str, compute_db: str, workers: int | None,
             plot_path: str | None) -> None:
    """Predict every row of a published-measurement file and report the error.

    CSV_FILE: training runs, nccl-tests collectives or kernels (CSV, the kind told by its
    columns), or Hugging Face decoder layers (JSONL). Without a file, runs the kernels, layers,
    collectives and training files bundled with trainsim (their sources are in
    trainsim/data/validation/README.md). A kernel database
    (trainsim profile's JSON) is checked instead: its layer records against the layers
    composed from its kernel records."""
    from trainsim.validate import bundled_files

    db = {"none": None, "auto": "auto"}.get(compute_db.strip().lower(), compute_db)
    if db not in (None, "auto"):
        if not Path(db).is_file():
            why = ("is a directory" if Path(db).is_dir() else "no such file") if db.strip() \
                else "empty; give a kernel database file, auto or none"
            _fail(ConfigError(f"--compute-db {db!r}: {why}"))
            return
        from trainsim.catalog import gpu as catalog_gpu
        from trainsim.compute.database import KernelDatabase

        try:  # a file that is no database: one error now, not the same error on every row
            KernelDatabase.load(db, catalog_gpu)
        except TrainsimError as exc:
            _fail(ConfigError(f"--compute-db {db}: {exc}"))
            return
    if csv_file is not None and not csv_file.strip():  # not the bundled files (no file given)
        _fail(ConfigError("the validation file name is empty; give a CSV file, or none for "
                          "the bundled files"))
        return
    files = [csv_file] if csv_file else bundled_files()
    report = {}
    for path in files:
        if not csv_file and fmt == "table":
            click.echo(f"== {Path(path).name} (bundled)")
        plot = plot_path
        if plot_path and not csv_file:
            from trainsim.validate.plot import per_file_path

            plot = str(per_file_path(plot_path, path))
        try:
            with as_regular_file(str(path), "validation file") as regular:
                got = _validate_one(regular, fmt, db,
                                    workers or min(cpus(), MAX_DEFAULT_WORKERS), shown=str(path),
                                    plot=plot)
        except TrainsimError as exc:
            _fail(exc)
            return
        if got is None:
            return
        report[Path(path).name] = got
    if fmt == "json":
        click.echo(json.dumps(report[Path(files[0]).name] if csv_file else report, indent=2,
                              sort_keys=True))


MAX_DEFAULT_WORKERS = 8
"""validate's default process count is at most this: each worker keeps its own memo of task
graphs (``engine.runs_shared``, up to ~0.3 GB), so every CPU of a large machine would cost
memory for little gain on a file of a few hundred rows."""


def _validate_one(csv_file: str, fmt: str, compute_db: str | None = "auto",
                  workers: int = 1, shown: str | None = None,
                  plot: str | None = None) -> dict | None:
    """Validate one file: print its table (table format) or return its JSON object (its
    ``warnings``: the trainsim warnings said, once each, as simulate's); an error or warning
    names ``shown`` where ``csv_file`` is a copy of it (``as_regular_file``). ``plot``: also
    draw those same rows there (``validate.plot``); the line saying so goes to stderr, so
    that the summary stays the last line of stdout."""
    from trainsim.search.cli_inputs import said_warnings
    from trainsim.validate import read_rows, summarize, summary_line, validate_file
    from trainsim.validate.kernel_db import is_kernel_db
    from trainsim.validate.layers import is_layers_file

    try:
        with said_warnings() as said:  # printed as raised; the JSON carries them too
            if not err.is_terminal:  # no bar to draw (rich's Progress would be disabled)
                kind, results = validate_file(csv_file, workers=workers, compute_db=compute_db)
            else:
                from rich.progress import Progress

                rows = [] if is_kernel_db(csv_file) or is_layers_file(csv_file) \
                    else read_rows(csv_file)[1]
                with Progress(console=err, transient=True) as bar:
                    task = bar.add_task(f"predicting {escape(Path(csv_file).name)}",
                                        total=len(rows))
                    kind, results = validate_file(
                        csv_file, progress=lambda i, n: bar.update(task, completed=i),
                        workers=workers, compute_db=compute_db)
    except TrainsimError as exc:
        _fail(type(exc)(str(exc).replace(csv_file, shown)) if shown else exc)
        return None
    from trainsim.report import render_validation

    if plot:
        from trainsim.validate.plot import plot_validation

        plot_validation(kind, results, plot, title=Path(shown or csv_file).name)
        err.print(f"plot written to {escape(plot)}", highlight=False, soft_wrap=True)
    summary = summarize(results)
    if fmt == "json":
        return {"rows": [r.to_dict() for r in results], "summary": summary,
                "warnings": [w.replace(csv_file, shown) if shown else w for w in said]}
    unit = {"training": "s/iteration", "collectives": "busbw GB/s", "kernels": ""}[kind]
    out.print(render_validation(kind, results, unit, summary))
    click.echo(summary_line(summary))
    return {}


@main.command()
@click.option("--gpu", default="h100-sxm-80gb", show_default=True, help="GPU catalog name.")
@click.option("--gpus", "num_gpus", type=POSITIVE_INT, default=8, show_default=True)
@click.option("--gpus-per-node", type=POSITIVE_INT, default=None,
              help="GPUs in one NVLink domain (default: 8; 72 with --topology nvl72).")
@renamed_option("--nic-gbit-s", "--nic-gbps", "nic_gbps", 400.0, type=POSITIVE,
                help="Inter-node Gbit/s per GPU.")
@click.option("--op", "kind", default="all_reduce", show_default=True,
              type=click.Choice(["all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                 "broadcast", "reduce"], case_sensitive=False))
@click.option("--sizes", default="8:8G", show_default=True,
              help="MIN:MAX message bytes, doubling (nccl-tests -b/-e -f 2).")
@click.option("--algorithm", default="auto", show_default=True,
              help="Like NCCL_ALGO: auto, ring, tree, nvls, nvls_tree, collnet, pat "
                   "(all_to_all, like NCCL's point-to-point, has none to pick).")
@click.option("--protocol", default="auto", show_default=True,
              help="Like NCCL_PROTO: auto, LL, LL128, Simple.")
@click.option("--backend", type=click.Choice(["analytical", "flow"], case_sensitive=False),
              default="analytical",
              show_default=True,
              help="flow: max-min fair sharing, link by link, on the --topology network.")
@click.option("--topology", default="rail-optimized", show_default=True,
              help="rail-optimized, spine-leaf, nvl72 (72 GPUs per NVLink domain) or torus; "
                   "the flow backend builds it link by link.")
@click.option("--max-flows", type=POSITIVE_INT, default=None,
              help="flow backend: refuse collectives above this many flow-steps (default 5e7; "
                   "TRAINSIM_MAX_FLOWS).")
@click.option("--fabric", type=click.Choice(list(FABRICS), case_sensitive=False), default=None,
              help="Inter-node transport, as cluster.fabric (default: infiniband, or --node's): "
                   "tcpx runs ring / Simple only, efa / tcpx have no SHARP.")
@click.option("--node", default=None,
              help="Node preset (trainsim catalog nodes, e.g. a3-highgpu-8g): its GPU, GPUs per "
                   "node, NIC, GPUs per NIC and fabric, each unless given here.")
@click.option("--nvls/--no-nvls", default=True, show_default=True,
              help="NVLink SHARP where the GPU's NVSwitch has it, as cluster.nvls "
                   "(NCCL_NVLS_ENABLE; always off on tcpx).")
@click.option("--in-network-reduction", "in_network", is_flag=True, default=False,
              help="The switches reduce (InfiniBand SHARP), as cluster.in_network_reduction: "
                   "NCCL's CollNet.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"], case_sensitive=False),
              default="table")
@click.pass_context
def collective(ctx: click.Context, gpu: str, num_gpus: int, gpus_per_node: int | None,
               nic_gbps: float, kind: str, sizes: str, algorithm: str, protocol: str,
               backend: str, topology: str, max_flows: int | None, fabric: str | None,
               node: str | None, nvls: bool, in_network: bool, fmt: str) -> None:
    """nccl-tests-like table of a collective's predicted time and bandwidth."""
    from trainsim.limits import set_limit

    set_limit("TRAINSIM_MAX_FLOWS", max_flows)
    from rich.table import Table

    from trainsim.catalog import gpu as catalog_gpu
    from trainsim.collectives import BUS_FACTOR
    from trainsim.config import ClusterConfig
    from trainsim.config.cluster import NVL72_GPUS, TOPOLOGY_ALIASES
    from trainsim.network import network_for

    try:  # a node preset fills what the command line did not set (catalog._cluster_section)
        preset = _node_preset(ctx, node)
    except TrainsimError as exc:
        _fail(exc)
        return
    gpu = preset.get("gpu", gpu)
    gpus_per_node = preset.get("gpus_per_node", gpus_per_node)
    nic_gbps = preset.get("nic_gbit_s_per_gpu", nic_gbps)
    fabric = fabric or preset.get("fabric", "infiniband")
    if gpus_per_node is None:  # the rack is the domain, as a config's topology sets it
        name = topology.strip().lower().replace("_", "-")  # (catalog._cluster_section; fuzz17)
        gpus_per_node = NVL72_GPUS if TOPOLOGY_ALIASES.get(name, name) == "nvl72" else 8
    try:
        lo, _, hi = sizes.partition(":")
        try:
            lo_b, hi_b = _size(lo), _size(hi or lo)
        except TrainsimError as exc:  # named as typed: --sizes, not 'bad size'
            raise TrainsimError(f"--sizes {sizes!r}: {exc}") from None
        if lo_b <= 0 or hi_b < lo_b:
            raise TrainsimError(f"--sizes {sizes}: need 0 < MIN <= MAX")
        if lo_b < 2:  # the table's rows are bfloat16 elements (nccl-tests' count = size / 2)
            raise TrainsimError(f"--sizes {sizes}: MIN must be at least 2 bytes, one bfloat16 "
                                "element")
        # SHARP where nothing reduces, refused in the options' names (robust62: collfab61's
        # Lead 5, the CLI could not price CollNet or NVLS off at all)
        reduction_problem(fabric.strip().lower(), in_network, backend.lower(), (
            "--in-network-reduction", "--fabric", "drop --in-network-reduction",
            "--backend analytical"))
        try:
            cluster = ClusterConfig(gpu=catalog_gpu(gpu), num_gpus=num_gpus,
                                    gpus_per_node=gpus_per_node,
                                    nic_bw_Bps=nic_gbps * (1e9 / 8),
                                    network_backend=backend,  # type: ignore[arg-type]
                                    topology=topology, fabric=fabric,
                                    gpus_per_nic=preset.get("gpus_per_nic", 1), nvls=nvls,
                                    in_network_reduction=in_network)
        except TrainsimError as exc:  # the cluster's rules, in this command's option names
            raise TrainsimError(COLLECTIVE_OPTION.sub(
                lambda m: COLLECTIVE_OPTIONS[m.group(1)], str(exc))) from None
        # what the transport cannot run, refused as the config path refuses it (collfab61)
        transport_problem(cluster.fabric, algorithm, protocol.strip(),
                          ("--algorithm", "--protocol", "--fabric"))
        if backend == "flow" and protocol.strip().lower() != "auto":  # shown, never priced
            raise TrainsimError(f"--protocol {protocol}: the flow backend models links, not "
                                "NCCL protocols; drop --protocol or use --backend analytical")
        with _forced_named(algorithm, protocol):  # what they cannot run, named as typed
            if backend == "flow":  # the first collective and its fabric, before building it
                from trainsim.collectives.flows import resolve_algorithm
                from trainsim.limits import check_flows
                check_flows(kind, num_gpus, gpus_per_node, resolve_algorithm(kind, algorithm),
                            num_gpus, sizes=int(hi_b // lo_b).bit_length())
        net = network_for(cluster)
        span = net.span(num_gpus, 1)
        rows: list[dict[str, Any]] = []
        size = lo_b
        while size <= hi_b:
            with _forced_named(algorithm, protocol):
                c = net.collective(kind, float(size), span, algorithm, protocol)
            algbw = size / c.time_s if c.time_s else 0.0
            rows.append({"size_bytes": size, "count": size // 2, "type": "bfloat16",
                         "time_us": c.time_s * 1e6, "algbw_GBps": algbw / 1e9,
                         "busbw_GBps": algbw * BUS_FACTOR[kind](num_gpus) / 1e9,
                         "algorithm": c.algorithm, "protocol": c.protocol})
            size *= 2
    except TrainsimError as exc:
        _fail(exc)
        return
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    t = Table(title=f"{kind} on {num_gpus} x {escape(gpu)} ({gpus_per_node}/node, {nic_gbps:g} "
              "Gbit/s NIC)")
    for col in ("size", "count", "type", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "algo",
                "proto"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(str(r["size_bytes"]), str(r["count"]), r["type"], f"{r['time_us']:.2f}",
                  f"{r['algbw_GBps']:.2f}", f"{r['busbw_GBps']:.2f}", r["algorithm"], r["protocol"])
    out.print(t)


def _node_preset(ctx: click.Context, node: str | None) -> dict[str, Any]:
    """The ``--node`` preset's cluster fields that ``collective``'s command line left unset."""
    if node is None:
        return {}
    from trainsim.catalog import node as catalog_node

    n = catalog_node(node)
    given = {p for p in ("gpu", "gpus_per_node")
             if ctx.get_parameter_source(p) is not click.core.ParameterSource.DEFAULT}
    if {"renamed_option:nic_gbps", "renamed_option:nic_gbps:new"} & set(ctx.meta):
        given.add("nic_gbit_s_per_gpu")
    keys = ("gpu", "gpus_per_node", "nic_gbit_s_per_gpu", "gpus_per_nic", "fabric")
    return {k: n[k] for k in keys if k not in given and n.get(k) is not None}


@main.command()
@click.argument("kind",
                type=click.Choice(["gpus", "nodes", "models", "frameworks"], case_sensitive=False))
@click.option("--format", "fmt",
              type=click.Choice(["table", "json", "names"], case_sensitive=False), default="table")
def catalog(kind: str, fmt: str) -> None:
    """The built-in GPU, node or model presets with their headline specs, or the framework
    profiles with their versions and other names."""
    from rich.table import Table

    from trainsim import catalog as cat
    from trainsim.catalog.frameworks import framework_specs

    rows = framework_specs() if kind == "frameworks" else cat.specs(kind)
    if fmt == "names":
        for r in rows:
            click.echo(r["name"])
        return
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    t = Table(title=f"trainsim catalog {kind}")
    for col in rows[0]:
        t.add_column(col, justify="left" if col in ("name", "gpu", "aliases", "description")
                     else "right")
    for r in rows:
        t.add_row(*("-" if v is None else f"{v:g}" if isinstance(v, float) else str(v)
                    for v in r.values()))
    out.print(t)


LAZY_COMMANDS = (("capture", "trainsim.capture.cli", "capture"),
                 ("export", "trainsim.capture.cli", "export"),
                 ("profile", "trainsim.profile.cli", "profile"),
                 ("goodput", "trainsim.reliability.cli", "goodput"),
                 ("search", "trainsim.search.cli", "search_cmd"),
                 ("plan", "trainsim.search.cli", "plan_cmd"),
                 ("sweep", "trainsim.search.cli", "sweep_cmd"),
                 ("serve", "trainsim.service.cli", "serve"),
                 ("token", "trainsim.service.cli", "token"))
"""Commands that live with their packages: (name, module, attribute), each module imported
only when its command is run or the commands are listed (``cli_guard._LazyCommands``), so
that ``trainsim validate`` or ``simulate`` does not import the capture, profile, goodput,
search and service commands (~0.1-0.2 s of every start, measured by speed39)."""


def _register() -> None:
    for name, module, attribute in LAZY_COMMANDS:
        main.lazy_command(name, module, attribute)


_register()

if __name__ == "__main__":  # pragma: no cover
    main()
