"""Where FlagPerf's Megatron-core 0.6 Llama 3 rows (benchmarks/training_flagperf.csv) miss, per
micro-batch and per kind of kernel: the H100 rows against the A800 rows of the same container
(issue 17, flagperf53; a diagnostic: nothing here feeds trainsim).

    python benchmarks/flagperf_parts.py            # every megatron-core row of the file
    python benchmarks/flagperf_parts.py ROW_ID ...

For each row (as validated): micro-batches per data-parallel rank; the measured and predicted
step per micro-batch; their gap; one micro-batch's kernels on the heaviest stage's layers plus
the head and the embedding, priced alone (``Pricer.compute.explain``) and summed by kind:
GEMMs, attention, other (memory-bound) kernels, collectives at their network time (an upper
bound on what is exposed); the factor on the attention alone that would close the gap
(1 + gap / attention); and the GPU's ``sustained_of_burst`` that would make the row exact if the
power-limited clock were the only cause (``dense51_parts.fraction_for``: linear in its inverse
between the priced step and the step at the burst clock).

A gap that scales with the GEMMs would be larger in bf16 than in fp8 (the fp8 GEMMs take 58 %
of the bf16 ones here); a clock would slow GEMMs and attention alike. The bf16 and fp8 rows of
one layout share their attention (bf16 in both: Transformer Engine 1.3's DotProductAttention
runs no fp8 attention) and their memory-bound kernels.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from trainsim.pricing import Pricer
from trainsim.workload.head import (
    embedding_backward,
    embedding_forward,
    head_backward,
    head_forward,
)
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Comm, Gemm
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dense51_parts import fraction_for
from layer_prices import chosen_config

FILE = str(Path(__file__).resolve().parent / "training_flagperf.csv")


def kinds(cfg) -> dict[str, float]:
    """Seconds of one micro-batch on the heaviest stage by kind: its layers forward and
    backward, plus the head and the embedding (both, as on a one-stage run), each op alone."""
    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=False)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    hf = head_forward(cfg, sh)
    ends = hf + head_backward(cfg, sh, hf) + embedding_forward(cfg, sh) + embedding_backward(cfg, sh)
    got = {"gemm": 0.0, "attn": 0.0, "other": 0.0, "comm": 0.0}
    for ops, times in ((lf + lb, max(cfg.stage_layer_counts)), (ends, 1)):
        for op in ops:
            if isinstance(op, Comm):
                got["comm"] += times * pricer.comm_time(op)
                continue
            t, _ = pricer.compute.explain(op)
            kind = "gemm" if isinstance(op, Gemm) else "attn" if isinstance(op, Attention) else "other"
            got[kind] += times * t
    return got


def row(row_id: str) -> str:
    chosen = chosen_config([row_id, FILE])
    if chosen is None:
        return f"| {row_id} | error |"
    res, cfg = chosen
    m = cfg.training.global_batch_size // (cfg.training.micro_batch_size * cfg.dp)
    meas, pred = res.measured / m * 1e3, res.predicted / m * 1e3
    k = kinds(cfg)
    _, _, need = fraction_for(cfg, res.measured)
    return (f"| {row_id.removeprefix('flagperf-')} | {m} | {meas:.1f} | {pred:.1f} "
            f"| {100 * (res.predicted / res.measured - 1):+.1f} | {meas - pred:+.1f} "
            f"| {k['gemm'] * 1e3:.1f} | {k['attn'] * 1e3:.1f} | {k['other'] * 1e3:.1f} "
            f"| {k['comm'] * 1e3:.1f} | {1 + (meas - pred) / (k['attn'] * 1e3):.2f} | {need:.3f} |")


def main(argv: list[str]) -> int:
    with open(FILE, newline="") as fh:
        ids = argv or [r["id"] for r in csv.DictReader(fh) if r["framework"] == "megatron-core"]
    print("| row | micro-batches | measured ms/mb | predicted ms/mb | err % | gap ms/mb "
          "| GEMM ms | attention ms | other ms | collectives ms | attention x to close "
          "| sustained fraction for 0 error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row_id in ids:
        print(row(row_id), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
