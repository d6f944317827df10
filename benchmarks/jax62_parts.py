"""Where a JAX HSDP row's step goes: per row, the backward's end, the replica all-reduces over the
data axis (count, total) and how far past the backward they end, beside the measured
and predicted step; ``--plain`` prices the same rows without the unscanned layers' combining
(each layer's replica all-reduce right after its reduce-scatter). A check, nothing fitted.

    PYTHONPATH=src python benchmarks/jax62_parts.py [--plain] [--file CSV] [ROW_ID ...]
"""

from __future__ import annotations

import csv
import dataclasses
import sys
from pathlib import Path

from trainsim import simulate
from trainsim.validate.training import predict_training_row, row_config

ROWS = Path(__file__).with_name("training_maxtext_a3.csv")


def parts(row: dict[str, str], plain: bool = False) -> dict[str, float]:
    """The row's step parts (seconds; ``replica_mb``: the sizes of its replica all-reduces)."""
    cfg = row_config(row, predict_training_row(row).chosen)
    if plain:
        cfg = dataclasses.replace(
            cfg, training=dataclasses.replace(cfg.training, unscanned_layers=False),
            parallel=dataclasses.replace(cfg.parallel, all_reduce_combine_bytes=None))
    out = simulate(cfg, keep_timeline=True)
    tl = out.timeline
    ids = range(len(tl.tasks))
    bwd = max((tl.end_s[i] for i in ids if tl.tasks[i].stream[1] == "compute"
               and tl.tasks[i].label.startswith("B ")), default=0.0)
    rep = [i for i in ids if "HSDP all-reduce" in tl.tasks[i].label]
    done = max((tl.end_s[i] for i in rep), default=bwd)
    return {"measured": float(row["measured_iteration_s"]), "predicted": out.iteration_time_s,
            "backward_end": bwd, "replica_n": len(rep),
            "replica_s": sum(tl.tasks[i].duration_s for i in rep),
            "replica_after_bwd": done - bwd, "exposed_comm": out.breakdown["exposed_comm_s"]}


def main(argv: list[str]) -> int:
    plain = "--plain" in argv
    argv = [a for a in argv if a != "--plain"]
    path = ROWS
    if "--file" in argv:
        i = argv.index("--file")
        path, argv = Path(argv[i + 1]), argv[:i] + argv[i + 2:]
    with path.open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if not argv or r["id"] in argv]
    print(f"{'row':40s} {'meas':>6s} {'pred':>6s} {'err%':>6s} {'bwd':>6s} {'n AR':>4s} "
          f"{'AR s':>6s} {'AR after':>8s} {'exposed':>7s}")
    for r in rows:
        p = parts(r, plain)
        print(f"{r['id']:40s} {p['measured']:6.3f} {p['predicted']:6.3f} "
              f"{100 * (p['predicted'] / p['measured'] - 1):+6.1f} {p['backward_end']:6.3f} "
              f"{p['replica_n']:4d} {p['replica_s']:6.3f} {p['replica_after_bwd']:8.3f} "
              f"{p['exposed_comm']:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
