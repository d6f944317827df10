"""Could the host bound the small Megatron-DeepSpeed rows? Launches per micro-batch, counted by
trainsim and at source, against the time each micro-batch took (a check, not an input).

    python benchmarks/mds_host_bound.py [TRAINING.csv]   # default: benchmarks/training_deepspeed.csv

Host time overlaps GPU time: a step is host-bound only where the host issues its launches
slower than the GPU runs them. Whatever the GPU does, a micro-batch cannot take longer on the
host than (launches x cost per launch) plus its waits, so the cost per launch a fully
host-bound micro-batch implies is ``c* = measured time per micro-batch / launches``: a row
whose c* sits far above what an eager op costs (PyTorch's per-op overhead is some 10-20 us on
a 2020s x86 host with autograd recording, a CUDA launch 3-5 us; ``compute.host`` fits 30 us)
is bound by something other than its launches.

Per row (Megatron-DeepSpeed rows only; the heaviest pipeline stage): micro-batches per rank,
measured and predicted ms per micro-batch, the launches trainsim issues per micro-batch (the
stage's layers forward + full recompute + backward, the head or the embedding), the same with
the layer at its source count (``SOURCE_LAYER``, below), c* for each, ``serial``: the cost
per launch at source count if the host never overlapped the GPU at all (measured minus
predicted, over the launches: a lower bound on what a host explanation needs), and the host
time the source count takes at the fitted 30 us.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from trainsim.compute.host import HOST_S_PER_KERNEL, MEGATRON_UNFUSED_LAUNCHES, launches
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.head import (
    embedding_backward,
    embedding_forward,
    head_backward,
    head_forward,
)
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "benchmarks" / "training_deepspeed.csv"

SOURCE_LAYER = {
    # the ops trainsim counts one launch for and the framework launches more, per layer
    # (microsoft/Megatron-DeepSpeed@7f7cea32 megatron/model/transformer.py; the same code at
    # 9446eaac (before_rebase), 99d1eead, c08e2cc2 and cc3a94c6):
    "unfused attention forward": (5, (
        "CoreAttention.forward L251-337: torch.baddbmm, FusedScaleMaskSoftmax (one kernel, "
        "causal), attention_dropout under the RNG tracker, torch.bmm, "
        "permute(2, 0, 1, 3).contiguous()")),
    "unfused attention backward": (9, (
        "autograd of the same: bmm's two bmm, dropout's mask product, the fused softmax "
        "backward, baddbmm's two bmm each times alpha (two muls; derivatives.yaml "
        "maybe_multiply), split_tensor_along_last_dim's cat of dQ, dK, dV")),
    "layer norm backward": (3, (
        "megatron/model/fused_layer_norm.py MixedFusedLayerNorm.forward L76-95: apex "
        "FusedLayerNormAffineFunction (cuComputePartGradGammaBeta, cuComputeGradGammaBeta, "
        "cuComputeGradInput) at widths outside persist_ln_hidden_sizes (768), apex contrib "
        "FastLayerNormFN (2: ln_bwd, finalize) at the listed ones; 3 counted")),
    "residual gradient sums": (2, (
        "autograd adds the residual branch's gradient to the norm input's at each of the "
        "layer's two branch points (hidden_states, layernorm_input)")),
}
"""Launches per layer at source where trainsim's op list counts fewer (``TRAINSIM_LAYER``:
attention 5 forward, 8 backward since the 29th session's unfused29, 1 / 1 before; a norm
backward 1; residual sums 0 beyond the bias-dropout-add backward). The two scalar copies of ``ParallelTransformerLayer.forward`` are in trainsim
(profile feature ``layer_scalar_syncs``)."""

TRAINSIM_LAYER = {"unfused attention forward": MEGATRON_UNFUSED_LAUNCHES[0] + 1,
                  "unfused attention backward": MEGATRON_UNFUSED_LAUNCHES[1] + 1,
                  "layer norm backward": 1, "residual gradient sums": 0}
"""trainsim's count of the same: the attention core as ``compute.host.MEGATRON_UNFUSED_LAUNCHES``
with the dropout these rows run (0.1), which leaves out only the QKV split's backward cat (an
op of its own, outside the core)."""


def extra_source_launches(unfused: bool) -> tuple[int, int]:
    """(forward, backward) launches per layer the source issues beyond trainsim's count."""
    fwd = SOURCE_LAYER["unfused attention forward"][0] - TRAINSIM_LAYER[
        "unfused attention forward"] if unfused else 0
    bwd = (SOURCE_LAYER["unfused attention backward"][0]
           - TRAINSIM_LAYER["unfused attention backward"]) if unfused else 0
    bwd += 2 * (SOURCE_LAYER["layer norm backward"][0] - TRAINSIM_LAYER["layer norm backward"])
    bwd += SOURCE_LAYER["residual gradient sums"][0] - TRAINSIM_LAYER["residual gradient sums"]
    return fwd, bwd


def stage_launches(row: dict[str, str]) -> dict[str, float] | None:
    """Launches per micro-batch on the stage that issues most, trainsim's and at source."""
    res = predict_training_row(row)
    if not res.predicted:
        return None
    cfg = row_config(row, res.chosen)
    sh = shard_of(cfg)
    lf = layer_forward(cfg, sh)
    full = cfg.parallel.recompute == "full"
    rc = layer_recompute(cfg, sh, lf, whole=True) if full else []
    layer = sum(launches(op) for op in lf + rc + backward_of(lf, sh))
    hf = head_forward(cfg, sh)
    head = sum(launches(op) for op in hf + head_backward(cfg, sh, hf))
    emb = sum(launches(op) for op in embedding_forward(cfg, sh) + embedding_backward(cfg, sh))
    counts = list(cfg.stage_layer_counts)
    ends = [(emb if i == 0 else 0) + (head if i == len(counts) - 1 else 0)
            for i in range(len(counts))]
    f_x, b_x = extra_source_launches(cfg.training.attention == "unfused")
    source_layer = layer + f_x * (2 if full else 1) + b_x
    ours = max(n * layer + e for n, e in zip(counts, ends))
    src = max(n * source_layer + e for n, e in zip(counts, ends))
    mb = cfg.num_microbatches
    return {"mb": mb, "meas_ms": 1e3 * res.measured / mb, "pred_ms": 1e3 * res.predicted / mb,
            "layer": layer, "source_layer": source_layer, "ours": ours, "source": src}


def main(path: Path) -> None:
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["framework"] == "megatron-deepspeed"]
    print(f"{'row':32s} {'mb':>4s} {'meas ms/mb':>10s} {'pred ms/mb':>10s} "
          f"{'layer':>5s} {'src':>4s} {'launch/mb':>9s} {'src/mb':>7s} {'c* us':>6s} "
          f"{'c* src':>6s} {'serial':>6s} {'host@fit ms':>11s}")
    for r in rows:
        s = stage_launches(r)
        if s is None:
            continue
        print(f"{r['id'][:32]:32s} {s['mb']:4d} {s['meas_ms']:10.2f} {s['pred_ms']:10.2f} "
              f"{s['layer']:5d} {s['source_layer']:4d} {s['ours']:9d} {s['source']:7d} "
              f"{1e3 * s['meas_ms'] / s['ours']:6.0f} {1e3 * s['meas_ms'] / s['source']:6.0f} "
              f"{1e3 * (s['meas_ms'] - s['pred_ms']) / s['source']:6.0f} "
              f"{1e3 * HOST_S_PER_KERNEL * s['source']:11.2f}")
    print("\nsource counts per layer beyond trainsim's (Megatron-DeepSpeed @ 7f7cea32):")
    for k, (n, why) in SOURCE_LAYER.items():
        print(f"  {k}: {n} (trainsim {TRAINSIM_LAYER[k]}) - {why}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
