"""Issue 16, acceptance 2, the two DeepSeek-V3 misses of ``memory_fit.py``: each pipeline stage's
predicted peak (the figure the tuner tests against HBM) for DeepSeek-V3's Megatron-Bridge rows
run with the settings their recipe states beyond the row (layout, token dispatcher, expert
all-to-all overlap), for each recompute set the recipes use.

    python benchmarks/dsv3_recipe_memory.py ../shared/validation/training_public.csv

Megatron-core's ``mlp`` recompute module checkpoints the dense MLPs only (core_v0.17.0
megatron/core/transformer/transformer_layer.py: ``recompute_mlp`` is set when ``not
self.is_moe_layer``), and DeepSeek-V3's three dense layers all sit in the first virtual stage of
these layouts: adding ``mlp`` lowers stage 0's peak and no other stage's. It can change whether a
run fits only where stage 0 is the binding stage.
"""

from __future__ import annotations

import argparse
import csv
import sys

GiB = 2**30

BRIDGE_LAYOUT = "Et*4|(t*4|)*14tmL"
"""Megatron-Bridge's DeepSeek-V3 layout for (pp, vpp) = (4, 4) and (8, 2) (src/megatron/bridge/
recipes/deepseek/deepseek_v3.py ``set_deepseek_v3_pipeline_model_parallel_layout``, branch
llmb-r0.4.1 @ 06f25c227): the embedding and four layers first, one layer, the MTP layer and the
loss last; B200_FP8_MX_V2 writes the same string as ``pp_layout``."""

RECIPE_GRAPHS = "attn;moe_router;moe_preprocess"
"""Both recipes' ``cuda_graph_impl="transformer_engine"``, ``cuda_graph_scope`` (the row's
``cuda_graphs`` option and ``cuda_graph_scope`` column): their partial graphs keep the shared
experts' output and the routing probabilities until the layer's backward
(``trainsim.memory.graph_outputs``)."""

RECIPE_SETTINGS = {
    # (gpu, pp, vpp, ep): row cells and tuner choices the recipe states; its recompute modules
    ("gb200", 4, 4, 64): ({"pipeline_layout": BRIDGE_LAYOUT, "options": "cuda_graphs",
                           "cuda_graph_scope": RECIPE_GRAPHS},
                          {"moe_token_dispatcher_type": "hybridep"}, "selective:mlp"),
    ("b200-sxm-180gb", 8, 2, 32): ({"pipeline_layout": BRIDGE_LAYOUT,
                                    "options": "ep_overlap;cuda_graphs",
                                    "cuda_graph_scope": RECIPE_GRAPHS},
                                   {"moe_token_dispatcher_type": "deepep"},
                                   "selective:mla_up_proj;mlp"),
}
"""scripts/performance/configs/deepseek/deepseek_workload_base_configs.py (branches r0.4.0 @
3743c703d and llmb-r0.4.1 @ 06f25c227, the same DeepSeek-V3 blocks): GB200_V2 (FP8_MX) pp 4,
vpp 4, ep 64, ``moe_flex_dispatcher_backend="hybridep"``, ``moe_a2a_overlap=False``,
``recompute_modules=["mlp"]``; B200_FP8_MX_V2 pp 8, vpp 2, ep 32, ``"deepep"``,
``moe_a2a_overlap=True``, ``recompute_modules=["mla_up_proj", "mlp"]``. Both also set TE CUDA
graphs (scope attn, moe_router, moe_preprocess): ``RECIPE_GRAPHS``."""

RECIPE_OPTIMIZER = {"use_precision_aware_optimizer": True, "exp_avg_dtype": "bf16",
                    "exp_avg_sq_dtype": "bf16"}
"""The optimizer every Bridge DeepSeek-V3 recipe states and no row cell carries:
src/megatron/bridge/recipes/deepseek/deepseek_v3.py @ v0.4.2 (the 26.04 rows' tag),
``deepseek_v3_pretrain_config`` lines 161-165: ``use_precision_aware_optimizer = True``,
``main_params_dtype = torch.float32``, ``main_grads_dtype``, ``exp_avg_dtype`` and
``exp_avg_sq_dtype = torch.bfloat16``. The performance scripts keep it (scripts/performance/
utils/overrides.py @ v0.4.2 turns it off only under Megatron-FSDP, line 97, and on for bf16 runs,
line 471). Megatron-core then keeps Adam's moments in bf16 (optimizer_config.py; TE FusedAdam):
4 (fp32 master) + 2 + 2 bytes per parameter in place of 12, and in bf16 runs 2 + 2 + 2: the
master copy is kept as its 16-bit remainder (``store_param_remainders``), which trainsim's
``memory.state._optimizer_bytes`` and ``_master_bytes`` price from these TrainingConfig fields."""

SETS = ("none", "selective:mlp", "selective:mla_up_proj", "selective:mla_up_proj;mlp",
        "selective:layernorm;moe_act")


def stage_peaks(row: dict[str, str], cells: dict[str, str], choice: dict[str, str],
                recompute: str, optimizer: dict[str, object] | None = None) -> list[float]:
    """Each stage's predicted peak in GiB with ``cells`` written into the row and the other empty
    cells set as the tuner sets them when every candidate fits (distributed optimizer, no
    sequence parallelism at tp 1); ``optimizer``: TrainingConfig fields set on top (the
    recipe's optimizer precision, which no row cell carries)."""
    import dataclasses

    from trainsim.memo import stage_memory
    from trainsim.validate.training import row_config

    chosen = {"distributed_optimizer": True, "sequence_parallel": False,
              "recompute": recompute, **choice}
    cfg = row_config({**row, **cells}, chosen, compute_db=None)
    if optimizer:
        cfg = dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, **optimizer))
    return [stage_memory(cfg, s).total / GiB for s in range(cfg.parallel.pp)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    args = ap.parse_args(argv)
    from trainsim.catalog import gpu

    with open(args.csv) as f:
        rows = [r for r in csv.DictReader(f) if r.get("framework") == "megatron-bridge"]
    print("| row | dtype | recompute | HBM GiB | peak by stage (GiB), fp32 moments | fits | "
          "peak by stage (GiB), the recipe's precision-aware optimizer | binding | fits |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        key = (row["gpu"], int(row["pp"] or 1), int(row.get("vpp") or 1), int(row["ep"] or 1))
        if key not in RECIPE_SETTINGS or row.get("recompute", "").strip():
            continue
        cells, choice, recipe = RECIPE_SETTINGS[key]
        hbm = gpu(row["gpu"]).hbm_bytes / GiB
        # the recipe's own dtype, and bf16: Bridge's GB200 BF16 recipe went back from ``mlp`` to
        # ``mla_up_proj`` "for OOM" (commit 06f667d74, "restore bf16 mapping for OOM (3067)")
        for dtype in ("fp8", "bf16"):
            extra = {} if dtype == row["dtype"] else {"dtype": dtype, "fp8_recipe": ""}
            for rec in SETS:
                fp32 = stage_peaks(row, {**cells, **extra}, choice, rec)
                peaks = stage_peaks(row, {**cells, **extra}, choice, rec, RECIPE_OPTIMIZER)
                top = max(range(len(peaks)), key=peaks.__getitem__)
                mark = " (recipe)" if rec == recipe and not extra else ""
                print(f"| {row['id']} | {dtype} | {rec}{mark} | {hbm:.1f} | "
                      f"{' '.join(f'{p:.1f}' for p in fp32)} | {max(fp32) <= hbm} | "
                      f"{' '.join(f'{p:.1f}' for p in peaks)} | {top} | {peaks[top] <= hbm} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
