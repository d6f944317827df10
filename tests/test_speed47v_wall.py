"""benchmarks/speed47v_wall.py: ``workers`` times every row in the process that predicts it
(the command's output as a plain run writes it, each row once, the parent's phases in order) and
``configs`` classes each candidate config by its furthest step; both put the originals back and
change no prediction."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from helpers import load_script

from trainsim import validate
from trainsim.validate import BUNDLED_DIR, training

ROOT = Path(__file__).resolve().parent.parent
IDS = ("nemo2407-llama2-7b-8", "megatron21-t1-7.5B", "korthikanti22-175B-sp-selective")
"""Small public rows: two the tuner descends (bounds, memory refusals), one simulated once."""


@pytest.fixture(scope="module")
def script():
    """The script, in ``sys.modules`` while the tests run: the pool pickles its row wrapper by
    name (as it does ``__main__``'s when the script is run)."""
    import sys

    mod = load_script(ROOT / "benchmarks" / "speed47v_wall.py")
    sys.modules[mod.__name__] = mod
    yield mod
    sys.modules.pop(mod.__name__, None)


@pytest.fixture(scope="module")
def rows():
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["id"] in IDS]


def test_workers_time_every_row_once_and_write_the_plain_output(script, rows, tmp_path):
    small = tmp_path / "small.csv"
    with open(small, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    said, read, pool = validate._said, validate.read_rows, validate._in_workers
    out = tmp_path / "out.json"
    got = script.workers(str(small), ["--format", "json", "--workers", "2"], str(out))
    assert (validate._said, validate.read_rows, validate._in_workers) == (said, read, pool)
    phases = list(got["phases"])
    assert phases == ["script", "imported", "rows read", "pool started", "pool shut down",
                      "output written"]
    assert [v["t"] for v in got["phases"].values()] == \
        sorted(v["t"] for v in got["phases"].values())
    assert 1 <= len(got["processes"]) <= 2 and not any(p["parent"] for p in got["processes"])
    assert sum(p["rows"] for p in got["processes"]) == len(IDS)
    assert got["row_cpu"] == pytest.approx(sum(p["row_cpu"] for p in got["processes"]), abs=0.01)
    plain = {r.id: r.predicted for r in validate.validate_file(small)[1]}
    assert {r["id"]: r["predicted"] for r in json.loads(out.read_text())["rows"]} == plain
    assert all(len(line) < 400 for line in script._lines(got))


def test_configs_class_each_candidate_and_change_no_answer(script, rows):
    names = ("run_config_from_dict", "_peak_within", "simulate", "lower_bound_s")
    before = [getattr(training, n) for n in names]
    answers = {r["id"]: training.predict_training_row(r).predicted for r in rows}
    costs = script.row_configs(rows)
    assert [getattr(training, n) for n in names] == before
    assert [c["id"] for c in costs] == [r["id"] for r in rows]
    for c, r in zip(costs, rows):
        assert training.predict_training_row(r).predicted == answers[r["id"]]
        assert c["fates"]["simulated"]["n"] >= 1
        built = sum(f["n"] for f in c["fates"].values())
        assert c["tuned"] == (built + c["config_errors"] > 1)
        assert c["sim_cpu"] + c["bound_cpu"] <= c["cpu"]
    tuned = {c["id"]: c for c in costs}
    assert tuned["nemo2407-llama2-7b-8"]["tuned"]
    assert tuned["nemo2407-llama2-7b-8"]["fates"]["refused for memory"]["n"] > 0
    assert tuned["megatron21-t1-7.5B"]["fates"]["bounded"]["n"] > 0
    total = script.config_summary(costs)
    assert total["tuned"]["rows"] + total["untuned"]["rows"] == len(rows)
    for label in ("tuned", "untuned"):
        group = [c for c in costs if c["tuned"] == (label == "tuned")]
        assert total[label]["fates"]["bounded"]["n"] == \
            sum(c["fates"]["bounded"]["n"] for c in group)
        assert total[label]["rest_cpu"] == pytest.approx(
            total[label]["cpu"] - total[label]["sim_cpu"] - total[label]["bound_cpu"], abs=0.005)
