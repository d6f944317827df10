"""Megatron-Bridge's MoE performance presets, tag by tag: where each turns the expert all-to-all
overlap on, and whether any rule a framework profile could state reproduces that.

    python benchmarks/bridge_moe_recipes.py [TAG ...]   # default: v0.2.0 v0.4.2

Reads ``scripts/performance/configs/*/*workload_base_configs.py`` of NVIDIA-NeMo/Megatron-Bridge
from the repository mirror (``$TRAINSIM_MIRRORS``, default /work/.mirror) with ``ast`` (nothing of
the mirror is run): every ``WorkloadBaseConfig(...)`` preset, ``replace(BASE, ...)`` resolved and
aliases followed, with ``expert_model_parallel_size`` > 1. For each it prints the system (from the
preset's name), GPUs, TP / PP / VP / EP, the flex backend the preset names and
``moe_a2a_overlap`` (scripts/performance/utils/overrides.py ``_set_moe_a2a_overlap_overrides``:
``comm_overlap.overlap_moe_expert_parallel_comm``). Then three structural rules, each checked on
every preset: the overlap is on (1) where the expert-parallel group leaves the NVLink domain
(8 GPUs a board, 72 a GB200/GB300/VR200 rack), (2) where the pipeline interleaves, (3) where the
group leaves the domain and the preset does not name HybridEP. A rule that held on every preset
could be a profile default (``moe_recipe_options``) for MoE rows that state no options; the
counts and counter-examples say none does, so the overlap stays a per-workload choice (the public
row bridge2604p1-deepseek-v3-b200-256 keeps it as an erratum, benchmarks/training_errata.csv).
The flex backend a preset leaves unset comes from its *_llm_pretrain.py or model recipe (not
resolved here: rule 3 reads only what the preset names). Nothing here feeds trainsim.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = "NVIDIA-NeMo+Megatron-Bridge"
RACKS = ("GB200", "GB300", "VR200")


def mirror() -> Path:
    return Path(os.environ.get("TRAINSIM_MIRRORS", "/work/.mirror")) / REPO / "repo"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout


def presets(source: str) -> dict[str, dict[str, Any]]:
    """Every preset a workload_base_configs module defines, as its keyword values."""
    out: dict[str, dict[str, Any]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if isinstance(value, ast.Name) and value.id in out:  # an alias
            out[name] = dict(out[value.id])
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            if value.func.id == "WorkloadBaseConfig":
                base: dict[str, Any] = {}
            elif value.func.id == "replace" and value.args and \
                    isinstance(value.args[0], ast.Name) and value.args[0].id in out:
                base = dict(out[value.args[0].id])
            else:
                continue
            for kw in value.keywords:
                try:
                    base[kw.arg] = ast.literal_eval(kw.value)
                except ValueError:
                    base[kw.arg] = ast.unparse(kw.value)
            out[name] = base
    return out


def moe_presets(tag: str, repo: Path | None = None) -> list[dict[str, Any]]:
    """The expert-parallel presets of ``tag``, one dict each (``name``, ``system`` and the
    preset's fields with WorkloadBaseConfig's defaults: tp, pp, ep 1, vp None, overlap False)."""
    repo = repo or mirror()
    files = [f for f in _git(repo, "ls-tree", "-r", "--name-only", tag,
                             "scripts/performance/configs").split()
             if f.endswith("workload_base_configs.py")]
    rows = []
    for f in files:
        for name, p in presets(_git(repo, "show", f"{tag}:{f}")).items():
            ep = int(p.get("expert_model_parallel_size") or 1)
            if ep <= 1 or name.startswith(("BASE_", "_")):
                continue
            system = next((s for s in ("GB300", "GB200", "VR200", "B300", "B200", "H100")
                           if f"_{s}_" in f"{name}_"), "?")
            rows.append({"tag": tag, "name": name, "system": system,
                         "gpus": int(p.get("num_gpus") or 1),
                         "tp": int(p.get("tensor_model_parallel_size") or 1),
                         "pp": int(p.get("pipeline_model_parallel_size") or 1),
                         "vp": p.get("virtual_pipeline_model_parallel_size"), "ep": ep,
                         "flex": p.get("moe_flex_dispatcher_backend"),
                         "overlap": bool(p.get("moe_a2a_overlap") or False)})
    return rows


def leaves_domain(r: dict[str, Any]) -> bool:
    """The expert-parallel group (consecutive ranks, expert TP 1) spans more than one NVLink
    domain."""
    return r["ep"] > (72 if r["system"] in RACKS else 8)


RULES = {
    "EP group leaves the NVLink domain": leaves_domain,
    "pipeline interleaves": lambda r: r["pp"] > 1 and (r["vp"] or 1) > 1,
    "EP leaves the domain, not HybridEP": lambda r: leaves_domain(r) and r["flex"] != "hybridep",
}


def main(argv: list[str]) -> int:
    tags = argv or ["v0.2.0", "v0.4.2"]
    if not mirror().is_dir():
        print(f"no Megatron-Bridge mirror at {mirror()}")
        return 1
    for tag in tags:
        rows = moe_presets(tag)
        print(f"\n## {tag}: {len(rows)} MoE presets, {sum(r['overlap'] for r in rows)} with "
              "moe_a2a_overlap\n")
        print("| preset | GPUs | TP | PP | VP | EP | flex backend | a2a overlap |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
        for r in rows:
            print(f"| {r['name']} | {r['gpus']} | {r['tp']} | {r['pp']} | {r['vp'] or ''} | "
                  f"{r['ep']} | {r['flex'] or ''} | {'yes' if r['overlap'] else 'no'} |")
        print()
        for label, rule in RULES.items():
            wrong = [r["name"] for r in rows if rule(r) != r["overlap"]]
            print(f"- rule '{label}': right on {len(rows) - len(wrong)} of {len(rows)}; "
                  f"wrong on e.g. {', '.join(wrong[:4]) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
