"""The 47th session's H100 re-timing of the published vidur GEMM shapes (benchmarks/
h100_2026-11-28_s47/dc41): every row twins one published H100 fp16 row, and trainsim's GEMM model
stays within its measured error of the re-timing (6.9 % MAPE on the day)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[1] / "benchmarks" / "h100_2026-11-28_s47"


def _rows() -> list[dict[str, str]]:
    with open(RUN / "dc41" / "kernels.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_every_twin_is_one_published_shape_timed_once():
    rows = _rows()
    times = json.loads((RUN / "dc41" / "device_checks41.json").read_text())["sections"]["vidur_twins"]["times"]
    assert len(rows) == len(times) == 128
    assert {r["id"].removeprefix("dc41-h100-twin-") for r in rows} == set(times)
    assert all(r["gpu"] == "h100-sxm-80gb" and r["dtype"] == "fp16" and r["kind"] == "gemm" for r in rows)
    for r in rows:
        us = times[r["id"].removeprefix("dc41-h100-twin-")]
        assert float(r["measured_value"]) == pytest.approx(us / 1e3, rel=1e-3)


def test_gemm_model_against_the_real_h100_retiming():
    """The GEMM model's MAPE against the H100 re-timing: 6.93 % (signed +3.6 %) on 2026-11-28; a
    regression past 8 % fails. No constant was fitted to these rows."""
    from trainsim.validate import validate_file

    _, results = validate_file(RUN / "dc41" / "kernels.csv")
    errors = [r.predicted / r.measured - 1 for r in results if r.measured and r.predicted]
    assert len(errors) == 128
    mape = sum(abs(e) for e in errors) / len(errors)
    assert mape < 0.08
    assert abs(sum(errors) / len(errors)) < 0.06


def test_device_checks47_plans_every_section_and_refuses_an_unknown(capsys):
    import importlib.util
    import sys

    bench = RUN.parent
    sys.path.insert(0, str(bench))
    spec = importlib.util.spec_from_file_location("device_checks47", bench / "device_checks47.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in mod.SECTIONS) and set(mod.SECTIONS) == set(mod.FUNCS)
    with pytest.raises(SystemExit):
        mod.main(["--dry-run", "--sections", "emb_bwd,nope"])
