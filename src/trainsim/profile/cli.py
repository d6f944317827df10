"""``trainsim profile``: measure kernels and layers on this machine into a kernel database.

The lead registers it in trainsim/cli.py with ``main.add_command(profile)``. Importing this
module does not import torch.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from trainsim.cli_guard import OUT_FILE_MADE, AsciiIntRange
from trainsim.config._build import digit_groups
from trainsim.errors import ConfigError, TrainsimError

err = Console(stderr=True, emoji=False)  # a name's ':warning:' printed as written


def _ints(text: str, option: str) -> tuple[int, ...]:
    try:
        parts = [v for v in text.replace(";", ",").split(",") if v.strip()]
        if not text.isascii():  # ASCII digits only, as search's lists and a config's numbers
            raise ValueError(text)
        values = tuple(int(digit_groups(v.strip())) for v in parts)
    except ConfigError as exc:  # '1_0': underscores in threes only, as a config's numbers
        raise click.BadParameter(str(exc), param_hint=option) from None
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {text!r}",
                                 param_hint=option) from None
    if not values or any(v <= 0 for v in values):
        raise click.BadParameter(f"expected positive integers, got {text!r}", param_hint=option)
    return values


def command_line(ctx: click.Context) -> str:
    """The command as typed (from sys.argv when this process is ``trainsim profile``), else
    an equivalent one rebuilt from the parsed options."""
    argv = sys.argv[1:]
    if "profile" in argv and argv[argv.index("profile") + 1:] == list(ctx.meta.get("raw", [])):
        return "trainsim " + shlex.join(argv[argv.index("profile"):])
    p = ctx.params
    parts = ["trainsim", "profile", "--gpu", p["gpu"], "--out", p["out"], "--models", p["models"],
             "--tp", p["tp"], "--seq", p["seq"], "--cp", p["cp"], "--mbs", str(p["mbs"]),
             "--device", p["device"]]
    parts += [f"--{flag.rstrip('_')}" for flag in ("quick", "compile_", "merge") if p[flag]]
    parts += [f"--no-{flag}" for flag in ("kernels", "layers") if not p[flag]]
    return shlex.join(parts)


class _Command(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["raw"] = list(args)
        return super().parse_args(ctx, args)


@click.command("profile", cls=_Command)
@click.option("--gpu", required=True, help="Catalog name of this GPU, e.g. h100-sxm-80gb.")
@click.option("--out", required=True, type=OUT_FILE_MADE,
              help="Database file to write (JSON, format trainsim-kernel-db/3).")
@click.option("--models", default="llama3-8b,llama3-70b", show_default=True,
              help="Catalog models whose layer shapes to measure.")
@click.option("--tp", default="1,2,4,8", show_default=True, help="Tensor-parallel sizes.")
@click.option("--seq", default="4096,8192", show_default=True, help="Sequence lengths.")
@click.option("--cp", default="1", show_default=True,
              help="Context-parallel sizes (attention kernels of a ring-attention rank).")
@click.option("--mbs", default=1, show_default=True, type=AsciiIntRange(min=1),
              help="Micro-batch size.")
@click.option("--device", type=click.Choice(["cuda", "cpu"], case_sensitive=False),
              default="cuda", show_default=True,
              help="cpu: a dry run of every code path on a CPU build of PyTorch.")
@click.option("--quick", is_flag=True, help="Tiny shapes, 3 repeats: a smoke test, not data.")
@click.option("--compile", "compile_", is_flag=True,
              help="Also time each layer under torch.compile.")
@click.option("--kernels/--no-kernels", default=True, show_default=True)
@click.option("--layers/--no-layers", default=True, show_default=True)
@click.option("--merge", is_flag=True,
              help="Keep the records of an existing --out database that this run does not "
                   "re-measure (same GPU), e.g. to measure models in separate runs.")
def profile(gpu: str, out: str, models: str, tp: str, seq: str, cp: str, mbs: int, device: str,
            quick: bool, compile_: bool, kernels: bool, layers: bool, merge: bool) -> None:
    """Measure GEMM, attention and elementwise kernels and Llama decoder layers at the
    shapes trainsim simulates (TP/SP/CP slices), and write a kernel database."""
    ctx = click.get_current_context()
    try:
        _run(ctx, gpu, out, models, tp, seq, cp, mbs, device, quick, compile_, kernels, layers,
             merge)
    except TrainsimError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(2)


def _run(ctx: click.Context, gpu: str, out: str, models: str, tp: str, seq: str, cp: str,
         mbs: int, device: str, quick: bool, compile_: bool, kernels: bool, layers: bool,
         merge: bool) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from trainsim.profile.run import (
        ProfileOptions,
        check_base,
        plan,
        read_db,
        run_profile,
        write_db,
    )
    from trainsim.profile.schema import ProfileError
    from trainsim.profile.work import check_cpu_work

    if not (kernels or layers):  # fuzz17: it wrote an empty database over --out
        raise ProfileError("--no-kernels and --no-layers leave nothing to measure; drop one")
    if device == "cuda" and not _cuda_available():
        raise ProfileError("needs a CUDA GPU and PyTorch; use --device cpu to dry-run")
    opts = ProfileOptions(
        gpu=gpu, models=tuple(m.strip() for m in models.split(",") if m.strip()),
        tps=_ints(tp, "--tp"), seqs=_ints(seq, "--seq"), cps=_ints(cp, "--cp"),
        micro_batch_size=mbs, device=device, quick=quick, compile=compile_, kernels=kernels,
        layers=layers, command=command_line(ctx))
    # the grid (torch-free, 0.1 s) before PyTorch is imported and the device opened: robust47,
    # an unknown --models name or a --cp the sequences cannot split was refused after 20-30 s
    # of importing torch on a loaded 2-core box
    grid = plan(opts)
    if device == "cpu":  # as run_profile refuses it, on the same plan less fp8's cases
        check_cpu_work(grid.cases, grid.layers, mbs)
    base = read_db(out) if merge and Path(out).exists() else None
    if base is not None:
        check_base(base, gpu, out)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True,
                  disable=not err.is_terminal) as bar:
        task = bar.add_task("planning", total=None)

        def on_plan(work: Any) -> None:
            bar.update(task, total=work.total, description="profiling")

        def progress(label: str) -> None:
            bar.update(task, advance=1, description=label[:60])

        db = run_profile(opts, progress, on_plan,
                         checkpoint=lambda partial: write_db(partial, out, base), base=base)
    db = write_db(db, out, base)
    click.echo(f"wrote {out}: {len(db['kernels'])} kernels, {len(db['layers'])} layers on "
               f"{db['device_name']}")
    for note in db.get("notes", []):
        if note.startswith(("failed", "torch.compile failed", "fp8", "numerics: layer MISMATCH")):
            err.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
