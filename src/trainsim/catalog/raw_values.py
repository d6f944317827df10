"""How a run config's raw fields read before the config checks them (``catalog.defaults`` and
``catalog.attention_rules`` decide on them first): given or not, as a number, as a switch."""

from __future__ import annotations

import math
from typing import Any

from trainsim.config._build import switch as read_switch
from trainsim.errors import ConfigError


def given(value: Any) -> bool:
    """Whether a raw field was given: not None, not blank text."""
    return value is not None and not (isinstance(value, str) and not value.strip())


def number(value: Any) -> float:
    """``value`` as a number where it reads as one, else 0 (the field's own check reports it:
    'parallel.vpp=full' is a type error of that field, not a ValueError from here)."""
    try:
        n = float(value)
    except (TypeError, ValueError):
        return 0.0
    return n if math.isfinite(n) else 0.0


def truthy(value: Any) -> bool:
    """A YAML/CSV flag, not yet checked, as the config will read it (``_build.switch``: a bool,
    0/1 also as '1.0' or '1e0', a ``SWITCH_WORDS`` word); False for anything the config will
    refuse (None, other text). A reading of its own let '1.0' past the framework checks
    (``check_profile``: "has no distributed optimizer") as off, then the config ran it on."""
    try:
        return read_switch(value, "")
    except ConfigError:
        return False


__all__ = ["given", "number", "truthy"]
