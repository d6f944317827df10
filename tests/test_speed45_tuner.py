"""benchmarks/speed45_tuner.py: its wrappers record every simulation and bound a row's tuner
asks and put the originals back; the row's answer is one of its simulations, a simulation lost
exactly where its time is above the answer, and the summary adds the rows up."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.validate import BUNDLED_DIR, training

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def script():
    return load_script(ROOT / "benchmarks" / "speed45_tuner.py")


def test_rows_record_their_simulations_and_bounds(script):
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["id"] in ("megatron21-t1-1.7B",
                                                            "mlm-weak-1.7b-48")]
    from trainsim import simulator

    sim, bound, chunks = training.simulate, training.lower_bound_s, simulator.shared_chunks
    costs = script.row_costs(rows)
    assert training.simulate is sim and training.lower_bound_s is bound
    assert simulator.shared_chunks is chunks
    assert [c["id"] for c in costs] == [r["id"] for r in rows]
    for c in costs:
        assert c["answer"] == training.predict_training_row(
            next(r for r in rows if r["id"] == c["id"])).predicted
        assert any(s["time"] == c["answer"] for s in c["sims"])
        assert all(s["lost"] == (s["time"] > c["answer"]) for s in c["sims"])
        assert all(s["bound"] is None or s["bound"] <= s["time"] for s in c["sims"])
        assert sum(s["cpu"] for s in c["sims"]) + c["bound_cpu"] <= c["cpu"]
        assert 0 <= c["bound_chunks_cpu"] <= c["bound_cpu"]
    total = script.summary(costs)
    assert total["simulations"] == sum(len(c["sims"]) for c in costs) == \
        sum(k["n"] for k in total["kinds"].values())
    assert total["lost"] == sum(s["lost"] for c in costs for s in c["sims"])
    assert total["bounds"] == sum(c["bounds"] for c in costs) > 0
    assert 0 < total["bound_chunks_cpu"] <= total["bound_cpu"]
    assert sum(total["bounds_asked_by"].values()) == total["bounds"]
    assert set(total["bounds_asked_by"]) <= {"ruled_out", "bound_of"}


def test_kinds_drop_the_numbers(script):
    assert script.kind("full", "short iteration (1,200 pass tasks < 2,000)") == \
        "full: short iteration (N pass tasks < N)"
