"""How the command line ends on bad input: one line on stderr and a nonzero exit, never a
traceback.

``GuardedGroup`` wraps every subcommand: a :class:`TrainsimError` (bad config, impossible
combination, work over a limit), a ``ValueError`` from parsing what the user typed, an
``OSError`` from a file the user named (a missing directory, ``/dev/full``) or click's own usage
error (an option out of its range, an unknown command) becomes ``error: <message>`` and exit
status 2. Anything else is a bug in trainsim: it is reported in
one line as an internal error (exit 3). With ``TRAINSIM_DEBUG=1`` every exception other than a
TrainsimError or an OSError keeps its traceback: the fuzz tests run that way, so a ValueError
that only this safety net catches still fails them.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from typing import Any, NoReturn

import click

from trainsim.config._build import DeprecatedName
from trainsim.config.safe_load import shown_path
from trainsim.errors import TrainsimError, TrainsimWarning

USAGE_EXIT = 2
"""Exit status of a refused input (as click's own usage errors)."""
INTERNAL_EXIT = 3
"""Exit status of an unexpected exception (a trainsim bug)."""


def one_line(text: str) -> str:
    """``text`` on one line: newlines become '; ' (a space after a line ending in ':' or ',',
    as click's list of choices), runs of spaces one space."""
    parts = [p for p in (" ".join(line.split()) for line in str(text).splitlines()) if p]
    return "".join(p if i == 0 else (" " if parts[i - 1][-1] in ":," else "; ") + p
                   for i, p in enumerate(parts))


def describe(exc: BaseException) -> str:
    """The message a user sees for ``exc``."""
    if isinstance(exc, OSError) and not isinstance(exc, TrainsimError):
        what = exc.strerror or str(exc) or type(exc).__name__
        return one_line(f"{shown_path(exc.filename)}: {what}" if exc.filename else what)
    return one_line(str(exc)) or type(exc).__name__


def fail(exc: BaseException) -> NoReturn:
    """Print ``error: <message>`` on stderr and exit with USAGE_EXIT."""
    _echo_err(f"{click.style('error:', fg='red', bold=True)} {describe(exc)}")
    sys.exit(USAGE_EXIT)


def _echo_err(line: str) -> None:
    try:
        click.echo(line, err=True)
    except OSError:  # stderr itself is gone; the exit status still tells
        pass


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """A deprecation or a trainsim warning as one ``warning:`` line on stderr; other warnings
    as Python shows them."""
    if issubclass(category, (DeprecatedName, TrainsimWarning)):
        _echo_err(f"{click.style('warning:', fg='yellow', bold=True)} {one_line(str(message))}")
    else:
        _SHOW_WARNING(message, category, filename, lineno, file, line)


_SHOW_WARNING = warnings.showwarning


#: optional packages a command may import, and how to install each
OPTIONAL_EXTRAS = {"torch": 'pip install -e ".[torch]"',
                   "transformers": "pip install transformers",
                   **dict.fromkeys(("fastapi", "sqlalchemy", "uvicorn"),
                                   'pip install -e ".[service]"'),
                   "ray": "pip install ray"}


def usage_fail(exc: click.UsageError) -> NoReturn:
    """Click's usage error as one ``error:`` line naming the command's --help (click prints
    three lines: the usage, a hint and ``Error: ...``)."""
    path = exc.ctx.command_path if exc.ctx is not None else ""
    hint = f" (see {path} --help)" if path else ""
    _echo_err(f"{click.style('error:', fg='red', bold=True)} {one_line(exc.format_message())}"
              f"{hint}")
    sys.exit(exc.exit_code)


def _asks_for_help(exc: click.UsageError) -> bool:
    """A group given no subcommand (``trainsim``, ``trainsim token``): click would print its
    whole help as the error; :func:`no_command` says it in one line instead."""
    return type(exc).__name__ == "NoArgsIsHelpError"


def no_command(exc: click.UsageError) -> NoReturn:
    """A group run without a subcommand: one ``error:`` line naming its commands and --help."""
    ctx = exc.ctx
    if ctx is None or not isinstance(ctx.command, click.Group):
        usage_fail(exc)
    names = ", ".join(ctx.command.list_commands(ctx))
    _echo_err(f"{click.style('error:', fg='red', bold=True)} missing command; give one of: "
              f"{names} (see {ctx.command_path} --help)")
    sys.exit(USAGE_EXIT)


class GuardedGroup(click.Group):
    """A click group whose subcommands end in one error line instead of a traceback."""

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:  # the group's own options (``trainsim --bogus``)
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            if _asks_for_help(exc):
                no_command(exc)
            usage_fail(exc)

    def invoke(self, ctx: click.Context) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("default", DeprecatedName)
            warnings.showwarning = _show_warning
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # a subcommand's option or argument, or no such command
            if _asks_for_help(exc):
                no_command(exc)
            usage_fail(exc)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except (TrainsimError, OSError) as exc:  # OSError: a file or directory the user named
            fail(exc)
        except ModuleNotFoundError as exc:  # an optional dependency this command needs
            how = OPTIONAL_EXTRAS.get((exc.name or "").split(".")[0])
            if how is None:  # trainsim's own module: a bug
                raise
            fail(ModuleNotFoundError(f"this command needs {exc.name}, which is not installed: "
                                     f"{how}"))
        except Exception as exc:
            if os.environ.get("TRAINSIM_DEBUG"):
                raise
            if isinstance(exc, (ValueError, RecursionError)):
                fail(exc)  # from what the user gave, where no check named it first
            _echo_err(f"{click.style('internal error:', fg='red', bold=True)} "
                      f"{type(exc).__name__}: {describe(exc)} (a trainsim bug; rerun with "
                      "TRAINSIM_DEBUG=1 for the traceback and report it)")
            sys.exit(INTERNAL_EXIT)


def _ascii(param_type: click.ParamType, value: Any, param: click.Parameter | None,
           ctx: click.Context | None) -> None:
    """Refuse option text with characters outside ASCII: Python's ``int``/``float`` (and so
    click's INT/FLOAT) read full-width '\uff12' and Arabic-Indic '\u0662' as 2, which a config
    file and a CSV cell refuse (``config.ascii_float``, fuzz8)."""
    if isinstance(value, str) and not value.isascii():
        param_type.fail(f"{value!r} is not a number (ASCII digits only).", param, ctx)


class AsciiIntRange(click.IntRange):
    """click's IntRange that reads ASCII digits only, as a config does."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _ascii(self, value, param, ctx)
        return super().convert(value, param, ctx)


class FiniteFloat(click.FloatRange):
    """A float option within a range that also refuses nan, infinities and digits other than
    ASCII."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _ascii(self, value, param, ctx)
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return rv


POSITIVE_INT = AsciiIntRange(min=1)
"""Counts and sizes: GPUs, tokens per sequence, trials."""
POSITIVE = FiniteFloat(min=0, min_open=True)
NONNEGATIVE = FiniteFloat(min=0)


def renamed_option(new: str, old: str, name: str, default: Any, **kwargs: Any) -> Any:
    """A click option ``new`` that still accepts its deprecated spelling ``old`` (hidden from
    --help) with one ``warning:`` line; the value reaches the command as ``name``. Giving
    both is a usage error."""
    key = f"renamed_option:{name}"

    def both(ctx: click.Context) -> None:
        raise click.UsageError(f"{old} and {new} are the same option; give {new} only", ctx)

    def take_old(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is not None:
            warnings.warn(f"{old} is deprecated; write {new} (the same number)", DeprecatedName,
                          stacklevel=2)
            if ctx.meta.get(key + ":new"):
                both(ctx)
            ctx.meta[key] = value

    def take_new(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return ctx.meta.get(key, default)
        if key in ctx.meta:
            both(ctx)
        ctx.meta[key + ":new"] = True
        return value

    def decorate(f: Any) -> Any:
        f = click.option(new, name, default=None, callback=take_new,
                         help=f"{kwargs.pop('help', '')} [default: {default:g}]", **kwargs)(f)
        return click.option(old, f"{name}_deprecated", type=kwargs.get("type"), default=None,
                            hidden=True, expose_value=False, callback=take_old)(f)

    return decorate
