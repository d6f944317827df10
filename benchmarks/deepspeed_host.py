"""Host and launch costs under DeepSpeed's engines, row by row (issue 17 scope 2; a check, not an input).

    python benchmarks/deepspeed_host.py [TRAINING.csv]   # default: benchmarks/training_deepspeed.csv

For each DeepSpeed / Megatron-DeepSpeed row: micro-batches per step, the measured and predicted
step, the gap per micro-batch, what trainsim charges per micro-batch on its slowest stage for the
GPU waiting on the host (``host``: launches at ``compute.host.HOST_S_PER_KERNEL`` and the waits
after host syncs, the batch function's and the engine's loss read included) and, of that, the
loss read alone (``workload.pipe_engine.deepspeed_loss_read``, the run priced without it).
Then three what-ifs with a larger per-kernel host cost (30 us is the fitted constant), and,
for rows that differ only in their attention kernel, the measured saving per micro-batch
beside the predicted one: a host-bound run could not gain from a faster kernel more than the
GPU time that kernel saves.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

from trainsim import chunks
from trainsim.compute import host
from trainsim.simulator import simulate
from trainsim.validate.training import predict_training_row, row_config

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "benchmarks" / "training_deepspeed.csv"
WHAT_IF_US = (100.0, 200.0)
"""Per-kernel host costs for the what-ifs (microseconds): not a fit, a scale."""
PAIR_KEY = ("model", "hidden_size", "num_layers", "gpu", "num_gpus", "tp", "pp",
            "global_batch_size", "micro_batch_size", "seq_length", "source")


def host_per_microbatch(cfg, result) -> tuple[float, float]:
    """(host wait, time) per micro-batch on the stage whose passes take longest, seconds."""
    per_stage: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for task in result.timeline.tasks:
        rank, stream = task.stream
        if stream != "compute" or task.label.split()[0] not in ("F", "B"):
            continue
        stage = per_stage[rank]
        stage[0] += dict(task.segments).get("host", 0.0)
        stage[1] += task.duration_s
    wait, busy = max(per_stage.values(), key=lambda s: s[1])
    return wait / cfg.num_microbatches, busy / cfg.num_microbatches


def main(path: Path) -> None:
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f)
                if r["framework"] in ("deepspeed", "megatron-deepspeed")]
    print(f"{'row':36s} {'mb':>4s} {'meas s':>8s} {'pred s':>8s} {'gap ms/mb':>9s} "
          f"{'host ms/mb':>10s} {'loss read':>9s}  signed % at host 30 / "
          + " / ".join(f"{u:.0f}" for u in WHAT_IF_US) + " us per kernel")
    predicted: dict[str, float] = {}
    for r in rows:
        res = predict_training_row(r)
        cfg = row_config(r, res.chosen)
        meas = float(r["measured_iteration_s"])
        predicted[r["id"]] = res.predicted
        wait, _ = host_per_microbatch(cfg, simulate(cfg, keep_timeline=True))
        read = chunks.deepspeed_loss_read
        chunks.deepspeed_loss_read = lambda c: []
        try:
            without = simulate(cfg).iteration_time_s
        finally:
            chunks.deepspeed_loss_read = read
        errors = [res.predicted / meas - 1]
        base = host.HOST_S_PER_KERNEL
        for us in WHAT_IF_US:
            host.HOST_S_PER_KERNEL = us * 1e-6
            try:
                errors.append(predict_training_row(r).predicted / meas - 1)
            finally:
                host.HOST_S_PER_KERNEL = base
        n = cfg.num_microbatches
        print(f"{r['id']:36s} {n:4d} {meas:8.3f} {res.predicted:8.3f} "
              f"{1e3 * (meas - res.predicted) / n:9.2f} {1e3 * wait:10.3f} "
              f"{1e3 * (res.predicted - without) / n:9.3f}  "
              + " / ".join(f"{100 * e:+.1f}" for e in errors))
    pairs: dict[tuple, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        pairs[tuple(r[k] for k in PAIR_KEY)].append(r)
    print("\nrows differing only in attention: saving per micro-batch, measured vs predicted (ms)")
    for group in pairs.values():
        group.sort(key=lambda r: -float(r["measured_iteration_s"]))
        for i, slow in enumerate(group):
            for fast in group[i + 1:]:
                if fast["attention"] == slow["attention"]:
                    continue
                n = row_config(fast).num_microbatches
                saved = float(slow["measured_iteration_s"]) - float(fast["measured_iteration_s"])
                model = predicted[slow["id"]] - predicted[fast["id"]]
                print(f"  {slow['id']} -> {fast['attention']}: measured {1e3 * saved / n:.2f}, "
                      f"predicted {1e3 * model / n:.2f}")

if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
