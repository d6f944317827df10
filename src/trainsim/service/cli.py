"""``trainsim serve`` and ``trainsim token create|list|revoke``: registered on the main group by
``trainsim.cli``. FastAPI, SQLAlchemy and uvicorn are imported only when these run."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import click

from trainsim.cli_guard import POSITIVE, AsciiIntRange

_MISSING = ("the service needs its extra: pip install 'trainsim[service]' "
            "(FastAPI, SQLAlchemy, uvicorn)")


def _need_service() -> None:
    try:
        import fastapi  # noqa: F401
        import sqlalchemy  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        click.echo(f"error: {_MISSING}; missing {exc.name}", err=True)
        sys.exit(2)


@contextmanager
def _store(db_url: str | None) -> Iterator[Any]:
    """The job store at ``db_url``; its errors (e.g. a schema newer than this trainsim) end
    the command with ``error: ...`` and exit status 2."""
    _need_service()
    from trainsim.errors import TrainsimError
    from trainsim.service.settings import default_db_url
    from trainsim.service.store import Store

    try:
        store = Store(db_url or default_db_url())
        try:
            yield store
        finally:
            store.close()
    except TrainsimError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


def _db_option(f):  # type: ignore[no-untyped-def]
    return click.option("--db", "db_url", default=None, metavar="URL",
                        help="Job store: sqlite:///FILE or postgresql://USER@HOST/DB "
                             "(default: an SQLite file under the user's data directory).")(f)


MAX_PROCESSES = 256
"""Most worker (or checker) processes ``serve`` starts: each is a Python process of ~100 MB
with trainsim loaded, so --workers 100000 started processes until the machine gave out."""


def _can_listen(host: str, port: int) -> str | None:
    """Why the server could not listen on ``host:port`` (a name that does not resolve, an
    address this machine lacks, a port in use), or None: checked before the workers start,
    where uvicorn would log it and exit with status 3 after starting them."""
    import socket
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        return f"--host {host!r}: {getattr(exc, 'strerror', None) or exc}"
    family, kind, proto, _, address = infos[0]
    try:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            sock.bind(address)
    except OSError as exc:
        return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=AsciiIntRange(0, 65535), default=8000, show_default=True)
@_db_option
@click.option("--workers", type=AsciiIntRange(max=MAX_PROCESSES), default=2, show_default=True,
              help="Worker processes that run jobs (0: accept jobs, run none).")
@click.option("--checkers", type=AsciiIntRange(max=MAX_PROCESSES), default=1, show_default=True,
              help="Processes that check submitted configs (0: threads of the API process).")
@click.option("--search-executor", type=click.Choice(["local", "ray"], case_sensitive=False),
              default="local",
              show_default=True, help="Where search and plan jobs evaluate candidates: in the "
                                      "worker process, or as Ray tasks.")
@click.option("--ray-address", default=None, help="Ray cluster to join (ray.init address).")
@click.option("--max-active-jobs", type=AsciiIntRange(min=1), default=None,
              help="Jobs one token may have queued or running at once (default 16).")
@click.option("--sync-timeout", type=POSITIVE, default=None,
              help="Seconds POST /api/v1/simulate waits for its result (default 30).")
def serve(host: str, port: int, db_url: str | None, workers: int, checkers: int,
          search_executor: str, ray_address: str | None, max_active_jobs: int | None,
          sync_timeout: float | None) -> None:
    """Run the HTTP API, its worker processes and the web UI (http://HOST:PORT/)."""
    _need_service()
    import uvicorn

    from trainsim.service.app import create_app
    from trainsim.service.settings import Settings, default_db_url

    for name, value in (("workers", workers), ("checkers", checkers)):
        if value < 0:
            click.echo(f"error: --{name}={value} must be >= 0", err=True)
            sys.exit(2)
    problem = _can_listen(host, port)
    if problem is None and ray_address is not None and search_executor.lower() != "ray":
        # a local executor joins no cluster: the address was ignored, silently (fuzz11)
        problem = "--ray-address needs --search-executor ray"
    if problem is None and search_executor.lower() == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:  # else every search job fails, one by one, after it is queued
            problem = "--search-executor ray needs Ray: pip install 'ray[default]'"
    if problem:
        from trainsim.errors import escaped
        click.echo(f"error: {escaped(problem)}", err=True)
        sys.exit(2)
    settings = Settings(db_url=db_url or default_db_url(), workers=workers, checkers=checkers,
                        search_executor=search_executor, ray_address=ray_address)
    changes = {k: v for k, v in (("max_active_jobs", max_active_jobs),
                                 ("sync_timeout_s", sync_timeout)) if v is not None}
    if changes:
        settings = settings.with_limits(**changes)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from trainsim.errors import TrainsimError
    from trainsim.service.store import shown_url

    try:
        app = create_app(settings)
    except TrainsimError as exc:  # e.g. a job store newer than this trainsim
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    # announced once the store opens (fuzz17: it came before "cannot open the job store"),
    # its password masked as the store's own errors mask it
    click.echo(f"trainsim service on http://{host}:{port}/ (API docs /docs), "
               f"job store {shown_url(settings.db_url)}, {workers} worker(s)", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


@click.group("token")
def token() -> None:
    """API tokens of the service."""


@token.command("create")
@click.argument("name")
@_db_option
def token_create(name: str, db_url: str | None) -> None:
    """Create an API token for NAME and print it (shown once; only its hash is stored)."""
    with _store(db_url) as store:
        click.echo(store.create_token(name))


def _when(t: float | None) -> str:
    if t is None:
        return "-"
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


@token.command("list")
@_db_option
@click.option("--format", "fmt", type=click.Choice(["table", "json"], case_sensitive=False),
              default="table",
              show_default=True)
def token_list(db_url: str | None, fmt: str) -> None:
    """List the tokens (id, name, created, revoked); never their values."""
    with _store(db_url) as store:
        found = store.list_tokens()
    if fmt == "json":
        click.echo(json.dumps([{"id": t.id, "name": t.name, "created_at": t.created_at,
                                "revoked_at": t.revoked_at} for t in found], indent=2))
        return
    rows = [(t.id, t.name, _when(t.created_at), _when(t.revoked_at)) for t in found]
    header = ("ID", "NAME", "CREATED", "REVOKED")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    for r in [header, *rows]:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())


@token.command("revoke")
@click.argument("name_or_id", metavar="NAME|ID")
@_db_option
def token_revoke(name_or_id: str, db_url: str | None) -> None:
    """Revoke the token with this ID, or every token named NAME. A running server refuses it
    (401) within a few seconds; its jobs stay as they are."""
    with _store(db_url) as store:
        revoked = store.revoke_token(name_or_id)
    if not revoked:
        click.echo(f"error: no unrevoked token has the id or name {name_or_id!r} "
                   "(see: trainsim token list)", err=True)
        sys.exit(2)
    for t in revoked:
        click.echo(f"revoked {t.id} ({t.name})")


COMMANDS = (serve, token)
