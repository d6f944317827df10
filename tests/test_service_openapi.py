"""A bounded property-based run of the OpenAPI schema (as schemathesis does it): for every
operation the schema lists, requests generated from the schema's own parameter and body
schemas are answered without a server error, with a status the schema documents for that
operation, and with a body that validates against the schema documented for that status."""

from __future__ import annotations

import shutil
import tempfile
import urllib.parse
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
hypothesis_jsonschema = pytest.importorskip("hypothesis_jsonschema")

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from trainsim.service import Settings, create_app


def _settings(directory: Path) -> Settings:
    return Settings(db_url=f"sqlite:///{directory / 'jobs.db'}", workers=0,
                    checkers=0).with_limits(max_active_jobs=10**6, max_candidates=2000,
                                            sync_timeout_s=0.05)


def _schema() -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="trainsim-openapi-"))
    try:
        app = create_app(_settings(tmp), start_workers=False)
        schema = app.openapi()
        app.state.store.close()
        return schema
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


SCHEMA = _schema()
OPERATIONS = [(method.upper(), path) for path, item in SCHEMA["paths"].items()
              for method in item]


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """The app, a token, and one finished job of that token (so that ids can be found)."""
    app = create_app(_settings(tmp_path_factory.mktemp("openapi")), start_workers=False)
    with TestClient(app, raise_server_exceptions=False) as client:
        store = app.state.store
        token = store.create_token("openapi")
        job_id = store.create_job(store.token_id(token), "simulate", {})
        claimed = store.claim("test:1:0")
        store.finish(job_id, claimed.claim, '{"mfu": 0.5}\n', trace='{"traceEvents": []}')
        yield client, {"Authorization": f"Bearer {token}"}, job_id


def _resolved(schema: dict) -> dict:
    """``schema`` with the document's components beside it, so that its $refs resolve."""
    return {**schema, "components": SCHEMA["components"]}


def _values(schema: dict) -> st.SearchStrategy:
    return hypothesis_jsonschema.from_schema(_resolved(schema))


_SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])


@pytest.mark.parametrize(("method", "path"), OPERATIONS)
@_SETTINGS
@given(data=st.data())
def test_every_operation_answers_as_its_schema_says(api, method, path, data):
    """10 requests an operation by default (8.6 CPU s for 25 on this 2-core host, suite50);
    the 25 of the 49th session under ``-m slow`` (``..._many``)."""
    _answers_as_documented(api, method, path, data)


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path"), OPERATIONS)
@settings(_SETTINGS, max_examples=25)
@given(data=st.data())
def test_every_operation_answers_as_its_schema_says_many(api, method, path, data):
    _answers_as_documented(api, method, path, data)


def _answers_as_documented(api, method: str, path: str, data) -> None:
    """A request drawn from the operation's parameter and body schemas is answered without a
    server error, with a documented status and a body its documented schema validates."""
    client, auth, job_id = api
    op = SCHEMA["paths"][path][method.lower()]
    url, query = path, {}
    for param in op.get("parameters", []):
        values = _values(param["schema"])
        if param["in"] == "path":  # a path segment is never empty, nor a dot segment (the
            # client resolves '.' and '..' before sending: another route, not this one)
            values = values.filter(lambda v: str(v) not in ("", ".", ".."))
        if param["name"] == "job_id":  # a real id too, not only ids that match nothing
            values = st.one_of(values, st.just(job_id))
        value = data.draw(values, label=param["name"])
        if param["in"] == "path":
            url = url.replace("{" + param["name"] + "}", urllib.parse.quote(str(value), safe=""))
        elif param["required"] or data.draw(st.booleans(), label=f"send {param['name']}"):
            query[param["name"]] = value
    body = op.get("requestBody", {}).get("content", {}).get("application/json")
    json_body = data.draw(_values(body["schema"]), label="body") if body else None
    r = client.request(method, url, params=query, json=json_body, headers=auth)
    documented = op["responses"]
    assert r.status_code < 500 or str(r.status_code) in documented, r.text
    assert str(r.status_code) in documented, (r.status_code, r.text)
    content = documented[str(r.status_code)].get("content", {})
    want = content.get("application/json", {}).get("schema")
    if want and r.headers.get("content-type", "").startswith("application/json"):
        errors = list(Draft202012Validator(_resolved(want)).iter_errors(r.json()))
        assert not errors, (r.status_code, r.text[:500], errors[0].message)


def test_every_route_needing_a_token_documents_its_401():
    for method, path in OPERATIONS:
        op = SCHEMA["paths"][path][method.lower()]
        assert ("401" in op["responses"]) == (path != "/api/v1/health"), (method, path)
