"""`trainsim token create` and `trainsim serve` on the command line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

pytest.importorskip("sqlalchemy")

from sqlalchemy import text

from trainsim.cli import main
from trainsim.service.store import TOKEN_PREFIX, Store


def test_token_create_prints_a_token_the_store_knows_once(tmp_path):
    db = f"sqlite:///{tmp_path / 'svc' / 'jobs.db'}"
    res = CliRunner().invoke(main, ["token", "create", "alice", "--db", db])
    assert res.exit_code == 0, res.stderr
    token = res.stdout.strip()
    assert token.startswith(TOKEN_PREFIX) and len(token) > 40
    again = CliRunner().invoke(main, ["token", "create", "alice", "--db", db]).stdout.strip()
    store = Store(db)
    assert store.token_id(token) and store.token_id(again) and token != again
    store.close()


def test_token_create_refuses_an_empty_name(tmp_path):
    res = CliRunner().invoke(main, ["token", "create", "  ", "--db",
                                    f"sqlite:///{tmp_path / 'jobs.db'}"])
    assert res.exit_code == 2 and res.stderr.strip() == "error: token name must not be empty"


def test_serve_refuses_negative_workers():
    res = CliRunner().invoke(main, ["serve", "--workers", "-1"])
    assert res.exit_code == 2 and "--workers=-1 must be >= 0" in res.stderr


def test_token_list_shows_names_and_revoke_refuses_the_token(tmp_path):
    db = f"sqlite:///{tmp_path / 'jobs.db'}"
    token = CliRunner().invoke(main, ["token", "create", "alice", "--db", db]).stdout.strip()
    CliRunner().invoke(main, ["token", "create", "bob", "--db", db])
    listed = CliRunner().invoke(main, ["token", "list", "--db", db])
    lines = listed.stdout.splitlines()
    assert listed.exit_code == 0 and lines[0].split() == ["ID", "NAME", "CREATED", "REVOKED"]
    assert [ln.split()[1] for ln in lines[1:]] == ["alice", "bob"] and token not in listed.stdout
    res = CliRunner().invoke(main, ["token", "revoke", "alice", "--db", db])
    assert res.exit_code == 0 and res.stdout.startswith("revoked ") and "(alice)" in res.stdout
    store = Store(db)
    assert store.token_id(token) is None
    store.close()
    rows = json.loads(CliRunner().invoke(main, ["token", "list", "--db", db, "--format",
                                                "json"]).stdout)
    assert [(r["name"], r["revoked_at"] is None) for r in rows] == [("alice", False),
                                                                    ("bob", True)]
    again = CliRunner().invoke(main, ["token", "revoke", "alice", "--db", db])
    assert again.exit_code == 2 and "no unrevoked token has the id or name 'alice'" in again.stderr


def test_token_commands_refuse_a_store_newer_than_this_trainsim(tmp_path):
    db = f"sqlite:///{tmp_path / 'jobs.db'}"
    store = Store(db)
    with store.engine.begin() as c:
        c.execute(text("UPDATE schema_version SET version = 999"))
    store.close()
    res = CliRunner().invoke(main, ["token", "list", "--db", db])
    assert res.exit_code == 2 and "schema version 999, newer than this trainsim's" in res.stderr
