"""Scoped CUDA graphs against Megatron-Bridge's A/B runs (issue 17 host overheads; nothing here
feeds trainsim).

    PYTHONPATH=src python benchmarks/cuda_graph_scope.py [benchmarks/cuda_graph_scope_ab.csv]

The rows (``cuda_graph_scope_ab.csv``, training format v2 with the optional
``cuda_graph_scope`` column) are the eager and TE-scoped (attn + moe_router + moe_preprocess)
step times of NVIDIA-NeMo/Megatron-Bridge docs/training/cuda-graphs.md @ 2f3ecca48 (PR #2960):
Qwen3-30B-A3B 623 -> 484 ms, gpt-oss-20B 467-520 -> 391-399 ms on 16 H100s. Each pair is
predicted as ``trainsim validate`` predicts a row; printed: both step times against the
measurements, the step-time gain the graphs bring (predicted and measured), the same pair with
whole-layer graphs (scope left empty), and the host launches of one MoE layer's forward and
backward eager and scoped (``compute.host.scoped_launches``).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from trainsim.compute import host
from trainsim.pricing import Pricer
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of

HERE = Path(__file__).parent


def layer_launches(row: dict[str, str]) -> tuple[int, int]:
    """Host launches of one MoE layer's forward and backward as the row's config issues them."""
    cfg = row_config(row, predict_training_row(row).chosen)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=True)
    bwd = backward_of(fwd, sh)
    return tuple(sum(pricer.scoped_counts(ops) or [host.launches(o) for o in ops])  # type: ignore[return-value]
                 for ops in (fwd, bwd))


def main(path: str) -> None:
    with open(path, newline="") as f:
        rows = {r["id"]: r for r in csv.DictReader(f)}
    print("| pair | eager meas. / pred. ms | scoped meas. / pred. ms | gain meas. / pred. "
          "| whole-layer pred. ms | launches/MoE layer fwd+bwd eager -> scoped |")
    print("|---|---|---|---|---|---|")
    for rid, eager in rows.items():
        if not rid.endswith("-eager"):
            continue
        scoped = rows[rid.removesuffix("-eager") + "-scoped"]
        whole = dict(scoped, cuda_graph_scope="")
        pe, ps, pw = (predict_training_row(r).predicted for r in (eager, scoped, whole))
        me, ms = float(eager["measured_iteration_s"]), float(scoped["measured_iteration_s"])
        le, ls = layer_launches(eager), layer_launches(scoped)
        print(f"| {rid.removesuffix('-eager')} | {me * 1e3:.0f} / {pe * 1e3:.0f} "
              f"| {ms * 1e3:.0f} / {ps * 1e3:.0f} | {1 - ms / me:.1%} / {1 - ps / pe:.1%} "
              f"| {pw * 1e3:.0f} | {le[0]}+{le[1]} -> {ls[0]}+{ls[1]} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(HERE / "cuda_graph_scope_ab.csv"))
