"""MLPerf GPT-3 175B: what NVIDIA's code does once per model chunk, counted per sequence, and
whether any one of those events, at one cost each, closes the rows' gaps (57th session,
mlperf57; issue 17 item 2; a diagnostic: nothing here feeds trainsim).

    PYTHONPATH=src:benchmarks python benchmarks/mlperf57_vpp.py            # ~30 s

Sustainable Metal Cloud's v4.0 run (mlcommons/training_results_v4.0@6fe95437 smc/benchmarks/
gpt3/implementations/nemo) is NVIDIA's v4.0 code and config_common.sh byte for byte; its
config_SMCH100_64x8x128x4x8.sh sets no INTERLEAVED_PIPELINE (conf/custom.yaml L64 default 12)
where NVIDIA's config_DGXH100_64x8x128x4x8_mbs2.sh sets 4; the Dockerfiles differ in names
only (TE 9e4091e7 = v1.6rc1, NeMo and Megatron r- for v- branch names). What interleaving
changes per sequence, from the code the rows ran:

* chunk passes: 2 vpp / mbs (a forward and a backward of each of the rank's vpp chunks per
  micro-batch of mbs sequences);
* pipeline sends: one activation (or its gradient) per pass, [s / tp, mbs, h] in bf16 with
  sequence parallelism (Megatron-LM core_v0.7.0 pipeline_parallel/schedules.py
  ``get_tensor_shapes``), so 2 vpp x s / tp x h x 2 bytes per sequence whatever the
  micro-batch; overlap_p2p_comm True, batch_p2p_comm False (custom.yaml L78-79, every round);
  the pp communicator at NCCL max_ctas 2 from v4.0 (conf/nccl/custom_communicator_cta.yaml);
* synchronous amax all-reduces across the data-parallel replicas: two per pass in v4.0 only
  (core_v0.7.0.beta parallel_state.py L792-803, TP x DP x CP group, max_ctas 1); v3.1 keeps
  them on the TP group and asynchronous (NVTE_DP_AMAX_REDUCE_INTERVAL=0,
  NVTE_ASYNC_AMAX_REDUCTION=1), v4.1's Megatron 24.09-alpha.rc0 on TP x CP (2e429097dd);
* data-parallel buckets: Apex DistributedFusedAdam's fixed buckets (BUCKET_CAP_MB 100 in v3.1,
  200 from v4.0, in bf16 elements) are reduced once a step when a chunk's last backward ends:
  a per-step count, not a per-sequence one;
* userbuffers overlaps: per layer (conf/tp_overlap/h100tp4mbs2.yaml sites), the same count
  per sequence at any vpp.

For each per-sequence count the script fits one cost per event (least squares over the rows'
gaps, measured minus priced, ms per sequence) and prints what that cost leaves on each row.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from step_parts import PUBLIC, parts

HERE = Path(__file__).resolve().parent
PARTNERS = str(HERE / "training_mlperf_partners.csv")

ROWS = (("v3.1 NVIDIA 512", "mlperf31-gpt3-175b-512", PUBLIC),
        ("v3.1 NVIDIA 4096", "mlperf31-gpt3-175b-4096", PUBLIC),
        ("v3.1 NVIDIA 10752", "mlperf31-gpt3-175b-10752", PUBLIC),
        ("v4.0 SMC 512", "mlperf40-smc-gpt3-175b-512", PARTNERS),
        ("v4.0 NVIDIA 512", "mlperf40-gpt3-175b-512", PUBLIC),
        ("v4.0 NVIDIA 10752", "mlperf40-gpt3-175b-10752", PUBLIC),
        ("v4.1 NVIDIA 256", "mlperf41-gpt3-175b-h100-256", PUBLIC),
        ("v4.1 NVIDIA 512", "mlperf41-gpt3-175b-h100-512", PUBLIC))
"""(label, row id, file): NVIDIA's MLPerf GPT-3 code on H100 (TP 4), as written."""

DP_WIDE_AMAX = {"3.1": False, "4.0": True, "4.1": False}
"""Whether the round's amax all-reduces are synchronous over the data-parallel replicas
(module docstring)."""


def read_row(row_id: str, path: str) -> dict[str, str]:
    with open(path, newline="") as fh:
        row = next((r for r in csv.DictReader(fh) if r["id"] == row_id), None)
    if row is None:
        raise SystemExit(f"{row_id}: not in {path}")
    return row


def counts(row: dict[str, str]) -> dict[str, float]:
    """Per-sequence events of one pipeline rank (module docstring)."""
    vpp, mbs = int(row["vpp"] or 1), int(row["micro_batch_size"])
    tp, s, h = int(row["tp"]), int(row["seq_length"]), int(row["hidden_size"])
    passes = 2.0 * vpp / mbs
    return {"passes": passes,
            "p2p_MB": passes * (s // tp) * mbs * h * 2 / 1e6,
            "dp_barriers": passes if DP_WIDE_AMAX[row["framework_version"]] else 0.0}


def gap(row: dict[str, str]) -> dict[str, Any]:
    """Measured and priced ms per sequence of one pipeline (step x DP / GBS)."""
    g = parts(row)
    dp = int(row["num_gpus"]) // (int(row["tp"]) * int(row["pp"]))
    per = 1e3 * dp / int(row["global_batch_size"])
    return {"measured": g["measured"] * per, "priced": g["predicted"] * per}


def fit_one(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope through the origin (one cost per event)."""
    den = sum(x * x for x in xs)
    return sum(x * y for x, y in zip(xs, ys)) / den if den else 0.0


def main() -> None:
    got = []
    for label, rid, path in ROWS:
        row = read_row(rid, path)
        got.append((label, row, counts(row), gap(row)))
    print("| row | mbs / vpp | passes / seq | p2p MB / seq | DP-wide barriers / seq | "
          "measured ms / seq | priced | gap ms | err % |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, row, c, g in got:
        d = g["measured"] - g["priced"]
        print(f"| {label} | {row['micro_batch_size']} / {row['vpp']} | {c['passes']:.0f} | "
              f"{c['p2p_MB']:.0f} | {c['dp_barriers']:.0f} | {g['measured']:.2f} | "
              f"{g['priced']:.2f} | {d:+.2f} | {100 * (g['priced'] / g['measured'] - 1):+.1f} |")
    print()
    print("| one cost per event, fitted to all rows | cost | " +
          " | ".join(label for label, *_ in got) + " |")
    print("|---|---|" + "---|" * len(got))
    gaps = [g["measured"] - g["priced"] for *_, g in got]
    for key, unit in (("passes", "ms / pass"), ("p2p_MB", "ms / MB"),
                      ("dp_barriers", "ms / barrier")):
        xs = [c[key] for _, _, c, _ in got]
        cost = fit_one(xs, gaps)
        left = [100 * ((g["priced"] + cost * c[key]) / g["measured"] - 1) for _, _, c, g in got]
        print(f"| {key} | {cost:.4f} {unit} | " + " | ".join(f"{e:+.1f}" for e in left) + " |")
    print()
    smc = next(x for x in got if x[0].startswith("v4.0 SMC"))
    d_smc = smc[3]["measured"] - smc[3]["priced"]
    print("| event | cost that closes SMC alone | then, err % on the other rows |")
    print("|---|---|---|")
    for key in ("passes", "p2p_MB", "dp_barriers"):
        cost = d_smc / smc[2][key]
        left = [f"{label} {100 * ((g['priced'] + cost * c[key]) / g['measured'] - 1):+.1f}"
                for label, _, c, g in got if label != smc[0]]
        print(f"| {key} | {cost:.4f} ms | " + ", ".join(left) + " |")


if __name__ == "__main__":
    main()
