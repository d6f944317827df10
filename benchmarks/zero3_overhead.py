"""Where the DeepSpeed 2021 ZeRO-3 rows of Narayanan et al. 2021 (Table 2) spend the time that
is not compute, measured against predicted (issue 17 diagnostics; nothing here feeds trainsim).

    python benchmarks/zero3_overhead.py [training_public.csv]
    python benchmarks/zero3_overhead.py serial   # the all-serial bound (``serial_bound``)

For each ``megatron21-t2-zero3-*`` row, and the two Table 2 points with micro-batch 2 that no
file holds (174.6B on 768 GPUs at 88 TFLOP/s, 529.6B on 1120 at 98, converted with the paper's
eq. (3); the figures are those an earlier session recorded in benchmarks/RESULTS.md, not
re-read from the paper here): the pure compute trainsim prices (every layer's forward twice,
for the full recompute, its backward, and the head), the time beyond it per layer, measured and
predicted, and what each layer moves per step (parameter all-gathers: forward, recompute and the
backward's re-gathers after ``stage3_max_reuse_distance``; the gradient all-reduce of
DeepSpeed < 0.4.3's stage-3 default, counted at twice its bytes as a ring moves them).

Then, for the same rows, what the predicted time beyond compute is made of per layer: the
gathers on the wire (NCCL model), the host time trainsim charges (the prediction less the
prediction with ``HOST_S_PER_KERNEL`` set to 0: only the exposed part of the launches,
``compute.host.exposed_s``, of which the gathers' per-rank copies out of ProcessGroupNCCL's
flat buffer, ``list_all_gather_ops``, are most at these sizes) and the gradient all-reduces on
the wire (each tensor alone: an approximation of the reduce-bucket flushes), an upper bound on
what DeepSpeed v0.3.13's prefetch could hide under that pricing (the wire time of each gather
beyond its host work, ``N x HOST_S_PER_KERNEL``; the host runs the per-rank work before the
module's kernels, prefetched or not), a what-if with one factor on the wire and one on the
charged host time, and how the two models' overheads compare at one micro-batch per rank.

Last, a least-squares fit of that overhead to ``bytes / B + steps x L`` (``steps``: ring steps,
N - 1 per all-gather and 2 (N - 1) per all-reduce, six all-reduces a layer): what one effective
rate and one per-step latency for all six points would have to be. A what-if, not a model.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

from trainsim import simulate
from trainsim.compute import host
from trainsim.config import RunConfig
from trainsim.pricing import Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.head import head_backward, head_forward
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import DTYPE_BYTES, Comm
from trainsim.workload.shard import shard_of
from trainsim.workload.sharding import (
    ZERO3_PERSISTENCE_THRESHOLD,
    _released_after_recompute,
    rank_tensors,
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


class Split(NamedTuple):
    """One row's time beyond compute, per layer (s), and its predicted parts."""

    rid: str
    n: int  # data-parallel ranks
    mb: int  # micro-batch
    over: float  # measured
    pred: float  # predicted
    wire: float  # the gathers on the wire (forward, recompute, backward re-gathers)
    host: float  # host time trainsim charges: prediction less prediction at no launch cost
    red: float  # the gradient all-reduces on the wire
    lo: float  # the cheapest gather's wire time
    hi: float  # the dearest gather's wire time
    gather_host: float  # one gather's per-rank launches, N x HOST_S_PER_KERNEL
    hide: float  # what prefetch could hide, s per step


def mb_of(row: dict[str, str]) -> int:
    """The row's micro-batch (every row here runs one micro-batch per rank)."""
    return int(row["micro_batch_size"])


def without_host(cfg: RunConfig) -> float:
    """The iteration time of ``cfg`` with no host cost per launch (``HOST_S_PER_KERNEL`` = 0,
    the value every Pricer reads when built), the module's constant restored after."""
    kept = host.HOST_S_PER_KERNEL
    host.HOST_S_PER_KERNEL = 0.0
    try:
        return simulate(cfg).iteration_time_s
    finally:
        host.HOST_S_PER_KERNEL = kept


def print_splits(splits: list[Split]) -> None:
    """Per layer: measured and predicted time beyond compute, and the predicted parts."""
    print(f"\n{'row':48s} {'N':>5s} {'over meas':>9s} {'pred':>5s}   gathers wire | host charged"
          f" | all-reduce wire (ms/layer); one gather wire min-max vs its per-rank launches (ms);"
          f" prefetch can hide <= s/step")
    for s in splits:
        print(f"{s.rid:48s} {s.n:5d} {s.over * 1e3:9.0f} {s.pred * 1e3:5.0f}   "
              f"{s.wire * 1e3:12.0f} | {s.host * 1e3:12.0f} | {s.red * 1e3:15.0f}; "
              f"{s.lo * 1e3:.1f}-{s.hi * 1e3:.1f} vs {s.gather_host * 1e3:.1f}; {s.hide:.2f}")
    one = {s.rid: (s.over, s.pred, s.wire + s.red) for s in splits
           if s.mb == 1 and "not in a file" not in s.rid}
    # what-if, not a model: one factor on the priced wire time (gathers and all-reduces) and
    # one on the host time trainsim charges, summed
    a = np.array([[s.wire + s.red, s.host] for s in splits])
    y = np.array([s.over for s in splits])
    (k_wire, k_host), *_ = np.linalg.lstsq(a, y, rcond=None)
    errs = ", ".join(f"{100 * (p / m - 1):+.0f}%" for p, m in zip(a @ (k_wire, k_host), y))
    print(f"what-if: overhead = {k_wire:.2f} x wire + {k_host:.2f} x host charged, summed "
          f"(per row: {errs})")
    if len(one) == 2:
        (_, small), (_, large) = sorted(one.items(), key=lambda kv: kv[1][2])
        print(f"micro-batch 1 rows, larger model over smaller: measured overhead x"
              f"{large[0] / small[0]:.2f}, predicted x{large[1] / small[1]:.2f}, "
              f"bytes on the wire x{large[2] / small[2]:.2f} (priced wire time)")


class Parts(NamedTuple):
    """A ZeRO-3 row's step as trainsim prices it: one layer's forward and backward and the
    head's forward and backward (s, on ``pricer``), and the elements of each of a rank's
    parameter tensors: all of them (what is reduce-scattered), those gathered (at or above
    DeepSpeed's persistence threshold) and those gathered again after a recompute."""

    pricer: Pricer
    fwd: float
    bwd: float
    head: float
    tensors: list[int]
    big: list[int]
    again: list[int]


def priced_parts(cfg: RunConfig) -> Parts:
    """:class:`Parts` of ``cfg`` (also ``zero3_additive.split``'s)."""
    pricer, sh = Pricer(cfg), shard_of(cfg)
    fwd_ops = layer_forward(cfg, sh)
    fwd = pricer.price(fwd_ops).duration_s
    bwd = pricer.price(backward_of(fwd_ops, sh)).duration_s
    hf = head_forward(cfg, sh)
    head = pricer.price(hf).duration_s + pricer.price(head_backward(cfg, sh, hf)).duration_s
    tensors = [e for e, _ in rank_tensors(cfg, [1])]
    big = [e for e in tensors if e >= ZERO3_PERSISTENCE_THRESHOLD]
    again = [e for e, _ in _released_after_recompute(cfg, [1])
             if e >= ZERO3_PERSISTENCE_THRESHOLD]
    return Parts(pricer, fwd, bwd, head, tensors, big, again)


def analyse(row: dict[str, str]) -> tuple[str, tuple, Split]:
    """One row's summary line, its point for the bytes/steps fit and its split of the time
    beyond compute."""
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    pricer, fwd, bwd, head, _, big, again = priced_parts(cfg)
    elem = DTYPE_BYTES[cfg.training.dtype]  # the 16-bit parameters and gradients moved
    layers, n = cfg.model.num_layers, cfg.dp
    pure = layers * (2 * fwd + bwd) + head
    gathers, gather_bytes = 2 * len(big) + len(again), elem * (2 * sum(big) + sum(again))
    reduce_bytes = 2 * elem * sum(e for e, _ in rank_tensors(cfg, [1]))
    meas = res.measured
    over, over_pred = (meas - pure) / layers, (res.predicted - pure) / layers
    line = (f"{row['id']:48s} {n:5d} {meas:7.1f} {res.predicted:7.1f} "
            f"{100 * (res.predicted / meas - 1):+5.1f}% {pure:7.1f} {over * 1e3:12.0f} ms "
            f"{over_pred * 1e3:6.0f}  {gathers}, {gather_bytes / 1e9:.1f}; "
            f"{reduce_bytes / 1e9:.1f}")
    steps = (gathers + 2 * ALL_REDUCES_PER_LAYER) * (n - 1)
    fit_row = (row["id"], pure, layers, meas, over, [(gather_bytes + reduce_bytes) / 1e9, steps])
    wire = [pricer.comm_time(Comm("g", "all_gather", elem * e, "dp_cp")) for e in big]
    wire_again = [pricer.comm_time(Comm("g", "all_gather", elem * e, "dp_cp")) for e in again]
    reduce_s = sum(pricer.comm_time(Comm("r", "all_reduce", elem * e, "dp_cp"))
                   for e, _ in rank_tensors(cfg, [1]))
    host1 = n * host.HOST_S_PER_KERNEL
    # v0.3.13's prefetch (stage3.py prefetch_next_sub_modules) can hide at most the wire
    # time a gather takes beyond the host's per-rank work, which precedes the module's
    # kernels on the host either way: sum of max(0, wire - host) over the step's gathers
    hideable = (2 * sum(max(0.0, w - host1) for w in wire)
                + sum(max(0.0, w - host1) for w in wire_again)) * layers
    charged = (res.predicted - without_host(cfg)) / layers
    split = Split(row["id"], n, mb_of(row), over, over_pred, 2 * sum(wire) + sum(wire_again),
                  charged, reduce_s, min(wire), max(wire), host1, hideable)
    return line, fit_row, split


def without_comm(cfg: RunConfig) -> float:
    """The iteration time of ``cfg`` with every collective priced at 0 s (``Pricer.comm_time``
    patched for the call, restored after): what the step costs with no wire time at all."""
    kept = Pricer.comm_time
    Pricer.comm_time = lambda self, op: 0.0  # type: ignore[method-assign]
    try:
        return simulate(cfg).iteration_time_s
    finally:
        Pricer.comm_time = kept  # type: ignore[method-assign]


def serial_bound(row: dict[str, str], split: Split) -> tuple[float, float, float, float]:
    """(prediction, prediction with no wire time, the step's priced wire time: gathers and
    gradient all-reduces of every layer, and their sum with the no-wire step): the last is
    the most that making DeepSpeed 0.3.13-0.5.4's collectives wait for everything, host work
    included, could give; the wire time the prediction already exposes is the first less
    the second."""
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    bare = without_comm(cfg)
    wire = cfg.model.num_layers * (split.wire + split.red)
    return res.predicted, bare, wire, bare + wire


def main(argv: list[str]) -> None:
    if argv[:1] == ["serial"]:
        path = BUNDLED_DIR / "training_public.csv"
        rows = [r for r in csv.DictReader(path.open())
                if r["id"].startswith("megatron21-t2-zero3")]
        print(f"{'row':34s} {'meas':>6s} {'pred':>6s} {'no wire':>7s} {'exposed':>7s} "
              f"{'wire':>6s} {'serial':>6s} {'err':>6s}")
        for row in rows:
            pred, bare, wire, serial = serial_bound(row, analyse(row)[2])
            meas = float(row["measured_iteration_s"])
            print(f"{row['id']:34s} {meas:6.1f} {pred:6.1f} {bare:7.1f} {pred - bare:7.1f} "
                  f"{wire:6.1f} {serial:6.1f} {100 * (serial / meas - 1):+5.1f}%")
        return
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
    fit_rows: list[tuple] = []
    splits: list[Split] = []
    for row in rows:
        line, fit_row, split = analyse(row)
        print(line)
        fit_rows.append(fit_row)
        splits.append(split)
    print_splits(splits)
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
