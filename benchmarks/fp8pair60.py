"""Issue 17 items 1-2: the dense fp8 gain, measured vs predicted, on bf16 / fp8 twin rows (60th
session, fp8pair60; a diagnostic: nothing here feeds trainsim).

    PYTHONPATH=src:benchmarks python benchmarks/fp8pair60.py [--files public heldout dgxc ...]

Every pair of rows in the public, held-out and check files that differ only in ``dtype`` (and
the fp8 cells that go with it: ``fp8_recipe``, ``fp8_param_gather``) -- same model, GPUs,
layout, batch and framework release -- is predicted twice; the table gives the measured gain
(bf16 step / fp8 step), the predicted gain, and the split of one dense layer's forward +
backward kernel time on the fp8 row into GEMMs, fp8 casts / transposes / scaling updates, and
the rest (``layer_forward`` + ``backward_of``, each op priced alone by the row's compute model:
a kernel-time share, not the critical path). MoE rows are left out (their fp8 is not this
script's question).
"""

from __future__ import annotations

import argparse
import csv
import sys
import warnings
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "validation" / "training_public.csv"
FILES = {"public": SHARED, "heldout": HERE / "training_heldout.csv"}
DEFAULT = ["public", "heldout", "dgxc", "dgxc2502", "dgxc2505", "dgxc_grok1", "nemo_perf",
           "mlperf5", "bridge_archive", "nemo_launcher", "dgxc_llama31_2505", "dgxc_maxtext",
           "dgxc_paxml", "jaxtoolbox", "torchao", "olmo_core", "published", "flagperf"]
DTYPE_CELLS = ("id", "source", "note", "dtype", "fp8_recipe", "fp8_param_gather",
               "measured_iteration_s", "measured_peak_memory_gib", "memory_kind")
"""Cells that may differ between twins; every other cell must match."""
FP8_KERNELS = ("fp8_cast_transpose", "fp8_cast", "fp8_transpose", "fp8_scale_update")


def path_of(name: str) -> Path:
    return FILES.get(name, HERE / f"training_{name}.csv")


def is_dense(row: dict[str, str]) -> bool:
    from trainsim import catalog
    if row.get("num_experts") and int(float(row["num_experts"])) > 1:
        return False
    try:
        return (catalog.model(row["model"]).num_experts or 0) <= 1
    except Exception:  # noqa: BLE001 (a shape given by the row's columns only)
        return True


def measured_rows(name: str) -> list[dict[str, str]]:
    """The rows of check file ``name`` with a measured step (none where the file is absent)."""
    path = path_of(name)
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        return [r for r in csv.DictReader(fh) if r.get("measured_iteration_s")]


def _cells_key(row: dict[str, str]) -> tuple:
    return tuple(sorted((k, v) for k, v in row.items() if k not in DTYPE_CELLS and k))


def twins(names: list[str], key=_cells_key, partners: tuple[str, ...] = ("bf16", "fp16"),
          ) -> list[tuple[str, dict[str, str], dict[str, str]]]:
    """(file, 16-bit row, fp8 row) for every dense pair with the same ``key`` (by default: the
    rows differ only in ``DTYPE_CELLS``); the 16-bit row is the first of ``partners`` present."""
    out = []
    for name in names:
        groups: dict[tuple, dict[str, dict[str, str]]] = defaultdict(dict)
        for r in measured_rows(name):
            groups[key(r)].setdefault(r["dtype"], r)
        for g in groups.values():
            other = next((g[p] for p in partners if p in g), None)
            if "fp8" in g and other is not None and is_dense(g["fp8"]):
                out.append((name, other, g["fp8"]))
    return out

def predict(row: dict[str, str]):
    from trainsim.validate.training import predict_training_row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return predict_training_row(row)


def layer_split(row: dict[str, str], chosen) -> tuple[float, float, float]:
    """Seconds of one dense layer's forward + backward kernels on the row's GPU: (GEMM, fp8
    casts / transposes / scaling updates, other)."""
    from trainsim.pricing import Pricer
    from trainsim.validate.training import row_config
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.ops import Attention, Elementwise, Gemm
    from trainsim.workload.shard import shard_of
    cfg = row_config(row, chosen)
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    model = Pricer(cfg).compute
    gemm = cast = other = 0.0
    for op in fwd + backward_of(fwd, sh):
        if not isinstance(op, (Gemm, Attention, Elementwise)):
            continue
        t = model.time(op)
        if isinstance(op, Gemm):
            gemm += t
        elif isinstance(op, Elementwise) and op.kernel in FP8_KERNELS:
            cast += t
        else:
            other += t
    return gemm, cast, other


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="*", default=DEFAULT)
    args = ap.parse_args(argv)
    pairs = twins(args.files)
    print("| file | fp8 row | GPU | release | TP | CP | meas. gain | pred. gain | bf16 err % "
          "| fp8 err % | GEMM % | fp8 cast % | other % |")
    print("|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    by: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for name, b, f in pairs:
        rb, rf = predict(b), predict(f)
        if rb.predicted is None or rf.predicted is None:
            print(f"| {name} | {f['id']} | not simulated: {rb.error or rf.error} |")
            continue
        mg, pg = rb.measured / rf.measured, rb.predicted / rf.predicted
        g, c, o = layer_split(f, rf.chosen)
        tot = g + c + o
        rel = f"{f['framework']} {f['framework_version']}"
        print(f"| {name} | {f['id']} | {f['gpu']} | {rel} | {f['tp']} | {f.get('cp') or 1} "
              f"| {mg:.3f} | {pg:.3f} | {100 * (rb.predicted / rb.measured - 1):+.1f} "
              f"| {100 * (rf.predicted / rf.measured - 1):+.1f} | {100 * g / tot:.0f} "
              f"| {100 * c / tot:.1f} | {100 * o / tot:.0f} |")
        by[(f["gpu"], rel, f["tp"])].append((mg, pg))
    print("\n| GPU | release | TP | pairs | mean meas. gain | mean pred. gain | pred / meas - 1 % |")
    print("|---|---|---|---:|---:|---:|---:|")
    for (gpu, rel, tp), v in sorted(by.items()):
        m = sum(x for x, _ in v) / len(v)
        p = sum(y for _, y in v) / len(v)
        print(f"| {gpu} | {rel} | {tp} | {len(v)} | {m:.3f} | {p:.3f} | {100 * (p / m - 1):+.1f} |")
    allm = [x for v in by.values() for x, _ in v]
    allp = [y for v in by.values() for _, y in v]
    if allm:
        ratio = sum(p / m for m, p in zip(allm, allp)) / len(allm)
        print(f"\n{len(allm)} pairs, predicted gain / measured gain mean {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
