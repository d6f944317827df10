"""The job store: tokens and jobs in one SQL database (SQLite file by default, PostgreSQL by URL).

The schema carries a version (table ``schema_version``): opening an older store upgrades it
in place (``_UPGRADES``, one transaction per step), and a store newer than this trainsim is
refused with a ConfigError saying so.

A job is written before the API answers 202, and workers claim jobs from the database, so the
database alone is the queue: a server killed at any moment loses nothing. Claims are fenced:
each claim gets a fresh ``claim`` id, and a worker can finish a job only while the job still
carries its claim, so a job queued again after its worker vanished is never finished twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import socket
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from trainsim.config import safe_load
from trainsim.errors import ConfigError

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
"""1: the layout before versioning (jobs.plot may be missing); 2: tokens.revoked_at."""
ACTIVE = ("queued", "running")
FINISHED = ("done", "failed", "cancelled")
TOKEN_PREFIX = "tsk_"
TOKEN_NAME_CHARS = 200
"""The longest token name: the ``tokens.name`` column's width (a longer name was cut there
silently, and ``token revoke NAME`` could then not find it)."""

metadata = MetaData()

tokens = Table(
    "tokens", metadata,
    Column("id", String(32), primary_key=True),
    Column("name", String(TOKEN_NAME_CHARS), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float, nullable=True),
)

schema_version = Table(
    "schema_version", metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
)

jobs = Table(
    "jobs", metadata,
    Column("id", String(32), primary_key=True),
    Column("token_id", String(32), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("status", String(12), nullable=False),
    Column("request", Text, nullable=False),
    Column("progress", Float, nullable=False, default=0.0),
    Column("phase", String(200), nullable=True),
    Column("result", Text, nullable=True),
    Column("trace", Text, nullable=True),
    Column("plot", LargeBinary, nullable=True),
    Column("error", Text, nullable=True),
    Column("created_at", Float, nullable=False),
    Column("started_at", Float, nullable=True),
    Column("finished_at", Float, nullable=True),
    Column("claim", String(32), nullable=True),
    Column("worker", String(200), nullable=True),
    Column("heartbeat_at", Float, nullable=True),
    Column("attempts", Integer, nullable=False, default=0),
    Index("ix_jobs_status_created", "status", "created_at"),
    Index("ix_jobs_token_created", "token_id", "created_at"),
)


def hash_token(token: str) -> str:
    """SHA-256 of a token: tokens are 256-bit random, so a fast hash cannot be brute-forced."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class TokenInfo:
    id: str
    name: str
    created_at: float
    revoked_at: float | None


@dataclass(frozen=True)
class Job:
    id: str
    token_id: str
    kind: str
    status: str
    request: dict[str, Any]
    progress: float
    phase: str | None
    result: str | None
    error: str | None
    has_trace: bool
    has_plot: bool
    created_at: float
    started_at: float | None
    finished_at: float | None
    claim: str | None
    worker: str | None
    attempts: int


def _request(text: str) -> dict[str, Any]:
    """A stored request, numbers as written (``framework_version: 0.10`` stays 0.10); a row
    an older server stored with NaN or a duplicate key reads as json reads it."""
    try:
        return safe_load.loads(text, "a stored job request")
    except ConfigError:
        return json.loads(text)


def _job(row: Any) -> Job:
    m = row._mapping
    return Job(id=m["id"], token_id=m["token_id"], kind=m["kind"], status=m["status"],
               request=_request(m["request"]), progress=m["progress"], phase=m["phase"],
               result=m["result"], error=m["error"], has_trace=bool(m["has_trace"]),
               has_plot=bool(m["has_plot"]),
               created_at=m["created_at"], started_at=m["started_at"],
               finished_at=m["finished_at"], claim=m["claim"], worker=m["worker"],
               attempts=m["attempts"])


_JOB_COLUMNS = [c for c in jobs.c if c.name not in ("trace", "plot")]


_BUSY_S = 30.0
"""How long a connection waits for another's lock before it reports the database locked."""


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout={int(_BUSY_S * 1000)}")
    # Switching a new database to WAL takes an exclusive lock and SQLite answers "database is
    # locked" at once, without its busy handler, while another connection holds any lock (four
    # stores opened at once on an empty file hit it about one time in fifteen): retry it here.
    deadline = time.monotonic() + _BUSY_S
    pause = 0.001
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(2 * pause, 0.1)
    cur.execute("PRAGMA synchronous=NORMAL")  # durable across a process crash in WAL mode
    cur.close()


DB_SCHEMES = ("sqlite:///", "postgresql://", "postgresql+psycopg://")
"""The job stores trainsim runs on: an SQLite file, or PostgreSQL through psycopg 3."""


def shown_url(url: Any) -> Any:
    """A job-store URL as messages show it: a password replaced by ``***``."""
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url) if isinstance(url, str) else url


def make_engine(url: str) -> Engine:
    """An engine for ``url``: ``sqlite:///path`` (directory created, WAL) or ``postgresql://``.
    Another scheme, an empty path or an in-memory SQLite database (not shared with the worker
    processes) is a ConfigError."""
    if not isinstance(url, str) or not url.startswith(DB_SCHEMES):
        raise ConfigError(f"job store {shown_url(url)!r} is not sqlite:///FILE or "
                          "postgresql://USER@HOST/DB")
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if not path.strip() or path.strip() == ":memory:":
            raise ConfigError(f"job store {url!r} names no file (an in-memory database is not "
                              "shared with the worker processes); give sqlite:///FILE")
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        # as many pooled connections as the server has threads: opening one is the slow part
        engine = create_engine(url, connect_args={"timeout": _BUSY_S, "check_same_thread": False},
                               pool_size=40, max_overflow=40)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.startswith("postgresql://"):  # psycopg 3 is the driver trainsim installs
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return create_engine(url, pool_pre_ping=True)


# ------------------------------------------------------------------------------ schema

def _add_missing(c: Connection, table: Table, *names: str) -> None:
    have = {col["name"] for col in inspect(c).get_columns(table.name)}
    for name in names:
        if name not in have:
            kind = table.c[name].type.compile(c.dialect)
            c.exec_driver_sql(f"ALTER TABLE {table.name} ADD COLUMN {name} {kind}")


def _to_2(c: Connection) -> None:
    _add_missing(c, jobs, "plot")  # stores made before plots existed lack it
    _add_missing(c, tokens, "revoked_at")


_UPGRADES: dict[int, Any] = {1: _to_2}
"""The step from version k to k + 1. A change of the tables above is a new step here and
SCHEMA_VERSION + 1; ``create_all`` afterwards adds whole new tables and indexes."""


def stored_version(c: Connection) -> int | None:
    """The schema version of the store behind ``c``; None for an empty database."""
    names = set(inspect(c).get_table_names())
    if "schema_version" in names:
        found = c.execute(select(func.max(schema_version.c.version))).scalar()
        if found is not None:
            return int(found)
    return 1 if names & {"tokens", "jobs"} else None


def upgrade(engine: Engine) -> int | None:
    """Create the store's tables in an empty database, or bring an older store up to
    SCHEMA_VERSION; returns the version found (None: it was empty). One process at a time
    changes it (SQLite's write lock, a PostgreSQL advisory lock), each step in one
    transaction with the new version number."""
    with engine.connect() as c:
        found = stored_version(c)
        c.rollback()
        if found == SCHEMA_VERSION:
            return found
        if c.dialect.name == "sqlite":
            c.exec_driver_sql("BEGIN IMMEDIATE")  # DDL inside the transaction, writers wait
        elif c.dialect.name == "postgresql":
            c.execute(text("SELECT pg_advisory_xact_lock(7226312019)"))
        found = stored_version(c)  # again, under the lock: another process may have done it
        if found is not None and found > SCHEMA_VERSION:
            where = engine.url.render_as_string(hide_password=True)
            raise ConfigError(f"the job store {where} has schema version {found}, newer than "
                              f"this trainsim's {SCHEMA_VERSION}: upgrade trainsim, or give "
                              "another --db")
        for v in range(found or SCHEMA_VERSION, SCHEMA_VERSION):
            log.warning("upgrading the job store from schema version %d to %d", v, v + 1)
            _UPGRADES[v](c)
        metadata.create_all(c)
        if found != SCHEMA_VERSION:
            c.execute(schema_version.delete())
            c.execute(schema_version.insert().values(version=SCHEMA_VERSION))
        c.commit()
    return found


class Store:
    """Tokens and jobs. Safe to use from many threads and processes at once."""

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            self.engine = make_engine(url)
            self._skip_locked = self.engine.dialect.name == "postgresql"
            upgrade(self.engine)
        except (SQLAlchemyError, OSError, ImportError, ValueError) as exc:  # ValueError: a NUL
            # a folder or a file that is no database, a server that does not answer: one line
            # (the URL is not repeated: it may hold a password)
            what = str(getattr(exc, "orig", None) or exc).strip().splitlines()
            raise ConfigError(f"cannot open the job store: {what[0] if what else type(exc).__name__}"
                              ) from None

    def close(self) -> None:
        self.engine.dispose()

    # -------------------------------------------------------------------------- tokens

    def create_token(self, name: str) -> str:
        """A new API token for ``name``; returned once, only its hash is kept."""
        name = name.strip()
        if not name:
            raise ConfigError("token name must not be empty")
        if len(name) > TOKEN_NAME_CHARS:
            raise ConfigError(f"token name of {len(name):,} characters: at most "
                              f"{TOKEN_NAME_CHARS} (e.g. who or what uses the token)")
        if not name.isprintable():  # a line break split ``token list``'s table row in two
            raise ConfigError(f"token name {name!r} holds a line break or another character "
                              "that is not printable")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with self.engine.begin() as c:
            c.execute(tokens.insert().values(id=uuid.uuid4().hex, name=name,
                                             token_hash=hash_token(token), created_at=time.time()))
        return token

    def token_id(self, token: str) -> str | None:
        """The id of the unrevoked token whose hash matches ``token``, or None."""
        with self.engine.connect() as c:
            return c.execute(select(tokens.c.id).where(
                tokens.c.token_hash == hash_token(token),
                tokens.c.revoked_at.is_(None))).scalar_one_or_none()

    def list_tokens(self) -> list[TokenInfo]:
        """Every token (never its value), oldest first."""
        q = select(tokens.c.id, tokens.c.name, tokens.c.created_at, tokens.c.revoked_at)
        with self.engine.connect() as c:
            return [TokenInfo(*row) for row in c.execute(q.order_by(tokens.c.created_at,
                                                                    tokens.c.id))]

    def revoke_token(self, name_or_id: str) -> list[TokenInfo]:
        """Revoke the token with this id, or else every unrevoked token with this name; the
        tokens revoked (none: nothing unrevoked matched). Their jobs stay as they are."""
        now = time.time()
        with self.engine.begin() as c:
            for match in (tokens.c.id == name_or_id, tokens.c.name == name_or_id.strip()):
                q = select(tokens.c.id).where(match, tokens.c.revoked_at.is_(None))
                ids = [i for (i,) in c.execute(q)]
                if ids:
                    c.execute(update(tokens).where(tokens.c.id.in_(ids)).values(revoked_at=now))
                    break
        return [t for t in self.list_tokens() if t.id in ids]

    # -------------------------------------------------------------------------- jobs

    def create_job(self, token_id: str, kind: str, request: dict[str, Any]) -> str:
        job_id = uuid.uuid4().hex
        with self.engine.begin() as c:
            c.execute(jobs.insert().values(
                id=job_id, token_id=token_id, kind=kind, status="queued",
                request=safe_load.dumps(request, sort_keys=True), progress=0.0,
                created_at=time.time(), attempts=0))
        return job_id

    def create_job_within(self, token_id: str, kind: str, request: dict[str, Any],
                          limit: int) -> str | None:
        """``create_job`` where the token has fewer than ``limit`` jobs queued or running, else
        None: the count and the insert in one transaction that holds the token's write lock
        (SQLite ``BEGIN IMMEDIATE``: the database's one writer; PostgreSQL: the token's row
        ``SELECT ... FOR UPDATE``), so API processes on one database never pass the limit
        together (robust57 lead 1: a lock in one process left two servers racy)."""
        job_id = uuid.uuid4().hex
        with self.engine.connect() as c:
            if c.dialect.name == "sqlite":
                c.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                c.execute(select(tokens.c.id).where(tokens.c.id == token_id).with_for_update())
            if self._count_active(c, token_id) >= limit:
                c.rollback()
                return None
            c.execute(jobs.insert().values(
                id=job_id, token_id=token_id, kind=kind, status="queued",
                request=safe_load.dumps(request, sort_keys=True), progress=0.0,
                created_at=time.time(), attempts=0))
            c.commit()
        return job_id

    def _select(self) -> Any:
        return select(*_JOB_COLUMNS, (jobs.c.trace.is_not(None)).label("has_trace"),
                      (jobs.c.plot.is_not(None)).label("has_plot"))

    def get_job(self, job_id: str, token_id: str | None = None) -> Job | None:
        """The job, or None when it does not exist or belongs to another token."""
        q = self._select().where(jobs.c.id == job_id)
        if token_id is not None:
            q = q.where(jobs.c.token_id == token_id)
        with self.engine.connect() as c:
            row = c.execute(q).first()
        return _job(row) if row is not None else None

    def list_jobs(self, token_id: str, limit: int = 100, offset: int = 0) -> list[Job]:
        q = (self._select().where(jobs.c.token_id == token_id)
             .order_by(jobs.c.created_at.desc(), jobs.c.id).limit(limit).offset(offset))
        with self.engine.connect() as c:
            return [_job(r) for r in c.execute(q)]

    def trace(self, job_id: str, token_id: str) -> str | None:
        with self.engine.connect() as c:
            return c.execute(select(jobs.c.trace).where(
                jobs.c.id == job_id, jobs.c.token_id == token_id)).scalar_one_or_none()

    def plot(self, job_id: str, token_id: str) -> bytes | None:
        with self.engine.connect() as c:
            return c.execute(select(jobs.c.plot).where(
                jobs.c.id == job_id, jobs.c.token_id == token_id)).scalar_one_or_none()

    def active_count(self, token_id: str) -> int:
        with self.engine.connect() as c:
            return self._count_active(c, token_id)

    @staticmethod
    def _count_active(c: Connection, token_id: str) -> int:
        return c.execute(select(func.count()).select_from(jobs).where(
            jobs.c.token_id == token_id, jobs.c.status.in_(ACTIVE))).scalar_one()

    def counts(self) -> dict[str, int]:
        """Jobs by status, over all tokens."""
        with self.engine.connect() as c:
            rows = c.execute(select(jobs.c.status, func.count()).group_by(jobs.c.status))
            return {s: n for s, n in rows}

    def cancel(self, job_id: str, token_id: str) -> Job | None:
        """Cancel a queued or running job (a finished one stays as it is)."""
        with self.engine.begin() as c:
            c.execute(update(jobs).where(jobs.c.id == job_id, jobs.c.token_id == token_id,
                                         jobs.c.status.in_(ACTIVE))
                      .values(status="cancelled", finished_at=time.time()))
        return self.get_job(job_id, token_id)

    # -------------------------------------------------------------------------- workers

    def claim(self, worker: str) -> Job | None:
        """Take the oldest queued job for ``worker``, or None when none is queued."""
        claim = uuid.uuid4().hex
        oldest = (select(jobs.c.id).where(jobs.c.status == "queued")
                  .order_by(jobs.c.created_at, jobs.c.id).limit(1))
        if self._skip_locked:
            oldest = oldest.with_for_update(skip_locked=True)
        now = time.time()
        with self.engine.begin() as c:
            n = c.execute(update(jobs).where(jobs.c.id == oldest.scalar_subquery(),
                                             jobs.c.status == "queued")
                          .values(status="running", claim=claim, worker=worker, started_at=now,
                                  heartbeat_at=now, attempts=jobs.c.attempts + 1)).rowcount
        if not n:
            return None
        with self.engine.connect() as c:
            row = c.execute(self._select().where(jobs.c.claim == claim)).first()
        return _job(row) if row is not None else None

    def _fenced(self, job_id: str, claim: str, **values: Any) -> bool:
        with self.engine.begin() as c:
            return bool(c.execute(update(jobs).where(
                jobs.c.id == job_id, jobs.c.claim == claim, jobs.c.status == "running")
                .values(**values)).rowcount)

    def heartbeat(self, job_id: str, claim: str) -> bool:
        """Keep the claim alive; False once the job was cancelled or taken from this worker."""
        return self._fenced(job_id, claim, heartbeat_at=time.time())

    def progress(self, job_id: str, claim: str, fraction: float, phase: str | None) -> bool:
        return self._fenced(job_id, claim, progress=max(0.0, min(1.0, fraction)),
                            phase=phase[:200] if phase else None, heartbeat_at=time.time())

    def finish(self, job_id: str, claim: str, result: str, trace: str | None = None,
               plot: bytes | None = None) -> bool:
        return self._fenced(job_id, claim, status="done", result=result, trace=trace,
                            plot=plot, progress=1.0, finished_at=time.time())

    def fail(self, job_id: str, claim: str, error: str) -> bool:
        return self._fenced(job_id, claim, status="failed", error=error, finished_at=time.time())

    def requeue_orphans(self, lease_s: float, dead_servers: frozenset[str] = frozenset()) -> int:
        """Queue again running jobs whose worker stopped reporting ``lease_s`` ago, or whose
        worker belonged to a server (``host:pid`` prefix) now known to be dead."""
        stale = time.time() - lease_s
        cond = jobs.c.heartbeat_at < stale
        for server in dead_servers:
            cond = cond | jobs.c.worker.like(f"{server}:%")
        with self.engine.begin() as c:
            return c.execute(update(jobs).where(jobs.c.status == "running", cond).values(
                status="queued", claim=None, worker=None, heartbeat_at=None,
                progress=0.0, phase="queued again after its worker stopped")).rowcount

    def running_jobs_of(self, worker: str) -> list[tuple[str, str]]:
        """(id, claim) of the jobs ``worker`` holds."""
        with self.engine.connect() as c:
            return [(i, cl) for i, cl in c.execute(select(jobs.c.id, jobs.c.claim).where(
                jobs.c.status == "running", jobs.c.worker == worker))]

    def running_workers(self) -> list[str]:
        with self.engine.connect() as c:
            return [w for (w,) in c.execute(select(jobs.c.worker).where(
                jobs.c.status == "running", jobs.c.worker.is_not(None)))]


def this_host() -> str:
    return socket.gethostname()
