"""The job store's schema version: a new store records it, an older one is upgraded in place
keeping its data, a newer one is refused (SQLite, and PostgreSQL where a server can start)."""

from __future__ import annotations

import threading
import uuid

import pytest

pytest.importorskip("sqlalchemy")

from sqlalchemy import create_engine, text

from trainsim.errors import ConfigError
from trainsim.service.store import SCHEMA_VERSION, Store, hash_token, stored_version

# the layout of the first stores, before the schema had a version (no jobs.plot, no
# tokens.revoked_at), as SQL both databases take
BEFORE_VERSIONS = (
    ("CREATE TABLE tokens (id VARCHAR(32) PRIMARY KEY, name VARCHAR(200) NOT NULL, "
     "token_hash VARCHAR(64) NOT NULL UNIQUE, created_at FLOAT NOT NULL)"),
    ("CREATE TABLE jobs (id VARCHAR(32) PRIMARY KEY, token_id VARCHAR(32) NOT NULL, "
     "kind VARCHAR(20) NOT NULL, status VARCHAR(12) NOT NULL, request TEXT NOT NULL, "
     "progress FLOAT NOT NULL, phase VARCHAR(200), result TEXT, trace TEXT, error TEXT, "
     "created_at FLOAT NOT NULL, started_at FLOAT, finished_at FLOAT, claim VARCHAR(32), "
     "worker VARCHAR(200), heartbeat_at FLOAT, attempts INTEGER NOT NULL)"),
)


@pytest.fixture(scope="module")
def pg_url():
    from trainsim.service.testing import postgres_or_skip

    yield from postgres_or_skip("PostgreSQL schema tests")


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request, tmp_path):
    """The URL of an empty database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'jobs.db'}"
    server = request.getfixturevalue("pg_url")
    name = f"t{uuid.uuid4().hex[:12]}"
    engine = create_engine(server.replace("postgresql://", "postgresql+psycopg://"),
                           isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        c.execute(text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return server.rsplit("/", 1)[0] + "/" + name


def _version(store: Store) -> int | None:
    with store.engine.connect() as c:
        return stored_version(c)


def test_a_new_store_records_the_current_version(empty_url):
    store = Store(empty_url)
    assert _version(store) == SCHEMA_VERSION
    store.close()


def test_a_store_from_before_versions_is_upgraded_keeping_its_tokens_and_jobs(empty_url):
    old = create_engine(empty_url.replace("postgresql://", "postgresql+psycopg://"))
    with old.begin() as c:
        for ddl in BEFORE_VERSIONS:
            c.execute(text(ddl))
        c.execute(text("INSERT INTO tokens VALUES ('t1', 'alice', :h, 1.0)"),
                  {"h": hash_token("tsk_old")})
        c.execute(text("INSERT INTO jobs (id, token_id, kind, status, request, progress, "
                       "result, created_at, attempts) VALUES ('j1', 't1', 'simulate', 'done', "
                       "'{}', 1.0, '{\"mfu\": 0.5}\n', 2.0, 1)"))
    old.dispose()
    store = Store(empty_url)
    assert _version(store) == SCHEMA_VERSION
    assert store.token_id("tsk_old") == "t1"
    job = store.get_job("j1", "t1")
    assert job.status == "done" and job.result == '{"mfu": 0.5}\n' and not job.has_plot
    new = store.create_job("t1", "goodput", {})  # the added columns work
    claimed = store.claim("h:1:0")
    assert claimed.id == new and store.finish(new, claimed.claim, "{}\n", plot=b"\x89PNG")
    assert store.get_job(new).has_plot
    assert [t.id for t in store.revoke_token("alice")] == ["t1"]
    assert store.token_id("tsk_old") is None
    store.close()


def test_a_store_newer_than_this_trainsim_is_refused(empty_url):
    store = Store(empty_url)
    with store.engine.begin() as c:
        c.execute(text("UPDATE schema_version SET version = :v"), {"v": SCHEMA_VERSION + 7})
    store.close()
    with pytest.raises(ConfigError, match=f"schema version {SCHEMA_VERSION + 7}, newer than "
                                          f"this trainsim's {SCHEMA_VERSION}: upgrade trainsim"):
        Store(empty_url)


def test_stores_opened_at_once_on_an_empty_database_all_start(empty_url):
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            Store(empty_url).close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    store = Store(empty_url)
    with store.engine.connect() as c:
        assert c.execute(text("SELECT version FROM schema_version")).scalars().all() == [
            SCHEMA_VERSION]
    store.close()


@pytest.mark.parametrize("rounds", [
    # 40 rounds by default (4.6 CPU s for 100 on this 2-core host, suite50); the 49th session's
    # 100 under -m slow
    40, pytest.param(100, marks=pytest.mark.slow)])
def test_many_rounds_of_sqlite_stores_opened_at_once_all_start(tmp_path, rounds):
    """Switching a new SQLite file to WAL fails at once, without the busy handler, while another
    connection holds a lock; without the retry, eight stores opened together on a new file lose
    one ("database is locked") in a share of rounds that depends on the machine's load, so the
    test runs many rounds."""
    errors: list[BaseException] = []

    def open_one(url: str) -> None:
        try:
            Store(url).close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    for r in range(rounds):
        url = f"sqlite:///{tmp_path}/round{r}.db"
        threads = [threading.Thread(target=open_one, args=(url,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not errors, errors
