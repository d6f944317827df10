"""Numbers written as text, read one way everywhere: underscores in threes only, ASCII digits
only, a whole number however written (``8.0``), decimal multiples (``15T``).

Split from ``config._build`` (robust57: 614 lines); ``config._build`` re-exports every name.
"""

from __future__ import annotations

import math
import re
from typing import Any

from trainsim.errors import ConfigError

MAX_INT = 2**53
"""Largest integer a config field takes: every count and size is exact in a float below it."""

_DIGIT_RUN = re.compile(r"[0-9_]*_[0-9_]*")
_GROUPED = re.compile(r"[0-9]{1,3}(?:_[0-9]{3})+")


def digit_groups(text: str, where: str = "") -> str:
    """``text`` with the underscores of its numbers dropped where each separates digits in
    threes (``1_000``, ``12_345_678``): the one rule for every number trainsim reads as text
    (config fields, ``--set``, YAML, CSV cells, CLI counts and lists, durations, sizes).
    Python's ``int``/``float`` and YAML 1.1 read an underscore anywhere between digits, so
    ``1_0`` was 10 and ``1__0`` an error in one place, refused or read in another; a user who
    types ``1_0`` most likely mistyped. A ConfigError (a ValueError) where one does not."""
    if "_" not in text:
        return text
    for run in _DIGIT_RUN.findall(text):
        if run.strip("_") and not _GROUPED.fullmatch(run):
            at = f"{where}=" if where else ""
            raise ConfigError(f"{at}{text!r}: an underscore in a number separates digits in "
                              f"threes (1_000); {run!r} looks mistyped")
    return text.replace("_", "")


def ascii_float(value: float | str) -> float:
    """``float(value)``, text in ASCII only: Python's ``float`` also reads other scripts'
    digits ('١' is 1.0, '١٠' is 10), which no config means; underscores only in threes
    (``digit_groups``). ValueError where it is none."""
    if isinstance(value, str):
        value = value.strip()  # float() ignores surrounding whitespace, a no-break space too
        if not value.isascii():
            raise ValueError(value)
        value = digit_groups(value)
    return float(value)


def whole_value(value: Any) -> int | None:
    """The integer ``value`` writes, unbounded: an int, or a float or ASCII text of a whole
    number (``8.0``, ``'8.0'``, ``'1e3'``; digit text exactly, ``'9007199254740993'`` is not
    float's 2**53); None where it is none (a bool, a fraction, text of another kind)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    if isinstance(value, int):
        return value
    try:
        f = ascii_float(value)
    except (ValueError, OverflowError):
        return None
    if not math.isfinite(f) or f != int(f):
        return None
    if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9_]+", value.strip()):
        return int(digit_groups(value.strip()))  # exact, as an int written in a file is
    return int(f)


def whole_number(value: Any) -> int | None:
    """The integer a count's value means as a config field reads it (``_coerce`` to int:
    ``whole_value``, at most ``MAX_INT`` either way), or None where it is none. For the counts
    read outside a config (CLI options, the service's options), which refused the ``8.0`` a
    config takes as 8 (robust57); an int past 2**53 is None here too, as its text was
    (robust57 lead 4: ``options.top: 2**60`` went to the option's own bound, its text not)."""
    n = whole_value(value)
    return None if n is None or abs(n) > MAX_INT else n


def beyond_max_int(value: Any) -> bool:
    """Whether ``value`` is a whole number (``whole_value``) past ``MAX_INT``: the count a
    config refuses "out of range (at most 2**53)", which the CLI's and the service's counts
    refuse in the same words."""
    n = whole_value(value)
    return n is not None and abs(n) > MAX_INT


OUT_OF_RANGE = "is out of range (at most 2**53)"
"""How a count past ``MAX_INT`` is refused, in a config, a CLI option or the service."""


SI_MULTIPLES = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12, "P": 1e15}
"""Decimal multiples a count may be written with, any case (15T, 300B, 2k): B is a billion, as
token counts are written. Read by ``si_float``, the one rule for ``--tokens`` (plan, goodput),
``--vary`` values, the service's ``options.tokens`` and a config's ``training.train_tokens``."""

SI_SUFFIXED = "si_suffixed"
"""The ``dataclasses.field`` metadata key of a number field that may be written with an
``SI_MULTIPLES`` suffix (``training.train_tokens: 15T``), in a file, ``--set`` or the service."""


def si_float(text: str) -> float:
    """'400', '1.5e13', '300B', '15T', '2 k' -> float (``SI_MULTIPLES``; the number as
    ``ascii_float`` reads it). ValueError where it is none; the caller checks the range."""
    t = text.strip()
    mult = 1.0
    if t and t[-1].upper() in SI_MULTIPLES:
        t, mult = t[:-1], SI_MULTIPLES[t[-1].upper()]
    return ascii_float(t) * mult


def token_count(text: str, where: str = "--tokens") -> float:
    """A run's tokens written as text (``plan`` / ``goodput --tokens``, the service's
    ``options.tokens``): ``si_float``'s number, positive and finite, refused in one wording
    everywhere (robust58: plan said "'abc' is not a number (suffixes k, M, B/G, T, P allowed)"
    and "--tokens=-15000000000000.0 must be a positive number", goodput "use a number with an
    optional K/M/B/T suffix" while it takes G and P)."""
    text = digit_groups(text, where)  # 1_000B as 1000B; 1_0 refused, as a config's
    try:
        value = si_float(text)
    except ValueError:
        raise ConfigError(f"{where} {text!r}: not a number of tokens (a number, or with a "
                          "suffix K, M, B/G, T, P: 15T)") from None
    if not 0 < value < math.inf:
        raise ConfigError(f"{where} {text!r} must be a positive, finite number of tokens")
    return value


def _number(text: str) -> float | None:
    """``text`` as a float (``ascii_float``), or None."""
    try:
        return ascii_float(text)
    except ValueError:
        return None
