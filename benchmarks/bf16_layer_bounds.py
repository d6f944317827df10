"""The search's lower bounds against the simulated iteration where layers run in 16 bits under
an fp8 run: layers kept in bf16 (``training.num_layers_at_*_in_bf16``) and a full recompute that
drops fp8 (llm-foundry). Prints, per case, the range of bound / simulated iteration over the
candidates (a lower bound must stay at or below 1).

    PYTHONPATH=src python benchmarks/bf16_layer_bounds.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from trainsim.search import SearchSpace, evaluate
from trainsim.search.cli import build_base
from trainsim.search.evaluation import Bounds

SMALL = {"name": "small-dense", "hidden_size": 512, "num_layers": 8, "num_attention_heads": 8,
         "num_kv_heads": 8, "vocab_size": 32000, "activation": "swiglu",
         "position_embedding": "rope", "normalization": "rmsnorm", "tied_embeddings": False,
         "add_bias_linear": False}
CASES = {
    "megatron-lm fp8 current, 3+3 of 8 layers bf16": (
        ("training.framework=megatron-lm", "training.fp8_recipe=current",
         "training.num_layers_at_start_in_bf16=3", "training.num_layers_at_end_in_bf16=3"),
        SearchSpace(recompute=("none", "full"), max_micro_batch=2, tp=(1, 2), pp=(1, 2),
                    schedules=("", "zb_h1"), overlap="off")),
    "llm-foundry fp8, full recompute (drops fp8)": (
        ("training.framework=llm-foundry",),
        SearchSpace(recompute=("full",), max_micro_batch=2, overlap="off")),
}


def main() -> None:
    path = Path(tempfile.mkdtemp()) / "small.json"
    path.write_text(json.dumps({"model": SMALL}))
    print("| case | candidates | refined / simulated | scheduled / simulated |")
    print("|---|---|---|---|")
    for name, (sets, space) in CASES.items():
        base = build_base(str(path), "h100-sxm-80gb", 8, 64, 1024, 8, 400.0, "fp8", sets)
        bounds = Bounds(base)
        ref, sch = [], []
        for key in space.memory_keys(base, 8):
            for c in space.variants(key):
                t = evaluate(c, base).iteration_time_s
                ref.append(bounds.refined(c) / t)
                sch.append(bounds.scheduled(c) / t)
        print(f"| {name} | {len(ref)} | {min(ref):.3f}-{max(ref):.3f} | "
              f"{min(sch):.3f}-{max(sch):.3f} |")


if __name__ == "__main__":
    main()
