"""A bounded property-based run over the API's routes: whatever the body or path, the
server answers with one of its documented statuses and a JSON error naming a field."""

from __future__ import annotations

import copy
import string
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient

from trainsim.service import Settings, create_app
from trainsim.service.jobs import KINDS, OPTIONS

EXAMPLE = yaml.safe_load((Path(__file__).resolve().parents[1] / "examples" /
                          "llama3-8b-h100.yaml").read_text())
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8)


@st.composite
def mutated_config(draw):
    """The example config with one field set to something arbitrary (or a new field)."""
    cfg = copy.deepcopy(EXAMPLE)
    section = draw(st.sampled_from(["model", "parallel", "training", "cluster", "extra"]))
    if section == "model":
        cfg["model"] = draw(st.one_of(st.text(max_size=12), JSON))
        return cfg
    fields = cfg.setdefault(section, {})
    key = draw(st.one_of(st.sampled_from(sorted(fields) or ["x"]), st.text(max_size=10)))
    fields[key] = draw(JSON)
    return cfg


@st.composite
def job_body(draw):
    kind = draw(st.one_of(st.sampled_from(KINDS), st.text(max_size=8)))
    names = sorted(OPTIONS.get(kind, {"x": None}))
    options = draw(st.dictionaries(st.one_of(st.sampled_from(names), st.text(max_size=8)),
                                   JSON, max_size=3))
    config = draw(st.one_of(mutated_config(), JSON))
    return draw(st.sampled_from([{"kind": kind, "config": config, "options": options},
                                 {"kind": kind, "config": config}, config]))


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    db = tmp_path_factory.mktemp("fuzz") / "jobs.db"
    app = create_app(Settings(db_url=f"sqlite:///{db}", workers=0, checkers=0).with_limits(
        max_active_jobs=10**6, max_candidates=2000, sync_timeout_s=0.05), start_workers=False)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, {"Authorization": f"Bearer {app.state.store.create_token('fuzz')}"}


def _is_error(r) -> bool:
    body = r.json()
    return set(body) == {"error", "field"} and body["error"] and "\n" not in body["error"]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])
@given(body=job_body())
def test_any_job_body_is_queued_or_refused_with_a_named_field(api, body):
    client, auth = api
    r = client.post("/api/v1/jobs", json=body, headers=auth)
    assert r.status_code in (202, 413, 422), r.text
    if r.status_code == 202:
        assert r.json()["status"] == "queued"
    else:
        assert _is_error(r), r.text


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])
@given(config=mutated_config())
def test_sync_simulate_answers_or_refuses_any_config(api, config):
    client, auth = api
    r = client.post("/api/v1/simulate", json={"config": config}, headers=auth)
    assert r.status_code in (422, 504), r.text  # no worker: a valid config times out
    assert _is_error(r)


@settings(max_examples=30, deadline=None, suppress_health_check=[
          HealthCheck.function_scoped_fixture])
@given(segment=st.text(string.ascii_letters + string.digits + "-_.~", min_size=1, max_size=40),
       route=st.sampled_from(["/api/v1/jobs/{}", "/api/v1/jobs/{}/trace",
                              "/api/v1/jobs/{}/result", "/api/v1/catalog/{}"]))
def test_unknown_ids_and_kinds_are_json_errors(api, segment, route):
    client, auth = api
    r = client.get(route.format(segment), headers=auth)
    assert r.status_code in (200, 404, 422), r.text
    if r.status_code != 200:
        assert _is_error(r), r.text
