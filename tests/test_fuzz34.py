"""Input robustness, twenty-second round (benchmarks/fuzz_inputs34.py): a number YAML keeps
with its written text named as its internal class, a row's measurement read by a predictor
called directly, a failure profile given as a mapping or a name no file system takes, and a
goodput run whose checkpoint stall or recoveries outlast the failures refused at once."""

from __future__ import annotations

import math
import time

import pytest

from trainsim.errors import ConfigError, TrainsimError


@pytest.mark.parametrize("text,where", [("parallel: 1.50", "parallel"),
                                        ("cluster: {gpu: 1.50, num_gpus: 8}", "cluster.gpu")])
def test_a_number_kept_with_its_text_is_named_a_number(tmp_path, text, where):
    """'parallel: 1.50' was refused "... got a Written" (config.safe_load's class)."""
    from trainsim.catalog import load_run_config
    base = {"model": "model: llama3-8b", "parallel": "parallel: {tp: 2}",
            "training": "training: {global_batch_size: 16, seq_length: 2048}",
            "cluster": "cluster: {gpu: h100-sxm-80gb, num_gpus: 8}"}
    base[where.split(".")[0]] = text
    path = tmp_path / "run.yaml"
    path.write_text("\n".join(base.values()) + "\n")
    with pytest.raises(ConfigError, match=f"^{where} must be .*, got a number$"):
        load_run_config(path)


def test_type_name_reads_the_builtin_type():
    from trainsim.config._build import type_name
    from trainsim.config.safe_load import Written
    assert type_name(Written(1.5, "1.50")) == "float"
    assert (type_name({}), type_name([]), type_name("x")) == ("dict", "list", "str")


@pytest.mark.parametrize("kind,column,value", [
    ("training", "measured_iteration_s", "3,5"), ("training", "measured_iteration_s", "nan"),
    ("training", "measured_peak_memory_gib", "-1"),
    ("collectives", "measured_busbw_GBps", ""), ("kernels", "measured_value", "inf")])
def test_a_predictor_called_directly_refuses_a_bad_measurement(kind, column, value):
    """``trainsim validate`` refuses these at the file; a row given to the predictor was an
    "internal error: ValueError" (or a NaN error, kept in the MAPE)."""
    from trainsim.validate import PREDICT, _guarded
    row = {"id": "r", column: value, "measured_iteration_s": "1", "gpu": "no-such-gpu",
           "measured_busbw_GBps": "1", "measured_value": "1"}
    row[column] = value
    res = _guarded(PREDICT[kind], row)
    assert res.error and "internal error" not in res.error and column in res.error
    assert math.isfinite(res.measured)


@pytest.mark.parametrize("failures", [{"name": "x"}, ["a"], None, 5])
def test_a_failure_profile_that_is_no_name_is_refused_naming_the_field(failures):
    """A mapping was looked up as a file named by its repr: "[Errno 36] File name too long"."""
    from trainsim.reliability.config import reliability_config_from_dict
    with pytest.raises(ConfigError, match=r"^reliability\.failures must be a failure "
                                          r"profile's catalog name .*, got "):
        reliability_config_from_dict({"failures": failures})


def test_a_failure_profile_name_over_the_file_name_limit_is_unknown():
    from trainsim.errors import CatalogError
    from trainsim.reliability.config import load_profile
    for name in ("y" * 300, "y" * 300 + ".yaml"):
        with pytest.raises(CatalogError, match=r"unknown failure profile 'y{60}\.\.\. \(3"):
            load_profile(name)


def _plan(stall_s: float, recovery_s: float = 0.0):
    from trainsim.reliability.plan import RunPlan
    return RunPlan(mode_names=("x",), mode_rates=(1 / 3600,), mode_planned=(False,),
                   recovery_s=((recovery_s,) + (0.0,) * 5,), interval_s=3600.0,
                   stall_s=stall_s)


def test_the_bound_counts_the_checkpoint_stall_and_recovery_restarts():
    """The stall and the restarted recoveries were left out of the refusal's bound: a
    checkpoint written at 0.5 B/s (a stall of months) ran 200,000 passes before refusing."""
    from trainsim.reliability.montecarlo import expected_interruptions_lower_bound as bound
    assert bound(_plan(0.0), 36000.0) == pytest.approx(10 * math.expm1(1.0))
    assert bound(_plan(3600.0), 36000.0) == pytest.approx(9 * math.expm1(2.0) + math.expm1(1.0))
    assert bound(_plan(0.0, 7200.0), 36000.0) == pytest.approx(10 * math.expm1(1.0) * math.e ** 2)
    assert bound(_plan(1e9), 1800.0) == pytest.approx(math.expm1(0.5))  # no checkpoint needed


def test_a_run_whose_checkpoint_stall_outlasts_the_failures_is_refused_at_once():
    from trainsim.reliability.montecarlo import run
    start = time.perf_counter()
    with pytest.raises(TrainsimError, match="200,000 interruptions on average.*checkpoint "
                                            "stalling"):
        run(_plan(1e6), work_s=36000.0, trials=5)
    assert time.perf_counter() - start < 1
