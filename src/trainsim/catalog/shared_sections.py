"""A config's model and cluster sections built once per raw mapping, inside
:func:`sections_shared` (a validated row's tuning: its candidate configs differ in parallel and
training fields, and each rebuilt the same model and cluster from the same mappings, ~a quarter
of ``run_config_from_dict``'s time on the public file).

A section is kept under its raw mapping frozen with every value's type (so ``1``, ``1.0`` and
``True``, equal in Python, are different keys) and handed back for an equal mapping. The
sections are frozen dataclasses built by a deterministic function of the mapping, so the
object kept is equal to the one a new build would give, and the tuner already replaced each
candidate's model and cluster by an equal earlier one (``validate.training._interned``):
every config built is the same as before. A mapping holding anything but dicts, lists, tuples
and scalars is not kept (built each time), nor is a build that raises. Nothing outlives the
``with`` block; outside one every section is built as before.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

S = TypeVar("S")

_KEPT: list[dict[Hashable, Any]] = []
"""Per :func:`sections_shared` entered (innermost last), the sections built in it."""

SCALARS = (str, int, bool, type(None))
"""The scalar types :func:`frozen` keeps by value (exactly these: a subclass is not kept)."""


class Unkept(Exception):
    """A value :func:`frozen` does not freeze: whatever it keys is built (or priced) anew."""


def frozen(value: Any, other: Callable[[Any], Hashable] | None = None) -> Hashable:
    """``value`` (a raw section: mappings, lists and scalars) as a hashable key that tells
    apart values of different types (and a mapping's keys in their order); any other value
    goes to ``other`` (``memo``'s dataclass sections), else raises ``Unkept``."""
    kind = type(value)
    if kind is dict:
        return (dict, tuple((frozen(k, other), frozen(v, other)) for k, v in value.items()))
    if kind in (list, tuple):
        return (kind, tuple(frozen(v, other) for v in value))
    if kind is float:  # by its digits: -0.0 is not 0.0 (equal, with one hash)
        return (float, repr(value))
    if kind in SCALARS:  # exactly: a subclass (a number kept with its text) is not kept
        return (kind, value)
    if other is not None:
        return other(value)
    raise Unkept


@contextmanager
def sections_shared() -> Iterator[None]:
    """Within it, :func:`kept_section` builds each distinct raw section once."""
    _KEPT.append({})
    try:
        yield
    finally:
        _KEPT.pop()


def kept_section(kind: str, raw: Any, extra: Hashable, build: Callable[[], S]) -> S:
    """``build()``, or inside :func:`sections_shared` the section built earlier in it from a
    raw section equal to ``raw`` (of the same ``kind``, with the same ``extra`` inputs)."""
    if not _KEPT:
        return build()
    try:
        key = (kind, frozen(raw), extra)
    except Unkept:
        return build()
    kept = _KEPT[-1]
    hit = kept.get(key)
    if hit is None:
        hit = kept[key] = build()
    return hit


__all__ = ["SCALARS", "Unkept", "frozen", "kept_section", "sections_shared"]
