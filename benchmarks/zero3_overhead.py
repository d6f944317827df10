"""Where the DeepSpeed 2021 ZeRO-3 rows of Narayanan et al. 2021 (Table 2) spend the time that
is not compute, measured against predicted (issue 17 diagnostics; nothing here feeds trainsim).

    python benchmarks/zero3_overhead.py [training_public.csv]

For each ``megatron21-t2-zero3-*`` row, and the two Table 2 points with micro-batch 2 that no
file holds (174.6B on 768 GPUs at 88 TFLOP/s, 529.6B on 1120 at 98, converted with the paper's
eq. (3); the figures are those an earlier session recorded in benchmarks/RESULTS.md, not
re-read from the paper here): the pure compute trainsim prices (every layer's forward twice,
for the full recompute, its backward, and the head), the time beyond it per layer, measured and
predicted, and what each layer moves per step (parameter all-gathers: forward, recompute and the
backward's re-gathers after ``stage3_max_reuse_distance``; the gradient all-reduce of
DeepSpeed < 0.4.3's stage-3 default, counted at twice its bytes as a ring moves them).

Last, a least-squares fit of that overhead to ``bytes / B + steps x L`` (``steps``: ring steps,
N - 1 per all-gather and 2 (N - 1) per all-reduce, six all-reduces a layer): what one effective
rate and one per-step latency for all six points would have to be. A what-if, not a model.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

from trainsim.pricing import Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.head import head_backward, head_forward
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of
from trainsim.workload.sharding import (
    ZERO3_PERSISTENCE_THRESHOLD,
    _rank_tensors,
    _released_after_recompute,
)

ALL_REDUCES_PER_LAYER = 6  # reduce-bucket flushes of a 175B / 530B layer (RESULTS.md, zero3)

# (base row, GPUs, micro-batch, published TFLOP/s per GPU, global batch, layers, hidden)
EXTRA = [("megatron21-t2-zero3-174.6B-1536", 768, 2, 88.0, 1536, 96, 12288),
         ("megatron21-t2-zero3-529.6B-2240", 1120, 2, 98.0, 2240, 105, 20480)]


def eq3_seconds(batch: int, seq: int, layers: int, hidden: int, vocab: int, gpus: int,
                tflops: float) -> float:
    """Narayanan et al. 2021 eq. (3) FLOPs of an iteration over the published rate."""
    flops = 96 * batch * seq * layers * hidden ** 2 * (
        1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))
    return flops / (gpus * tflops * 1e12)


def main(argv: list[str]) -> None:
    path = Path(argv[0]) if argv else BUNDLED_DIR / "training_public.csv"
    rows = [r for r in csv.DictReader(path.open()) if r["id"].startswith("megatron21-t2-zero3")]
    by_id = {r["id"]: r for r in rows}
    for base, gpus, mb, tflops, gbs, layers, hidden in EXTRA:
        row = dict(by_id[base]) | {"num_gpus": str(gpus), "micro_batch_size": str(mb)}
        row["id"] = f"{base.rsplit('-', 1)[0]}-{gpus} (mb {mb}, not in a file)"
        row["measured_iteration_s"] = str(eq3_seconds(gbs, 2048, layers, hidden, 51200, gpus,
                                                      tflops))
        rows.append(row)
    print(f"{'row':48s} {'N':>5s} {'meas s':>7s} {'pred s':>7s} {'err':>6s} {'pure s':>7s} "
          f"{'over/layer meas':>15s} {'pred':>6s}  per layer: gathers, GB; all-reduce GB")
    fit_rows = []
    for row in rows:
        res = predict_training_row(row)
        cfg = row_config(row, res.chosen)
        pricer, sh = Pricer(cfg), shard_of(cfg)
        fwd_ops = layer_forward(cfg, sh)
        fwd = pricer.price(fwd_ops).duration_s
        bwd = pricer.price(backward_of(fwd_ops, sh)).duration_s
        hf = head_forward(cfg, sh)
        head = pricer.price(hf).duration_s + pricer.price(head_backward(cfg, sh, hf)).duration_s
        layers, n = cfg.model.num_layers, cfg.dp
        pure = layers * (2 * fwd + bwd) + head
        big = [e for e, _ in _rank_tensors(cfg, [1]) if e >= ZERO3_PERSISTENCE_THRESHOLD]
        again = [e for e, _ in _released_after_recompute(cfg, [1])
                 if e >= ZERO3_PERSISTENCE_THRESHOLD]
        gathers, gather_bytes = 2 * len(big) + len(again), 2.0 * (2 * sum(big) + sum(again))
        reduce_bytes = 2 * 2.0 * sum(e for e, _ in _rank_tensors(cfg, [1]))
        meas = res.measured
        over, over_pred = (meas - pure) / layers, (res.predicted - pure) / layers
        print(f"{row['id']:48s} {n:5d} {meas:7.1f} {res.predicted:7.1f} "
              f"{100 * (res.predicted / meas - 1):+5.1f}% {pure:7.1f} {over * 1e3:12.0f} ms "
              f"{over_pred * 1e3:6.0f}  {gathers}, {gather_bytes / 1e9:.1f}; "
              f"{reduce_bytes / 1e9:.1f}")
        steps = (gathers + 2 * ALL_REDUCES_PER_LAYER) * (n - 1)
        fit_rows.append((row["id"], pure, layers, meas, over,
                         [(gather_bytes + reduce_bytes) / 1e9, steps]))
    a = np.array([r[5] for r in fit_rows])
    y = np.array([r[4] for r in fit_rows])
    (inv_b, lat), *_ = np.linalg.lstsq(a, y, rcond=None)
    print(f"\nwhat-if fit of the overhead: B = {1 / inv_b:.0f} GB/s moved, "
          f"L = {lat * 1e6:.1f} us per ring step")
    for (rid, pure, layers, meas, _, _), over in zip(fit_rows, a @ np.array([inv_b, lat])):
        t = pure + layers * over
        print(f"  {rid:48s} {t:7.1f} s ({100 * (t / meas - 1):+5.1f}%)")


if __name__ == "__main__":
    main(sys.argv[1:])
