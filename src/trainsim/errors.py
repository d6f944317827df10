"""Exceptions. Every error trainsim raises on purpose derives from :class:`TrainsimError`."""

from __future__ import annotations


class TrainsimError(Exception):
    """Root of trainsim's exceptions."""


class ConfigError(TrainsimError, ValueError):
    """An invalid configuration: the message names the fields and the fix."""


class CatalogError(ConfigError):
    """An unknown preset name (GPU, node, model) or a malformed catalog file."""


class TrainsimWarning(UserWarning):
    """Root of trainsim's warnings: the CLI shows each as one ``warning:`` line."""


class NotAMeasurement(TrainsimWarning):
    """A kernel record faster than its GPU's peaks, left out of a database's self-check."""
