"""The job store, on SQLite and on a real PostgreSQL server (skipped where none can start)."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("sqlalchemy")

from trainsim.service.store import Store, hash_token


@pytest.fixture(scope="module")
def pg_url():
    from trainsim.service.testing import postgres_or_skip

    yield from postgres_or_skip("PostgreSQL store tests")


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = Store(f"sqlite:///{tmp_path / 'jobs.db'}")
    else:
        s = Store(request.getfixturevalue("pg_url"))
        from trainsim.service.store import metadata

        with s.engine.begin() as c:  # a clean slate per test on the shared server
            for table in reversed(metadata.sorted_tables):
                if table.name != "schema_version":
                    c.execute(table.delete())
    yield s
    s.close()


def test_only_the_hash_of_a_token_is_stored(store):
    token = store.create_token("alice")
    rows = [tuple(r) for r in store.engine.connect().execute(
        __import__("sqlalchemy").text("SELECT * FROM tokens"))]
    assert token not in repr(rows) and hash_token(token) in repr(rows)
    assert store.token_id(token) is not None
    assert store.token_id(token + "x") is None


def test_a_revoked_token_is_refused_and_listed_as_revoked(store):
    first, second = store.create_token("ci"), store.create_token("ci")
    other = store.create_token("alice")
    assert [t.name for t in store.list_tokens()] == ["ci", "ci", "alice"]
    revoked = store.revoke_token("ci")  # by name: every unrevoked token of that name
    assert sorted(t.id for t in revoked) == sorted(
        t.id for t in store.list_tokens() if t.name == "ci")
    assert all(t.revoked_at is not None for t in revoked)
    assert store.token_id(first) is None and store.token_id(second) is None
    assert store.revoke_token("ci") == []  # nothing unrevoked is left to match
    alice = store.token_id(other)
    assert [t.id for t in store.revoke_token(alice)] == [alice]  # by id
    assert store.token_id(other) is None


def test_a_job_is_visible_to_its_token_only(store):
    a, b = (store.token_id(store.create_token(n)) for n in ("a", "b"))
    job_id = store.create_job(a, "simulate", {"config": {"model": "llama3-8b"}})
    assert store.get_job(job_id, a).status == "queued"
    assert store.get_job(job_id, b) is None
    assert [j.id for j in store.list_jobs(a)] == [job_id] and store.list_jobs(b) == []


def test_concurrent_workers_claim_each_job_exactly_once(store):
    tid = store.token_id(store.create_token("t"))
    ids = {store.create_job(tid, "simulate", {"i": i}) for i in range(30)}
    claimed: list[str] = []
    lock = threading.Lock()

    def work(w: int) -> None:
        while (job := store.claim(f"h:1:{w}")) is not None:
            with lock:
                claimed.append(job.id)
            assert store.finish(job.id, job.claim, "{}\n")

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(claimed) == sorted(ids)
    assert store.counts() == {"done": 30}


def test_jobs_are_claimed_oldest_first(store):
    tid = store.token_id(store.create_token("t"))
    first = store.create_job(tid, "simulate", {})
    time.sleep(0.01)
    store.create_job(tid, "simulate", {})
    assert store.claim("h:1:0").id == first


def test_a_requeued_job_cannot_be_finished_by_its_old_claim(store):
    tid = store.token_id(store.create_token("t"))
    job_id = store.create_job(tid, "simulate", {})
    old = store.claim("host:4242:0")
    assert store.requeue_orphans(lease_s=3600, dead_servers=frozenset({"host:4242"})) == 1
    new = store.claim("host:99:0")
    assert new.id == job_id and new.attempts == 2
    assert not store.finish(job_id, old.claim, "stale\n")
    assert store.finish(job_id, new.claim, "fresh\n")
    assert store.get_job(job_id).result == "fresh\n"


def test_only_jobs_past_their_lease_are_requeued(store):
    tid = store.token_id(store.create_token("t"))
    store.create_job(tid, "simulate", {})
    job = store.claim("h:1:0")
    assert store.requeue_orphans(lease_s=60) == 0
    time.sleep(0.05)
    assert store.requeue_orphans(lease_s=0.01) == 1
    assert store.get_job(job.id).status == "queued"


def test_cancel_stops_a_queued_job_and_fences_a_running_one(store):
    tid = store.token_id(store.create_token("t"))
    queued = store.create_job(tid, "simulate", {})
    assert store.cancel(queued, tid).status == "cancelled"
    running = store.create_job(tid, "simulate", {})
    job = store.claim("h:1:0")
    assert job.id == running  # the cancelled one is never claimed
    store.cancel(running, tid)
    assert not store.heartbeat(running, job.claim)
    assert not store.finish(running, job.claim, "{}\n")
    assert store.get_job(running).status == "cancelled"
    assert store.active_count(tid) == 0


def test_the_failure_reason_is_kept(store):
    tid = store.token_id(store.create_token("t"))
    store.create_job(tid, "simulate", {})
    job = store.claim("h:1:0")
    assert store.fail(job.id, job.claim, "the worker process running this job died")
    got = store.get_job(job.id)
    assert got.status == "failed" and "died" in got.error and got.finished_at is not None
