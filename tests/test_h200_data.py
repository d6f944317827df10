"""The H200 measurements of the 36th session (benchmarks/h200_2026-11-27/): the L2 rule that
marks the kernels file, and the whole-step files the step probe wrote, as the validator reads
them."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest

from trainsim.validate import validate_file

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
H200 = BENCH / "h200_2026-11-27"
H100_FILE = ROOT / "src" / "trainsim" / "data" / "validation" / "kernels_h100_measured.csv"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_l2_rule_reproduces_the_h100_files_marks():
    """The rule (input [tokens, hidden] bf16 within the catalog's L2) marks exactly the 14 rows
    the shared H100 file marks by hand, and no other."""
    mark = _load("mark_l2_resident")
    rows = _rows(H100_FILE)
    ruled = {r["id"] for r in rows if mark.l2_resident(r)}
    noted = {r["id"] for r in rows if mark.marked(r)}
    assert len(noted) == 14
    assert ruled == noted


def test_h200_file_is_the_raw_run_with_the_rule_applied():
    """benchmarks/kernels_h200_measured.csv differs from the device's own file only by the L2
    notes the rule adds: same ids, same measured values, 14 marked."""
    mark = _load("mark_l2_resident")
    raw = {r["id"]: r for r in _rows(H200 / "kernels_measured_raw.csv")}
    done = {r["id"]: r for r in _rows(BENCH / "kernels_h200_measured.csv")}
    assert raw.keys() == done.keys() and len(done) == 1051
    assert all(done[i]["measured_value"] == raw[i]["measured_value"] for i in raw)
    assert {i for i, r in done.items() if mark.marked(r)} == {
        i for i, r in raw.items() if mark.l2_resident(r)}
    assert sum(map(mark.marked, done.values())) == 14


@pytest.mark.parametrize("name,run", [("training_h200_steps.csv", "step_probe.json"),
                                      ("training_h200_steps_clip.csv", "clip_step_probe.json")])
def test_step_files_match_their_probe_run(name, run):
    """Each training row is one case of its probe run: the step time and the allocated peak are
    that case's, and the forward, backward and optimizer phases add up to the step."""
    rows = _rows(BENCH / name)
    cases = [r for r in json.loads((H200 / run).read_text())["results"] if "step_s" in r]
    assert len(rows) == len(cases) >= 12
    for row, case in zip(rows, cases, strict=True):
        assert row["model"] == case["model"] and int(row["micro_batch_size"]) == case["mbs"]
        assert float(row["measured_iteration_s"]) == pytest.approx(case["step_s"], abs=1e-5)
        assert float(row["measured_peak_memory_gib"]) == pytest.approx(case["allocated_gib"],
                                                                        abs=1e-3)
        phases = case["forward_s"] + case["backward_s"] + case["optimizer_s"]
        assert phases == pytest.approx(case["step_s"], rel=0.02)


def test_step_probe_rows_are_priced(tmp_path):
    """Every case of the probe's set B, written as its CSV writes it, is a row the validator
    prices (one GPU, the pytorch framework, sdpa or unfused attention, torch.compile)."""
    probe = _load("step_probe")
    env = {"device": "NVIDIA H200", "gpu": "h200-sxm-141gb", "torch": "2.11.0+cu130",
           "torch_release": "2.11", "transformers": "5.17.0", "date": "2026-11-27",
           "prefix": "h200step"}
    results = [{"model": c[0], "seq": c[1], "mbs": c[2], "recompute": c[3], "attention": c[4],
                "compile": "compile" in c[5:], "clip": True, "step_s": 1.0, "forward_s": 0.3,
                "backward_s": 0.6, "optimizer_s": 0.1, "allocated_gib": 50.0,
                "reserved_gib": 52.0, "device_gib": 53.0} for c in probe.CASES_B]
    rows = probe.csv_rows(results, env, "reserved")
    assert len({r["id"] for r in rows}) == len(rows) == len(probe.CASES_B)
    path = tmp_path / "probe_rows.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=probe.COLUMNS)
        w.writeheader()
        w.writerows(rows)
    priced = validate_file(path)[1]
    assert [r.id for r in priced] == [r["id"] for r in rows]
    assert all(r.predicted is not None and r.predicted > 0 for r in priced)
