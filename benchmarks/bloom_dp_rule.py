"""bloom31's DP 2 reading taken as a rule and tried on every DeepSpeed pipe-engine row (issue 17
item 2; a diagnostic, nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/bloom_dp_rule.py   # ~1 min on an idle core

bloom31 (benchmarks/bloom_ab.py) split BigScience's CUDA_LAUNCH_BLOCKING A/B (200B, TP 8 PP 10,
MBS 1, pre-fix Jean Zay) per pipeline step: at DP 1 the asynchronous run is faster by what the
model's launch-blocking price says, at DP 2 the asynchronous run's step costs what the blocked
one does. Read as a property of DeepSpeed's pipe engine (Megatron-DeepSpeed's only pipeline
path), that says: *at DP >= 2 an asynchronous pipe-engine run pays the launch-blocking price*.
No source gives that mechanism (DeepSpeed v0.5.10 .. master 2022-02-15, see RESULTS.md), so it
could enter trainsim only as a rule keyed on DP, i.e. a speed factor; this script measures what
that rule would do, to tell a framework property from the one cluster's state:

1. every training row in the public file and in ``benchmarks/training_*.csv`` that runs
   DeepSpeed's pipe engine (framework ``megatron-deepspeed``, pp > 1), with its DP, as given and
   with ``launch_blocking`` added where DP >= 2 (the rule); rows that already carry the option
   (the post-fix BLOOM checks) are left out, the rule adds nothing to them;
2. per file: the MAPE of those rows both ways.

On BLOOM rows the rule and the errata (``benchmarks/training_errata.csv``: the same option,
from the slurm files and the 'Hanging Issue' section) set the same cell, so with the errata
applied the rule adds nothing there: on the public file it reproduces the erratum. The test of
the rule is the other pipe-engine rows, which ran on other clusters without the variable.
"""

from __future__ import annotations

import csv
import sys
import tempfile
from pathlib import Path

from trainsim.validate import BUNDLED_DIR, validate_file

HERE = Path(__file__).resolve().parent
OPTION = "launch_blocking"


def dp_of(row: dict[str, str]) -> int:
    """Data-parallel size of a training row: GPUs over TP x PP x CP."""
    tp, pp, cp = (int(row.get(k) or 1) for k in ("tp", "pp", "cp"))
    return int(row["num_gpus"]) // (tp * pp * cp)


def runs_pipe_engine(row: dict[str, str]) -> bool:
    """Megatron-DeepSpeed with pp > 1: DeepSpeed's PipelineEngine (GPTModelPipe)."""
    return row.get("framework") == "megatron-deepspeed" and int(row.get("pp") or 1) > 1


def with_rule(row: dict[str, str]) -> dict[str, str]:
    """The row with ``launch_blocking`` added where DP >= 2 (unchanged otherwise)."""
    opts = [o for o in (row.get("options") or "").split(";") if o]
    if dp_of(row) < 2 or OPTION in opts:
        return dict(row)
    return {**row, "options": ";".join([*opts, OPTION])}


def candidate_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """(header, the file's pipe-engine rows without the option) of a training file."""
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        header = list(reader.fieldnames or [])
        rows = list(reader)
    if "framework" not in header or "measured_iteration_s" not in header:
        return header, []
    return header, [r for r in rows if runs_pipe_engine(r) and OPTION not in (r["options"] or "")]


def _predict(header: list[str], rows: list[dict[str, str]]) -> list[float]:
    path = Path(tempfile.mkdtemp()) / "rows.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerows(rows)
    return [r.predicted for r in validate_file(path, workers=2)[1]]


def signed(pred: float, meas: float) -> float:
    return pred / meas - 1.0


def main(argv: list[str]) -> int:
    files = [Path(a) for a in argv] or [BUNDLED_DIR / "training_public.csv",
                                         *sorted(HERE.glob("training_*.csv"))]
    print("1. DeepSpeed pipe-engine rows: as given / with launch blocking at DP >= 2 (signed %)")
    summary = []
    for path in files:
        header, rows = candidate_rows(path)
        if not rows:
            continue
        base = _predict(header, rows)
        rule = _predict(header, [with_rule(r) for r in rows])
        meas = [float(r["measured_iteration_s"]) for r in rows]
        for r, b, a, m in zip(rows, base, rule, meas):
            print(f"  {path.name[:24]:24s} {r['id']:40s} {r['gpu'][:13]:13s} dp {dp_of(r):2d} "
                  f"{100 * signed(b, m):+6.1f} -> {100 * signed(a, m):+6.1f}")
        n = len(rows)
        summary.append((path.name, n,
                        sum(abs(signed(b, m)) for b, m in zip(base, meas)) / n,
                        sum(abs(signed(a, m)) for a, m in zip(rule, meas)) / n))
    print("\n2. MAPE of those rows per file: as given -> with the rule")
    for name, n, before, after in summary:
        print(f"  {name:32s} n={n:2d}  {100 * before:5.2f} % -> {100 * after:5.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
