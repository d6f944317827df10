"""robust47 (benchmarks/fuzz_inputs47.py): unusual but legal shapes (odd head counts, one KV
head, one layer, tiny vocabularies, MLA's dims apart, one expert, 1M tokens) on their own and
under nine parallel layouts and five frameworks, a size doubled (never faster), odd node sizes,
Hugging Face files of those shapes, export / profile / plan / goodput flags, and the service's
HTTP endpoints. On main 823388df one class: the service's 422 for a value not among a choice's
(``GET /api/v1/catalog/gpu``, a job's ``kind: simulat``) named no nearest value, where the CLI's
``catalog gpu`` does; and ``profile`` checked its grid (an unknown ``--models`` name, a ``--cp``
the sequences cannot split) only after importing PyTorch (30 s on the loaded box). The fast
tests here; the whole fuzz under -m slow."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
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


@pytest.mark.parametrize("flags,says", [(["--models", "llama3-8"], "did you mean 'llama3-8b'"),
                                        (["--cp", "3"], "divisible by 2*cp=6")])
def test_profile_checks_its_grid_before_importing_torch(tmp_path, flags, says):
    """fuzz47: the grid was checked after PyTorch was imported and the device opened (3.0 CPU s,
    30 s on the loaded box, against 1.0 and 8.6)."""
    code = ("import sys; from click.testing import CliRunner; from trainsim.cli import main; "
            "r = CliRunner().invoke(main, sys.argv[1:]); "
            "print(r.exit_code, 'torch' in sys.modules); print(r.output)")
    args = ["profile", "--gpu", "h100-sxm-80gb", "--out", str(tmp_path / "db.json"),
            "--device", "cpu", "--quick", "--no-kernels", *flags]
    done = subprocess.run([sys.executable, "-c", code, *args], check=False, capture_output=True,
                          text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(
                              Path(__file__).resolve().parents[1] / "src")})
    first, _, output = done.stdout.partition("\n")
    assert first == "2 False", done.stdout + done.stderr
    assert says in output and not (tmp_path / "db.json").exists()
