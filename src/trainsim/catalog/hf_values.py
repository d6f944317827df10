"""Values of a Hugging Face config.json read as a run config reads them: a switch and a count
that turns a structure on (split out of ``hf_families``, whose readers and ``hf_mpt``'s share
them)."""

from __future__ import annotations

import math
from typing import Any

from trainsim.config._build import switch
from trainsim.errors import ConfigError


def flag(cfg: dict[str, Any], key: str, default: bool, where: str, within: str = "") -> bool:
    """A config.json switch read as a run config reads one (``_build.switch``: true/false, 0/1,
    yes/no), ``default`` where absent or null; ``[]``, ``-1`` or ``'abc'`` are refused, not
    read by their truth value (``if cfg.get(key)``)."""
    value = cfg.get(key)
    return default if value is None else switch(value, f"{where}: {within}{key}")


def count(cfg: dict[str, Any], key: str, where: str) -> int | None:
    """A config.json count that switches a structure on (experts, a latent rank, rotary
    dimensions): None where absent or null, else a whole number >= 0 (0: the structure off,
    as transformers reads it); ``[]`` or ``0.5`` are refused, not read as off or as half."""
    value = cfg.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not (math.isfinite(value) and value >= 0 and value == int(value)):
        raise ConfigError(f"{where}: {key} must be a whole number >= 0, got {value!r}")
    return int(value)


def positive_int(value: Any, where: str) -> int:
    """``value`` as a whole number >= 1, or a ConfigError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value != int(value) or value < 1:
        raise ConfigError(f"{where} must be a whole number >= 1, got {value!r}")
    return int(value)


__all__ = ["count", "flag", "positive_int"]


def model_type(cfg: dict[str, Any], where: str) -> str:
    """The config.json's ``model_type``: text, or '' where absent or null. A number or a list
    was read through ``str()`` and lost the family's structure (gated MLP, tied embeddings),
    silently."""
    value = cfg.get("model_type")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ConfigError(f"{where}: model_type must be text (e.g. 'llama'), got {value!r}")
    return value
