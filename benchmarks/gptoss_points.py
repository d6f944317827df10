"""gpt-oss-120b points that Megatron-Bridge published and no validation file holds, predicted
the way ``trainsim validate`` predicts a row (issue 17 diagnostics; nothing here feeds trainsim).

    python benchmarks/gptoss_points.py [training_public.csv]

Source of every measurement: NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md
@ 067f987df03b8355b03192d88d70f1709fedf51a, the 'GPT OSS 120B' tables of the named container
(tokens/s/GPU; iteration = GBS x seq / (tokens/s/GPU x 64)). Each point is the public row of
its system (training_public.csv bridge2604p1-gpt-oss-120b-b200-64 / -h100-64) with the cells
the table (and, where named, the recipe) changes:

- GB200 BF16 (26.02-26.04.01: EP 64, MBS 4, GBS 1280; the GB200 rows of the files are MXFP8):
  as the public rows are (empty cells tuned), and with the v0.4.2 recipe's cells
  (scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py
  GPT_OSS_120B_PRETRAIN_CONFIG_GB200_BF16_V2: recompute_modules layernorm, moe_act;
  moe_a2a_overlap True; no flex backend, so gpt_oss.py's alltoall dispatcher);
- B200 BF16 26.02 (EP 64) and 26.04 / 26.02.01 (EP 8);
- B200 BF16 25.11 (GBS 512, MBS 4, 2 micro-batches): the table says EP 8, Bridge v0.2.0's
  recipe (workload_base_configs.py GPT_OSS_120B_B200_BF16_BASE_CONFIG) EP 64; both printed;
- H100 BF16 26.02-26.04 (PP 4, EP 8, MBS 1).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row

RECIPE = {"moe_dispatcher": "alltoall", "recompute": "selective",
          "recompute_modules": "layernorm;moe_act"}
GB200 = {"gpu": "gb200", "gpus_per_node": "64", "ep": "64"}

# (label, base row, cells changed, tokens/s/GPU, GBS)
POINTS = [
    ("gb200 bf16 26.04.01 ep64", "b200", GB200 | {"framework_version": "26.04"}, 16640, 1280),
    ("  same, recipe cells + ep_overlap", "b200",
     GB200 | RECIPE | {"framework_version": "26.04", "options": "ep_overlap"}, 16640, 1280),
    ("gb200 bf16 26.04 ep64", "b200", GB200 | {"framework_version": "26.04"}, 15938, 1280),
    ("gb200 bf16 26.02 ep64", "b200", GB200 | {"framework_version": "26.02"}, 15784, 1280),
    ("b200 bf16 26.04.01 ep8 (the public row)", "b200", {}, 13568, 1280),
    ("b200 bf16 26.04 ep8", "b200", {"framework_version": "26.04"}, 13045, 1280),
    ("b200 bf16 26.02.01 ep8", "b200", {"framework_version": "26.02"}, 13722, 1280),
    ("b200 bf16 26.02 ep64", "b200", {"ep": "64", "framework_version": "26.02"}, 8047, 1280),
    ("b200 bf16 25.11 gbs512 ep8 (table)", "b200",
     {"ep": "8", "framework_version": "25.11", "global_batch_size": "512"}, 8213, 512),
    ("b200 bf16 25.11 gbs512 ep64 (recipe)", "b200",
     {"ep": "64", "framework_version": "25.11", "global_batch_size": "512"}, 8213, 512),
    ("h100 bf16 26.04.01 (the public row)", "h100", {}, 5824, 1280),
    ("h100 bf16 26.04", "h100", {"framework_version": "26.04"}, 5810, 1280),
    ("h100 bf16 26.02", "h100", {"framework_version": "26.02"}, 5993, 1280),
]


def main(argv: list[str]) -> None:
    path = Path(argv[0]) if argv else BUNDLED_DIR / "training_public.csv"
    rows = {r["id"]: r for r in csv.DictReader(path.open())}
    base = {"b200": rows["bridge2604p1-gpt-oss-120b-b200-64"],
            "h100": rows["bridge2604p1-gpt-oss-120b-h100-64"]}
    print(f"{'point':42s} {'measured s':>10s} {'predicted s':>11s} {'error':>7s}")
    for label, system, cells, tokens, gbs in POINTS:
        row = dict(base[system]) | cells
        row["id"] = label
        row["global_batch_size"] = str(gbs)
        row["measured_iteration_s"] = str(gbs * int(row["seq_length"]) / (tokens * 64))
        res = predict_training_row(row)
        if res.predicted is None:
            print(f"{label:42s} failed: {res.error}")
            continue
        err = 100 * (res.predicted / res.measured - 1)
        print(f"{label:42s} {res.measured:10.3f} {res.predicted:11.3f} {err:+6.1f}%")


if __name__ == "__main__":
    main(sys.argv[1:])
