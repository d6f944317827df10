"""gemm63: the 63rd session's dense GEMM diagnosis (``benchmarks/gemm63.py``) and its prepared
device run (``benchmarks/device_checks63_gemm63.py``), without a GPU."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def dc63():
    return _load("device_checks63_gemm63")


def test_device_run_plan_fits_a_minute_and_lists_every_section(dc63, capsys):
    assert dc63.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in dc63.SECTIONS)
    assert sum(est for est, _ in dc63.SECTIONS.values()) <= 60
    with pytest.raises(SystemExit):
        dc63.main(["--dry-run", "--sections", "history,nope"])


def test_device_run_times_forward_shapes_and_heats_with_a_longer_gemm(dc63):
    heater = dc63.HEATER[1] * dc63.HEATER[2] * dc63.HEATER[3]
    for _, tokens, out_f, in_f in dc63.SHORT:
        assert dc63.gemm_shape(tokens, out_f, in_f, "fwd") == (tokens, out_f, in_f)
        assert tokens * out_f * in_f * 3 < heater
