"""The recipe cells of benchmarks/recipe_cells.csv (the audit of the tuned cells against the
runs' recipes, benchmarks/recipe_audit.py): each names a row and a cell the validator tunes for
that row, once, with its source, and the audit reports a recipe value the tuner did not take."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

from trainsim.validate import BUNDLED_DIR
from trainsim.validate.row_settings import counts_checked, training_base

ROOT = Path(__file__).resolve().parents[1]
FILES = (BUNDLED_DIR / "training_public.csv", ROOT / "benchmarks" / "training_heldout.csv")


def _audit():
    spec = importlib.util.spec_from_file_location("recipe_audit",
                                                  ROOT / "benchmarks" / "recipe_audit.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _rows() -> dict[str, dict[str, str]]:
    out = {}
    for path in FILES:
        with open(path, newline="") as fh:
            out.update({r["id"]: r for r in csv.DictReader(fh)})
    return out


def test_every_recipe_cell_is_a_tuned_cell_of_its_row_once_with_a_source():
    rows, recipes = _rows(), _audit().read_recipes()
    for rid, cells in recipes.items():
        assert rid in rows, rid
        _, unknown = training_base(counts_checked(rows[rid]))
        names = [c["cell"] for c in cells]
        assert len(names) == len(set(names)), rid
        for c in cells:
            assert c["cell"] in unknown, (rid, c["cell"])
            assert c["source"].strip() and c["recipe_value"].strip(), (rid, c["cell"])


def test_audit_reports_the_recipe_value_the_tuner_did_not_take():
    mod = _audit()
    row = _rows()["nemo2407-gpt3-175b-128"]
    cells = [{"cell": "tp_comm_overlap", "recipe_value": "False", "source": "s"},
             {"cell": "sequence_parallel", "recipe_value": "True", "source": "s"}]
    lines = {ln["cell"]: ln for ln in mod.audit_row(row, cells)}
    tuned = lines["tp_comm_overlap"]["tuned"]
    # the tuner takes TP overlap here (predicted faster); the recipe's value is simulated
    assert tuned is True and "err_recipe" in lines["tp_comm_overlap"]
    assert lines["tp_comm_overlap"]["err_recipe"] != lines["tp_comm_overlap"]["err_tuned"]
    assert "err_recipe" not in lines["sequence_parallel"]  # same value: nothing re-simulated
