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

import errno
import functools
import importlib
import io
import math
import os
import re
import sys
import warnings
from typing import Any, NoReturn

import click

from trainsim.config._build import (
    OUT_OF_RANGE,
    DeprecatedName,
    beyond_max_int,
    digit_groups,
    suggest,
    whole_number,
)
from trainsim.config.safe_load import shown_path
from trainsim.errors import ConfigError, TrainsimError, TrainsimWarning, one_line

USAGE_EXIT = 2
"""Exit status of a refused input (as click's own usage errors)."""
INTERNAL_EXIT = 3
"""Exit status of an unexpected exception (a trainsim bug)."""


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
    text, close = one_line(exc.format_message()), _choice_hint(exc)
    _echo_err(f"{click.style('error:', fg='red', bold=True)} "
              f"{text.rstrip('.') + close if close else text}{hint}")
    sys.exit(exc.exit_code)


def _choice_hint(exc: click.UsageError) -> str:
    """' (did you mean 'x'?)' where a value is not one of a choice option's or argument's
    values (``--op allreduce``, ``catalog gpu``): click's message lists them and suggests none
    (fuzz46)."""
    param = getattr(exc, "param", None)
    given = re.match(r"'(.*)' is not one of ", exc.message)
    if not (isinstance(getattr(param, "type", None), click.Choice) and given):
        return ""
    return suggest(given.group(1).lower(), [str(c) for c in param.type.choices])  # type: ignore


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


class _ClosedOutput(io.TextIOBase):
    """sys.stdout when the process started with descriptor 1 closed (``trainsim ... >&-``):
    Python leaves it None, and the first print was an AttributeError traceback. A write fails
    as a write to a closed descriptor does (EBADF), so a command that prints ends in one
    ``error:`` line and exit 2 (as ``ls >&-``), and one that prints nothing runs."""

    encoding = "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "cannot write the output: standard output is closed")

    def isatty(self) -> bool:
        return False


def _hold_descriptor(fd: int) -> None:
    """Open /dev/null on a closed standard descriptor, so no file the command opens later
    takes its number (a worker process would print into it)."""
    try:
        os.fstat(fd)
    except OSError:
        new = os.open(os.devnull, os.O_RDWR)
        if new != fd:
            os.dup2(new, fd)
            os.close(new)


def prepare_streams() -> None:
    """Standard streams a command can always use: a closed stdout fails its first write
    (``_ClosedOutput``), a closed stderr drops the error line (the exit status still tells),
    and characters an output encoding cannot show (``PYTHONIOENCODING=ascii``, a C locale
    on an old system) are written as backslash escapes instead of failing a valid run."""
    closed = {name: getattr(sys, name) is None for name in ("stdin", "stdout", "stderr")}
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        if closed[name]:
            _hold_descriptor(fd)
    if closed["stdout"]:
        sys.stdout = _ClosedOutput()
    if closed["stderr"]:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    for stream in (sys.stdout, sys.stderr):
        encoding = str(getattr(stream, "encoding", "") or "").lower().replace("-", "")
        if not encoding.startswith("utf") and getattr(stream, "errors", "") == "strict" \
                and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def stdout_console() -> Any:
    """A rich console on stdout: the terminal's width, or 160 columns into a file or a pipe
    (rich's default 80 would cut validation ids and notes); stdout closed is not a tty. Emoji
    codes are not read: a name a user wrote (``model.name: ':warning:'``) prints as written
    (robust57), as ``rich.markup.escape`` keeps its brackets."""
    from rich.console import Console

    return Console(width=None if sys.stdout is not None and sys.stdout.isatty() else 160,
                   emoji=False)


def _flush_output() -> None:
    """Flush stdout where a failure can still be told: output click printed itself (--help,
    --version) to a full disk or device is one ``error:`` line and exit 2, not an OSError
    traceback when the interpreter flushes at exit."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        try:  # nothing more can be written there; the interpreter's own flush must not fail
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
        except OSError:
            pass
        fail(exc)


def _refuse_blank(ctx: click.Context) -> None:
    """A usage error for an option given on the command line with an empty or blank value:
    ``--algorithm ''`` ran as auto, ``--reference ''`` compared nothing, ``--failures ''``
    took the config's profile, silently, where ``--tp ''`` was refused (fuzz11). Leaving the
    option out is how its default is asked for."""
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.is_flag or param.name is None \
                or ctx.get_parameter_source(param.name) != click.core.ParameterSource.COMMANDLINE:
            continue
        values = ctx.params.get(param.name)
        for value in values if isinstance(values, (tuple, list)) else (values,):
            if isinstance(value, str) and not value.strip():
                flag = max(param.opts, key=len)
                raise click.UsageError(f"{flag} {value!r}: an empty value; leave {flag} out for "
                                       "its default", ctx)


def _guard_blank(command: click.Command) -> None:
    """Wrap ``command``'s callback (and its subcommands') with :func:`_refuse_blank`."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _guard_blank(sub)
    callback = command.callback
    if callback is None or getattr(callback, "_blank_guarded", False):
        return

    def guarded(*args: Any, **kwargs: Any) -> Any:
        _refuse_blank(click.get_current_context())
        return callback(*args, **kwargs)

    guarded._blank_guarded = True  # type: ignore[attr-defined]
    functools.update_wrapper(guarded, callback)
    command.callback = guarded


class _LazyCommands(dict):
    """A group's commands where some are named with the module that defines them and imported
    only when read: by name (``trainsim validate`` imports none of the search, service,
    capture, profile or goodput commands' modules) or all of them when the commands are walked
    (``--help``, ``list_commands``, a tool reading ``group.commands``), in the order they were
    registered. Every read of the mapping sees the same commands as if all were imported."""

    def __init__(self, group: GuardedGroup, commands: dict[str, click.Command]) -> None:
        super().__init__(commands)
        self.group = group
        self.lazy: dict[str, tuple[str, str]] = {}  # name -> (module, attribute)

    def load(self, name: object = None) -> None:
        """Import the lazy command ``name`` (every one where None) and register it."""
        for key in [name] if name is not None else list(self.lazy):
            where = self.lazy.pop(key, None)  # type: ignore[call-overload]
            if where is not None:
                self.group.add_command(getattr(importlib.import_module(where[0]), where[1]),
                                       key)  # type: ignore[arg-type]

    def get(self, name: Any, default: Any = None) -> Any:
        self.load(name)
        return super().get(name, default)

    def __getitem__(self, name: Any) -> Any:
        self.load(name)
        return super().__getitem__(name)

    def __contains__(self, name: object) -> bool:
        return name in self.lazy or super().__contains__(name)

    def __iter__(self) -> Any:
        self.load()
        return super().__iter__()

    def __len__(self) -> int:
        return super().__len__() + len(self.lazy)

    def keys(self) -> Any:
        self.load()
        return super().keys()

    def values(self) -> Any:
        self.load()
        return super().values()

    def items(self) -> Any:
        self.load()
        return super().items()


class GuardedGroup(click.Group):
    """A click group whose subcommands end in one error line instead of a traceback."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _LazyCommands(self, dict(self.commands))

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        _guard_blank(cmd)
        super().add_command(cmd, name)

    def lazy_command(self, name: str, module: str, attribute: str) -> None:
        """Register ``module.attribute`` as the command ``name``, imported when first read
        (:class:`_LazyCommands`)."""
        self.commands.lazy[name] = (module, attribute)  # type: ignore[attr-defined]

    def main(self, *args: Any, **kwargs: Any) -> Any:
        prepare_streams()
        try:
            rv = super().main(*args, **kwargs)
        except OSError as exc:  # click's own output (--help, --version) to a full device
            _flush_output()
            fail(exc)
        except SystemExit as exc:
            if exc.code in (0, None):
                _flush_output()
            raise
        _flush_output()
        return rv

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        for word in args:  # no shell passes one; os.stat of a name holding one raises
            if isinstance(word, str) and "\x00" in word:  # ValueError (fuzz33)
                usage_fail(click.UsageError(f"{word!r} holds a NUL character (\\x00), "
                                            "which no file name or value may hold"))
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
    if isinstance(value, str):  # int('1_0') is 10: underscores in threes only, as a config's
        try:
            digit_groups(value.strip())
        except ConfigError as exc:
            param_type.fail(str(exc), param, ctx)


class AsciiIntRange(click.IntRange):
    """click's IntRange that reads ASCII digits only, and a whole number however written
    (``8.0``, ``1e3``), as a config does (``config._build.whole_number``: ``--gpus 8.0`` was
    "'8.0' is not a valid integer range" where ``cluster.num_gpus: 8.0`` is 8; robust57)."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _ascii(self, value, param, ctx)
        if beyond_max_int(value):  # as a config's count (robust57 lead 4: taken where unbounded)
            self.fail(f"{value!r} {OUT_OF_RANGE}.", param, ctx)
        if isinstance(value, str) and (n := whole_number(value)) is not None:
            value = n
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


def _nearest_existing(text: str) -> str:
    """The path itself, or its nearest ancestor that exists (a folder to be made under it)."""
    at = os.path.abspath(text)
    while not os.path.lexists(at) and os.path.dirname(at) != at:
        at = os.path.dirname(at)
    return at


class OutFile(click.Path):
    """A file an option writes (``--trace``, ``--simai``, ``--out``, ``--plot``): refused
    before any work where it cannot be written as asked (an empty name, a directory, a folder
    that does not exist, a name its file system cannot hold, a folder or file not writable),
    in one usage error naming the option, as other options' bad values are. fuzz33: ``simulate
    --trace missing/t.json`` and ``export --simai DIR`` simulated the whole run first.
    ``parents``: the command makes missing folders (``profile --out``), so only the nearest
    existing one must be a directory."""

    name = "file"

    def __init__(self, parents: bool = False) -> None:
        super().__init__(dir_okay=False)
        self.parents = parents

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)  # click: an existing directory
        text = os.fsdecode(rv)
        if not text.strip():  # given on the command line: refused as every blank value is
            return rv         # (``_refuse_blank``, naming the option)
        if text.endswith(("/", os.sep)):
            self.fail(f"{text!r} names a directory; give a file name", param, ctx)
        folder = os.path.dirname(text) or "."
        if self.parents:
            at = _nearest_existing(folder)
            if not os.path.isdir(at):
                self.fail(f"{text!r}: {at!r} exists and is not a directory", param, ctx)
        elif not os.path.isdir(folder):
            self.fail(f"{text!r}: {folder!r} is not a directory" if os.path.lexists(folder)
                      else f"{text!r}: no directory {folder!r}; create it first", param, ctx)
        else:
            at = folder
        try:  # a name the folder's file system cannot hold failed only after the work
            limit = os.pathconf(at, "PC_NAME_MAX")
        except (OSError, ValueError):
            limit = 255
        size = len(os.fsencode(os.path.basename(text)))
        if limit and size > limit:
            self.fail(f"{text!r}: a file name of {size} bytes, over the {limit} its folder's "
                      "file system takes; choose a shorter name", param, ctx)
        target = text if os.path.lexists(text) else at
        if not os.access(target, os.W_OK):  # (root may write anywhere: then only at writing)
            self.fail(f"{text!r}: {target!r} is not writable", param, ctx)
        return rv


OUT_FILE = OutFile()
OUT_FILE_MADE = OutFile(parents=True)
"""``OUT_FILE`` whose missing folders the command makes."""


PLOT_SUFFIXES = (".png", ".svg", ".pdf", ".eps", ".jpg", ".jpeg")
"""Figure formats ``--plot`` writes, by the file's suffix (none: PNG, as matplotlib's savefig)."""


class PlotFile(OutFile):
    """A ``--plot`` file: an :class:`OutFile` whose suffix a figure format has."""

    name = "plot file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        text = os.fsdecode(rv)
        suffix = os.path.splitext(text)[1].lower()
        if suffix and suffix not in PLOT_SUFFIXES:
            self.fail(f"{text!r}: {suffix!r} is no figure format; end the name in "
                      f"{', '.join(PLOT_SUFFIXES[:-1])} or {PLOT_SUFFIXES[-1]}", param, ctx)
        return rv


PLOT_FILE = PlotFile()


class OutDirectory(click.Path):
    """A directory an option writes files into, made if missing: refused before any work
    where it cannot be one (fuzz33: ``sweep --out /dev/null`` and ``--out file/sub`` ran the
    whole sweep, then failed in mkdir with "File exists" / "Not a directory")."""

    name = "directory"

    def __init__(self) -> None:
        super().__init__(file_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        text = os.fsdecode(rv)
        if not text.strip():
            self.fail("an empty name; give a directory", param, ctx)
        at = _nearest_existing(text)
        if not os.path.isdir(at):
            self.fail(f"{text!r}: {at!r} exists and is not a directory", param, ctx)
        return rv


OUT_DIRECTORY = OutDirectory()


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
