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


def test_the_floor_is_the_best_single_prediction_of_rows_alike():
    # p = 10: 0 + 0.5/10.5 + 10/20 = 0.548; p = 10.5: 0.05 + 0 + 0.475 = 0.525; p = 20: 1.905
    best, least = parts.floor([10.0, 10.5, 20.0])
    assert best == 10.5 and abs(least - 0.525 / 3) < 1e-12


def test_twins_group_rows_alike_in_every_setting(tmp_path):
    rows = ["id,source,note,model,gpu,num_gpus,framework,framework_version,measured_iteration_s",
            "a,s1,n1,llama3-8b,h100-sxm-80gb,8,fw,26.04,10.0",
            "b,s2,n2,llama3-8b,h100-sxm-80gb,8,fw,26.06,6.0",
            "c,s3,n3,llama3-8b,b200-sxm-180gb,8,fw,26.06,5.0",
            "d,s4,n4,llama3-8b,h100-sxm-80gb,8,,,7.0"]  # d names no framework
    (tmp_path / "training_x.csv").write_text("".join(r + "\n" for r in rows))
    groups = list(parts.twins([tmp_path / "training_x.csv"]).values())
    assert groups == [[("training_x", "a", "26.04", 10.0), ("training_x", "b", "26.06", 6.0)]]
    lines = parts.twin_lines([tmp_path / "training_x.csv"])
    assert lines[0].startswith("2 rows with one setting: the best one prediction 6 s")
