"""Numbers read from JSON records (kernel databases, measured layers): one check for what a
count or a measured value may be, shared by the kernel database and the validators."""

from __future__ import annotations

import math
from typing import Any

from trainsim.config._build import ascii_float
from trainsim.errors import ConfigError

MAX_COUNT = 2**53
"""Largest count a record or cell takes (exact in a float below it)."""
MIN_MEASURED = 1e-100
"""Smallest measured value (a time, bytes, a bandwidth in any unit) a record or a validation
row takes: a validation error is relative to it, and below ~1e-300 that ratio overflows to
infinity (a measured 1e-300 s gave an error of inf, written as ``Infinity``, not JSON). A
numeric bound, not a physical one: the smallest bundled measurement is ~1e-6 s."""


def shown(value: Any) -> str:
    """A value as an error message shows it: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def positive_value(value: Any) -> float | None:
    """``value`` as a positive finite float (a record's measured time, say), or None when it
    is not one (missing, text, a bool, zero, negative, below MIN_MEASURED, NaN or
    infinite)."""
    if isinstance(value, bool):
        return None
    try:
        x = ascii_float(value)  # ASCII digits only, as a config's numbers
    except (TypeError, ValueError):
        return None
    return x if MIN_MEASURED <= x < math.inf else None


def record_count(rec: dict[str, Any], key: str, default: Any = None, where: str = "") -> int:
    """A whole number >= 1 of a JSON record (a size or a count), or a ConfigError naming it
    (``where`` prefixes the key: 'shape.', or the record's place and label)."""
    value = rec.get(key, default)
    if value is None:
        raise ConfigError(f"{where}{key} is missing")
    try:
        n = ascii_float(value)
    except (TypeError, ValueError):
        n = math.nan
    if isinstance(value, bool) or not (1 <= n <= MAX_COUNT and n == int(n)):
        raise ConfigError(f"{where}{key}={shown(value)} must be a whole number >= 1")
    return int(n)
