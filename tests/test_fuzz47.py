"""robust47 (benchmarks/fuzz_inputs47.py): unusual but legal shapes (odd head counts, one KV
head, one layer, tiny vocabularies, MLA's dims apart, one expert, 1M tokens) on their own and
under nine parallel layouts and five frameworks, a size doubled (never faster), odd node sizes,
Hugging Face files of those shapes, export / profile / plan / goodput flags, and the service's
HTTP endpoints. On main 823388df one class: the service's 422 for a value not among a choice's
(``GET /api/v1/catalog/gpu``, a job's ``kind: simulat``) named no nearest value, where the CLI's
``catalog gpu`` does. The fast tests here; the whole fuzz under -m slow."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    pytest.importorskip("fastapi")
    import fuzz_inputs47

    with contextlib.ExitStack() as stack:
        yield fuzz_inputs47._client(stack, str(tmp_path_factory.mktemp("svc47")))


@pytest.mark.parametrize("kind,meant", [("gpu", "gpus"), ("GPUS", "gpus"), ("model", "models"),
                                        ("framework", "frameworks"), ("topology", "topologies")])
def test_a_catalog_kind_near_miss_names_the_nearest(client, kind, meant):
    http, headers = client
    r = http.get(f"/api/v1/catalog/{kind}", headers=headers)
    assert r.status_code == 422
    body = r.json()
    assert body["field"] == "path.kind" and f"(did you mean '{meant}'?)" in body["error"]
    assert "\n" not in body["error"]


@pytest.mark.parametrize("kind,meant", [("simulat", "simulate"), ("SEARCH", "search"),
                                        ("plans", "plan")])
def test_a_job_kind_near_miss_names_the_nearest(client, kind, meant):
    http, headers = client
    r = http.post("/api/v1/jobs", content=json.dumps({"kind": kind, "config": {}}),
                  headers=headers)
    assert r.status_code == 422 and r.json()["field"] == "kind"
    assert f"(did you mean '{meant}'?)" in r.json()["error"]


def test_a_choice_with_no_near_value_suggests_none(client):
    http, headers = client
    r = http.get("/api/v1/catalog/x", headers=headers)
    assert r.status_code == 422 and "did you mean" not in r.json()["error"]
    assert http.get("/api/v1/catalog/gpus", headers=headers).status_code == 200


def test_the_fast_surfaces_find_no_failure_class():
    import fuzz_inputs47
    assert fuzz_inputs47.main(["--only", "hfshapes,service"]) == 0


@pytest.mark.slow
def test_the_whole_fuzz47_run_finds_no_failure_class():
    import fuzz_inputs47
    assert fuzz_inputs47.main([]) == 0
