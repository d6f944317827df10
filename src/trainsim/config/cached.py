"""``cached``: ``functools.cached_property`` without its lock.

CPython 3.11's ``functools.cached_property`` takes an ``RLock`` (one for all instances of
the class) on every first read of an instance's value, to compute it once across threads;
CPython 3.12 dropped that lock (gh-87634: it serialised unrelated instances, and a value
computed twice is the same value). The frozen configs and priced passes that use it compute
pure functions of their fields, so a second computation in another thread would store an equal
value: the lock buys nothing here and costs a search's main process ~50,000 first reads
(the 22B search: ~2.5 % of its samples in ``functools.__get__``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class cached:
    """A non-data descriptor that computes ``func(instance)`` on the first read and writes it
    into the instance's ``__dict__`` under the attribute's name, where later reads find it
    without calling here (as ``functools.cached_property``; frozen dataclasses too, whose
    ``__setattr__`` it bypasses the same way)."""

    def __init__(self, func: Callable[[Any], Any]) -> None:
        self.func = func
        self.attrname: str | None = None
        self.__doc__ = func.__doc__
        self.__module__ = func.__module__

    def __set_name__(self, owner: type, name: str) -> None:
        if self.attrname is not None and name != self.attrname:
            raise TypeError(f"cannot assign the same cached to two names ({self.attrname!r} "
                            f"and {name!r})")
        self.attrname = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        if self.attrname is None:
            raise TypeError("cannot use a cached instance without calling __set_name__ on it")
        value = instance.__dict__[self.attrname] = self.func(instance)
        return value


__all__ = ["cached"]
