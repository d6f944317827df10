"""DeepSpeed ZeRO-3 of 2022-2023 (0.6.2 on Azure A100, the ZeRO++ blog's V100 baseline): is the
measured step the compute plus the whole wire time of the parameter gathers and gradient
reduce-scatters, as if nothing overlapped? (issue 17 items 2-3 diagnostics; nothing here feeds
trainsim.)

    PYTHONPATH=src python benchmarks/zero3_additive.py        # ~1 min on one core
    PYTHONPATH=src python benchmarks/zero3_additive.py --recipe-reuse   # the recipes' 3e9

For every ZeRO-3 row of the ``deepspeed`` framework with a coalesced, prefetched fetch path
(framework_version 0.6.x or later: ``benchmarks/training_dsazure.csv``, the three labelled
``dsazure-*`` rows and the ZeRO++ blog rows of ``benchmarks/training_deepspeed.csv`` and
``benchmarks/training_zeropp.csv``) it prints: the measured step, trainsim's prediction, the
pure compute trainsim prices (every layer's forward, its recompute, its backward and the head,
per micro-batch), the wire time of the step's parameter all-gathers (forward, recompute, the
backward's re-gathers as ``workload.sharding`` counts them) and of the gradient reduce-scatters
(one a tensor: reduce_bucket_size 9e7 in the Azure recipes holds one 175B / 530B weight), each
priced by trainsim's own NCCL model, and the "additive" step = compute + gathers + reduce-scatters
(no overlap at all; a what-if, not a model: DeepSpeed's source overlaps them, see RESULTS.md).

Then, per group of rows, the MAPE and mean signed error of the prediction and of the additive
step, and the least-squares k in gap = k x wire (gap = measured - predicted; wire = gathers +
reduce-scatters): what share of the priced wire time the measurement carries beyond the
prediction. The 2021 rows (v0.3.13, synchronous per-parameter gathers, priced as such) are left
out: their fetch path already waits for every gather.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload import sharding
from trainsim.workload.ops import DTYPE_BYTES, Comm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zero3_coordinator import AZURE
from zero3_overhead import priced_parts

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "benchmarks" / name for name in
         ("training_dsazure.csv", "training_deepspeed.csv", "training_zeropp.csv")]


class Split(NamedTuple):
    """One row's measured and predicted step and its priced parts (s)."""

    rid: str
    group: str
    ranks: int
    mb: int
    measured: float
    predicted: float
    compute: float  # pure compute, every micro-batch
    gathers: float  # parameter all-gathers on the wire
    scatters: float  # gradient reduce-scatters on the wire

    @property
    def additive(self) -> float:
        return self.compute + self.gathers + self.scatters

    @property
    def wire(self) -> float:
        return self.gathers + self.scatters


def overlapped_path(row: dict[str, str]) -> bool:
    """A DeepSpeed ZeRO-3 row whose release has the coalesced, prefetched fetch path (0.6.0+)."""
    if row.get("framework") != "deepspeed" or row.get("zero_stage") != "3":
        return False
    version = row.get("framework_version", "")
    head = version.split(".")[:2]
    if version[:4].isdigit() and "-" in version:  # a date: 2022-03 onwards
        return version >= "2022-03"
    return len(head) == 2 and (int(head[0]), int(head[1])) >= (0, 6)


def group_of(row: dict[str, str]) -> str:
    """The rows' source and model size (what the table summarises by)."""
    if row["id"].startswith("dsazure"):
        return "azure 530B" if row["hidden_size"] == "20480" else "azure 175B"
    return "zero++ 18B"


def split(row: dict[str, str]) -> Split:
    """The row's step taken apart with trainsim's own pricing."""
    res = predict_training_row(row)
    if res.predicted is None:
        raise RuntimeError(f"{row['id']}: {res.error}")
    cfg = row_config(row, res.chosen)
    pricer, fwd, bwd, head, tensors, big, again = priced_parts(cfg)  # zero3_overhead's
    elem = DTYPE_BYTES[cfg.training.dtype]
    layers, ranks = cfg.model.num_layers, cfg.dp
    passes = 2 if cfg.parallel.recompute == "full" else 1
    micro = cfg.training.global_batch_size // (cfg.training.micro_batch_size * ranks)
    compute = micro * (layers * (passes * fwd + bwd) + head)

    def wire(kind: str, elements: list[int]) -> float:
        return sum(pricer.comm_time(Comm("w", kind, elem * e, "dp_cp")) for e in elements)

    gathers = micro * layers * (passes * wire("all_gather", big) + wire("all_gather", again))
    scatters = micro * layers * wire("reduce_scatter", tensors)
    return Split(row["id"], group_of(row), ranks, cfg.training.micro_batch_size,
                 res.measured, res.predicted, compute, gathers, scatters)


def rows(paths: list[Path]) -> list[dict[str, str]]:
    out = []
    for path in paths:
        with open(path, newline="") as fh:
            # a row with no network cell is priced on a default fabric (the ZeRO++ tutorial's
            # 64-GPU row: its -85 % is that cell, RESULTS.md ds29), not what it ran on
            out += [r for r in csv.DictReader(fh)
                    if overlapped_path(r) and r.get("nic_gbps_per_gpu")]
    return out


def summary(splits: list[Split]) -> list[tuple[str, int, float, float, float, float, float]]:
    """(group, n, prediction MAPE, its mean signed %, additive MAPE, its signed %, k)."""
    out = []
    groups = sorted({s.group for s in splits})
    for group in [*groups, "all"]:
        sel = [s for s in splits if group in ("all", s.group)]
        pred = [100 * (s.predicted / s.measured - 1) for s in sel]
        add = [100 * (s.additive / s.measured - 1) for s in sel]
        k = (sum((s.measured - s.predicted) * s.wire for s in sel)
             / sum(s.wire ** 2 for s in sel))
        out.append((group, len(sel), sum(map(abs, pred)) / len(sel), sum(pred) / len(sel),
                    sum(map(abs, add)) / len(sel), sum(add) / len(sel), k))
    return out


def gap_fits(splits: list[Split]) -> list[tuple[str, int, float, float]]:
    """On the Azure rows, three least-squares descriptions of gap = measured - predicted:
    (label, free constants, RMS residual s, MAPE % of predicted + fitted gap). What-ifs, not
    a model: one k on the priced wire time; one k per model; the 30th session's per-model
    constant plus a per-rank slope (ds30: 175B +5.0 s + 6.56 ms x ranks on micro-batch >= 2)."""
    azure = [s for s in splits if s.group.startswith("azure")]
    gap = np.array([s.measured - s.predicted for s in azure])
    big = np.array([s.group == "azure 530B" for s in azure], dtype=float)
    wire = np.array([s.wire for s in azure])
    ranks = np.array([s.ranks for s in azure], dtype=float)
    designs = [("k x wire", wire[:, None]),
               ("k per model x wire", np.stack([wire * (1 - big), wire * big], 1)),
               ("per-model constant + per-rank slope",
                np.stack([1 - big, big, ranks * (1 - big), ranks * big], 1))]
    out = []
    for label, a in designs:
        coef, *_ = np.linalg.lstsq(a, gap, rcond=None)
        fit = a @ coef
        pred = np.array([s.predicted for s in azure]) + fit
        meas = np.array([s.measured for s in azure])
        out.append((label, a.shape[1], float(np.sqrt(np.mean((gap - fit) ** 2))),
                    float(100 * np.mean(np.abs(pred / meas - 1)))))
    return out


def additive_fits(splits: list[Split]) -> list[tuple[str, list[float], float, float]]:
    """On the Azure rows, measured = compute + c x wire by least squares (nothing overlapped,
    the wire c times its priced time): (label, c's, RMS residual s, MAPE %), one c for all rows
    and one per model. What-ifs, not a model."""
    azure = [s for s in splits if s.group.startswith("azure")]
    extra = np.array([s.measured - s.compute for s in azure])
    big = np.array([s.group == "azure 530B" for s in azure], dtype=float)
    wire = np.array([s.wire for s in azure])
    meas = np.array([s.measured for s in azure])
    out = []
    for label, a in (("c x wire", wire[:, None]),
                     ("c per model x wire", np.stack([wire * (1 - big), wire * big], 1))):
        coef, *_ = np.linalg.lstsq(a, extra, rcond=None)
        fit = a @ coef
        out.append((label, [float(c) for c in coef], float(np.sqrt(np.mean((extra - fit) ** 2))),
                    float(100 * np.mean(np.abs((meas - extra + fit) / meas - 1)))))
    return out


def main(argv: list[str]) -> None:
    if "--recipe-reuse" in argv:
        # the Azure recipes' stage3_max_reuse_distance (3e9, zero3_coordinator.AZURE) in
        # place of DeepSpeed's default 1e9 that trainsim prices: the backward then keeps what
        # the recompute gathered where the recipe does (every 175B weight, 530B's last)
        argv = [a for a in argv if a != "--recipe-reuse"]
        sharding.ZERO3_MAX_REUSE_DISTANCE = AZURE["max_reuse"]
    paths = [Path(a) for a in argv] or FILES
    splits = [split(r) for r in rows(paths)]
    print(f"{'row':46s} {'N':>5s} {'mb':>3s} {'meas':>6s} {'pred':>6s} {'err':>6s} "
          f"{'compute':>7s} {'gather':>6s} {'r-scat':>6s} {'gap':>5s} {'additive':>8s}")
    for s in splits:
        print(f"{s.rid[:46]:46s} {s.ranks:5d} {s.mb:3d} {s.measured:6.1f} {s.predicted:6.1f} "
              f"{100 * (s.predicted / s.measured - 1):+5.1f}% {s.compute:7.1f} "
              f"{s.gathers:6.1f} {s.scatters:6.1f} {s.measured - s.predicted:+5.1f} "
              f"{100 * (s.additive / s.measured - 1):+7.1f}%")
    print(f"\n{'group':12s} {'n':>3s} {'pred MAPE':>9s} {'signed':>7s} {'additive MAPE':>13s} "
          f"{'signed':>7s} {'k (gap = k x wire)':>19s}")
    for group, n, mape, signed, amape, asigned, k in summary(splits):
        print(f"{group:12s} {n:3d} {mape:8.1f}% {signed:+6.1f}% {amape:12.1f}% "
              f"{asigned:+6.1f}% {k:19.2f}")
    print(f"\nAzure rows, gap fitted (what-if): {'constants':>9s} {'RMS s':>6s} {'MAPE':>6s}")
    for label, n, rms, mape in gap_fits(splits):
        print(f"  {label:36s} {n:9d} {rms:6.2f} {mape:5.1f}%")
    print(f"\nAzure rows, measured = compute + c x wire (what-if): {'c':>11s} {'RMS s':>6s} "
          f"{'MAPE':>6s}")
    for label, cs, rms, mape in additive_fits(splits):
        print(f"  {label:36s} {' / '.join(f'{c:.2f}' for c in cs):>27s} {rms:6.2f} {mape:5.1f}%")


if __name__ == "__main__":
    main(sys.argv[1:])
