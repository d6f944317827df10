"""benchmarks/device_checks54.py without a GPU: its plan, and the grouped cases it times stay within
its row cap with each model's published expert shape."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def dc54():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("device_checks54", BENCH / "device_checks54.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dry_run_lists_every_section(dc54, capsys):
    assert dc54.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in dc54.SECTIONS)
    with pytest.raises(SystemExit):
        dc54.main(["--dry-run", "--sections", "grouped,nope"])


def test_grouped_cases_are_expert_shapes_within_the_cap(dc54):
    cases = dc54._expert_gemms()
    assert all(g * r <= dc54.MAX_ROWS for _, _, g, r, _, _ in cases)
    for model, proj, _, _, k, n in cases:
        h, f = dc54.EXPERT_SHAPES[model]
        assert (k, n) == ((h, 2 * f) if proj == "fc1" else (f, h))  # gated fc1: gate and up in one weight
    assert len({(m, p) for m, p, *_ in cases}) == 2 * len(dc54.EXPERT_SHAPES)


RUN = BENCH / "h200_2026-11-28_s54"


@pytest.mark.parametrize(("run", "section"), [("run3", "attn_grid"), ("run4", "attn_grid_graph")])
def test_committed_attention_rows_are_the_json_times(run, section):
    """Every attention row of a committed run is its JSON's time turned into TFLOP/s: forward at
    2 b s^2 h (d_qk + d_v) / 2, backward at 2.5x that over (forward + backward - forward)."""
    import csv
    import json
    rep = json.loads((RUN / run / "device_checks54.json").read_text())
    times = rep["sections"][section]["times"]
    rows = [r for r in csv.DictReader((RUN / run / "kernels.csv").open()) if r["kind"].startswith("attention")]
    assert len(rows) == 300 and len(times) == 300
    for r in rows:
        case = r["id"].removeprefix("dc54-h200-").rsplit("-", 1)[0].removesuffix("-graph")
        t = times[case]
        dq, dv = (int(x) for x in case.split("-d")[1].split("-")[0].split("x"))
        b, s, h = (int(r[c]) for c in ("batch", "seq_len", "heads"))
        flops = b * s * s * h * (dq + dv)
        us = t["fwd_us"] if r["kind"] == "attention_fwd" else (t["fwd_bwd_us"] - t["fwd_us"]) / 2.5
        assert float(r["measured_value"]) == pytest.approx(flops / us / 1e6, rel=2e-3)
