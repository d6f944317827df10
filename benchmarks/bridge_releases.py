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

25.09's Llama pre-training recipes deferred the output layer's weight gradient (limit 50 for
405B, 22 for 70B; none under Megatron FSDP), which no later release's did: the 25.09 points of
those workloads are priced with the two cells (``deferral_cells.BRIDGE_2509``, checked against
the mirror by ``python benchmarks/deferral_cells.py --check``).
Nothing here feeds trainsim: the table is a check, not an input.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deferral_cells import BRIDGE_2509

from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import read_errata
from trainsim.validate.training import predict_training_row

PUBLIC = BUNDLED_DIR / "training_public.csv"
ERRATA = Path(__file__).resolve().parent / "training_errata.csv"
QWEN = "bridge2604p1-qwen3-235b-a22b-h100-256-gbs8192"
FSDP = "bridge2604p1-llama3-70b-gb200-64-fsdp"

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
    # Llama 3 70B on 64 GB200 (FP8 current scaling): Megatron FSDP over all 64 GPUs, TP 1, MBS 2,
    # 40 of 80 layers' activations offloaded to the host at every tag (v0.1.0rc3
    # scripts/performance/configs/llama3/llama3_70b_llm_pretrain.yaml perf_matrix gb200 fp8_cs;
    # v0.2.0 configs/llama3/workload_base_configs.py LLAMA3_70B_GB200_FP8_CS_BASE_CONFIG;
    # v0.3.0-v0.4.2 configs/llama/llama3_workload_base_configs.py
    # LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_CS_V1/_V2), GBS 128 in 25.09 (GA 1), 256 after (GA 2)
    (FSDP, "25.09", 128, 3986),
    (FSDP, "25.11", 256, 4312),
    (FSDP, "26.02", 256, 4040),
    (FSDP, "26.02.01", 256, 4357),
    (FSDP, "26.04", 256, 4143),
    (FSDP, "26.04.01", 256, 4224),
    # Llama 3.1 405B on 128 B200 (FP8 current scaling), TP 4 PP 8 CP 2 VP 8, GBS 64 in both
    # (v0.1.0rc3 configs/llama31/llama31_405b_llm_pretrain.yaml perf_matrix b200; v0.2.0
    # configs/llama31/workload_base_configs.py LLAMA31_405B_B200_FP8_CS_BASE_CONFIG)
    ("bridge2511-llama3.1-405b-b200-128", "25.09", 64, 664),
    ("bridge2511-llama3.1-405b-b200-128", "25.11", 64, 661),
    (QWEN, "25.11", 2048, 1575),
    (QWEN, "26.02", 8192, 1633),
    (QWEN, "26.02.01", 8192, 1611),
    (QWEN, "26.04", 8192, 1686),
    (QWEN, "26.04.01", 8192, 1712),
]
RECIPE = {QWEN}
"""Workloads also priced with the recipe's cells (their errata), beside the row's own."""


def release_cells(rid: str, release: str) -> dict[str, str]:
    """Cells one release's recipe sets for the workload beyond the row's: 25.09's output-layer
    weight-gradient deferral (``BRIDGE_2509``), else none."""
    if release != "25.09" or rid not in BRIDGE_2509:
        return {}
    return {"defer_embedding_wgrad_compute": "1",
            "wgrad_deferral_limit": str(BRIDGE_2509[rid][0])}


def key(rid: str, release: str, gbs: int, recipe: bool) -> tuple:
    """The prediction one point needs: the workload, its batch, the errata's cells or not, and
    its release's own cells."""
    return (rid, gbs, recipe, tuple(sorted(release_cells(rid, release).items())))


def recipe_row(row: dict[str, str]) -> dict[str, str]:
    """``row`` with the cells ``training_errata.csv`` corrects for it."""
    fixes = {f: e["corrected_value"] for (rid, f), e in read_errata(ERRATA).items()
             if rid == row["id"]}
    return {**row, **fixes}


NEMO_PERF = Path(__file__).resolve().parent / "training_nemo_perf.csv"
NEMO_FSDP = ("nemo2504-llama3-70b-gb200-64", "nemo2507-llama3-70b-gb200-64")
"""NeMo 2 runs of the same workload on 64 GB200 (Megatron FSDP over 64, TP 1, FP8 current
scaling) at MBS 1 and no activation offloading (their rows' notes cite the perf scripts)."""


def gap_split(row: dict[str, str], measured: float, predicted: float) -> dict[str, float]:
    """What trainsim misses of one point, per step, per micro-batch and per sample of a GPU
    (samples per GPU = GBS / data-parallel size; micro-batches = that / MBS)."""
    gpus, gbs = int(row["num_gpus"]), int(row["global_batch_size"])
    dp = gpus // (int(row["tp"]) * int(row["pp"] or 1) * int(row["cp"] or 1))
    samples = gbs / dp
    mbs = int(row["micro_batch_size"] or 1)
    gap = measured - predicted
    return {"samples": samples, "micro_batches": samples / mbs, "gap": gap,
            "per_micro_batch": gap / (samples / mbs), "per_sample": gap / samples,
            "share": gap / predicted}


def fsdp_gaps(rows: dict[str, dict[str, str]], predicted: dict[tuple, float]
              ) -> list[tuple[str, str, dict[str, float]]]:
    """The GB200 Megatron-FSDP 70B points, Bridge (MBS 2, offload 40) and NeMo (MBS 1)."""
    out = []
    for rid, release, gbs, tps in RELEASES:
        if rid != FSDP:
            continue
        row = dict(rows[rid], global_batch_size=str(gbs))
        measured = gbs * int(row["seq_length"]) / (tps * int(row["num_gpus"]))
        out.append((f"Bridge {release}", row["micro_batch_size"],
                    gap_split(row, measured, predicted[key(rid, release, gbs, False)])))
    with open(NEMO_PERF, newline="") as fh:
        nemo = {r["id"]: r for r in csv.DictReader(fh)}
    for rid in NEMO_FSDP:
        row = nemo[rid]
        out.append((rid, row["micro_batch_size"], gap_split(
            row, float(row["measured_iteration_s"]), predict_training_row(row).predicted)))
    return out


def release_floor(errors: list[float]) -> tuple[float, float]:
    """(mean APE now, the least mean APE a release-blind change can reach) over one workload's
    archive points, given their signed errors (fractions): a change that moves the workload's
    prediction by one factor f for every release (a mechanism of the recipe, the same in every
    tag) leaves mean |f (1 + e) - 1|, piecewise linear in f, so least at some f = 1 / (1 + e)."""
    def mean_ape(f: float) -> float:
        return sum(abs(f * (1 + e) - 1) for e in errors) / len(errors)
    return mean_ape(1.0), min(mean_ape(1 / (1 + e)) for e in errors)


def main() -> None:
    with open(PUBLIC, newline="") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}
    predicted: dict[tuple, float] = {}
    print("| workload | cells | release | GBS | tok/s/GPU | measured s | predicted s | error |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for recipe in (False, True):
        for rid, release, gbs, tps in RELEASES:
            if recipe and rid not in RECIPE:
                continue
            extra = release_cells(rid, release)
            row = dict(recipe_row(rows[rid]) if recipe else rows[rid], global_batch_size=str(gbs),
                       **extra)
            k = key(rid, release, gbs, recipe)
            if k not in predicted:
                predicted[k] = predict_training_row(row).predicted
            gpus = int(row["num_gpus"])
            measured = gbs * int(row["seq_length"]) / (tps * gpus)
            pred = predicted[k]
            cells = ("recipe" if recipe else "row") + \
                (f" + deferral {extra['wgrad_deferral_limit']}" if extra else "")
            print(
                f"| {rid} | {cells} | {release} | {gbs} | {tps} | "
                f"{measured:.3f} | {pred:.3f} | {(pred / measured - 1) * 100:+.1f} % |"
            )
    print()
    print("| workload | points | error range | mean APE | release-blind floor |")
    print("| --- | --- | --- | --- | --- |")
    for rid in dict.fromkeys(r for r, *_ in RELEASES):
        errs = []
        for r, release, gbs, tps in RELEASES:
            if r == rid:
                row = rows[rid]
                measured = gbs * int(row["seq_length"]) / (tps * int(row["num_gpus"]))
                errs.append(predicted[key(rid, release, gbs, False)] / measured - 1)
        now, floor = release_floor(errs)
        print(f"| {rid} | {len(errs)} | {100 * min(errs):+.1f} .. {100 * max(errs):+.1f} % | "
              f"{100 * now:.1f} % | {100 * floor:.1f} % |")
    print()
    pairs = [
        ("bridge2604p1-llama3.1-405b-h100-1024-gbs1536", r1, "26.02") for r1 in ("25.09", "25.11")
    ]
    pairs += [("bridge2604p1-llama3-70b-h100-64-gbs256", r1, "26.02") for r1 in ("25.09", "25.11")]
    pairs += [(QWEN, "25.11", r2) for r2 in ("26.02", "26.02.01")]
    pairs += [(FSDP, "25.09", r2) for r2 in ("25.11", "26.02.01", "26.04.01")]
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
            p1, p2 = predicted[key(rid, r1, g1, recipe)], predicted[key(rid, r2, g2, recipe)]
            bp = (p2 - p1) / ((g2 - g1) / dp)
            line += (f"; predicted{' (recipe cells)' if recipe else ''} a = "
                     f"{p1 - bp * g1 / dp:.2f} s, b = {bp * 1e3:.1f} ms")
        print(line)
    print()
    print("Megatron FSDP, Llama 3 70B, 64 GB200: the missed time per step, micro-batch and sample")
    print("| point | MBS | micro-batches | samples | gap s | per micro-batch s | per sample s | "
          "share of predicted |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, mbs, g in fsdp_gaps(rows, predicted):
        print(f"| {name} | {mbs} | {g['micro_batches']:.0f} | {g['samples']:.0f} | "
              f"{g['gap']:.3f} | {g['per_micro_batch']:.3f} | {g['per_sample']:.3f} | "
              f"{100 * g['share']:+.1f} % |")


if __name__ == "__main__":
    main()
