"""Exceptions. Every error trainsim raises on purpose derives from :class:`TrainsimError`."""

from __future__ import annotations


def escaped(text: str) -> str:
    """``text`` with each character that is not printable (a line break, a tab, a terminal
    escape) written as its Python escape (``\\n``, ``\\x1b``): an error stays one line
    whatever file name or value it quotes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def one_line(text: str) -> str:
    """``text`` on one line, as the CLI prints a refusal and the service answers it (fuzz60:
    the service kept the runs of spaces the CLI folds): newlines become '; ' (a space after a
    line ending in ':' or ',', as click's list of choices), runs of spaces one space."""
    parts = [p for p in (" ".join(line.split()) for line in str(text).splitlines()) if p]
    return "".join(p if i == 0 else (" " if parts[i - 1][-1] in ":," else "; ") + p
                   for i, p in enumerate(parts))


class TrainsimError(Exception):
    """Root of trainsim's exceptions. Its text is one printable line: the names and values a
    message quotes are escaped once here (``escaped``), not at each site that raises it."""

    def __str__(self) -> str:
        return escaped(super().__str__())


class ConfigError(TrainsimError, ValueError):
    """An invalid configuration: the message names the fields and the fix."""


class CatalogError(ConfigError):
    """An unknown preset name (GPU, node, model) or a malformed catalog file."""


class TrainsimWarning(UserWarning):
    """Root of trainsim's warnings: the CLI shows each as one ``warning:`` line."""


class SettingReplaced(TrainsimWarning):
    """A default setting the run cannot take, replaced by what its framework runs instead
    (``catalog.defaults.sink_attention``); a validation row lists these as its ``notes`` (the
    JSON row's key, and the table's "chosen / note" column)."""


class NotAMeasurement(TrainsimWarning):
    """A kernel record faster than its GPU's peaks, left out of a database's self-check."""
