"""Where a hybrid model's step goes: each layer kind's forward and backward on one rank, and the
Mamba-2 layer's ops one by one (priced as the simulator prices them).

    PYTHONPATH=src python benchmarks/mamba51_blocks.py [--row ID] [--file CSV] [--ops]

Without ``--row``: the first row of benchmarks/training_nemotron3.csv, as ``trainsim validate``
resolves it (its unknown cells chosen as validate chooses them).
"""

from __future__ import annotations

import argparse
import csv
from collections import Counter
from pathlib import Path

from trainsim.config.hybrid import layer_kind
from trainsim.pricing import Pricer
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.mamba_block import SSD
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

FILE = Path(__file__).resolve().parent / "training_nemotron3.csv"
NAMES = {"M": "Mamba-2", "*": "attention", "-": "MLP", "E": "MoE"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(FILE))
    ap.add_argument("--row", help="row id (default: the first)")
    ap.add_argument("--ops", action="store_true", help="list the Mamba layer's ops")
    a = ap.parse_args()
    with open(a.file) as f:
        rows = list(csv.DictReader(f))
    row = next(r for r in rows if a.row in (None, r["id"]))
    res = predict_training_row(row)
    if res.predicted is None:
        raise SystemExit(f"{row['id']}: {res.error}")
    cfg = row_config(row, res.chosen)
    print(f"{row['id']}: predicted {res.predicted:.4f} s, measured {res.measured:.4f} s; "
          f"chosen {res.chosen}")
    m = cfg.model
    sh, pricer = shard_of(cfg), Pricer(cfg)
    counts = Counter(layer_kind(m, i) for i in range(m.num_layers))
    total = 0.0
    print("kind        layers  fwd ms  bwd ms  (per micro-batch, one rank)  x layers ms")
    for kind, n in sorted(counts.items()):
        lf = layer_forward(cfg, sh, kind)
        lb = layer_recompute(cfg, sh, lf) + backward_of(lf, sh)
        f, b = pricer.price(lf).duration_s, pricer.price(lb).duration_s
        total += n * (f + b)
        print(f"{NAMES.get(kind, kind):10s} {n:6d} {f * 1e3:7.3f} {b * 1e3:7.3f}"
              f" {'':29s}{n * (f + b) * 1e3:8.2f}")
    print(f"layers' passes per micro-batch: {total * 1e3:.2f} ms; micro-batches per rank "
          f"{cfg.num_microbatches}")
    if "M" in counts:  # the fused conv1d + SSD scan's share, and what would close the gap
        lf = layer_forward(cfg, sh, "M")
        ssd = sum(s for ops in (lf, backward_of(lf, sh))
                  for _, s, name in pricer.price(ops).segments if name.startswith(SSD))
        whole = ssd * counts["M"] * cfg.num_microbatches * cfg.parallel.vpp / cfg.parallel.pp
        gap = res.measured - res.predicted
        print(f"conv1d + SSD kernels: {ssd * 1e3:.3f} ms per Mamba layer and micro-batch, "
              f"{whole:.2f} s of the iteration; the gap ({gap:+.2f} s) would be these kernels at "
              f"{(whole + gap) / whole:.2f}x their priced time (an attribution, not a fit)")
    if a.ops and "M" in counts:
        lf = layer_forward(cfg, sh, "M")
        for label, ops in (("forward", lf), ("backward", backward_of(lf, sh))):
            print(f"-- Mamba layer {label}")
            for cat, s, name in pricer.price(ops).segments:
                print(f"   {name:40s} {cat:10s} {s * 1e6:9.1f} us")


if __name__ == "__main__":
    main()
