"""The bundled H100 kernel database against the kernels measured on an H100 by another script.

Three measurements of the same GEMMs on one H100 model (80GB HBM3 SXM, 700 W, torch 2.11,
CUDA 13; shared/validation/README.md):

* ``kernels_h100_measured.csv`` (``measure_kernels.py``): each GEMM on one operand pair,
  CUDA events around a CUDA-graph replay of 10 or 30 back-to-back calls, the mean per call,
  median of 3 replays;
* the kernel database written by ``trainsim profile`` (``kernel-db/h100-sxm-80gb.json``,
  bundled as ``src/trainsim/data/kernels/h100-sxm-80gb.json``): each GEMM alone between two
  CUDA events, queued behind a sleep kernel (no launch gaps), inputs rotated past the L2,
  median of 50 (``profile/device.py`` ``measure``);
* the same profile run's layer records: torch.profiler's device time of every kernel of a
  Llama layer's forward and backward (``profile/layer.py`` ``_kernel_times``), the GEMMs being
  cuBLAS's ``nvjet_*`` kernels, 12 per layer (QKV, output, fused gate/up, down projections;
  forward, data gradient and weight gradient).

It prints (1) per kind, implementation and database model the error of ``trainsim validate``
on the CSV with ``--compute-db none`` and ``auto``; (2) the CSV's time over the database's for
the GEMM shapes both measured; (3) for each layer record, the profiled GEMM kernels' time over
the database's records of the layer's 12 GEMMs and over the CSV's; (4) for each layer record,
the profiled kernels over the database's prices of the layer's ops, by category.

    PYTHONPATH=src python benchmarks/kernel_db_check.py [--gpu h200-sxm-141gb]

``--gpu h200-sxm-141gb`` checks the bundled H200 database (``trainsim profile`` on one H200,
2026-11-27, the same command) against ``benchmarks/kernels_h200_measured.csv`` (the H100
file's shapes measured on that H200) the same way. One GPU's database scaled to the other:
``benchmarks/kernel_db_cross.py``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import statistics
from collections import defaultdict
from pathlib import Path

from trainsim.catalog import model as catalog_model
from trainsim.validate import validate_file

ROOT = Path(__file__).resolve().parent.parent
SHARED = next((p / "shared" / "validation" for p in ROOT.parents
               if (p / "shared" / "validation").is_dir()), ROOT.parent / "shared" / "validation")
"""The shared validation folder beside the checkout (or beside a worktree's parent)."""
CSV = SHARED / "kernels_h100_measured.csv"
DB = ROOT / "src" / "trainsim" / "data" / "kernels" / "h100-sxm-80gb.json"
CHECKS = {"h100-sxm-80gb": (CSV, DB),
          "h200-sxm-141gb": (ROOT / "benchmarks" / "kernels_h200_measured.csv",
                             DB.with_name("h200-sxm-141gb.json"))}
"""Each GPU's measured CSV and bundled database."""
TIME = re.compile(r"time ([\d.]+) us")


def per_kind() -> None:
    rows = {name: {r.id: r for r in validate_file(CSV, compute_db=db)[1]}
            for name, db in (("none", None), ("auto", "auto"))}
    groups: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for rid, auto in rows["auto"].items():
        none = rows["none"][rid]
        if auto.ape is None or none.ape is None or auto.extra.get("excluded"):
            continue
        key = (auto.extra["kind"], auto.extra["implementation"], auto.extra["dtype"],
               auto.chosen.get("model", "-"))
        groups[key].append((none.ape, auto.ape))
    print(f"{'kind':14} {'impl':13} {'dtype':5} {'auto priced by':26} {'n':>4} "
          f"{'none %':>7} {'auto %':>7}")
    for key in sorted(groups):
        v = groups[key]
        print(f"{key[0]:14} {key[1]:13} {key[2]:5} {key[3]:26} {len(v):4} "
              f"{100 * statistics.mean(a for a, _ in v):7.2f} "
              f"{100 * statistics.mean(b for _, b in v):7.2f}")
    for db in ("none", "auto"):
        apes = [r.ape for r in rows[db].values() if r.ape is not None and not r.extra.get("excluded")]
        print(f"--compute-db {db}: {len(apes)} rows, MAPE {100 * statistics.mean(apes):.2f} %")


def csv_gemm_times() -> dict[tuple[str, int, int, int], float]:
    out = {}
    with open(CSV, newline="") as fh:
        for r in csv.DictReader(fh):
            if r["kind"] == "gemm" and (t := TIME.search(r["note"])):
                out[(r["dtype"], int(r["m"]), int(r["n"]), int(r["k"]))] = float(t.group(1)) * 1e-6
    return out


def db_gemm_times(data: dict) -> dict[tuple[str, int, int, int], float]:
    return {(r.get("dtype", "bf16"), r["m"], r["n"], r["k"]): r["time_s"]
            for r in data["kernels"] if r["op"] == "gemm" and r.get("batch", 1) == 1}


def gemm_offset(csv_t: dict, db_t: dict) -> None:
    print("\nCSV time / database time, GEMM shapes both measured:")
    for dtype in ("bf16", "fp8"):
        logs = [math.log(t / db_t[key]) for key, t in csv_t.items() if key[0] == dtype and key in db_t]
        print(f"  {dtype}: {len(logs)} shapes, geometric mean {math.exp(statistics.mean(logs)):.3f}, "
              f"median {math.exp(statistics.median(logs)):.3f}, spread (sd of log) "
              f"{statistics.pstdev(logs):.3f}")


def layer_gemms(data: dict, csv_t: dict, db_t: dict) -> None:
    def look(table: dict, m: int, n: int, k: int) -> float | None:
        # the weight gradient is C[in x out] or C[out x in]: the same kernel transposed
        return table.get(("bf16", m, n, k)) or table.get(("bf16", n, m, k))

    print("\nprofiled nvjet GEMM kernels of each layer record / the 12 GEMMs' records:")
    ratios_db, ratios_csv = [], []
    for rec in data.get("layers") or []:
        if rec.get("compile") or rec.get("dtype", "bf16") != "bf16":
            continue
        m = catalog_model(rec["model"])
        tp, s = rec["tp"], rec["seq_length"] * rec["micro_batch_size"]
        q, kv = m.num_attention_heads // tp, max(m.kv_heads // tp, 1)
        d, f, h = m.kv_channels, m.ffn_size // tp, m.hidden_size
        linears = [(h, (q + 2 * kv) * d), (q * d, h), (h, 2 * f), (f, h)]  # (in, out)
        shapes = [x for k_in, n_out in linears
                  for x in ((s, n_out, k_in), (s, k_in, n_out), (n_out, k_in, s))]
        db_sum = [look(db_t, *x) for x in shapes]
        csv_sum = [look(csv_t, *x) for x in shapes]
        if None in db_sum:
            continue
        prof = sum(k["time_s"] for k in rec["kernels"] if k["name"].startswith("nvjet"))
        ratios_db.append(prof / sum(db_sum))  # type: ignore[arg-type]
        line = f"  {rec['model']} tp{tp} s{s}: / database {ratios_db[-1]:.3f}"
        if None not in csv_sum:
            ratios_csv.append(prof / sum(csv_sum))  # type: ignore[arg-type]
            line += f", / CSV {ratios_csv[-1]:.3f}"
        print(line)
    for name, r in (("database", ratios_db), ("CSV", ratios_csv)):
        if r:
            print(f"  over the {name}: {len(r)} layers, mean {statistics.mean(r):.3f}, "
                  f"sd {statistics.pstdev(r):.3f}")


def layer_categories(path: Path = DB) -> None:
    """Each layer record's ops priced by the database (as ``validate`` checks a database: exact
    records, neighbours, the calibrated model) against torch.profiler's kernels of that layer,
    by category: cuBLAS GEMMs (``nvjet``), cuDNN attention (its forward ``fprop`` kernel; the
    backward ``bprop`` kernel and its helpers), everything else."""
    from trainsim.catalog import gpu as catalog_gpu
    from trainsim.compute.chain import ChainModel
    from trainsim.compute.database import KernelDatabase
    from trainsim.validate.kernel_db import _as_profiled, _layer_config
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.ops import Attention, Elementwise, Gemm
    from trainsim.workload.shard import shard_of

    db = KernelDatabase.load(path, catalog_gpu)
    chain = ChainModel(db.spec, db)
    print("\nlayer records: profiled kernel time / the database's records of the layer's ops:")
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for rec in db.layers:
        if rec.get("compile"):
            continue
        cfg = _layer_config(rec, db.spec, "cudnn")
        sh = shard_of(cfg)
        fwd = layer_forward(cfg, sh)
        composed: dict[str, float] = defaultdict(float)
        for i, ops in enumerate((fwd, backward_of(fwd, sh))):
            for op in ops:
                op = _as_profiled(op, cfg.model.hidden_dropout > 0)
                if isinstance(op, Gemm):
                    composed["gemm"] += chain.explain(op)[0]
                elif isinstance(op, Attention):
                    composed["attention " + ("bwd" if op.backward else "fwd")] += chain.explain(op)[0]
                elif isinstance(op, Elementwise):
                    composed["other"] += chain.explain(op)[0]
        profiled: dict[str, float] = defaultdict(float)
        for k in rec["kernels"]:
            name = k["name"]
            cat = ("gemm" if name.startswith("nvjet") else "attention fwd" if "fprop" in name
                   else "attention bwd" if "cudnn" in name else "other")
            profiled[cat] += k["time_s"]
        cells = []
        for cat in ("gemm", "attention fwd", "attention bwd", "other"):
            totals[cat][0] += profiled[cat]
            totals[cat][1] += composed[cat]
            cells.append(f"{cat} {profiled[cat] / composed[cat]:.3f}")
        print(f"  {rec['model']} tp{rec['tp']} s{rec['seq_length']}: " + ", ".join(cells))
    print("  all layers: " + ", ".join(f"{cat} {p / c:.3f}" for cat, (p, c) in totals.items()))


def main(argv: list[str] | None = None) -> None:
    global CSV, DB
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", choices=sorted(CHECKS), default="h100-sxm-80gb")
    CSV, DB = CHECKS[ap.parse_args(argv).gpu]
    per_kind()
    data = json.loads(DB.read_text())
    csv_t, db_t = csv_gemm_times(), db_gemm_times(data)
    gemm_offset(csv_t, db_t)
    layer_gemms(data, csv_t, db_t)
    layer_categories(DB)


if __name__ == "__main__":
    main()
