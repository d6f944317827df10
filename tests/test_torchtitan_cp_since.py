"""torchtitan had no context parallelism before b19456a98 (2024-10-22, "enable Context
Parallel", #592): its earlier entries refuse cp > 1 (profile feature ``context_parallel``), so a
dated run on a framework with no profile here is not predicted as torchtitan's 2024-07 stack
running a cp the stack could not run."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from trainsim import run_config_from_dict
from trainsim.errors import ConfigError
from trainsim.validate.training import predict_training_row

HELDOUT = Path(__file__).resolve().parents[1] / "benchmarks" / "training_heldout.csv"


def _cfg(version: str, cp: int):
    return run_config_from_dict({
        "model": "llama3-8b",
        "parallel": {"tp": 1, "pp": 1, "cp": cp},
        "training": {"global_batch_size": 8, "seq_length": 32768, "dtype": "bf16",
                     "framework": "torchtitan", "framework_version": version},
        "cluster": {"node": "dgx-h100", "num_gpus": 8}})


@pytest.mark.parametrize("version", ["2024-04", "2024-07", "2024-09"])
def test_torchtitan_before_october_2024_refuses_context_parallelism(version):
    with pytest.raises(ConfigError, match=r"parallel.cp=2 but torchtitan .*no context parall"):
        _cfg(version, 2)
    assert _cfg(version, 1).parallel.cp == 1


@pytest.mark.parametrize("version", ["2024-10", "2024-12", None])
def test_torchtitan_from_october_2024_runs_context_parallelism(version):
    assert _cfg(version, 2).parallel.cp == 2


def test_a_dated_cp16_run_is_not_predicted_as_torchtitan_of_its_date():
    """Llama 3 405B at 128k tokens, cp 16, ZeRO-2 (training_heldout.csv, Meta 2024-07) named
    'otherfw': the 2024-07 torchtitan entry used to take it (+124 % off); now no stack of that
    date runs it and the undated order predicts it."""
    with open(HELDOUT, newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == "llama3-405b-16384-cp16-s128k")
    got = predict_training_row({**row, "framework": "otherfw"})
    assert got.error is None, got.error
    assert got.chosen.get("framework_version") != "2024-07"
