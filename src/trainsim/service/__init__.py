"""trainsim as a service: an HTTP API over the CLI's public functions, a job store, worker
processes, token auth and a web UI (``trainsim serve``; DESIGN.md §13).

Needs the ``service`` extra (``pip install 'trainsim[service]'``: FastAPI, SQLAlchemy,
uvicorn). Nothing here is imported by the core package: ``trainsim serve`` imports it lazily.
"""

from __future__ import annotations

from trainsim.service.settings import Limits, Settings, default_db_url

__all__ = ["Limits", "Settings", "create_app", "default_db_url"]


def create_app(*args, **kwargs):  # type: ignore[no-untyped-def]
    """The FastAPI application (see trainsim.service.app.create_app)."""
    from trainsim.service.app import create_app as make

    return make(*args, **kwargs)
