"""Exceptions. Every error trainsim raises on purpose derives from :class:`TrainsimError`."""

from __future__ import annotations


class TrainsimError(Exception):
    """Root of trainsim's exceptions."""


class ConfigError(TrainsimError, ValueError):
    """An invalid configuration: the message names the fields and the fix."""


class CatalogError(ConfigError):
    """An unknown preset name (GPU, node, model) or a malformed catalog file."""
