"""`trainsim token create` and `trainsim serve` on the command line."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

pytest.importorskip("sqlalchemy")

from trainsim.cli import main  # noqa: E402
from trainsim.service.store import TOKEN_PREFIX, Store  # noqa: E402


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
