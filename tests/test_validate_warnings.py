"""`trainsim validate --format json` and a service validate job carry the trainsim warnings said
while the file was read and its rows predicted (a row id given twice, a layer record given twice,
a row's node past its GPU's NVLink domain): ``warnings``, each once, in order, as simulate and
sweep JSON do (28th session, chores29). Before, the CLI printed them on stderr only (a row's
warning once per worker process) and a validate job's user read none of them."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from helpers import cli

from trainsim.validate import validate_file

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "trainsim" / "data" / "validation"
HEADER = "id,model,gpu,num_gpus,gpus_per_node,tp,pp,global_batch_size,seq_length,measured_iteration_s"
ROWS = ["a,llama3-8b,h100-sxm-80gb,16,16,1,1,16,2048,1.0",  # a 16-GPU node: past H100's 8
        "b,llama3-8b,h100-sxm-80gb,16,16,2,1,16,2048,1.0",  # the same warning again
        "a,llama3-8b,h100-sxm-80gb,8,8,1,1,8,2048,1.0"]     # id 'a' twice
DOMAIN = "cluster.gpus_per_node=16 exceeds the largest NVLink domain"


def _csv(tmp_path: Path, rows: list[str] = ROWS) -> Path:
    path = tmp_path / "t.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def _job(options: dict, tmp_path: Path) -> dict:
    from trainsim.service import Settings, jobs
    settings = Settings(db_url=f"sqlite:///{tmp_path / 'jobs.db'}", workers=0, checkers=0)
    assert jobs.problem("validate", {}, options, settings) is None
    return json.loads(jobs.run("validate", {}, options, settings).result)


def test_validate_json_carries_each_warning_once_in_order(tmp_path):
    path = _csv(tmp_path)
    got = cli("validate", str(path), "--compute-db", "none", "--workers", "2", "--format", "json")
    said = json.loads(got.stdout)["warnings"]
    assert len(said) == 2, said
    assert said[0] == f"{path} rows 1 and 3 both have id 'a'; each counts in the summary"
    assert said[1].startswith(DOMAIN)
    # stderr says the same, once each (before: the domain warning once per worker process)
    printed = [ln for ln in got.stderr.splitlines() if ln.startswith("warning:")]
    assert printed == [f"warning: {w}" for w in said]


def test_a_clean_file_says_an_empty_list(tmp_path):
    path = _csv(tmp_path, ROWS[2:])
    got = cli("validate", str(path), "--compute-db", "none", "--format", "json")
    assert json.loads(got.stdout)["warnings"] == []


def test_a_row_warning_raised_in_a_worker_process_reaches_the_caller_once(tmp_path):
    """validate_file says a row's warnings again in the caller's process, once a file: with
    workers the caller heard none of them (they were raised in the worker processes)."""
    for workers in (1, 2):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            validate_file(_csv(tmp_path), workers=workers, compute_db=None)
        assert sum(str(w.message).startswith(DOMAIN) for w in seen) == 1, workers


def test_a_validate_job_carries_the_cli_warnings_each_time(tmp_path):
    """The job's JSON is the CLI's with the upload named options.csv (not the server's file);
    a second job in the same process says the row's warning again (before: once a process)."""
    path = _csv(tmp_path)
    printed = json.loads(cli("validate", str(path), "--format", "json").stdout)
    text = path.read_text()
    for _ in range(2):
        got = _job({"csv": text}, tmp_path)
        assert got["rows"] == printed["rows"] and got["summary"] == printed["summary"]
        assert got["warnings"] == [w.replace(str(path), "options.csv", 1)
                                   for w in printed["warnings"]]
        assert got["warnings"][0].startswith("options.csv rows 1 and 3")


def test_a_layer_record_given_twice_is_in_the_json(tmp_path):
    lines = (DATA / "layers_h100_measured.jsonl").read_text().splitlines()[:2]
    path = tmp_path / "l.jsonl"
    path.write_text("\n".join(lines + lines[1:]) + "\n")
    said = json.loads(cli("validate", str(path), "--compute-db", "none", "--format",
                          "json").stdout)["warnings"]
    assert len(said) == 1 and "lines 2 and 3 are both record" in said[0]
