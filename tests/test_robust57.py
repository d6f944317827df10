"""robust57: robust56's leads (a 301-digit table cell; the goodput trial limit blaming
``--trials`` for a slow checkpoint) and the thirty-seventh fuzz round's classes
(``benchmarks/fuzz57.py``): whole numbers written as floats refused by the CLI's counts and
the service's options where a config takes them, empty sections taken or refused unlike the
section left out, a kernel database's unknown GPU named without its file, a catalog GPU file
copied as a user's own refused, emoji codes read in names, concurrent submits past
``max_active_jobs``, the web UI's number fields read by ``parseInt``. Each test but the
controls fails on the previous src."""

from __future__ import annotations

import copy
import json
import re
import threading
import time
from pathlib import Path

import pytest
from helpers import cli, one_error_line

ROOT = Path(__file__).resolve().parents[1]
DENSE = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                   "vocab_size": 1024},
         "parallel": {}, "training": {"global_batch_size": 16, "seq_length": 512},
         "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                     "compute_db": None}}
WALL = re.compile(r"\d[\d,]{19,}")


def _file(tmp_path: Path, raw, name: str = "run.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(raw), encoding="utf-8")
    return str(path)


# ------------------------------------------------------------ numbers printed (lead 1)

def test_amount_prints_a_huge_figure_in_four_digits_and_a_tiny_rate_not_as_zero():
    from trainsim.report.numbers import amount, seconds

    assert amount(1e300) == "1e+300" and amount(123456.7, 1) == "123,456.7"
    assert amount(999_999_999_999.0) == "999,999,999,999" and amount(1e12) == "1e+12"
    assert amount(1.6e-296, tiny=True) == "1.6e-296" and amount(0.0, tiny=True) == "0"
    assert seconds(0.0123) == "12.3 ms" and seconds(12.5) == "12.500 s"
    assert seconds(1e300) == "1e+300 s"


def test_a_huge_data_loading_time_prints_no_wall_of_digits(tmp_path):
    """robust56 lead 1: ``data_prep_s_per_sample: 1e300`` printed a 301-digit cell (rich cut
    it), and tokens/s as 0."""
    raw = copy.deepcopy(DENSE)
    raw["training"]["data_prep_s_per_sample"] = 1e300
    r = cli("simulate", _file(tmp_path, raw))
    assert r.exit_code == 0 and not WALL.search(r.stdout)
    assert "1e+300 s" in r.stdout  # the iteration
    assert re.search(r"tokens/s\s+│\s+\d\.\d+e-29\d", r.stdout)


# ------------------------------------------------------------ goodput's trial limit (lead 2)

@pytest.mark.parametrize("section,field", [
    ("checkpoint", "host_copy_bw_Bps"), ("checkpoint", "storage_read_bw_Bps"),
    ("recovery", "restart_s")])
def test_the_trial_limit_names_what_makes_the_run_endless(tmp_path, section, field):
    """robust56 lead 2: a checkpoint copied at 1 B/s was refused with "fewer --trials or
    --tokens", options that were not the reason."""
    raw = copy.deepcopy(DENSE)
    raw["reliability"] = {section: {field: 1e9 if field == "restart_s" else 1}}
    line = one_error_line(cli("goodput", _file(tmp_path, raw), "--tokens", "1e9", "--trials",
                              "3"))
    assert f"reliability.{section}.{field}" in line and "fewer --trials" not in line
    assert "interrupted and restarted" in line


def test_a_long_run_still_hears_of_fewer_trials(tmp_path):
    """Control: a run long for its tokens keeps the advice (no checkpoint or recovery to name)."""
    line = one_error_line(cli("goodput", _file(tmp_path, DENSE), "--tokens", "1e30", "--trials",
                              "3"))
    assert "fewer --trials or --tokens" in line


# ------------------------------------------------------------ whole numbers written as floats

@pytest.mark.parametrize("args", [
    ("collective", "--op", "all_reduce", "--gpus", "{8}", "--sizes", "1M", "--format", "json"),
    ("collective", "--op", "all_reduce", "--gpus", "8", "--gpus-per-node", "{8}", "--sizes",
     "1M", "--format", "json")])
@pytest.mark.parametrize("written", ["8.0", "8e0", " 8.00 "])
def test_a_count_option_written_as_a_float_answers_as_the_integer(args, written):
    """``--gpus 8.0`` was "'8.0' is not a valid integer range" where a config's
    ``cluster.num_gpus: 8.0`` is 8."""
    plain = cli(*[a.replace("{8}", "8") for a in args])
    spelt = cli(*[a.replace("{8}", written) for a in args])
    assert spelt.exit_code == 0 and spelt.stdout == plain.stdout


def test_a_fraction_in_a_count_option_is_refused_as_no_integer():
    line = one_error_line(cli("collective", "--op", "all_reduce", "--gpus", "8.5", "--sizes",
                              "1M"))
    assert "--gpus" in line and "'8.5' is not a valid integer" in line


def test_a_size_list_reads_whole_numbers_written_as_floats():
    from trainsim.errors import ConfigError
    from trainsim.search.cli_inputs import parse_ints

    assert parse_ints("1.0, 2e0,4", "tp") == (1, 2, 4)
    with pytest.raises(ConfigError, match="--tp='1.5'"):
        parse_ints("1.5", "tp")


@pytest.mark.parametrize("value", [3.0, "3", "3.0"])
def test_a_service_count_option_written_as_a_float_or_text_is_the_integer(value):
    """``options.trials: 3.0`` was "expected an integer >= 1" where the job's config takes 3.0
    (and the web UI's form sends what was typed)."""
    from trainsim.service import Settings
    from trainsim.service.jobs import problem

    settings = Settings(workers=0, checkers=0)
    assert problem("goodput", DENSE, {"tokens": "1e9", "trials": value}, settings) is None
    bad = problem("goodput", DENSE, {"tokens": "1e9", "trials": 3.5}, settings)
    assert bad is not None and bad[1] == "options.trials"


# ------------------------------------------------------------ empty sections

@pytest.mark.parametrize("section,value", [("training", ""), ("parallel", "  "),
                                           ("parallel", None)])
def test_an_empty_section_answers_as_the_section_left_out(section, value):
    from trainsim.catalog import run_config_from_dict

    raw = copy.deepcopy(DENSE)
    raw.pop("parallel")
    want = run_config_from_dict(copy.deepcopy(raw))
    if section == "training":
        raw["training"] = value
        want = run_config_from_dict({k: v for k, v in raw.items() if k != "training"})
    else:
        raw[section] = value
    assert run_config_from_dict(raw) == want


@pytest.mark.parametrize("section", ["reliability", "reliability.checkpoint",
                                     "reliability.recovery", "cluster.gpu_overrides", "name"])
def test_a_list_given_as_a_section_is_refused_naming_it(section):
    """``reliability: []``, ``gpu_overrides: []`` and ``name: []`` were taken as nothing
    (``x or {}``)."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.errors import ConfigError
    from trainsim.reliability.config import reliability_config_from_dict

    raw = copy.deepcopy(DENSE)
    node = raw
    parts = section.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = []
    with pytest.raises(ConfigError, match=rf"^{re.escape(section)} must be .*got a list"):
        run_config_from_dict(copy.deepcopy(raw))
        reliability_config_from_dict(raw.get("reliability"))


def test_a_null_straggler_section_is_the_defaults():
    """``reliability.straggler: null`` was "must be a mapping of fields, got NoneType" where a
    null checkpoint section is the defaults."""
    from trainsim.reliability.config import reliability_config_from_dict

    assert reliability_config_from_dict({"straggler": None}) == reliability_config_from_dict({})


# ------------------------------------------------------------ files a user brings

def test_a_kernel_database_of_an_unknown_gpu_is_refused_naming_the_file(tmp_path):
    db = json.loads((ROOT / "src/trainsim/data/kernels/h100-sxm-80gb.json").read_text("utf-8"))
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({**db, "gpu": "zz"}), encoding="utf-8")
    raw = copy.deepcopy(DENSE)
    raw["cluster"]["compute_db"] = str(path)
    line = one_error_line(cli("simulate", _file(tmp_path, raw)))
    assert "cluster.compute_db=" in line and "mine.json: its gpu, unknown GPU 'zz'" in line


def test_a_catalog_gpu_file_copied_as_a_users_own_runs_as_the_catalog_name(tmp_path):
    """The catalog's own file, aliases and all, was "unknown field cluster.gpu.aliases"."""
    mine = tmp_path / "mygpu.yaml"
    mine.write_text((ROOT / "src/trainsim/catalog/gpus/h100-sxm-80gb.yaml").read_text("utf-8"),
                    encoding="utf-8")
    raw = copy.deepcopy(DENSE)
    want = cli("simulate", _file(tmp_path, raw), "--format", "json")
    raw["cluster"]["gpu"] = str(mine)
    got = cli("simulate", _file(tmp_path, raw, "mine.json"), "--format", "json")
    assert got.exit_code == 0
    assert json.loads(got.stdout)["iteration_time_s"] == json.loads(want.stdout)["iteration_time_s"]


def test_an_emoji_code_in_a_name_prints_as_written(tmp_path):
    """rich read ``model.name: ':warning:'`` as an emoji (``escape`` keeps only brackets)."""
    raw = copy.deepcopy(DENSE)
    raw["model"]["name"] = ":warning: [red]x[/]"
    r = cli("simulate", _file(tmp_path, raw))
    assert r.exit_code == 0 and ":warning: [red]x[/]" in r.stdout


# ------------------------------------------------------------ the service

def test_concurrent_submits_never_pass_max_active_jobs(tmp_path):
    """Six submits at once against ``max_active_jobs`` 3 left 4-5 jobs queued: each counted the
    token's active jobs before the others' went in."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from trainsim.service import Settings, create_app
    from trainsim.service.settings import Limits

    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 's.db'}", workers=0, checkers=0,
                              limits=Limits(max_active_jobs=3)), start_workers=False)
    store, count = app.state.store, app.state.store._count_active

    def slow_count(c, token_id: str) -> int:  # the window between the count and the insert
        n = count(c, token_id)
        time.sleep(0.05)
        return n
    store._count_active = slow_count
    with TestClient(app) as client:
        headers = {"Authorization": f"Bearer {app.state.store.create_token('t')}"}
        codes: list[int] = []

        def post() -> None:
            codes.append(client.post("/api/v1/jobs", headers=headers,
                                     json={"kind": "simulate", "config": DENSE}).status_code)
        for _ in range(2):
            threads = [threading.Thread(target=post) for _ in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        listed = client.get("/api/v1/jobs", headers=headers).json()
    assert sorted(codes) == [202] * 3 + [429] * 9 and len(listed) == 3


def test_the_round_files_stay_importable_and_the_fuzz_script_takes_its_flags():
    """The round's scripts import (their surfaces build) without running an input."""
    import random
    import sys
    import tempfile

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fuzz57

    with tempfile.TemporaryDirectory() as d:
        names = sorted(fuzz57.surfaces(d, random.Random(0)))
    assert names == ["emptysections", "intfloats", "lifecycle", "names", "printed", "profiledb"]


@pytest.mark.slow
def test_the_whole_round_finds_no_class():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fuzz57

    assert fuzz57.main([]) == 0


def test_a_job_body_posted_to_simulate_says_where_a_kind_goes(tmp_path):
    """robust56 lead 6: "kind: Extra inputs are not permitted" said nothing of /jobs."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from trainsim.service import Settings, create_app

    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 's.db'}", workers=0, checkers=0),
                     start_workers=False)
    with TestClient(app) as client:
        headers = {"Authorization": f"Bearer {app.state.store.create_token('t')}"}
        r = client.post("/api/v1/simulate", headers=headers,
                        json={"kind": "simulate", "config": DENSE})
    assert r.status_code == 422 and r.json()["field"] == "kind"
    assert "POST /api/v1/jobs" in r.json()["error"] and "\n" not in r.json()["error"]
