"""``trainsim goodput``: failures, checkpoints and restarts over a whole run.

Registered on the main group by ``trainsim.cli`` (``main.add_command(goodput)``). The config
file is a run config with an optional ``reliability:`` section (see examples/goodput-*.yaml).
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import click

from trainsim.cli_guard import PLOT_FILE, POSITIVE, POSITIVE_INT, AsciiIntRange, stdout_console
from trainsim.config._build import digit_groups, section_of
from trainsim.config.number_text import token_count
from trainsim.errors import ConfigError, TrainsimError

_TIME = {"": 1.0, "S": 1.0, "M": 60.0, "MIN": 60.0, "H": 3600.0, "D": 86400.0}


_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
"""A decimal number as typed: 15, 1.5, .5, 1.5e13 (one point, digits)."""


def parse_tokens(text: str) -> float:
    """'15T', '300B', '1.5e13' -> tokens (``config.number_text.token_count``: K, M, B/G, T, P;
    the one rule and wording of plan, goodput and the service)."""
    return token_count(text, "--tokens")


def parse_duration(text: str) -> float:
    """'1800', '30m', '2h', '1.5d' -> seconds."""
    text = digit_groups(text, "--interval")  # 1_000 as 1000; 1_0 refused, as a config's
    m = re.fullmatch(rf"\s*({_NUMBER})\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).upper() not in _TIME:
        raise ConfigError(f"--interval {text!r}: use seconds or a s/m/h/d suffix, e.g. 30m")
    value = float(m.group(1)) * _TIME[m.group(2).upper()]
    if not 0 < value < math.inf:
        raise ConfigError(f"--interval {text!r} must be positive and finite")
    return value


def load_goodput_config(path: str, overrides: tuple[str, ...] = (), gpus: int | None = None,
                        failures: str | None = None, failures_name: str = "--failures",
                        interval_s: float | None = None, prefix: str = "--"
                        ) -> tuple[Any, Any]:
    """(RunConfig, ReliabilityConfig) from a run config with an optional reliability section;
    ``failures`` (the ``--failures`` flag, named ``failures_name`` in a refusal) replaces
    its profile. ``gpus``, ``failures`` and ``interval_s`` (the caller applies it) may not
    contradict a ``--set`` of their fields (options named with ``prefix``)."""
    from trainsim.catalog import (
        apply_overrides,
        check_option_sets,
        read_config_file,
        run_config_from_dict,
    )
    from trainsim.reliability.config import reliability_config_from_dict

    check_option_sets(overrides, {
        "cluster.num_gpus": (f"{prefix}gpus {gpus}", gpus),
        "reliability.failures": (f"{failures_name} {failures}", failures or None),
        "reliability.checkpoint.interval_s": (f"{prefix}interval ({interval_s:g} s)"
                                              if interval_s else "", interval_s)})
    raw = apply_overrides(read_config_file(path), list(overrides), reliability=True)
    rel_raw = dict(section_of(raw.pop("reliability", None), "reliability"))
    if failures:
        rel_raw["failures"] = failures
    if gpus is not None:
        if not isinstance(raw.get("cluster"), dict):
            raise ConfigError("--gpus needs a cluster section in the config")
        raw["cluster"]["num_gpus"] = gpus
    return run_config_from_dict(raw), reliability_config_from_dict(
        rel_raw, failures_name if failures else "reliability.failures")


@click.command("goodput")
@click.argument("config", type=click.Path(dir_okay=False))
@click.option("--tokens", default=None, metavar="N",
              help="Tokens of the whole run: 15T, 300B, 1.5e13 (default: training.train_tokens).")
@click.option("--days", type=POSITIVE, default=None,
              help="Simulate a window of wall-clock days instead (e.g. 54, as Llama 3 reports).")
@click.option("--gpus", type=POSITIVE_INT, default=None, help="Override cluster.num_gpus.")
@click.option("--failures", default=None, metavar="PROFILE",
              help="Failure profile: a catalog/failures name or a YAML path.")
@click.option("--interval", default=None, metavar="TIME",
              help="Checkpoint interval: seconds or 30m/2h (default: Daly's optimum).")
@click.option("--seed", type=AsciiIntRange(min=0), default=0, show_default=True)
@click.option("--trials", type=POSITIVE_INT, default=1000, show_default=True)
@click.option("--max-trial-rounds", type=POSITIVE_INT, default=None,
              help="Refuse runs whose trials x interruptions exceed this (default 5e6; "
                   "TRAINSIM_MAX_TRIALS).")
@click.option("--set", "overrides", multiple=True, metavar="SECTION.FIELD=VALUE",
              help="Override a field, e.g. --set reliability.checkpoint.mode=blocking.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"], case_sensitive=False),
              default="table")
@click.option("--sweep/--no-sweep", default=False,
              help="Also sweep the checkpoint interval (implied by --plot).")
@click.option("--plot", "plot_path", type=PLOT_FILE, default=None,
              help="Write a figure: the time budget and the interval sweep (.png, .svg or "
                   ".pdf by the suffix).")
def goodput(config: str, tokens: str | None, days: float | None, gpus: int | None,
            failures: str | None, interval: str | None, seed: int, trials: int,
            max_trial_rounds: int | None, overrides: tuple[str, ...], fmt: str, sweep: bool,
            plot_path: str | None) -> None:
    """Goodput of a whole run of CONFIG: failures, checkpoints, restarts (Monte Carlo)."""
    from trainsim.limits import set_limit
    from trainsim.reliability.goodput import goodput as run_goodput

    set_limit("TRAINSIM_MAX_TRIALS", max_trial_rounds)

    try:
        interval_s = parse_duration(interval) if interval is not None else None
        cfg, rel = load_goodput_config(config, overrides, gpus, failures, interval_s=interval_s)
        if interval_s is not None:
            import dataclasses

            rel = dataclasses.replace(rel, checkpoint=dataclasses.replace(
                rel.checkpoint, interval_s=interval_s))
        n_tokens = parse_tokens(tokens) if tokens is not None else None
        result = run_goodput(cfg, rel, tokens=n_tokens, days=days, trials=trials, seed=seed,
                             sweep=sweep or plot_path is not None, tokens_name="--tokens")
        if plot_path:
            from trainsim.reliability.plot import plot_goodput

            plot_goodput(result, plot_path)
    except TrainsimError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if fmt == "json":
        click.echo(json.dumps(result.to_dict(), indent=2, sort_keys=True))
        return

    from trainsim.reliability.report import render_goodput

    console = stdout_console()
    console.print(render_goodput(result))
    if plot_path:
        console.print(f"plot written to {plot_path}", markup=False)
