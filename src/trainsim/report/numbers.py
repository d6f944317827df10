"""Numbers as the terminal tables print them: fixed notation where a reader compares digits,
scientific notation where fixed would print a wall of them (robust56 lead 1: a finite 1e300 s of
data loading printed as a 301-digit cell that rich cut off), and never a nonzero rate as 0."""

from __future__ import annotations

import math

HUGE = 1e12
"""From this magnitude on a number prints in scientific notation (``1.000e+12``): fixed notation
with thousands separators would take 17 characters or more, past what a table column is read
at (a trillion tokens/s, seconds or dollars is already no training run)."""


def amount(x: float, places: int = 0, tiny: bool = False) -> str:
    """``x`` with ``places`` decimals and thousands separators below ``HUGE``, four significant
    digits from it on; with ``tiny``, a nonzero ``x`` that would round to zero prints with
    three significant digits (a throughput of 1e-296 tokens/s is not "0")."""
    if not math.isfinite(x):
        return str(x)
    if abs(x) >= HUGE:
        return f"{x:.4g}"
    if tiny and x != 0 and abs(x) < 0.5 * 10.0 ** -places:
        return f"{x:.3g}"
    return f"{x:,.{places}f}"


def seconds(x: float) -> str:
    """A duration: milliseconds under a second, else seconds (three decimals; four significant
    digits from ``HUGE`` on)."""
    if not math.isfinite(x):
        return f"{x} s"
    if x < 1:
        return f"{x * 1e3:.1f} ms"
    return f"{x:.4g} s" if x >= HUGE else f"{x:.3f} s"


def percent(x: float, places: int = 1) -> str:
    """A fraction as a percentage (``amount`` of 100 x, so a 1e15 "share" stays short)."""
    return f"{amount(100 * x, places)}%"


__all__ = ["HUGE", "amount", "percent", "seconds"]
