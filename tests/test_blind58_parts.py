"""benchmarks/blind58_parts.py: a row predicted with another framework's mechanisms taken apart
one mechanism at a time. The parts are only worth reading if they are exact: the blind
profile remade for a what-if predicts what the blind row predicts, and the fields it lists
as differing, set together with the named profile, give the named config's time (none left
out); the profiles made for the what-ifs leave the catalog as it was."""

from __future__ import annotations

import csv
from pathlib import Path

from helpers import load_script

from trainsim.catalog.frameworks import framework_names
from trainsim.simulator import simulate
from trainsim.validate.training import predict_training_row, row_config

ROOT = Path(__file__).resolve().parents[1]
parts = load_script(ROOT / "benchmarks" / "blind58_parts.py")
ROW = "bridge2606-qwen3-30b-a3b-gb200-8-mxfp8"  # 8 GB200s, Megatron-Bridge MoE


def _row() -> dict[str, str]:
    with open(ROOT / "benchmarks" / "training_heldout.csv", newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == ROW)


def test_parts_are_exact_and_leave_the_catalog_as_it_was():
    row = _row()
    names = framework_names()
    with parts.toggles() as toggle:
        got = parts.parts(row, toggle=toggle)
    assert framework_names() == names  # the made profiles are gone again
    assert got is not None
    _, measured, named_s, blind_s, pieces = got
    by = {what: t for what, t, _ in pieces}
    assert by["(blind profile remade)"] == blind_s  # a made profile predicts as its original
    assert by["profile"] != blind_s and by["all fields, blind profile"] != named_s
    # the row's blind miss (+49 % on main at b9f1bd1f) is carried by fields the recipes set:
    # each of CUDA graphs and the EP overlap alone takes it at least 5 points closer
    for field in ("training.cuda_graphs", "parallel.moe_overlap_ep_comm"):
        assert abs(by[field] - measured) < abs(blind_s - measured) - 0.05 * measured


def test_the_differing_fields_are_all_that_differ():
    row = _row()
    blind_row = {**row, "framework": "otherfw"}
    named, blind = predict_training_row(row), predict_training_row(blind_row)
    cfg_n, cfg_b = row_config(row, named.chosen), row_config(blind_row, blind.chosen)
    diffs = parts.differing(cfg_n, cfg_b)
    assert diffs  # the two stacks do differ here
    changes: dict[str, dict[str, object]] = {}
    for sec, field, value, _ in diffs:
        changes.setdefault(sec, {})[field] = value
    t = cfg_n.training
    changes.setdefault("training", {}).update(framework=t.framework,
                                              framework_version=t.framework_version)
    assert parts.with_fields(cfg_b, changes) == cfg_n
    assert simulate(parts.with_fields(cfg_b, changes)).iteration_time_s == named.predicted
