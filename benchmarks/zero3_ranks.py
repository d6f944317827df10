"""DeepSpeed 2021 ZeRO-3 (Narayanan et al. 2021, Table 2): what changes with the GPU count at a
fixed model and global batch, measured against predicted (issue 17 item 2 diagnostics; nothing
here feeds trainsim).

    PYTHONPATH=src python benchmarks/zero3_ranks.py     # ~5 s

The six Table 2 ZeRO-3 points (the file's four ``megatron21-t2-zero3-*`` rows and the two
micro-batch-2 points no file holds, ``zero3_overhead.EXTRA``) run one micro-batch per rank: from
384 to 1,536 ranks (174.6B) and 640 to 2,240 (529.6B) the compute a rank does falls as 1/N while
the bytes a rank gathers and reduces per step stay the same, and every per-rank cost (the ring's
N - 1 steps, v0.3.13's per-rank ``narrow`` loop, ProcessGroupNCCL's per-rank copies and the
launch queue they fill) grows with N.

For each point: measured and predicted step, the gap (measured - predicted, s) and trainsim's
own split of the prediction: pure compute (``zero3_overhead.priced_parts``: every layer's
forward, its recompute and its backward, and the head), host time charged (the prediction less
the prediction with ``HOST_S_PER_KERNEL`` at 0) and exposed wire (the prediction less the
prediction with every collective at 0 s). Then, for each pair of neighbouring rank counts of one
model, how much the time beyond compute grew, measured and predicted: if a cost that grows with
N were missing, the measured growth would exceed the predicted one on every pair. Last, the gap
as ``a + b x N`` per model (least squares over its three points).

The published rates are rounded (two or three significant figures: 44, 48, 88, 98, 138, 144
TFLOP/s): a half unit of the last figure is printed as the measured step's uncertainty.
"""

from __future__ import annotations

import csv
import itertools
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.ops import DTYPE_BYTES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zero3_overhead import EXTRA, eq3_seconds, priced_parts, without_comm, without_host

PREFIX = "megatron21-t2-zero3"
BIG = 2**31  # bytes: a 529.6B QKV (2.5 GB) and fc1 / fc2 (3.4 GB) are over it, no 174.6B tensor

# published TFLOP/s per GPU of each Table 2 ZeRO-3 point (Narayanan et al. 2021, Table 2),
# keyed by (parameters, GPUs); the four in the file say so in their notes
TFLOPS = {("174.6B", 384): 144.0, ("174.6B", 768): 88.0, ("174.6B", 1536): 44.0,
          ("529.6B", 640): 138.0, ("529.6B", 1120): 98.0, ("529.6B", 2240): 48.0}


class Point(NamedTuple):
    """One Table 2 ZeRO-3 point: measured and predicted step (s) and the prediction's parts."""

    model: str  # "174.6B" or "529.6B"
    ranks: int
    mb: int
    measured: float
    spread: float  # half a unit of the published rate's last figure, in seconds of step
    predicted: float
    pure: float  # pure compute
    host: float  # host time charged
    wire: float  # exposed wire time
    moved: float  # bytes a rank gathers and all-reduces per step (ring-equivalent: 2 x all-reduce)
    moved_big: float  # of them, those of tensors over 2 GiB (``BIG``)

    @property
    def gap(self) -> float:
        return self.measured - self.predicted

    @property
    def beyond_measured(self) -> float:
        return self.measured - self.pure

    @property
    def beyond_predicted(self) -> float:
        return self.predicted - self.pure


def table2_rows(path: Path | None = None) -> list[dict[str, str]]:
    """The file's ZeRO-3 rows and the two micro-batch-2 points built from them as
    ``zero3_overhead`` builds them (measured step from the published rate by eq. (3))."""
    path = path or BUNDLED_DIR / "training_public.csv"
    rows = [r for r in csv.DictReader(path.open()) if r["id"].startswith(PREFIX)]
    by_id = {r["id"]: r for r in rows}
    for base, gpus, mb, tflops, gbs, layers, hidden in EXTRA:
        row = dict(by_id[base]) | {"num_gpus": str(gpus), "micro_batch_size": str(mb),
                                   "global_batch_size": str(gbs)}
        row["id"] = f"{base.rsplit('-', 1)[0]}-{gpus}"
        row["measured_iteration_s"] = str(eq3_seconds(gbs, 2048, layers, hidden, 51200, gpus,
                                                      tflops))
        rows.append(row)
    return rows


def model_of(row: dict[str, str]) -> str:
    return row["id"].split("-")[-2]


def point(row: dict[str, str]) -> Point:
    """Measure and split one row (three simulations)."""
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    parts = priced_parts(cfg)
    layers = cfg.model.num_layers
    pure = layers * (2 * parts.fwd + parts.bwd) + parts.head
    elem = DTYPE_BYTES[cfg.training.dtype]

    def moved_of(keep) -> float:
        return layers * elem * (2 * sum(filter(keep, parts.big)) + sum(filter(keep, parts.again))
                                + 2 * sum(filter(keep, parts.tensors)))

    moved, moved_big = moved_of(lambda e: True), moved_of(lambda e: e * elem > BIG)
    ranks = int(row["num_gpus"])
    tflops = TFLOPS[(model_of(row), ranks)]
    return Point(model_of(row), ranks, int(row["micro_batch_size"]), res.measured,
                 res.measured * 0.5 / tflops, res.predicted, pure,
                 res.predicted - without_host(cfg), res.predicted - without_comm(cfg), moved,
                 moved_big)


def points(path: Path | None = None) -> list[Point]:
    return sorted((point(r) for r in table2_rows(path)), key=lambda p: (p.model, p.ranks))


def pairs(pts: list[Point]) -> list[tuple[Point, Point]]:
    """Neighbouring rank counts of one model, fewer ranks first."""
    return [(a, b) for a, b in itertools.pairwise(pts) if a.model == b.model]


def gap_line(pts: list[Point]) -> dict[str, tuple[float, float]]:
    """Per model: (a, b) of gap = a + b x N, b in s per 1,000 ranks."""
    out = {}
    for model in sorted({p.model for p in pts}):
        mine = [p for p in pts if p.model == model]
        x = np.array([[1.0, p.ranks / 1e3] for p in mine])
        (a, b), *_ = np.linalg.lstsq(x, np.array([p.gap for p in mine]), rcond=None)
        out[model] = (float(a), float(b))
    return out


CLASSES = {
    "per rank and gather (N x 11 gathers a layer)": lambda p: p.ranks * 11 * (
        96 if p.model == "174.6B" else 105),
    "per byte moved": lambda p: p.moved,
    "per step": lambda p: 1.0,
    "per byte of tensors over 2 GiB": lambda p: p.moved_big,
}
"""What a missing cost could be proportional to; each scaled by least squares on the 529.6B
points' gaps and then charged to all six (``classes``)."""


def classes(pts: list[Point]) -> dict[str, tuple[float, list[float]]]:
    """Per class: its factor fitted on the 529.6B gaps and every point's gap after it."""
    big = [p for p in pts if p.model == "529.6B"]
    out = {}
    for name, x in CLASSES.items():
        xs = np.array([x(p) for p in big])
        k = float(xs @ np.array([p.gap for p in big]) / (xs @ xs))
        out[name] = (k, [p.gap - k * x(p) for p in pts])
    return out


def main() -> None:
    pts = points()
    print(f"{'model':7s} {'N':>5s} {'mb':>2s} {'meas s':>12s} {'pred s':>7s} {'gap s':>6s} "
          f"{'err':>6s} | {'pure':>6s} {'host':>6s} {'wire':>6s} | beyond compute meas / pred | "
          f"moved TB, gap ms/GB")
    for p in pts:
        print(f"{p.model:7s} {p.ranks:5d} {p.mb:2d} {p.measured:7.1f}+-{p.spread:3.1f} "
              f"{p.predicted:7.1f} {p.gap:+6.1f} {100 * (p.predicted / p.measured - 1):+5.1f}% | "
              f"{p.pure:6.1f} {p.host:6.1f} {p.wire:6.1f} | {p.beyond_measured:6.1f} / "
              f"{p.beyond_predicted:6.1f} | {p.moved / 1e12:5.2f}, {p.gap / p.moved * 1e12:+5.1f}")
    print("\ngrowth of the time beyond compute between neighbouring rank counts (s):")
    print(f"{'model':7s} {'N':>11s} {'step meas':>9s} {'pred':>6s} {'compute':>7s} | "
          f"{'beyond meas':>11s} {'pred':>6s} (host {'':>1s}, wire) | meas - pred")
    tot: dict[str, list[float]] = {}
    for a, b in pairs(pts):
        dm, dp = b.beyond_measured - a.beyond_measured, b.beyond_predicted - a.beyond_predicted
        acc = tot.setdefault(a.model, [0.0, 0.0])
        acc[0] += dm
        acc[1] += dp
        print(f"{a.model:7s} {a.ranks:5d}-{b.ranks:5d} {b.measured - a.measured:+9.1f} "
              f"{b.predicted - a.predicted:+6.1f} {b.pure - a.pure:+7.1f} | {dm:+11.1f} "
              f"{dp:+6.1f} ({b.host - a.host:+5.1f}, {b.wire - a.wire:+5.1f}) | {dm - dp:+6.1f}")
    for model, (dm, dp) in tot.items():
        print(f"{model:7s} first to last: beyond compute grew {dm:+.1f} s measured, "
              f"{dp:+.1f} s predicted")
    print("\ngap = a + b x N (least squares over each model's three points):")
    for model, (a, b) in gap_line(pts).items():
        gaps = ", ".join(f"{p.gap:+.1f}" for p in pts if p.model == model)
        print(f"  {model}: a = {a:+.1f} s, b = {b:+.1f} s per 1,000 ranks (gaps {gaps} s)")
    print("\na missing cost in proportion to ..., scaled to the 529.6B gaps; every gap after it (s):")
    print(f"  {'':48s} " + " ".join(f"{p.model[:3]}/{p.ranks:<5d}" for p in pts))
    for name, (k, left) in classes(pts).items():
        print(f"  {name:48s} " + " ".join(f"{g:+9.1f}" for g in left) + f"   (k = {k:.3g})")


if __name__ == "__main__":
    main()
