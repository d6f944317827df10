"""robust63: the forty-third fuzz round's classes (``benchmarks/fuzz63.py``) and robust62's
leads 2 and 3 (a search that stops at a candidate a forced ``cluster.nccl_algo`` refuses only
when priced; ``parallel.cpu_offloading_num_layers`` under profiles whose release has no
activation offloading). Each test but the controls (named so) fails on the previous src."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
from helpers import SMALL_RUN, cli, one_error_line
from helpers import service_problem as _service

from trainsim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def _raw(model=None, parallel=None, training=None, gpus=8, **cluster):
    raw = copy.deepcopy(SMALL_RUN)
    raw["model"].update(model or {})
    raw["parallel"].update(parallel or {})
    raw["training"].update(training or {})
    raw["cluster"].update(num_gpus=gpus, **cluster)
    return raw


def _cfg(raw):
    from trainsim.catalog import run_config_from_dict

    return run_config_from_dict(copy.deepcopy(raw))


def _simulate_line(raw, tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return one_error_line(cli("simulate", str(path))).removeprefix("error: ")


# ------------------------------------------ cluster.compute_db that is not text

@pytest.mark.parametrize("db", [1, True, [], {"a": 1}])
def test_a_compute_db_that_is_no_text_is_refused_naming_it(db, tmp_path):
    """main read 1 / true as a file name ("cannot read kernel database 1: No such file or
    directory", naming no field) and the service said it reads no files."""
    raw = _raw(compute_db=db)
    line = _simulate_line(raw, tmp_path)
    assert line.startswith("cluster.compute_db must be a kernel database file")
    assert _service("simulate", raw)[2] == line


@pytest.mark.parametrize("db", ["auto", "none", None, "AUTO"])
def test_control_compute_db_words_still_taken(db):
    assert _service("simulate", _raw(compute_db=db)) is None


# ------------------------------------------ a profile's output-layer deferral its schedule cannot run

def _deferred(schedule):
    return _raw({"num_layers": 8}, {"tp": 2, "pp": 4, "sequence_parallel": True,
                                    "pipeline_schedule": schedule},
                {"framework": "mlperf-nemo", "framework_version": "4.1",
                 "global_batch_size": 32})


def test_the_service_refuses_a_default_deferral_its_schedule_cannot_run(tmp_path):
    """mlperf-nemo 4.1 defers the output layer's weight gradient by default; under zb_h1 the
    pricer refuses it. main queued the job (refused only when priced) and said "set it false"
    of a field the run never set."""
    raw = _deferred("zb_h1")
    line = _simulate_line(raw, tmp_path)
    assert line.startswith("parallel.defer_embedding_wgrad_compute (on by default under "
                           "training.framework=mlperf-nemo at this batch) is modelled under")
    assert _service("simulate", raw)[2] == line


def test_control_the_default_deferral_under_1f1b_runs():
    assert _service("simulate", _deferred("1f1b")) is None


# ------------------------------------------ a V schedule under a profile without virtual stages

def test_a_v_schedule_under_a_profile_without_interleaving_is_refused(tmp_path):
    """dualpipe_v / zb_v set vpp=2 unsaid; nanotron runs one chunk a rank (pp_engine 1f1b or
    afab). main answered, then refused the resolved config it printed (vpp=2)."""
    raw = _raw({"num_layers": 8}, {"pp": 2, "pipeline_schedule": "dualpipe_v"},
               {"framework": "nanotron", "global_batch_size": 32})
    line = _simulate_line(raw, tmp_path)
    assert line.startswith("parallel.pipeline_schedule='dualpipe_v' places two model chunks "
                           "per rank as a V but nanotron ")
    with pytest.raises(ConfigError):
        _cfg({**raw, "parallel": {"pp": 2, "pipeline_schedule": "ZBVZeroBubble"}})


def test_control_a_v_schedule_where_the_profile_interleaves():
    raw = _raw({"num_layers": 8}, {"pp": 2, "pipeline_schedule": "zb_v"},
               {"framework": "torchtitan", "global_batch_size": 32})
    assert _cfg(raw).parallel.vpp == 2


def test_control_a_v_schedule_at_pp1_is_ignored_not_refused():
    raw = _raw(parallel={"pp": 1, "pipeline_schedule": "dualpipe_v"},
               training={"framework": "nanotron"})
    with pytest.warns(Warning):
        assert _cfg(raw).parallel.pipeline_schedule is None


# ------------------------------------------ robust62 lead 3: activation offloading per profile

NO_OFFLOAD = [("nanotron", None), ("fast-llm", None), ("llm-c", None), ("flash-attention", None),
              ("paxml", None), ("deepspeed", "2023-06-02"), ("megatron-llama", None),
              ("colossalai", None), ("maxtext", None), ("automodel", "0.5"),
              ("megatron-lm", "2023-12")]


@pytest.mark.parametrize(("fw", "version"), NO_OFFLOAD)
def test_offloading_refused_where_the_release_has_none(fw, version):
    raw = _raw({"num_layers": 8}, {"cpu_offloading_num_layers": 2},
               {"framework": fw, **({"framework_version": version} if version else {})})
    with pytest.raises(ConfigError) as exc:
        _cfg(raw)
    text = str(exc.value)
    assert text.startswith("parallel.cpu_offloading_num_layers=2 but ")
    assert "has no activation CPU offloading (source: " in text


@pytest.mark.parametrize(("fw", "version"), [("megatron-lm", "2024-04"), ("megatron-core", "0.12"),
                                             ("nemo", None)])
def test_control_offloading_taken_where_the_stack_has_it(fw, version):
    raw = _raw({"num_layers": 8}, {"cpu_offloading_num_layers": 2},
               {"framework": fw, **({"framework_version": version} if version else {})})
    assert _cfg(raw).parallel.cpu_offloading_num_layers == 2


# ------------------------------------------ robust62 lead 2: search past a priced refusal

SEARCH = ["search", "gpt3-350m", "--global-batch", "16", "--seq", "512", "--workers", "1",
          "--max-micro-batch", "1", "--overlap", "off", "--format", "json", "--top", "1",
          "--gpus", "16", "--set", "cluster.nccl_algo=tree"]


def test_search_goes_past_a_candidate_the_forced_algorithm_refuses_when_priced():
    """InternEvo's broadcasts are refused by tree only when priced (not up front): main ended
    the search with that candidate's refusal; the search now skips it and ranks the rest."""
    r = cli(*SEARCH, "--set", "training.framework=internevo")
    assert r.exit_code == 0, r.output
    top = json.loads(r.stdout)["top"]
    assert top and top[0]["iteration_time_s"] > 0


def test_control_search_where_every_split_is_refused_up_front(tmp_path):
    line = one_error_line(cli(*SEARCH[:-2], "--set", "cluster.nccl_algo=pat"))
    assert "every split the sizes allow is refused" in line and "cluster.nccl_algo=pat" in line


# ------------------------------------------ the round

@pytest.mark.slow
def test_the_whole_round_finds_no_class():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fuzz63

    assert fuzz63.main([]) == 0
