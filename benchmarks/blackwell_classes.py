"""Where the four worst Blackwell / MoE check files miss, class by class (issue 17, 34th
session; a diagnostic: nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/blackwell_classes.py          # ~3 min on 2 busy cores

``training_dgxc2505``, ``training_mcore_dsv3_gb200``, ``training_nemo_perf`` and
``training_moe_modelzoo`` are predicted as ``trainsim validate`` predicts them; each row is
put in a class by GPU, precision (bf16, fp8 delayed / current scaling, MXFP8), MoE or dense
(its own cell or its model preset's experts), scale (GPUs) and whether its layers run under
CUDA graphs. Printed:

1. ``classes``: per axis and per crossed cell, n, the mean signed error (predicted / measured
   - 1), MAPE, and the class's share of the four files' summed absolute error: where the
   error lives.
2. ``recipe pairs``: rows of the same work, container and GPUs that differ by the fp8 recipe
   alone (dgxc v25.05 ran NeMo 25.04 with delayed scaling, the NeMo 25.04 performance summary
   with current scaling): measured and predicted step ratios.
"""

from __future__ import annotations

import csv
import sys
import warnings
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = ("training_dgxc2505", "training_mcore_dsv3_gb200", "training_nemo_perf",
         "training_moe_modelzoo")
AXES = (("gpu",), ("precision",), ("family",), ("scale",), ("graphs",), ("gpu", "family"),
        ("gpu", "family", "graphs"), ("gpu", "family", "precision"),
        ("file", "gpu", "family", "precision"))
# (delayed-scaling row, current-scaling row): NeMo 25.04 on 128 GB200, same layout and batch
RECIPE_PAIRS = (("dgxc2505-nemotron4-340b-fp8-gb200-128", "nemo2504-nemotron4-340b-gb200-128"),
                ("dgxc2505-llama3.1-405b-fp8-gb200-128", "nemo2504-llama3-405b-gb200-128"))


def precision(r: dict[str, str]) -> str:
    if r["dtype"] != "fp8":
        return r["dtype"]
    return "fp8-" + ((r.get("fp8_recipe") or "").strip() or "default")


def scale(gpus: int) -> str:
    return "<=64" if gpus <= 64 else "128" if gpus <= 128 else ">=256"


def is_moe(r: dict[str, str]) -> bool:
    from trainsim import catalog
    if (r.get("num_experts") or "").strip():
        return int(float(r["num_experts"])) > 1
    try:
        return (catalog.model(r["model"]).num_experts or 0) > 1
    except Exception:  # noqa: BLE001 (a model spelled out in the row only)
        return False


def classify(file: str, r: dict[str, str]) -> dict[str, str]:
    """The class cells of one row."""
    return {"file": file.removeprefix("training_"), "gpu": r["gpu"].split("-")[0],
            "precision": precision(r), "family": "MoE" if is_moe(r) else "dense",
            "scale": scale(int(r["num_gpus"])),
            "graphs": "graphs" if "cuda_graphs" in (r.get("options") or "") else "eager"}


def _predict(r: dict[str, str]) -> tuple[str, float, float]:
    from trainsim.validate.training import predict_training_row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = predict_training_row(r)
    return r["id"], res.measured, float("nan") if res.predicted is None else res.predicted


def load() -> list[tuple[str, dict[str, str]]]:
    out = []
    for f in FILES:
        with open(HERE / f"{f}.csv", newline="") as fh:
            out += [(f, r) for r in csv.DictReader(fh)]
    return out


def groups(rows: list[dict], keys: tuple[str, ...]) -> list[tuple[str, int, float, float, float]]:
    """(class, n, mean signed %, MAPE %, share % of the summed absolute error) per class of
    ``keys``, the largest share first; ``rows`` carry the class cells and ``err`` (%)."""
    total = sum(abs(r["err"]) for r in rows) or 1.0
    by: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        by["/".join(r[k] for k in keys)].append(r["err"])
    out = [(k, len(v), sum(v) / len(v), sum(map(abs, v)) / len(v), 100 * sum(map(abs, v)) / total)
           for k, v in by.items()]
    return sorted(out, key=lambda g: -g[4])


def main() -> None:
    rows = load()
    with Pool(2) as pool:
        pred = {i: (m, p) for i, m, p in pool.map(_predict, [r for _, r in rows])}
    table = []
    for f, r in rows:
        m, p = pred[r["id"]]
        table.append({**classify(f, r), "id": r["id"], "m": m, "p": p, "err": (p / m - 1) * 100})
    total = sum(abs(r["err"]) for r in table)
    print(f"## classes ({len(table)} rows, summed absolute error {total:.0f} points)")
    for keys in AXES:
        print(f"\n| {' x '.join(keys)} | n | signed % | MAPE % | share % |\n|---|---|---|---|---|")
        for k, n, s, a, sh in groups(table, keys):
            print(f"| {k} | {n} | {s:+.1f} | {a:.1f} | {sh:.1f} |")
    print("\n## recipe pairs (NeMo 25.04, 128 GB200; current / delayed step)\n")
    print("| delayed row | current row | measured | predicted |\n|---|---|---|---|")
    by_id = {r["id"]: r for r in table}
    for d, c in RECIPE_PAIRS:
        rd, rc = by_id[d], by_id[c]
        print(f"| {d} | {c} | {rc['m'] / rd['m']:.3f} | {rc['p'] / rd['p']:.3f} |")


if __name__ == "__main__":
    sys.exit(main())
