"""A package's names imported when first read (PEP 562), so that a start that never reads them
never imports their modules (``network``, ``search``, ``collectives``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, where: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: a name of ``where`` (name -> defining module) is
    imported on its first read and kept in ``namespace`` (the package's ``globals()``), so the
    next read is a plain lookup; any other name raises ``AttributeError`` as a module would."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
