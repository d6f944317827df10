"""benchmarks/device_checks41.py without a GPU: its plan and the shapes it times, and the kernels
CSV committed from its H200 run holds the rows its sections write, each a valid kernels row."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
RUN = BENCH / "h200_2026-11-27_s41"


@pytest.fixture(scope="module")
def dc41():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("device_checks41", BENCH / "device_checks41.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dry_run_lists_every_section(dc41, capsys):
    assert dc41.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in dc41.SECTIONS)
    with pytest.raises(SystemExit):
        dc41.main(["--dry-run", "--sections", "attn_grid,nope"])


def test_attention_grid_is_the_fa3_papers(dc41):
    """16k tokens at hidden 2,048: heads = 2048 / head dim, batch = 16384 / sequence."""
    assert dc41.ATTN_TOKENS == 16384 and dc41.ATTN_HIDDEN == 2048
    assert all(dc41.ATTN_TOKENS % s == 0 for s in dc41.ATTN_SEQS)
    assert all(dc41.ATTN_HIDDEN % d == 0 for d in dc41.ATTN_HDS)


def test_committed_run_matches_its_rows():
    rep = json.loads((RUN / "run1_device_checks41.json").read_text())
    rows = list(csv.DictReader((RUN / "kernels_h200_s41.csv").open()))
    times = rep["sections"]["attn_grid"]["times"]
    attn = [r for r in rows if r["kind"].startswith("attention")]
    gemm = [r for r in rows if r["kind"] == "gemm"]
    assert len(times) == 72 and len(gemm) == 24  # 6 x 3 x 2 x 2 cases; 4 linears x 3 x 2 dtypes
    assert len(attn) == 144  # a forward and a backward row per case
    for r in attn:
        case = r["id"].removeprefix("dc41-h200-").rsplit("-", 1)[0]
        t = times[case]
        b, s, h, d = (int(r[c]) for c in ("batch", "seq_len", "heads", "head_dim"))
        flops = 4 * b * s * s * h * d * (0.5 if r["causal"] == "1" else 1.0)
        us = t["fwd_us"] if r["kind"] == "attention_fwd" else (t["fwd_bwd_us"] - t["fwd_us"]) / 2.5
        assert float(r["measured_value"]) == pytest.approx(flops / us / 1e6, rel=2e-3)


def test_run2_twins_every_published_shape_once():
    rep = json.loads((RUN / "run2_device_checks41.json").read_text())
    shapes = list(csv.DictReader((RUN / "vidur_h100_shapes.csv").open()))
    rows = list(csv.DictReader((RUN / "kernels_h200_s41_run2.csv").open()))
    assert len(shapes) == len(rows) == len(rep["sections"]["vidur_twins"]["times"]) == 128
    by_id = {r["id"].removeprefix("dc41-h200-twin-"): r for r in rows}
    for s in shapes:
        r = by_id[s["id"]]
        assert (r["m"], r["n"], r["k"]) == (s["m"], s["n"], s["k"])
        us = rep["sections"]["vidur_twins"]["times"][s["id"]]
        assert float(r["measured_value"]) == pytest.approx(us / 1e3, rel=1e-3)  # ms
    cases = rep["sections"]["attn_kernels"]["cases"]
    assert len(cases) == 18 and all(len(k) >= 4 for k in cases.values())


def test_run7_head_dims_are_separate_leaf_rows():
    rep = json.loads((RUN / "run7_device_checks41.json").read_text())
    rows = list(csv.DictReader((RUN / "kernels_h200_s41_hd.csv").open()))
    assert len(rep["sections"]["attn_grid_hd"]["times"]) == 72 and len(rows) == 144
    assert {int(r["head_dim"]) for r in rows} == {96, 160, 192}
    assert all(int(r["heads"]) == 2048 // int(r["head_dim"]) for r in rows)
    assert all("separate leaves" in r["note"] for r in rows)
