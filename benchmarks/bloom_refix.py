"""Megatron-DeepSpeed's BLOOM sweep: the 02-21 rows of the public file beside the same
configurations re-measured after the cluster's 2022-02-25 "PCI-Express/NUMA" fix, and what a
cost of ``c`` per transformer layer and pipeline step on the critical stage (the shape of the
02-21 gap's part that grows with micro-batches, ``bloom_gap.py`` section 2) would do to every
view of the framework's rows (issue 17 item 2; a diagnostic, nothing here feeds trainsim).

    python benchmarks/bloom_refix.py   # ~1 min on an idle core

1. Pairs: each public sweep row and the rows of ``benchmarks/bloom_sweep_checks.csv`` with
   the same configuration (model shape, heads, TP, PP, GPUs, micro and global batch), their
   measured times, and the public row's residual with the errata (``CUDA_LAUNCH_BLOCKING=1``,
   ``benchmarks/training_errata.csv``; the check rows carry it in ``options``). The same code,
   configuration and launch blocking; only the date differs. chronicles-prequel.md (bigscience
   @053adafe) says of 02-25: "A100s PCI-Express/NUMA was improved today so all TFLOPs have
   changed for the better (1-5%) - thus do not compare today's numbers to yesterday's".
2. What-if: every row's prediction plus ``c x L x n`` (``L`` layers and ``n = m + pp - 1``
   pipeline steps on the critical stage, ``m`` micro-batches per rank) for a few ``c``, then
   the MAPE and mean signed error of the public rows as given, with the errata, and of the
   30 post-fix check rows: a framework mechanism of that shape would be in all three.
3. What-if, not a framework mechanism: the one-node 8-GPU A100 all_reduce at the busbw that
   Azure's ND A100 v4 sweep measured (``benchmarks/collectives_published.csv``, the
   ``azure-a100x8-allreduce-*`` rows marked comparable, 4 MiB-8 GiB; NCCL 2.18.5, one
   process driving 8 GPUs), interpolated in log size, instead of the model's ring (16-64 MiB
   measured 29-57 % below it; the BLOOM rows' TP all-reduces are 59-470 MB). Every public row
   on an A100 is priced again with it: each framework's MAPE before and after, and the
   post-fix check rows.
4. The same at the one-process-per-GPU A100 sweep's busbw (``thanos-a100x8-allreduce-np8-*``,
   ``mpirun -np 8 -g 1``, 1 MiB-4 GiB, 30th session): the way training runs its ranks.
"""

from __future__ import annotations

import csv
import math
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from bloom_gap import FRAMEWORK, family_rows, views

from trainsim import simulator
from trainsim.collectives import nccl
from trainsim.network import analytical
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row, row_config

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "benchmarks" / "bloom_sweep_checks.csv"
KEY = ("hidden_size", "num_layers", "num_attention_heads", "tp", "pp", "num_gpus",
       "micro_batch_size", "global_batch_size")
"""The cells two rows must share to be the same configuration."""
WHAT_IF_MS = (0.0, 0.5, 1.0, 1.5, 2.0)
"""Costs per layer and pipeline step tried (ms); ~0.9-1.1 is the 02-21 fit with the errata."""
COLLECTIVES = ROOT / "benchmarks" / "collectives_published.csv"
AZURE_A100 = "azure-a100x8-allreduce-"
"""Row ids of Azure's ND A100 v4 all_reduce sweep in the collectives file."""
ONE_PROCESS_A100 = "thanos-a100x8-allreduce-np8-"
"""Row ids of the one-process-per-GPU A100 sweep (``mpirun -np 8 -g 1``, 30th session): the way
a training job's ranks run, where the Azure sweep is one process driving 8 GPUs (``-g 8``)."""
A100_CC = 80


def measured_curve(path: Path = COLLECTIVES,
                   prefix: str = AZURE_A100) -> tuple[int, list[tuple[float, float]]]:
    """(ranks, [(bytes, busbw B/s)]) of the comparable all_reduce rows whose id starts with
    ``prefix`` (default: the Azure A100 sweep), by size."""
    with open(path, newline="") as fh:
        rows = [r for r in csv.DictReader(fh)
                if r["id"].startswith(prefix) and r["comparable"] == "yes"]
    ranks = {int(r["num_gpus"]) for r in rows}
    assert len(ranks) == 1, ranks
    pts = sorted((float(r["message_bytes"]), 1e9 * float(r["measured_busbw_GBps"])) for r in rows)
    return ranks.pop(), pts


def curve_busbw(pts: list[tuple[float, float]], size: float) -> float:
    """busbw at ``size``, linear in log2 size between the measured points (inside them)."""
    xs = [math.log2(b) for b, _ in pts]
    return float(np.interp(math.log2(size), xs, [bw for _, bw in pts]))


@contextmanager
def measured_a100_all_reduce(path: Path = COLLECTIVES, prefix: str = AZURE_A100):
    """Inside it, a one-node all_reduce over the curve's ranks on compute capability 8.0, of
    a size the curve spans, takes the measured busbw's time; anything else the model's."""
    ranks, pts = measured_curve(path, prefix)
    model = analytical.collective_cost

    def priced(kind, size_bytes, span, fabric, algorithm="auto", protocol="auto"):
        c = model(kind, size_bytes, span, fabric, algorithm, protocol)
        if (kind == "all_reduce" and span.nodes == 1 and span.size == ranks
                and fabric.compute_capability == A100_CC and pts[0][0] <= size_bytes <= pts[-1][0]):
            bus = curve_busbw(pts, size_bytes)
            t = nccl.BUS_FACTOR[kind](ranks) * size_bytes / bus
            return nccl.CollectiveCost(t, c.algorithm, c.protocol, bus)
        return c

    analytical.collective_cost = priced
    try:
        yield
    finally:
        analytical.collective_cost = model


def priced(path: Path) -> list[dict]:
    """Each family row of ``path``: its cells, measured and predicted seconds, and the
    critical stage's layers ``L`` and pipeline steps ``n``."""
    out = []
    for row in family_rows(path):
        res = predict_training_row(row)
        cfg = row_config(row, res.chosen)
        stage = simulator.simulate(cfg).critical_stage
        out.append({"row": row, "meas": res.measured, "pred": res.predicted,
                    "L": cfg.stage_layer_counts[stage],
                    "n": cfg.schedule_microbatches + cfg.parallel.pp - 1})
    return out


def key(row: dict[str, str]) -> tuple[str, ...]:
    return tuple(row[k] for k in KEY)


def pairs(public: list[dict], errata: list[dict], checks: list[dict]) -> list[tuple]:
    """(public row id, measured 02-21, errata prediction, [(check id, measured after the fix,
    its prediction)]) for every public row measured before the fix (dated before 2022-03) that
    shares its configuration with check rows."""
    fixed = {r["row"]["id"]: r for r in errata}
    out = []
    for p in public:
        if p["row"]["framework_version"] >= "2022-03":
            continue
        after = [(c["row"]["id"], c["meas"], c["pred"]) for c in checks
                 if key(c["row"]) == key(p["row"])]
        if after:
            out.append((p["row"]["id"], p["meas"], fixed[p["row"]["id"]]["pred"], after))
    return out


def what_if(rows: list[dict], c_s: float) -> tuple[float, float]:
    """(MAPE, mean signed error) with ``c_s`` seconds added per layer and step."""
    err = np.array([(r["pred"] + c_s * r["L"] * r["n"]) / r["meas"] - 1.0 for r in rows])
    return float(np.mean(np.abs(err))), float(np.mean(err))


def main() -> int:
    (_, public_path), (_, errata_path) = views([])
    public, errata, checks = priced(public_path), priced(errata_path), priced(CHECKS)
    print(f"== 1. {FRAMEWORK}: 02-21 public rows and the same configuration after the fix")
    print(f"   {'public row':36s} {'02-21':>7s} {'errata':>7s} {'resid':>6s}   "
          f"{'check row':40s} {'after':>7s} {'drop':>6s} {'pred':>7s} {'err':>6s}")
    resid_sum = drop_sum = 0.0
    for pid, pre, epred, after in pairs(public, errata, checks):
        resid_sum += pre - epred
        drop_sum += pre - float(np.mean([post for _, post, _ in after]))
        for i, (cid, post, cpred) in enumerate(after):
            head = (f"{pid:36s} {pre:7.2f} {epred:7.2f} {pre - epred:6.2f}" if i == 0
                    else " " * 59)
            print(f"   {head}   {cid:40s} {post:7.2f} {pre - post:6.2f} {cpred:7.2f} "
                  f"{100 * (cpred / post - 1):+5.1f}%")
    print(f"   summed over the public rows: errata residual {resid_sum:.2f} s, measured drop "
          f"{drop_sum:.2f} s (a row's check rows averaged)")
    print("== 2. what-if: c ms per layer and pipeline step on the critical stage")
    print(f"   {'c (ms)':>6s}  {'as given':>16s}  {'errata':>16s}  {'post-fix checks':>16s}")
    for c in WHAT_IF_MS:
        cells = []
        for rows in (public, errata, checks):
            mape, signed = what_if(rows, 1e-3 * c)
            cells.append(f"{100 * mape:5.2f} % ({100 * signed:+5.2f})")
        print(f"   {c:6.2f}  " + "  ".join(f"{x:>16s}" for x in cells))
    print("== 3. what-if: the one-node A100 all_reduce at Azure's measured busbw (-g 8)")
    print_curve_what_if()
    print("== 4. what-if: the same at the one-process-per-GPU sweep's busbw (mpirun -np 8)")
    print_curve_what_if(ONE_PROCESS_A100)
    return 0


def _ape(meas: float, pred: float) -> float:
    return pred / meas - 1.0


def print_curve_what_if(prefix: str = AZURE_A100) -> None:
    """Section 3: each framework's public MAPE (mean signed) with the model's and with the
    measured A100 all_reduce, and the check rows'."""
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    before = {r["id"]: predict_training_row(r) for r in rows}
    a100 = [r for r in rows if r["gpu"].startswith("a100")]
    with measured_a100_all_reduce(prefix=prefix):
        after = {r["id"]: predict_training_row(r) for r in a100}
    by: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        b = before[r["id"]]
        a = after.get(r["id"], b)
        if b.predicted is None or a.predicted is None:
            continue
        by.setdefault(r["framework"], []).append((_ape(b.measured, b.predicted),
                                                  _ape(a.measured, a.predicted)))
    print(f"   {'public, framework':24s} {'rows':>4s} {'A100':>4s}  {'model':>16s}  "
          f"{'measured curve':>16s}")
    a100_by = {f: sum(r["framework"] == f for r in a100) for f in by}
    for fw, errs in sorted(by.items()):
        e0, e1 = np.array([e for e, _ in errs]), np.array([e for _, e in errs])
        print(f"   {fw:24s} {len(errs):4d} {a100_by[fw]:4d}  "
              f"{100 * np.mean(np.abs(e0)):5.2f} % ({100 * np.mean(e0):+5.2f})  "
              f"{100 * np.mean(np.abs(e1)):5.2f} % ({100 * np.mean(e1):+5.2f})")
    all0 = np.array([e for errs in by.values() for e, _ in errs])
    all1 = np.array([e for errs in by.values() for _, e in errs])
    print(f"   {'all':24s} {len(all0):4d} {len(a100):4d}  {100 * np.mean(np.abs(all0)):5.2f} %"
          f"{'':9s}  {100 * np.mean(np.abs(all1)):5.2f} %")
    checks = family_rows(CHECKS)
    e0 = np.array([_ape(x.measured, x.predicted) for x in map(predict_training_row, checks)])
    with measured_a100_all_reduce(prefix=prefix):
        e1 = np.array([_ape(x.measured, x.predicted) for x in map(predict_training_row, checks)])
    print(f"   {'post-fix checks':24s} {len(e0):4d} {len(e0):4d}  "
          f"{100 * np.mean(np.abs(e0)):5.2f} % ({100 * np.mean(e0):+5.2f})  "
          f"{100 * np.mean(np.abs(e1)):5.2f} % ({100 * np.mean(e1):+5.2f})")


if __name__ == "__main__":
    sys.exit(main())
