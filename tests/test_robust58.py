"""robust58: robust57's leads (``max_active_jobs`` across API processes, SI multiples in the web
form's token field, a GPU file's ``aliases`` dropped without a word, the 2**53 rule of counts
read outside a config) and the thirty-eighth fuzz round's classes (``benchmarks/fuzz58.py``).
Each test but the controls fails on the previous src."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------ max_active_jobs (robust57 lead 1)

_SUBMITTER = r"""
import sys, time
from pathlib import Path
from trainsim.service.store import Store

url, token_id, folder, me, locked = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4], \
    sys.argv[5] == "1"
store = Store(url)
if locked:
    count = store._count_active

    def slow(c, t):  # the window between a submit's count and its insert
        n = count(c, t)
        time.sleep(0.3)
        return n

    store._count_active = slow
(folder / f"ready{me}").write_text("")
while not (folder / "go").exists():
    time.sleep(0.01)
made = 0
for _ in range(3):
    if locked:
        made += store.create_job_within(token_id, "simulate", {}, 3) is not None
    else:  # the count and the insert apart, as one API process did before robust58
        n = store.active_count(token_id)
        time.sleep(0.3)
        if n < 3:
            store.create_job(token_id, "simulate", {})
            made += 1
print(made)
"""


@pytest.fixture(scope="module")
def pg_url():
    from trainsim.service.testing import postgres_or_skip

    yield from postgres_or_skip("PostgreSQL store tests")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    pytest.importorskip("sqlalchemy")
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'jobs.db'}"
    from trainsim.service.store import Store, metadata

    url = request.getfixturevalue("pg_url")
    s = Store(url)
    with s.engine.begin() as c:  # a clean slate per test on the shared server
        for table in reversed(metadata.sorted_tables):
            if table.name != "schema_version":
                c.execute(table.delete())
    s.close()
    return url


def _two_processes(url: str, folder: Path, locked: bool) -> int:
    """Jobs two processes sharing one store create for one token, three submits each against
    a limit of 3, started together."""
    from trainsim.service.store import Store

    store = Store(url)
    store.create_token("t")
    (token_id,) = [t.id for t in store.list_tokens()]
    import trainsim  # the processes run the trainsim this test imports

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(trainsim.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, "-c", _SUBMITTER, url, token_id, str(folder),
                               str(k), "1" if locked else "0"], env=env, stdout=subprocess.PIPE,
                              text=True) for k in range(2)]
    deadline = time.monotonic() + 120
    while not all((folder / f"ready{k}").exists() for k in range(2)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.02)
    (folder / "go").write_text("")
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    made = sum(int(o.strip()) for o in outs)
    assert made == store.active_count(token_id)
    store.close()
    return made


def test_two_api_processes_on_one_store_never_pass_max_active_jobs(store_url, tmp_path):
    """``Store.create_job_within`` counts and inserts under the token's write lock (SQLite
    ``BEGIN IMMEDIATE``, PostgreSQL the token row's ``FOR UPDATE``): two processes on one
    database, three submits each, make exactly the limit's 3 jobs."""
    assert _two_processes(store_url, tmp_path, locked=True) == 3


def test_control_the_two_processes_race_without_the_lock(tmp_path):
    """Control (passes on the previous src too): the same two processes counting and inserting
    apart, as an API process did with only its own lock, make more than the limit, so the test
    above can fail."""
    pytest.importorskip("sqlalchemy")
    assert _two_processes(f"sqlite:///{tmp_path / 'jobs.db'}", tmp_path, locked=False) > 3


# ------------------------------------------------------------ 2**53 (robust57 lead 4)

BIG = [str(2**53 + 1), 2**60, "1e30", 1e30]


def test_a_count_past_2_53_is_refused_alike_by_a_config_the_service_and_the_cli():
    """A config refused 2**60 "out of range (at most 2**53)" but read the text
    '9007199254740993' through a float as 2**53; the service took an int 2**60 as
    ``options.top``; the CLI took ``--top 2**60`` where the option has no bound. Now each says
    the config's words."""
    from helpers import cli

    from trainsim.catalog import run_config_from_dict
    from trainsim.errors import ConfigError
    from trainsim.service import Settings
    from trainsim.service.jobs import problem

    for v in BIG:
        with pytest.raises(ConfigError, match=r"cluster\.num_gpus=.* is out of range \(at most"):
            run_config_from_dict({"model": "llama3-8b",
                                  "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": v}})
        got = problem("search", {}, {"model": "llama3-8b", "gpus": 8, "global_batch": 16,
                                     "seq": 512, "top": v}, Settings(workers=0, checkers=0))
        assert got is not None and got[1] == "options.top" and "out of range (at most 2**53)" \
            in got[2], (v, got)
    for args in (["--top", str(2**60)], ["--tp", f"1,{2**60}"]):
        r = cli("search", "llama3-8b", "--gpus", "8", "--global-batch", "16", "--seq", "512", *args)
        assert r.exit_code == 2 and "out of range (at most 2**53)" in r.output, r.output


def test_control_2_53_itself_and_whole_numbers_as_floats_still_read():
    """Control: 2**53 and ``'8.0'`` are counts everywhere, as before."""
    from trainsim.config.number_text import whole_number

    assert whole_number(2**53) == whole_number(str(2**53)) == 2**53
    assert whole_number("8.0") == whole_number(8.0) == 8
    assert whole_number(8.5) is None and whole_number("x") is None


def test_digit_text_past_2_53_is_read_exactly_not_through_a_float():
    from trainsim.config.number_text import beyond_max_int, whole_value

    assert whole_value(str(2**53 + 1)) == 2**53 + 1 and beyond_max_int(str(2**53 + 1))
    assert whole_value("1_000") == 1000 and not beyond_max_int("x")


# ------------------------------------------------------------ a GPU file's aliases (robust57 lead 3)

def _gpu_run(tmp_path: Path, gpu_text: str) -> str:
    (tmp_path / "mygpu.yaml").write_text(gpu_text, encoding="utf-8")
    run = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                     "vocab_size": 1024},
           "training": {"global_batch_size": 16, "seq_length": 512},
           "cluster": {"gpu": str(tmp_path / "mygpu.yaml"), "num_gpus": 8, "gpus_per_node": 8}}
    (tmp_path / "run.yaml").write_text(__import__("json").dumps(run), encoding="utf-8")
    return str(tmp_path / "run.yaml")


def test_a_gpu_files_aliases_are_said_to_be_unread_in_one_warning_line(tmp_path):
    """A catalog GPU file copied as a user's own: its ``aliases`` were dropped without a word;
    now one warning line names them and the field, and the run answers."""
    from helpers import cli

    text = (ROOT / "src/trainsim/catalog/gpus/h100-sxm-80gb.yaml").read_text(encoding="utf-8")
    r = cli("simulate", _gpu_run(tmp_path, text), "--format", "json")
    warned = [ln for ln in r.stderr.splitlines() if "aliases" in ln]
    assert r.exit_code == 0 and len(warned) == 1 and "cluster.gpu=" in warned[0] \
        and "h100-80gb" in warned[0], r.stderr


def test_control_a_gpu_file_without_aliases_warns_of_nothing(tmp_path):
    from helpers import cli

    text = (ROOT / "src/trainsim/catalog/gpus/h100-sxm-80gb.yaml").read_text(encoding="utf-8")
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("aliases:"))
    r = cli("simulate", _gpu_run(tmp_path, text), "--format", "json")
    assert r.exit_code == 0 and "aliases" not in r.stderr


# ------------------------------------------------------------ the round's classes (fuzz58)

TOKENS_RUN = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                        "vocab_size": 1024},
              "parallel": {}, "training": {"global_batch_size": 16, "seq_length": 512},
              "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                          "compute_db": None}}


def _said(r) -> str:
    return next(ln for ln in r.stderr.splitlines() if ln.startswith("error: "))


@pytest.mark.parametrize("text", ["abc", "-15T", "1e400", "15TT", "0x10"])
def test_plan_and_goodput_refuse_one_tokens_text_in_the_same_words(tmp_path, text):
    """plan said "'abc' is not a number (suffixes k, M, B/G, T, P allowed)" and
    "--tokens=-15000000000000.0 must be a positive number", goodput "use a number with an
    optional K/M/B/T suffix" (it takes G and P too); now ``config.number_text.token_count``
    is both commands' rule and words."""
    from helpers import cli

    run = tmp_path / "run.json"
    run.write_text(__import__("json").dumps(TOKENS_RUN), encoding="utf-8")
    plan = cli("plan", str(run), "--tokens", text, "--days", "30", "--max-gpus", "8",
               "--seq", "512", "--global-batch", "16")
    good = cli("goodput", str(run), "--tokens", text)
    assert plan.exit_code == good.exit_code == 2
    assert _said(plan) == _said(good) and f"--tokens {text!r}" in _said(plan), \
        (_said(plan), _said(good))


def test_control_a_tokens_text_with_g_or_p_is_taken_by_goodput():
    from trainsim.reliability.cli import parse_tokens

    assert parse_tokens("300G") == parse_tokens("300B") == 3e11
    assert parse_tokens("1P") == 1e15


def test_a_rows_count_cell_past_2_53_is_refused_naming_the_column():
    """``validate.common.count_cell`` read '9007199254740993' through a float as 2**53, within
    ``MAX_COUNT``; a config refuses that count "out of range (at most 2**53)"."""
    from trainsim.errors import ConfigError
    from trainsim.validate.common import count_cell

    with pytest.raises(ConfigError, match=r"column 'wgrad_deferral_limit'='9007199254740993' "
                                          r"is out of range \(at most 2\*\*53\)"):
        count_cell({"wgrad_deferral_limit": str(2**53 + 1)}, "wgrad_deferral_limit", least=0)
    assert count_cell({"etp": "1_000"}, "etp") == 1000 and count_cell({"etp": "2.0"}, "etp") == 2


def _deferral_warnings(parallel: dict) -> list[str]:
    import copy
    import warnings

    from trainsim.catalog import run_config_from_dict

    raw = copy.deepcopy(TOKENS_RUN)
    raw["parallel"] = parallel
    raw["cluster"]["num_gpus"] = 8 * parallel.get("pp", 1)
    raw["training"]["framework"] = "megatron-core"
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        run_config_from_dict(raw)
    return [str(x.message) for x in w if "defer" in str(x.message)]


def test_output_layer_deferral_settings_that_change_nothing_are_warned_of():
    """``defer_embedding_wgrad_compute: true`` at pp 1 (Megatron-core refuses it there) and a
    ``wgrad_deferral_limit`` where no micro-batch defers were taken without a word."""
    (said,) = _deferral_warnings({"defer_embedding_wgrad_compute": True})
    assert said.startswith("parallel.defer_embedding_wgrad_compute=true is ignored") \
        and "parallel.pp=1" in said
    (said,) = _deferral_warnings({"pp": 2, "wgrad_deferral_limit": 4})
    assert said.startswith("parallel.wgrad_deferral_limit=4 is ignored")


def test_control_a_deferral_that_defers_is_not_warned_of():
    assert _deferral_warnings({"pp": 2, "defer_embedding_wgrad_compute": True,
                               "wgrad_deferral_limit": 1}) == []
    assert _deferral_warnings({"pp": 2, "defer_embedding_wgrad_compute": False}) == []


def test_the_round_files_stay_importable_and_the_fuzz_script_takes_its_flags():
    """The round's scripts import (their surfaces build) without running an input."""
    import random
    import tempfile

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fuzz58

    with tempfile.TemporaryDirectory() as d:
        names = sorted(fuzz58.surfaces(d, random.Random(0)))
    assert names == ["exportrt", "mllama", "planedges", "rowcols"]


@pytest.mark.slow
def test_the_whole_round_finds_no_class():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fuzz58

    assert fuzz58.main([]) == 0
