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
- H100 BF16 26.02-26.04 (PP 4, EP 8, MBS 1);
- B300 and GB300 BF16 26.04.01 (15,232 and 19,200 tokens/s/GPU), with the v0.4.2 recipe's
  cells, which are not the B200/GB200 ones (scripts/performance/configs/gpt_oss/
  gpt_oss_workload_base_configs.py @ c8101293: GPT_OSS_120B_PRETRAIN_CONFIG_B300_BF16_V1 and
  GB300_BF16_V1 set cuda_graph_impl "transformer_engine", cuda_graph_scope attn, moe_router,
  moe_preprocess and no recompute_modules; B300_BF16_V2 EP 8 and moe_flex_dispatcher_backend
  hybridep; GB300_BF16_V2 EP 64, no flex backend: alltoall), beside the B200 / GB200 points
  with theirs (B200_BF16_V2: EP 8, recompute layernorm, moe_act, alltoall; GB200_BF16_V2 the
  same at EP 64 with moe_a2a_overlap). The recipe's ddp overlap_grad_reduce /
  overlap_param_gather (recipes/gpt_oss/gpt_oss.py L139-140) is the ``dp_overlap`` option.

``--parts`` also takes one MoE layer pass (forward, its selective recompute and backward,
windowed and full-attention layers weighted by their share of the model's layers) apart by
kind of work, each op priced alone: the experts' GEMMs (``expert_*``), the other GEMMs, the
attention kernels, the other (memory-bound) kernels, the expert-parallel collectives, and the
host time the pricer charges. ``gap`` is (measured - predicted) per layer pass (micro-batches
x the heaviest stage's layers); ``x<kind>`` the gap as a multiple of that kind (1.0: that work
twice as slow closes the point). A kind that alone explains the Blackwell points would show
one multiple on all of them and about 0 on H100.
"""

from __future__ import annotations

import csv
import sys
from dataclasses import replace
from pathlib import Path

from trainsim.pricing import Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import RowResult, predict_training_row, row_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Comm, Gemm
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

RECIPE = {"moe_dispatcher": "alltoall", "recompute": "selective",
          "recompute_modules": "layernorm;moe_act"}
GB200 = {"gpu": "gb200", "gpus_per_node": "64", "ep": "64"}
GRAPHS = {"options": "cuda_graphs;dp_overlap", "cuda_graph_scope": "attn;moe_router;moe_preprocess",
          "recompute": "none"}

# (label, base row, cells changed, tokens/s/GPU, GBS)
POINTS = [
    ("gb200 bf16 26.04.01 ep64", "b200", GB200 | {"framework_version": "26.04"}, 16640, 1280),
    ("  same, recipe cells + ep_overlap", "b200",
     GB200 | RECIPE | {"framework_version": "26.04", "options": "ep_overlap;dp_overlap"}, 16640, 1280),
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
    ("b200 bf16 26.04.01 ep8, recipe cells", "b200", RECIPE, 13568, 1280),
    ("b300 bf16 26.04.01 ep8, recipe cells", "b200",
     GRAPHS | {"gpu": "b300-sxm-288gb", "moe_dispatcher": "hybridep"}, 15232, 1280),
    ("gb300 bf16 26.04.01 ep64, recipe cells", "b200",
     GRAPHS | {"gpu": "gb300", "gpus_per_node": "64", "ep": "64", "moe_dispatcher": "alltoall"},
     19200, 1280),
    ("h100 bf16 26.04.01 (the public row)", "h100", {}, 5824, 1280),
    ("h100 bf16 26.04", "h100", {"framework_version": "26.04"}, 5810, 1280),
    ("h100 bf16 26.02", "h100", {"framework_version": "26.02"}, 5993, 1280),
]


KINDS = ("expert_gemm", "gemm", "attn", "mem", "xchg", "host")


def layer_kinds(row: dict[str, str], res: RowResult) -> dict[str, float]:
    """One MoE layer pass of ``row`` by kind of work (seconds; ``KINDS``), windowed and full
    layers weighted by their share, and ``gap`` (seconds per layer pass)."""
    cfg = row_config(row, res.chosen)
    m = cfg.model
    windowed = sum(m.layer_window(i) is not None for i in range(m.num_layers)) / m.num_layers
    full = replace(cfg, model=replace(m, sliding_window=None, window_attn_skip_freq=None))
    out = dict.fromkeys(KINDS, 0.0)
    for c, share in ((cfg, windowed), (full, 1.0 - windowed)):
        if share == 0.0:
            continue
        pricer, sh = Pricer(c), shard_of(c)
        lf = layer_forward(c, sh, moe=True)
        lb = layer_recompute(c, sh, lf, whole=False) + backward_of(lf, sh)
        for op in lf + lb:
            if isinstance(op, Comm):
                if op.group == "ep":
                    out["xchg"] += share * pricer.comm_time(op)
                continue
            kind = ("expert_gemm" if op.name.removeprefix("recompute.").startswith("expert")
                    else "gemm") if isinstance(op, Gemm) else \
                "attn" if isinstance(op, Attention) else "mem"
            out[kind] += share * pricer.compute.explain(op)[0]
        for ops in (lf, lb):
            out["host"] += share * dict(pricer.price(ops).summary).get("host", 0.0)
    micro = cfg.training.global_batch_size // (cfg.training.micro_batch_size * cfg.dp)
    out["gap"] = (res.measured - res.predicted) / (micro * max(cfg.stage_layer_counts))
    return out


def main(argv: list[str]) -> None:
    show_parts = "--parts" in argv
    argv = [a for a in argv if a != "--parts"]
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
        if show_parts:
            k = layer_kinds(row, res)
            gap = k["gap"] * 1e3
            print(f"    ms a layer pass: gap {gap:.2f} | " +
                  " ".join(f"{n} {k[n] * 1e3:.2f}" for n in KINDS) + " | x: " +
                  " ".join(f"{n} {gap / (k[n] * 1e3):+.2f}" for n in KINDS if k[n] > 0))


if __name__ == "__main__":
    main(sys.argv[1:])
