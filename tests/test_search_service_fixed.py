"""The service's search and plan jobs build their space as ``trainsim search``/``plan`` do
(``search.cli_inputs.search_space``): a ``set`` parallel field narrows it, and a request
answers what the CLI prints for the same flags (issue 20 item 4, lead (a) of the 22nd
session's searchfix block)."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from click.testing import CliRunner
from fastapi.testclient import TestClient

from trainsim.cli import main
from trainsim.service import Settings, create_app

OPTIONS = {"gpus": 8, "global_batch": 32, "seq": 2048, "pp": "1", "cp": "1",
           "recompute": "none", "zero": "1", "overlap": "on", "max_micro_batch": 1,
           "set": ["parallel.tp=2"]}
FLAGS = ["--gpus", "8", "--global-batch", "32", "--seq", "2048", "--pp", "1", "--cp", "1",
         "--recompute", "none", "--zero", "1", "--overlap", "on", "--max-micro-batch", "1",
         "--set", "parallel.tp=2", "--workers", "1"]


def _cli(*args: str) -> dict:
    from trainsim.search.core import DEFAULT_CACHE

    DEFAULT_CACHE.__init__(DEFAULT_CACHE.max_entries)
    res = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def _without_clock(data: dict) -> dict:
    for key in ("elapsed_s", "candidates_per_s", "simulated_per_s"):
        data["stats"].pop(key)
    return data


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    db = tmp_path_factory.mktemp("service") / "jobs.db"
    app = create_app(Settings(db_url=f"sqlite:///{db}", workers=1, lease_s=5.0))
    with TestClient(app) as client:
        token = app.state.store.create_token("searchfix2")
        yield client, {"Authorization": f"Bearer {token}"}


def _job(client, headers, body: dict) -> dict:
    res = client.post("/api/v1/jobs", json=body, headers=headers)
    assert res.status_code in (200, 201, 202), res.text
    job_id = res.json()["id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job = client.get(f"/api/v1/jobs/{job_id}", headers=headers).json()
        if job["status"] in ("done", "failed", "cancelled"):
            assert job["status"] == "done", job
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} not done")


def test_a_search_job_keeps_the_tp_its_set_fixes_as_the_cli_does(served):
    client, headers = served
    job = _job(client, headers, {"kind": "search", "config": {"model": "llama3-8b"},
                                 "options": OPTIONS})
    got = json.loads(job["result"]) if isinstance(job["result"], str) else job["result"]
    assert got["top"] and {c["config"]["tp"] for c in got["top"]} == {2}
    want = _cli("search", "llama3-8b", *FLAGS, "--format", "json")
    assert _without_clock(got) == _without_clock(want)
