"""robust56: robust55's open leads (fp8-only settings on a 16-bit run ignored without a word,
a goodput window shorter than one iteration answered, ``sweep --vary reliability.*`` refused
point by point) and the thirty-sixth fuzz round's classes (``benchmarks/fuzz56.py``): search and
plan size lists none of which splits the model refused without naming the option, a schedule
list with only pp 1 answered, 1F1B named ``''``, the service naming the CLI's flags and
pydantic's union tags. Each test but the controls fails on the previous src."""

from __future__ import annotations

import copy
import json
import re
import sys
import warnings
from pathlib import Path

import pytest
from helpers import cli, one_error_line

from trainsim.errors import TrainsimWarning

ROOT = Path(__file__).resolve().parents[1]
DENSE = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                   "vocab_size": 1024},
         "parallel": {}, "training": {"global_batch_size": 16, "seq_length": 512},
         "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                     "compute_db": None}}
MODEL = "model: {hidden_size: 256, num_layers: 4, num_attention_heads: 4, vocab_size: 1024}\n"


def _raw(**training):
    raw = copy.deepcopy(DENSE)
    raw["training"].update(training)
    return raw


def _ignored(raw) -> list[str]:
    from trainsim.catalog import run_config_from_dict

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run_config_from_dict(copy.deepcopy(raw))
    return [str(w.message) for w in seen if issubclass(w.category, TrainsimWarning)
            and " is ignored: " in str(w.message)]


# ------------------------------------------------------------ fp8-only settings, 16-bit run

@pytest.mark.parametrize("name,value,shown", [
    ("fp8_param_gather", True, "true"), ("num_layers_at_start_in_bf16", 2, "2"),
    ("num_layers_at_end_in_bf16", 1, "1"), ("attention_output_e5m6", True, "true")])
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_an_fp8_only_setting_on_a_16_bit_run_is_a_warning(name, value, shown, dtype):
    """robust55 lead 1: each was taken and ignored without a word (``fp8_recipe`` alone was
    warned of); Megatron-core reads them under ``if self.fp8:`` only."""
    assert _ignored(_raw(dtype=dtype, **{name: value})) == [
        (f"training.{name}={shown} is ignored: training.dtype={dtype} runs no fp8 GEMMs (set "
        "training.dtype=fp8 to use it)")]


@pytest.mark.parametrize("training", [
    {"dtype": "fp8", "fp8_param_gather": True, "num_layers_at_start_in_bf16": 1,
     "fp8_recipe": "current", "attention_output_e5m6": True},  # read
    {"fp8_param_gather": False, "num_layers_at_end_in_bf16": 0},  # asking for nothing
    {"activation_func_fp8_input_store": True},  # a 16-bit SwiGLU reads it too
    {"framework": "torchtitan", "fp8_param_gather": True},  # the profile's own value
])
def test_no_warning_where_the_setting_is_read_or_changes_nothing(training):
    assert _ignored(_raw(**training)) == []


def test_the_input_store_is_read_by_a_16_bit_swiglu():
    """The control's reason: the cast kernels are priced in bf16 (not an fp8-only setting)."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    raw = _raw()
    raw["model"]["activation"] = "swiglu"
    plain = simulate(run_config_from_dict(copy.deepcopy(raw))).iteration_time_s
    raw["training"]["activation_func_fp8_input_store"] = True
    assert simulate(run_config_from_dict(raw)).iteration_time_s > plain


def test_two_settings_two_lines_and_the_recipe_keeps_its_words():
    said = _ignored(_raw(fp8_recipe="blockwise", fp8_param_gather=True))
    assert said == [("training.fp8_recipe=blockwise is ignored: training.dtype=bf16 runs no fp8 "
                    "GEMMs (set training.dtype=fp8 to use the recipe)"),
                    ("training.fp8_param_gather=true is ignored: training.dtype=bf16 runs no fp8 "
                    "GEMMs (set training.dtype=fp8 to use it)")]


def test_simulate_says_it_in_one_warning_line(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_raw(num_layers_at_start_in_bf16=1)))
    r = cli("simulate", str(path))
    assert r.exit_code == 0
    assert [ln for ln in r.stderr.splitlines() if "in_bf16" in ln] == [
        ("warning: training.num_layers_at_start_in_bf16=1 is ignored: training.dtype=bf16 runs "
        "no fp8 GEMMs (set training.dtype=fp8 to use it)")]


# ------------------------------------------------------------ windows and sections

def test_a_goodput_window_shorter_than_one_iteration_is_refused(tmp_path):
    """robust55 lead 2: ``--days 1e-300`` answered goodput 1.0 with no iteration run."""
    path = tmp_path / "run.json"
    path.write_text(json.dumps(DENSE))
    line = one_error_line(cli("goodput", str(path), "--days", "1e-300", "--trials", "3"))
    assert line.startswith("error: days=1e-300 (--days) is a window of 8.64e-296 s, shorter "
                           "than one iteration (")


@pytest.mark.parametrize("section,words", [
    ("reliability", "only trainsim goodput reads the reliability section"),
    ("Reliability", "unknown section 'Reliability'"), ("x-a", "unknown section 'x-a'")])
def test_a_sweep_of_a_section_no_point_reads_is_refused_up_front(tmp_path, section, words):
    """robust55 lead 3: "no point of the sweep is a valid config; first error: ..."."""
    path = tmp_path / "run.json"
    path.write_text(json.dumps(DENSE))
    line = one_error_line(cli("sweep", str(path), "--vary", f"{section}.b=1,2"))
    assert line.startswith(f"error: --vary {section}.b: {words}")


# ------------------------------------------------------------ rates below 1 B/s

@pytest.mark.parametrize("section,name", [
    ("training", "data_read_bw_Bps"),
    *[("reliability.checkpoint", k) for k in ("host_copy_bw_Bps", "storage_write_bw_Bps",
                                              "storage_read_bw_Bps", "node_storage_bw_Bps")]])
def test_a_rate_below_one_byte_a_second_is_refused_naming_it(section, name):
    """fuzz56 rates: ``data_read_bw_Bps: 5e-324`` answered data loading ``Infinity`` (invalid
    JSON), the checkpoint's rates blamed a failure mode's rate or ``--trials``; the cluster's and
    the GPU's rates had this floor (``config._build.MIN_RATE``)."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.errors import ConfigError
    from trainsim.reliability.config import CheckpointConfig

    words = rf"{section}.{name}=4.94066e-324 is below 1 per second"
    with pytest.raises(ConfigError, match=words):
        if section == "training":
            run_config_from_dict(_raw(**{name: 5e-324}))
        else:
            CheckpointConfig(**{name: 5e-324})


@pytest.mark.parametrize("where,value,words", [
    (("cluster", "nic_gbit_s_per_gpu"), 1e-12, "cluster.nic_gbit_s_per_gpu=1e-12 is 0.000125 B/s"),
    (("cluster", "nvlink_gbyte_s"), 1e-12, "cluster.nvlink_gbyte_s=1e-12 is 0.001 B/s"),
    (("cluster", "gpu_overrides", "hbm_gbyte_s"), 1e-12,
     "cluster.gpu_overrides.hbm_gbyte_s=1e-12 is 0.001 B/s")])
def test_a_rate_in_catalog_units_is_refused_as_written(where, value, words):
    """fuzz56 rates: refused as ``cluster.nic_bw_Bps=0.000125``, a field and unit the user
    never wrote."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.errors import ConfigError

    raw = _raw()
    node = raw
    for part in where[:-1]:
        node = node.setdefault(part, {})
    node[where[-1]] = value
    with pytest.raises(ConfigError, match=re.escape(words)):
        run_config_from_dict(raw)


# ------------------------------------------------------------ search and plan size lists

SEARCH = ("--gpus", "8", "--global-batch", "16", "--seq", "512", "--workers", "1")
PLAN = ("--tokens", "1e9", "--days", "1", "--max-gpus", "16", "--seq", "512",
        "--global-batch", "16", "--workers", "1")


@pytest.mark.parametrize("option,value,words", [
    ("--tp", "3", "--tp 3: tp must divide the 4 attention heads of custom"),
    ("--pp", "3,8", "--pp 3,8: pp must divide the 4 layers of custom"),
    ("--cp", "3", "--cp 3: 2*cp must divide the sequence of 512 tokens"),
    ("--schedules", "zb_v", "--schedules zb_v: the search was given pp=[1]")])
@pytest.mark.parametrize("command", ["search", "plan"])
def test_a_size_list_that_splits_nothing_is_refused_naming_it(tmp_path, command, option, value,
                                                              words):
    """fuzz56 sizes: search said only "no parallel configuration is valid", plan "no valid
    configuration fits on any of them" (``--pp``, ``--cp``), and ``--schedules`` with ``--pp 1``
    was answered with no schedule tried."""
    path = tmp_path / "model.yaml"
    path.write_text(MODEL)
    extra = ("--pp", "1") if option == "--schedules" else ()
    line = one_error_line(cli(command, str(path), *(SEARCH if command == "search" else PLAN),
                              option, value, *extra))
    assert line.startswith(f"error: {words}")


def test_megatrons_1f1b_is_named_in_a_refusal(tmp_path):
    """fuzz56 sizes: "parallel.pipeline_schedule= is fixed ... schedules=['']"."""
    path = tmp_path / "model.yaml"
    path.write_text(MODEL)
    line = one_error_line(cli("search", str(path), *SEARCH, "--set",
                              "parallel.pipeline_schedule=zb_v", "--schedules", "1f1b,zb_v"))
    assert "schedules=['1f1b', 'zb_v']" in line
    line = one_error_line(cli("search", str(path), *SEARCH, "--set",
                              "parallel.pipeline_schedule=1f1b", "--schedules", "zb_v"))
    assert line.startswith("error: parallel.pipeline_schedule=1f1b is fixed")


# ------------------------------------------------------------ the service's words

@pytest.mark.parametrize("kind,options,field,start", [
    ("goodput", {"tokens": -1, "trials": 5}, "options.tokens", "options.tokens '-1' must be"),
    ("goodput", {"tokens": "1e9", "interval": "abc"}, "options.interval", "options.interval 'abc'"),
    ("simulate", {"set": ["abc"]}, "options.set", "options.set 'abc': expected"),
    ("sweep", {"vary": ["abc"]}, "options.vary", "options.vary 'abc': expected")])
def test_the_service_names_its_options_not_the_cli_flags(kind, options, field, start):
    """fuzz56 service: "--tokens '-1' must be positive", field ``config``."""
    from trainsim.service.jobs import problem
    from trainsim.service.settings import Settings

    status, got_field, message = problem(kind, DENSE, options, Settings(workers=0))
    assert (status, got_field) == (422, field) and message.startswith(start), message


def test_a_config_of_neither_mapping_nor_text_is_said_so(tmp_path):
    """fuzz56 service: ``config: [1]`` was "config.dict[str,any]: Input should be a valid
    dictionary"."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from trainsim.service import Settings, create_app

    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'r56.db'}", workers=0, checkers=0),
                     start_workers=False)
    headers = {"Authorization": f"Bearer {app.state.store.create_token('r')}"}
    with TestClient(app) as client:
        for config, kind in (([1], "an array"), (None, "null"), (5, "a number")):
            r = client.post("/api/v1/jobs", json={"kind": "simulate", "config": config},
                            headers=headers)
            assert r.status_code == 422 and r.json() == {
                "error": f"config: expected a mapping or text (a run config's sections, or "
                         f"their YAML), got {kind}", "field": "config"}, r.text


# ------------------------------------------------------------ the round

def _fuzz56():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fuzz56
    return fuzz56


def test_the_fp8only_oracle_fails_a_loader_that_says_nothing(monkeypatch):
    """The oracle can fail: with the loader's warning taken out (main's behaviour) the same
    input is a class; here it passes, and a setting a 16-bit run reads is never one."""
    from trainsim import catalog

    f = _fuzz56()
    given = {"fp8_param_gather": True}
    assert f.fp8only_check(_raw(**given), given, True) is None
    store = {"activation_func_fp8_input_store": True}
    assert f.fp8only_check(_raw(**store), store, True) is None
    monkeypatch.setattr(catalog, "fp8_settings_ignored", lambda *a: [])
    assert f.fp8only_check(_raw(**given), given, False) == \
        "an fp8-only setting on a 16-bit run ignored without a word: fp8_param_gather"


def test_a_sample_of_the_round_finds_no_class(capsys):
    """Twelve inputs of each cheap surface (``fp8only``, ``windows``); the whole round is
    ``-m slow``."""
    f = _fuzz56()
    assert f.main(["--only", "fp8only,windows", "--count", "12", "--seed", "7"]) == 0, \
        capsys.readouterr().out


@pytest.mark.slow
def test_the_whole_round_finds_no_class(capsys):
    assert _fuzz56().main([]) == 0, capsys.readouterr().out


# ------------------------------------------------------------ tests/helpers split

def test_helpers_still_gives_every_name_its_theme_modules_define():
    """tests/helpers.py split by theme (695 lines): ``helpers`` re-exports them all."""
    import ast

    import helpers

    for theme in ("helpers_cli", "helpers_configs", "helpers_files"):
        tree = ast.parse((Path(__file__).parent / f"{theme}.py").read_text())
        names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] + \
            [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
             if isinstance(t, ast.Name)]
        public = [n for n in names if not n.startswith("_")]
        assert public and all(getattr(helpers, n) is getattr(__import__(theme), n)
                              for n in public), theme
