"""Megatron-Bridge workloads across NeMo releases: one recipe, several published speeds.

    python benchmarks/bridge_releases.py

NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md @ 067f987 lists the same
Llama performance workloads (same system, GPUs, TP/PP/CP/VP, precision) for every container
release; only the global batch changed (Llama-3.1 405B on 1,024 H100: 512 -> 1,536 from 26.02,
Llama-3 70B on 64 H100: 128 -> 256). The recipes behind them (scripts/performance/configs/
llama*/ at v0.1.0rc3, v0.2.0, v0.3.0, v0.4.0, v0.4.2) differ in nothing else for these
workloads, so trainsim predicts one time per (workload, batch) and each release's published
tokens/s/GPU is checked against it. Two releases at different batches, read as if equally fast per
sequence, give the per-iteration intercept a and per-micro-batch slope b of ``a + b * m``
(25.09's table states no precision: fp8, its recipe's scaling not given).

The MoE workload (Qwen3-235B-A22B on 256 H100, TP2 PP8 VP4 EP32, FP8 current scaling) is the
same in every tag but for the batch: v0.2.0 scripts/performance/configs/qwen3/
workload_base_configs.py QWEN3_235B_A22B_H100_FP8_CS_BASE_CONFIG (GBS 2048, moe_a2a_overlap) and
v0.3.0, v0.4.0, v0.4.2 configs/qwen/qwen3_workload_base_configs.py
QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V1 (the same) / _V2 (GBS 8192), the all-to-all
dispatcher in all (v0.2.0 sets no flex backend; v0.4.x qwen3_llm_pretrain.py sets "alltoall").
It is priced twice: with the public row's cells (its empty dispatcher and options tuned) and
with the recipe's, the cells ``benchmarks/training_errata.csv`` gives that row (read from there).
Nothing here feeds trainsim: the table is a check, not an input.
"""

from __future__ import annotations

import csv
from pathlib import Path

from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import read_errata
from trainsim.validate.training import predict_training_row

PUBLIC = BUNDLED_DIR / "training_public.csv"
ERRATA = Path(__file__).resolve().parent / "training_errata.csv"
QWEN = "bridge2604p1-qwen3-235b-a22b-h100-256-gbs8192"

# (row id in training_public.csv whose shape and parallel cells are the workload's, release,
#  global batch, published tokens/s/GPU) from docs/performance-summary-archive.md @ 067f987
RELEASES = [
    ("bridge2604p1-llama3.1-405b-h100-1024-gbs1536", "25.09", 512, 302),
    ("bridge2604p1-llama3.1-405b-h100-1024-gbs1536", "25.11", 512, 292),
    ("bridge2604p1-llama3.1-405b-h100-1024-gbs1536", "26.02", 1536, 311),
    ("bridge2604p1-llama3.1-405b-h100-1024-gbs1536", "26.04.01", 1536, 328),
    ("bridge2604p1-llama3.1-405b-h100-1024-gbs1536", "26.06", 1536, 326),
    ("bridge2604p1-llama3-70b-h100-64-gbs256", "25.09", 128, 1619),
    ("bridge2604p1-llama3-70b-h100-64-gbs256", "25.11", 128, 1602),
    ("bridge2604p1-llama3-70b-h100-64-gbs256", "26.02", 256, 1621),
    ("bridge2604p1-llama3-70b-h100-64-gbs256", "26.02.01", 256, 1639),
    ("bridge2604p1-llama3-70b-h100-64-gbs256", "26.04", 256, 1633),
    ("bridge2604p1-llama3-70b-h100-64-gbs256", "26.04.01", 256, 1664),
    ("bridge2604p1-llama3.1-405b-gb200-256", "25.11", 1536, 813),
    ("bridge2604p1-llama3.1-405b-gb200-256", "26.02", 1536, 793),
    ("bridge2604p1-llama3.1-405b-gb200-256", "26.02.01", 1536, 818),
    ("bridge2604p1-llama3.1-405b-gb200-256", "26.04", 1536, 842),
    ("bridge2604p1-llama3.1-405b-gb200-256", "26.04.01", 1536, 864),
    ("bridge2604p1-llama3.1-405b-gb200-256", "26.06", 1536, 843),
    (QWEN, "25.11", 2048, 1575),
    (QWEN, "26.02", 8192, 1633),
    (QWEN, "26.02.01", 8192, 1611),
    (QWEN, "26.04", 8192, 1686),
    (QWEN, "26.04.01", 8192, 1712),
]
RECIPE = {QWEN}
"""Workloads also priced with the recipe's cells (their errata), beside the row's own."""


def recipe_row(row: dict[str, str]) -> dict[str, str]:
    """``row`` with the cells ``training_errata.csv`` corrects for it."""
    fixes = {f: e["corrected_value"] for (rid, f), e in read_errata(ERRATA).items()
             if rid == row["id"]}
    return {**row, **fixes}


def main() -> None:
    with open(PUBLIC, newline="") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}
    predicted: dict[tuple[str, int, bool], float] = {}
    print("| workload | cells | release | GBS | tok/s/GPU | measured s | predicted s | error |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for recipe in (False, True):
        for rid, release, gbs, tps in RELEASES:
            if recipe and rid not in RECIPE:
                continue
            row = dict(recipe_row(rows[rid]) if recipe else rows[rid], global_batch_size=str(gbs))
            if (rid, gbs, recipe) not in predicted:
                predicted[(rid, gbs, recipe)] = predict_training_row(row).predicted
            gpus = int(row["num_gpus"])
            measured = gbs * int(row["seq_length"]) / (tps * gpus)
            pred = predicted[(rid, gbs, recipe)]
            print(
                f"| {rid} | {'recipe' if recipe else 'row'} | {release} | {gbs} | {tps} | "
                f"{measured:.3f} | {pred:.3f} | {(pred / measured - 1) * 100:+.1f} % |"
            )
    print()
    pairs = [
        ("bridge2604p1-llama3.1-405b-h100-1024-gbs1536", r1, "26.02") for r1 in ("25.09", "25.11")
    ]
    pairs += [("bridge2604p1-llama3-70b-h100-64-gbs256", r1, "26.02") for r1 in ("25.09", "25.11")]
    pairs += [(QWEN, "25.11", r2) for r2 in ("26.02", "26.02.01")]
    for rid, r1, r2 in pairs:
        row = rows[rid]
        gpus, seq = int(row["num_gpus"]), int(row["seq_length"])
        dp = gpus // (int(row["tp"]) * int(row["pp"]) * int(row["cp"] or 1))
        (g1, t1), (g2, t2) = [
            (g, g * seq / (t * gpus)) for i, rel, g, t in RELEASES if i == rid and rel in (r1, r2)
        ]
        b = (t2 - t1) / ((g2 - g1) / dp)
        line = (f"{rid}: measured {r1}/{r2} a = {t1 - b * g1 / dp:.2f} s, b = {b * 1e3:.1f} ms "
                "per micro-batch")
        for recipe in (False, True) if rid in RECIPE else (False,):
            p1, p2 = predicted[(rid, g1, recipe)], predicted[(rid, g2, recipe)]
            bp = (p2 - p1) / ((g2 - g1) / dp)
            line += (f"; predicted{' (recipe cells)' if recipe else ''} a = "
                     f"{p1 - bp * g1 / dp:.2f} s, b = {bp * 1e3:.1f} ms")
        print(line)


if __name__ == "__main__":
    main()
