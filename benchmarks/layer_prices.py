"""Where one validated row's time per micro-batch goes: every op of one decoder layer, the head
and the embedding, priced as ``trainsim validate`` prices the row (its tuned settings, errata
applied), with the compute model that priced each kernel.

    python benchmarks/layer_prices.py ROW_ID [TRAINING.csv]  # default: the public file

(``benchmarks/training_errata.csv`` applied where it corrects the file: the public file; any
other training file's row as written.)

For each op: its price alone (a collective at its network time), the rate of a GEMM or an
attention kernel, and the model behind it (``database (exact)``, ``database (interpolated)``,
``roofline``; a database price is scaled to the row's GPU, e.g. its sustained clock). Then the
layer as ``Pricer.price`` charges it (collectives hidden behind compute where the run overlaps
them, GEMMs slowed or chunked by the TP overlap), by category, and each pipeline stage's
work per micro-batch (its layers, plus the embedding on the first and the head on the last):
the heaviest stage bounds the iteration at (micro-batches x its work). The layer's backward
includes a selective recompute; a full recompute of whole layers (``recompute: full``) is not in
the per-stage sums. A check, not an input: nothing here feeds trainsim.
"""

from __future__ import annotations

import csv
import sys
import tempfile
from typing import Any

from trainsim.config import RunConfig
from trainsim.errors import ConfigError
from trainsim.pricing import Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import corrected_file
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.head import (
    embedding_backward,
    embedding_forward,
    head_backward,
    head_forward,
)
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Comm, Gemm, Op
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of


def _row(row_id: str, path: str) -> dict[str, str]:
    """The row as validated, with its errata where the file is the one they correct (the
    public file); another training file's row as written."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            fixed, _ = corrected_file(path, "benchmarks/training_errata.csv", tmp)
        except ConfigError:
            fixed = None
        with open(fixed or path, newline="") as fh:
            return next(r for r in csv.DictReader(fh) if r["id"] == row_id)


def chosen_config(argv: list[str]) -> tuple[Any, RunConfig] | None:
    """The validator's result for the row ``argv[0]`` of the file ``argv[1]`` (the bundled
    public file by default) and the config it chose; None, with the row's error printed,
    where it has none."""
    row_id = argv[0]
    path = argv[1] if len(argv) > 1 else str(BUNDLED_DIR / "training_public.csv")
    row = _row(row_id, path)
    res = predict_training_row(row)
    if res.error:
        print(f"{row_id}: {res.error}")
        return None
    return res, row_config(row, res.chosen)


def _line(pricer: Pricer, op: Op) -> str:
    if isinstance(op, Comm):
        t = pricer.comm_time(op)
        return f"{op.name:40s} {op.kind} on {op.group}, {op.bytes / 1e6:.1f} MB: {t * 1e6:8.1f} us"
    t, source = pricer.compute.explain(op)
    rate = f"{op.flops / t / 1e12:7.1f} TFLOP/s" if isinstance(op, (Gemm, Attention)) else ""
    shape = f" m={op.m} n={op.n} k={op.k} {op.dtype}" if isinstance(op, Gemm) else ""
    return f"{op.name:40s} {t * 1e6:8.1f} us {rate} {source}{shape}"


def main(argv: list[str]) -> int:
    chosen = chosen_config(argv)
    if chosen is None:
        return 1
    row_id, (res, cfg) = argv[0], chosen
    pricer, sh = Pricer(cfg), shard_of(cfg)
    moe = cfg.model.is_moe_layer(cfg.model.num_layers - 1)
    lf = layer_forward(cfg, sh, moe=moe)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    hf = head_forward(cfg, sh)
    parts = {"layer forward": lf, "layer backward": lb, "head forward": hf,
             "head backward": head_backward(cfg, sh, hf),
             "embedding forward": embedding_forward(cfg, sh),
             "embedding backward": embedding_backward(cfg, sh)}
    print(f"{row_id}: predicted {res.predicted:.3f} s, measured {res.measured:.3f} s, "
          f"chosen {res.chosen}")
    priced = {}
    for label, ops in parts.items():
        print(f"-- {label}")
        for op in ops:
            print("   " + _line(pricer, op))
        p = pricer.price(ops)
        priced[label] = p.duration_s
        cats = ", ".join(f"{c} {t * 1e3:.3f}" for c, t in p.summary)
        print(f"   charged {p.duration_s * 1e3:.3f} ms ({cats})")
    layer = priced["layer forward"] + priced["layer backward"]
    ends = {0: priced["embedding forward"] + priced["embedding backward"]}
    last = len(cfg.stage_layer_counts) - 1
    ends[last] = ends.get(last, 0.0) + priced["head forward"] + priced["head backward"]
    per_stage = [n * layer + ends.get(s, 0.0) for s, n in enumerate(cfg.stage_layer_counts)]
    print(f"-- work per micro-batch by pipeline stage (ms): "
          f"{', '.join(f'{w * 1e3:.1f}' for w in per_stage)}")
    dp = cfg.dp
    m = cfg.training.global_batch_size // (cfg.training.micro_batch_size * dp)
    print(f"   {m} micro-batches per rank x heaviest stage = {m * max(per_stage):.3f} s "
          f"(breakdown {', '.join(f'{k} {v:.3f}' for k, v in res.extra['breakdown'].items())})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
