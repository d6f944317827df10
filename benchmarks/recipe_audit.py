"""Each tuned cell of the rows whose recipes are known, against the recipe that run used.

    python benchmarks/recipe_audit.py TRAINING.csv [MORE.csv ...]

``benchmarks/recipe_cells.csv`` lists, for rows of the public and held-out training files, the
value the run's own recipe gives each cell the validator tunes (``validate/training.py``
``unknowns``: the fastest setting predicted to fit), with the file and tag it comes from. For
every such cell this prints the tuned value, the recipe's, the predicted time error with each
(every other cell as tuned) and the recipe value's predicted peak memory against the HBM. A
recipe value predicted not to fit although it ran points at a memory mechanism that is wrong or
missing; a tuned value faster than the recipe's, at a time cost the model lacks or at a recipe
that is not the fastest; a recipe value absent from the candidates, at the candidate list.
Nothing here is fed back into trainsim: the table is a check, not an input.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any

from trainsim.catalog import run_config_from_dict
from trainsim.errors import TrainsimError
from trainsim.simulator import simulate
from trainsim.validate.row_settings import counts_checked, training_base, with_choice
from trainsim.validate.training import predict_training_row
from trainsim.validate.vocab import normalized_training_row

HERE = Path(__file__).resolve().parent
GiB = 2.0**30


def _value(text: str) -> Any:
    """A recipe cell as the tuner's candidates spell it."""
    if text in ("True", "False"):
        return text == "True"
    return int(text) if text.isdigit() else text


def read_recipes(path: Path = HERE / "recipe_cells.csv") -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            out.setdefault(row["id"], []).append(row)
    return out


def _run(row: dict[str, str], choice: dict[str, Any]) -> tuple[float, float, float]:
    """(signed time error, peak GiB, HBM GiB) of ``row`` simulated with ``choice``."""
    raw, _ = training_base(counts_checked(normalized_training_row(row)[0]))
    cfg = run_config_from_dict(with_choice(raw, choice))
    res = simulate(cfg)
    err = res.iteration_time_s / float(row["measured_iteration_s"]) - 1.0
    return err, res.peak_memory_bytes / GiB, cfg.cluster.gpu.hbm_bytes / GiB


def audit_row(row: dict[str, str], cells: list[dict[str, str]]) -> list[dict[str, Any]]:
    """One line per recipe cell of ``row``: tuned and recipe values and their predictions; a
    last line ``ALL`` with every differing recipe value at once where more than one differs."""
    chosen = predict_training_row(row).chosen or {}
    base_err, base_peak, hbm = _run(row, chosen)
    lines: list[dict[str, Any]] = []
    differing: dict[str, Any] = {}
    for cell in cells:
        name, want = cell["cell"], _value(cell["recipe_value"])
        line = {"id": row["id"], "cell": name, "recipe": cell["recipe_value"],
                "source": cell["source"], "tuned": chosen.get(name, "(stated)"),
                "err_tuned": base_err, "peak_tuned": base_peak, "hbm": hbm}
        if name in chosen and chosen[name] != want:
            differing[name] = want
            try:
                line["err_recipe"], line["peak_recipe"], _ = _run(row, {**chosen, name: want})
            except TrainsimError as exc:
                line["error"] = str(exc)
        lines.append(line)
    if len(differing) > 1:
        err, peak, _ = _run(row, {**chosen, **differing})
        lines.append({"id": row["id"], "cell": "ALL", "recipe": str(differing), "source": "",
                      "tuned": "", "err_tuned": base_err, "peak_tuned": base_peak, "hbm": hbm,
                      "err_recipe": err, "peak_recipe": peak})
    return lines


def _fmt(line: dict[str, Any]) -> str:
    same = "err_recipe" not in line and "error" not in line
    rec = "=" if same else (line.get("error") or
                            f"{line['err_recipe']:+.1%} | {line['peak_recipe']:.1f}")
    recipe, tuned = (str(line[k]).replace("|", "\\|") for k in ("recipe", "tuned"))
    return (f"| {line['id']} | {line['cell']} | {recipe} | {tuned} | "
            f"{line['err_tuned']:+.1%} | {line['peak_tuned']:.1f} | {rec} | {line['hbm']:.0f} |")


def main(argv: list[str]) -> int:
    recipes = read_recipes()
    print("| row | cell | recipe | tuned | err tuned | peak tuned GiB | err recipe | "
          "peak recipe GiB | HBM GiB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    n = differ = 0
    for path in argv:
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                if row["id"] not in recipes:
                    continue
                for line in audit_row(row, recipes[row["id"]]):
                    print(_fmt(line))
                    if line["cell"] != "ALL" and line["tuned"] != "(stated)":
                        n += 1
                        differ += "err_recipe" in line or "error" in line
    print(f"\ntuned cells audited: {n}; the tuner chose the recipe's value in {n - differ}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
