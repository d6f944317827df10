"""Catalog entries with their specs for the API (``GET /api/v1/catalog/{kind}``).

The specs are the catalog's own YAML files, in the catalog's units (TFLOP/s, GiB, GB/s), which
is what a person picking a GPU or a node reads; the simulator converts them to SI at load.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Literal

import yaml

KINDS = ("gpus", "nodes", "models", "frameworks", "topologies")
Kind = Literal["gpus", "nodes", "models", "frameworks", "topologies"]


def _catalog_dir() -> Path:
    import trainsim.catalog

    return Path(trainsim.catalog.__file__).parent


@functools.cache
def entries(kind: str) -> list[dict[str, Any]]:
    """Every entry of ``kind``, sorted by name, each with its ``name`` and its spec."""
    if kind not in KINDS:
        raise ValueError(f"catalog kind {kind!r} is not one of {', '.join(KINDS)}")
    out = []
    for path in sorted((_catalog_dir() / kind).glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        if not isinstance(data, dict):
            continue
        data.setdefault("name", path.stem)
        data["name"] = path.stem  # the name a config uses
        if kind == "frameworks":  # the versions, not every cited default
            data = {"name": path.stem, "description": data.get("description", ""),
                    "versions": [{"since": str(v.get("since")), "source": v.get("source")}
                                 for v in data.get("versions", []) if isinstance(v, dict)]}
        elif kind == "models":
            data.update(_model_sizes(path.stem))
        out.append(data)
    return out


def _model_sizes(name: str) -> dict[str, Any]:
    """Parameter count of a model preset, for the UI's picker (None when it cannot be built)."""
    try:
        from trainsim.catalog import model
        from trainsim.model.counts import active_params, total_params

        m = model(name)
        return {"params": float(total_params(m)), "active_params": float(active_params(m))}
    except Exception:  # noqa: BLE001 -- a preset the counter does not know how to size: list it all the same
        return {"params": None, "active_params": None}


def plotly_js() -> Path | None:
    """plotly.min.js from the installed ``plotly`` package, when there is one (served locally)."""
    try:
        import plotly
    except ImportError:
        return None
    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    return path if path.is_file() else None
