"""Issue 16, acceptance 2: do the runs that ran fit, and does the tuner choose the recipes'
recompute where a row leaves it empty?

    python benchmarks/memory_fit.py ../shared/validation/training_public.csv
    trainsim validate FILE.csv --format json > rows.json && \
        python benchmarks/memory_fit.py FILE.csv --json rows.json     # reuse a validate run

For every row whose recompute and micro-batch cells are stated (the settings ran as written;
the tuner fills only the other empty cells), whether the predicted peak that must fit in HBM
(allocated + CUDA context + NCCL, the figure the tuner tests) fits the GPU's memory; the GiB
column is that peak, or the figure of the row's ``memory_kind`` where it has one. For rows
whose recompute cell is empty, the recompute setting the tuner chose, against the framework
recipes named in the issue (NeMo 24.07 and Megatron-Bridge fp8: none; DeepSeek-V3 in Bridge:
``mla_up_proj``).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys

GiB = 2**30


def _rows_from_json(path: str) -> dict[str, dict]:
    with open(path) as f:
        return {r["id"]: r for r in json.load(f)["rows"]}


def _predict(rows: list[dict[str, str]]) -> dict[str, dict]:
    from trainsim.validate import predict_training_row

    return {r["id"]: predict_training_row(r).to_dict() for r in rows}


BRIDGE_DSV3_RECIPES = {
    # (gpu, pp, vpp, ep): recompute_modules
    ("gb200", 4, 4, 64): "selective:mlp",
    ("b200-sxm-180gb", 16, 1, 8): "selective:mla_up_proj",
    ("b200-sxm-180gb", 8, 2, 32): "selective:mla_up_proj;mlp",
}
"""DeepSeek-V3's ``recompute_modules`` in Megatron-Bridge's fp8 performance configs, by the
parallel layout that identifies the recipe (scripts/performance/configs/deepseek/
deepseek_workload_base_configs.py): GB200 pp 4, vpp 4, ep 64 ``["mlp"]`` (v0.4.0 and branch
r0.4.0 ``DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_V1``; Megatron-core applies ``mlp`` to the dense
layers only: transformer_layer.py sets ``recompute_mlp`` when ``not self.is_moe_layer``);
B200 pp 16, ep 8 ``["mla_up_proj"]`` (tag v0.4.0, the 26.04 container's table) and pp 8, vpp 2,
ep 32 ``["mla_up_proj", "mlp"]`` (branch r0.4.0 @ 2026-05-28 ``B200_FP8_MX_V2``, with DeepEP,
``moe_a2a_overlap=True``, layout ``Et*4|(t*4|)*14tmL`` and TE CUDA graphs: the 26.04.01
container's table). Other layouts: ``mla_up_proj`` (every release since v0.2.0). Why the tuner
picks less on GB200 and B200 pp 8: benchmarks/dsv3_recipe_memory.py (``mlp`` recomputes the
three dense layers of stage 0 only; RESULTS.md 2026-11-24, 15th session, DeepSeek-V3 recipes)."""


def _recipe_recompute(row: dict[str, str]) -> str | None:
    """The recompute the issue's named recipes use for an empty cell, else None: NeMo 24.07's
    performance recipes set none; Megatron-Bridge's fp8 performance configs set none, except
    for the multi-head-latent-attention models (DeepSeek-V3, ``BRIDGE_DSV3_RECIPES``)
    (Megatron-Bridge scripts/performance configs ``cfg.model.recompute_modules``)."""
    from trainsim.catalog import model_dict, names

    fw, version = row.get("framework", ""), row.get("framework_version", "")
    if fw == "nemo" and version.startswith("24.07"):
        return "none"
    if fw == "megatron-bridge" and row.get("dtype") == "fp8":
        preset = model_dict(row["model"]) if row["model"] in names("models") else {}
        if not preset.get("kv_lora_rank"):
            return "none"
        key = (row["gpu"], int(row["pp"] or 1), int(row.get("vpp") or 1), int(row["ep"] or 1))
        return BRIDGE_DSV3_RECIPES.get(key, "selective:mla_up_proj")
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--json", help="rows of `trainsim validate FILE --format json`")
    args = ap.parse_args(argv)
    from trainsim.catalog import gpu

    with open(args.csv) as f:
        rows = list(csv.DictReader(f))
    got = _rows_from_json(args.json) if args.json else _predict(rows)
    stated = fit = 0
    recipe = match = 0
    print("| row | GPU | stated | predicted GiB | HBM GiB | fits | tuner's recompute | recipe's |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        r = got[row["id"]]
        if r.get("error"):
            print(f"| {row['id']} | {row['gpu']} | | error: {r['error']} | | | | |")
            continue
        is_stated = bool(row.get("recompute", "").strip() and row.get("micro_batch_size", "").strip())
        hbm = gpu(row["gpu"]).hbm_bytes / GiB
        peak = r["predicted_peak_memory_gib"]  # as the row's memory_kind says, if it has one
        chosen = (r.get("chosen") or {}).get("recompute", "")
        want = _recipe_recompute(row) if not row.get("recompute", "").strip() else None
        if is_stated:
            stated += 1
            fit += bool(r["fits_in_memory"])
        if want is not None:
            recipe += 1
            match += chosen == want
        if is_stated or want is not None:
            flag = "" if (r["fits_in_memory"] and (want is None or chosen == want)) else " **"
            print(f"| {row['id']}{flag} | {row['gpu']} | {'yes' if is_stated else 'no'} | "
                  f"{peak:.1f} | {hbm:.1f} | {r['fits_in_memory']} | {chosen or '(stated)'} | "
                  f"{want or ''} |")
    print(f"\nrows with stated recompute and micro-batch predicted to fit: {fit} / {stated}")
    print(f"empty recompute cells where the tuner chose the recipes' setting: {match} / {recipe}")
    return 0 if fit == stated and match == recipe else 1


if __name__ == "__main__":
    sys.exit(main())
