"""validate.training.row_config rebuilds a row on a framework with no profile here with the
profile that predicted it (its ``RowResult.chosen``), not the first its cells select."""

from __future__ import annotations

import csv
from pathlib import Path

from trainsim.simulator import simulate
from trainsim.validate.training import predict_training_row, row_config

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _row(path: str, row_id: str, **cells: str) -> dict[str, str]:
    with open(BENCH / path, newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == row_id)
    return {**row, **cells}


def test_a_row_a_later_profile_predicted_is_rebuilt_with_that_profile():
    """NVIDIA/dgxc-benchmarking nemotron/README_340b.md @ 35a9aecc8d line 54 (Nemotron-4 340B,
    Apex DistributedFusedAdam with bf16 state): named 'otherfw', megatron-core refuses it and
    nemo's newest Apex entry predicts it (24.09 until the 58th session's 24.12 entry, which
    keeps the Apex optimizer); row_config rebuilt it with megatron-core and raised."""
    row = _row("training_dgxc.csv", "dgxc2411-nemotron4-340b-bf16-128",
               framework="otherfw", framework_version="")
    got = predict_training_row(row)
    assert got.error is None, got.error
    assert got.chosen["framework"] == "nemo" and got.chosen["framework_version"] == "24.12"
    cfg = row_config(row, got.chosen)
    assert (cfg.training.framework, cfg.training.framework_version) == ("nemo", "24.12")
    assert simulate(cfg).iteration_time_s == got.predicted


def test_a_row_the_first_profile_predicted_names_it_and_a_named_row_names_none():
    row = _row("training_dgxc.csv", "dgxc2411-nemotron4-340b-bf16-128",
               framework="otherfw", framework_version="", optimizer_dtype="")
    got = predict_training_row(row)
    assert got.chosen.get("framework") == "megatron-core"
    assert "framework_version" not in got.chosen  # its newest entry
    assert row_config(row, got.chosen).training.framework == "megatron-core"
    named = predict_training_row({**row, "framework": "nemo", "framework_version": "24.09"})
    assert "framework" not in named.chosen
