"""``trainsim capture`` and ``trainsim export``.

The lead registers them in trainsim/cli.py's ``_register()``::

    from trainsim.capture.cli import capture, export
    main.add_command(capture)
    main.add_command(export)

Importing this module does not import torch.
"""

from __future__ import annotations

import json
import os
from typing import Any

import click
from rich.console import Console

from trainsim.cli_guard import OUT_FILE, OUT_FILE_MADE, POSITIVE_INT, fail, stdout_console
from trainsim.config.safe_load import write_output
from trainsim.errors import TrainsimError

err = Console(stderr=True, emoji=False)  # a name's ':warning:' printed as written


def _fail(exc: Exception) -> None:
    fail(exc)


def _emit(text: str | None, renderable: Any, out: str | None) -> None:
    if out:
        write_output(out, text if text is not None else "")
        err.print(f"written to {out}", markup=False)
    elif text is not None:
        click.echo(text)
    else:
        stdout_console().print(renderable)


_PARALLEL = [
    click.option("--tp", type=POSITIVE_INT, default=None, help="Tensor-parallel size."),
    click.option("--sp/--no-sp", default=None,
                 help="Sequence parallelism (default: on when tp > 1)."),
    click.option("--cp", type=POSITIVE_INT, default=None, help="Context-parallel size."),
    click.option("--ep", type=POSITIVE_INT, default=None, help="Expert-parallel size."),
    click.option("--seq", type=POSITIVE_INT, default=None, help="Sequence length (default 4096)."),
    click.option("--mbs", type=POSITIVE_INT, default=None, help="Micro-batch size (default 1)."),
    click.option("--gpu", default=None, help="GPU catalog name (default: the node's, H100)."),
    click.option("--gpus", type=POSITIVE_INT, default=None, help="GPUs in the run."),
    click.option("--gbs", type=POSITIVE_INT, default=None, help="Global batch size."),
    click.option("--set", "set_args", multiple=True, metavar="SECTION.FIELD=VALUE",
                 help="Override a run-config field (repeatable)."),
]


def _parallel_options(f):
    for opt in reversed(_PARALLEL):
        f = opt(f)
    return f


def _overrides(kw: dict[str, Any]) -> dict[str, Any]:
    return {k: kw[k] for k in ("tp", "sp", "cp", "ep", "seq", "mbs", "gpu", "gpus", "gbs")}


@click.command()
@click.argument("config")
@_parallel_options
@click.option("--eager", is_flag=True,
              help="Capture Hugging Face code as written (no fused RMSNorm/SwiGLU kernels).")
@click.option("--attention", type=click.Choice(["sdpa", "eager"], case_sensitive=False),
              default="sdpa",
              show_default=True, help="sdpa: the fused FlashAttention kernel; eager: matmuls.")
@click.option("--simulate", "run_sim", is_flag=True,
              help="Also simulate the run with the captured layers and with the analytical ones.")
@click.option("--kernels", is_flag=True, help="List every recorded kernel in the JSON.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"], case_sensitive=False),
              default="table")
@click.option("--out", type=OUT_FILE, default=None, help="Write to FILE.")
def capture(config: str, eager: bool, attention: str, run_sim: bool, kernels: bool, fmt: str,
            out: str | None, **kw: Any) -> None:
    """Record a model's training step on the meta device and map it onto trainsim's ops.

    CONFIG: a Hugging Face config.json (no weights needed), a trainsim run config, or
    package.module:factory returning a torch.nn.Module.
    """
    try:
        from trainsim.capture.capture import capture as run_capture
        from trainsim.capture.inputs import resolve
        from trainsim.capture.report import render, summarize

        source, cfg = resolve(config, _overrides(kw), kw["set_args"])
        if cfg is None:  # a factory: every option checked before PyTorch is imported
            _factory_options(source, kw, run_sim)
            from trainsim.catalog import gpu as catalog_gpu
            gpu = catalog_gpu(kw["gpu"] or "h100-sxm-80gb")
        else:
            gpu = cfg.cluster.gpu
        seq = cfg.training.seq_length if cfg else (kw["seq"] or 4096)
        mbs = cfg.training.micro_batch_size if cfg else (kw["mbs"] or 1)
        dtype = "bf16" if cfg is None or cfg.training.dtype == "fp8" else cfg.training.dtype
        try:
            cap = run_capture(source, batch=mbs, seq=seq, dtype=dtype, attention=attention,
                              fuse=not eager)
        except ValueError as exc:  # transformers: this architecture has no SDPA attention
            if "attention implementation" not in str(exc):
                raise
            raise TrainsimError(f"{str(exc).splitlines()[0].split('. ')[0]}; capture it with "
                                "--attention eager") from None
        summary = summarize(cap, cfg, gpu, include_kernels=kernels)
        if run_sim and cfg is not None:
            from trainsim.capture.graph import captured_layer_source
            from trainsim.simulator import simulate

            captured = simulate(cfg, layer_source=captured_layer_source(cap))
            analytical = simulate(cfg)
            summary["simulate"] = {"captured": captured.to_dict(),
                                   "analytical": analytical.to_dict()}
    except TrainsimError as exc:
        _fail(exc)
        return
    if fmt == "json":
        _emit(json.dumps(summary, indent=2, sort_keys=True, default=str), None, out)
        return
    from rich.console import Group

    parts = [render(summary)]
    if "simulate" in summary:
        c, a = summary["simulate"]["captured"], summary["simulate"]["analytical"]
        parts.append(f"iteration time: captured layers {c['iteration_time_s'] * 1e3:.1f} ms, "
                     f"analytical layers {a['iteration_time_s'] * 1e3:.1f} ms "
                     f"({100 * (c['iteration_time_s'] / a['iteration_time_s'] - 1):+.1f}%)")
    if out:
        console = Console(record=True, width=160, file=open("/dev/null", "w"))  # noqa: SIM115
        console.print(Group(*parts))
        _emit(console.export_text(), None, out)
    else:
        _emit(None, Group(*parts), None)


def _factory_options(source: str, kw: dict[str, Any], run_sim: bool) -> None:
    """Refuse what a ``package.module:factory`` capture cannot use: it builds a module, not a
    run, so the run's options and ``--set`` have no config to set and ``--simulate`` no run to
    price (robust52: they were dropped in silence, and ``--gpu`` was checked only after the
    capture, so without PyTorch a bad value was reported as "needs torch")."""
    given = [("--sp" if kw[k] else "--no-sp") if k == "sp" else f"--{k} {kw[k]}"
             for k in ("tp", "sp", "cp", "ep", "gpus", "gbs") if kw[k] is not None]
    if kw["set_args"]:
        given.append(f"--set {kw['set_args'][0]}")
    if run_sim:
        given.append("--simulate")
    if given:
        raise TrainsimError(f"{given[0]}: {source} is a factory, which gives a module and no "
                            "run to set or simulate (it takes --seq, --mbs and --gpu); give a "
                            "Hugging Face config.json or a run config for the run's settings")


def _rank_list(text: str, num_gpus: int) -> list[int]:
    """--ranks 0,8 -> [0, 8]; each a rank of the run, each once (a rank given twice was
    written twice and counted as two traces; an empty list exported every rank)."""
    out = []
    for item in text.split(","):
        if not (item.strip().isascii() and item.strip().isdigit()) or not int(item) < num_gpus:
            raise TrainsimError(f"--ranks {text!r}: give ranks 0..{num_gpus - 1} separated by "
                                "commas")
        out.append(int(item))
    return list(dict.fromkeys(out))


@click.command()
@click.argument("config")
@_parallel_options
@click.option("--chakra", "chakra_prefix", default=None, metavar="PREFIX",
              help="Write Chakra ET traces PREFIX.<rank>.et and PREFIX.json (comm groups).")
@click.option("--per-kernel", is_flag=True, help="Chakra: one node per kernel (default: "
              "consecutive kernels between collectives merged).")
@click.option("--ranks", default=None, help="Chakra: only these ranks, e.g. 0,8 (default all).")
@click.option("--simai", "simai_path", type=OUT_FILE, default=None, metavar="FILE",
              help="Write a SimAI workload .txt.")
@click.option("--max-tasks", type=POSITIVE_INT, default=None,
              help="Refuse exports estimated above this many tasks: simulated tasks, trace "
                   "nodes, group memberships, SimAI rows (default 500,000; TRAINSIM_MAX_TASKS).")
@click.option("--captured", is_flag=True,
              help="Use layers captured from the model's Hugging Face config (needs torch).")
def export(config: str, chakra_prefix: str | None, per_kernel: bool, ranks: str | None,
           simai_path: str | None, captured: bool, max_tasks: int | None, **kw: Any) -> None:
    """Export a run's simulated workload to Chakra ET (ASTRA-sim) and/or SimAI."""
    try:
        from trainsim.limits import set_limit

        set_limit("TRAINSIM_MAX_TASKS", max_tasks)
        from trainsim.capture.inputs import resolve

        if not chakra_prefix and not simai_path:
            raise TrainsimError("nothing to do: give --chakra PREFIX and/or --simai FILE")
        if not chakra_prefix and (ranks is not None or per_kernel):
            # SimAI gets one representative rank (interop.simai): nothing to pick or split
            raise TrainsimError(f"{'--ranks' if ranks is not None else '--per-kernel'} shapes "
                                "the Chakra traces only; give --chakra PREFIX with it")
        if chakra_prefix and (chakra_prefix.endswith(("/", os.sep))
                              or os.path.basename(chakra_prefix) in (".", "..")):
            # fuzz17: 'out/' wrote out.<rank>.et and out.json beside the directory, not in it
            raise TrainsimError(f"--chakra {chakra_prefix!r}: PREFIX starts the files' names "
                                "(PREFIX.<rank>.et, PREFIX.json), not a directory; e.g. "
                                f"{os.path.join(chakra_prefix, 'trace')}")
        if chakra_prefix:  # its folders are made, but one that is a file failed after the work
            ctx = click.get_current_context()
            OUT_FILE_MADE.convert(chakra_prefix + ".json",
                                  next(p for p in ctx.command.params if p.name == "chakra_prefix"),
                                  ctx)
        source, cfg = resolve(config, _overrides(kw), kw["set_args"], capture=captured)
        if cfg is None:
            raise TrainsimError("export needs a run config or a Hugging Face config")
        layer_source = None
        if captured:
            from trainsim.capture.capture import capture as run_capture
            from trainsim.capture.graph import captured_layer_source

            cap = run_capture(source, batch=cfg.training.micro_batch_size,
                              seq=cfg.training.seq_length)
            layer_source = captured_layer_source(cap)
        if chakra_prefix:
            from trainsim.interop.chakra import export_chakra

            rank_list = _rank_list(ranks, cfg.cluster.num_gpus) if ranks is not None else None
            ex = export_chakra(cfg, chakra_prefix, layer_source, per_kernel, rank_list)
            nodes = sum(ex.nodes_per_rank.values())
            click.echo(f"chakra: {len(ex.paths)} traces ({nodes} nodes) -> "
                       f"{chakra_prefix}.<rank>.et,"
                       f" groups -> {ex.comm_groups_path}; trainsim iteration "
                       f"{ex.iteration_time_s * 1e3:.3f} ms")
        if simai_path:
            from trainsim.interop.simai import write_simai

            n = write_simai(cfg, simai_path, layer_source)
            click.echo(f"simai: {n} rows -> {simai_path}")
    except TrainsimError as exc:
        _fail(exc)
