"""Where TE's once-a-step fp8 weight transposes land on the MLPerf v4.0 GPT-3 rows (56th
session, tecache56): the step without them, with them in each chunk's first backward (TE
v1.6rc1, what the profile prices) and, as a what-if, in its first forward (TE >= 1.8).

usage: PYTHONPATH=src python benchmarks/tecache56_placement.py   (~1 min)"""

from __future__ import annotations

import csv

from trainsim.simulator import simulate
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload import te_weight_cache as tc

ROWS = ("mlperf40-gpt3-175b-512", "mlperf40-gpt3-175b-10752", "mlperf40-gpt3-175b-11616")


def main() -> None:
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}
    late, made = tc.transposes_in_backward, tc.transposes
    cases = (("none", late, lambda c: False), ("first backward", late, made),
             ("first forward", lambda c: False, made))
    print("| row (measured s) | tp/pp/vpp | " + " | ".join(name for name, *_ in cases) + " |")
    print("|---|---|" + "---|" * len(cases))
    for row_id in ROWS:
        row = rows[row_id]
        cfg = row_config(row, predict_training_row(row).chosen)
        measured = float(row["measured_iteration_s"])
        cells = []
        try:
            for _, where, which in cases:
                tc.transposes_in_backward, tc.transposes = where, which
                step = simulate(cfg).iteration_time_s
                cells.append(f"{step:.4f} ({100 * (step / measured - 1):+.2f} %)")
        finally:
            tc.transposes_in_backward, tc.transposes = late, made
        p = cfg.parallel
        print(f"| {row_id} ({measured}) | {p.tp}/{p.pp}/{p.vpp} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
