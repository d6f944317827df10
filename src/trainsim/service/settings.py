"""What a trainsim server may accept and how it runs: the database, workers and limits."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

MiB = 2**20


def data_dir() -> Path:
    """The user's data directory for trainsim (``$XDG_DATA_HOME/trainsim``, else
    ``~/.local/share/trainsim``; ``%LOCALAPPDATA%\\trainsim`` on Windows). A relative
    ``XDG_DATA_HOME`` is ignored, as the XDG Base Directory Specification says ("If an
    implementation encounters a relative path in any of these variables it should consider
    the path invalid and ignore it"): it put the job store under whatever folder the
    command ran in (fuzz11)."""
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "trainsim"
    xdg = os.environ.get("XDG_DATA_HOME") or ""
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / "trainsim"


def default_db_url() -> str:
    """An embedded SQLite file under the user's data directory (created on first use)."""
    return f"sqlite:///{data_dir() / 'service.db'}"


@dataclass(frozen=True)
class Limits:
    """Bounds on what one request may ask for; each answered with a JSON error naming it."""

    max_body_bytes: int = 1 * MiB
    """Largest request body (413 above it)."""
    max_gpus: int = 131072
    """Largest cluster a config, a search or a plan may name (422 above it)."""
    max_candidates: int = 500_000
    """Most parallel configurations one search may enumerate (422 above it)."""
    max_trials: int = 20000
    """Most Monte Carlo trials one goodput job may run (422 above it)."""
    max_sweep_points: int = 400
    """Most grid points one sweep may simulate (422 above it)."""
    max_validate_rows: int = 5000
    """Most rows one validate job may predict (422 above it)."""
    max_active_jobs: int = 16
    """Jobs one token may have queued or running at once (429 above it)."""
    sync_timeout_s: float = 30.0
    """How long ``POST /api/v1/simulate`` waits for its result (504 after it)."""


@dataclass(frozen=True)
class Settings:
    """A server's configuration. ``workers=0`` accepts jobs but runs none (tests drive them)."""

    db_url: str = dataclasses.field(default_factory=default_db_url)
    workers: int = 2
    limits: Limits = Limits()
    search_executor: str = "local"
    """Executor of search/plan jobs: 'local' (in the worker process) or 'ray'."""
    ray_address: str | None = None
    lease_s: float = 15.0
    """A running job whose worker has not reported for this long is queued again."""
    poll_s: float = 0.25
    """How often an idle worker looks for a queued job."""
    checkers: int = 1
    """Processes that check submitted configs (0: threads of the API process)."""
    db_threads: int = 4
    """Threads of the API process that make its database calls."""
    token_cache_s: float = 2.0
    """How long the API trusts a token it has looked up: a revoked token is refused after
    at most this long."""

    def with_limits(self, **changes: object) -> Settings:
        return dataclasses.replace(self, limits=dataclasses.replace(self.limits, **changes))
