"""One validated row's predicted step, part by part: compute, the exposed communication of each
process group (expert all-to-all, tensor, pipeline, data, context), the pipeline bubble, the
optimizer and the host, each also per micro-batch; as written and, for a public row that
``benchmarks/training_errata.csv`` corrects, with the recipe's cells (a diagnostic: nothing here
feeds trainsim; issue 17 item 2, 35th session).

    python benchmarks/step_parts.py                      # the rows below
    python benchmarks/step_parts.py ROW_ID [TRAINING.csv] ...

The default rows are the Megatron-Bridge Qwen3-235B-A22B workload on 256 H100 (TP 2, PP 8,
VP 4, EP 32, FP8 current scaling; NeMo 25.11 at GBS 2048 and 26.04.01 at GBS 8192, the same
recipe but for the batch) and its Megatron-Core twins of the MoE Model Zoo (the same layout in
bf16 with DeepEP, the combined 1F1B off and on, measured 19.7 and 17.6 s), and the two Llama
3.1 405B rows on 1,024 H100 (NeMo 25.11 at GBS 512, 26.04.01 at GBS 1536). Their public cells
leave the dispatcher and the overlaps to the tuner; the recipe's are the errata's. A part
compared across the variants of one row says where the as-written prediction and the recipe's
part ways; across the GBS pair, which parts grow with the micro-batches (per micro-batch
columns) and which stay (the warm-up and cool-down, the bubble, the optimizer).
"""

from __future__ import annotations

import csv
import sys
import tempfile
from pathlib import Path
from typing import Any

from trainsim.simulator import simulate
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import corrected_file
from trainsim.validate.training import predict_training_row, row_config

HERE = Path(__file__).resolve().parent
PUBLIC = str(BUNDLED_DIR / "training_public.csv")
ZOO = str(HERE / "training_moe_modelzoo.csv")
DEFAULT = (("bridge2511-qwen3-235b-a22b-h100-256-gbs2048", PUBLIC),
           ("bridge2604p1-qwen3-235b-a22b-h100-256-gbs8192", PUBLIC),
           ("mzoo2505-qwen3-235b-a22b-h100-256-tp2pp8vpp4ep32", ZOO),
           ("mzoo2505-qwen3-235b-a22b-h100-256-tp2pp8vpp4ep32-ep-overlap", ZOO),
           ("bridge2511-llama3.1-405b-1024", PUBLIC),
           ("bridge2604p1-llama3.1-405b-h100-1024-gbs1536", PUBLIC))
GROUPS = ("ep", "tp", "pp", "dp", "cp")


def read(row_id: str, path: str, recipe: bool) -> dict[str, str] | None:
    """Row ``row_id`` of ``path``, with the errata applied when ``recipe`` (None where the
    errata leave the row as written: no recipe variant to show)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = path
        if recipe:
            try:
                src, _ = corrected_file(path, str(HERE / "training_errata.csv"), tmp)
            except Exception:  # noqa: BLE001 - the errata name no row of this file
                return None
        with open(src, newline="") as fh:
            row = next((r for r in csv.DictReader(fh) if r["id"] == row_id), None)
    if row is None or not recipe:
        return row
    plain = read(row_id, path, False)
    return row if row != plain else None


def parts(row: dict[str, str]) -> dict[str, Any]:
    """The row's step by part (seconds a step), its micro-batches per rank and its settings."""
    res = predict_training_row(row)
    if res.error:
        return {"error": res.error}
    cfg = row_config(row, res.chosen)
    out = simulate(cfg)
    b, t, p = out.breakdown, cfg.training, cfg.parallel
    got: dict[str, Any] = {
        "measured": res.measured, "predicted": out.iteration_time_s,
        "m": t.global_batch_size // (t.micro_batch_size * cfg.dp),
        "compute": b["compute_s"], "bubble": b["pipeline_bubble_s"],
        "optimizer": b["optimizer_s"], "host": b["other_s"],
        "exposed": b["exposed_comm_s"],
        "setting": (f"{p.moe_token_dispatcher_type if cfg.model.is_moe else '-'}"
                    f"{' +ep_ovl' if p.moe_overlap_ep_comm and cfg.model.is_moe else ''}"
                    f"{' +tp_ovl' if p.tp_comm_overlap else ''}")}
    for g in GROUPS:
        got[g] = out.exposed_comm.get(g, 0.0)
    return got


def main(argv: list[str]) -> int:
    jobs = [(argv[0], argv[1] if len(argv) > 1 else PUBLIC)] if argv else list(DEFAULT)
    print("| row | cells | settings | measured s | predicted s | err % | m | compute | "
          + " | ".join(f"x{g}" for g in GROUPS) + " | bubble | optim | host | "
          "per mb: compute + xep ms |")
    print("|---|---|---|---|---|---|---|---|" + "---|" * len(GROUPS) + "---|---|---|---|")
    for row_id, path in jobs:
        for label, recipe in (("as written", False), ("recipe", True)):
            row = read(row_id, path, recipe)
            if row is None:
                if not recipe:
                    print(f"| {row_id} | not in {Path(path).name} |")
                continue
            g = parts(row)
            if "error" in g:
                print(f"| {row_id} | {label} | {g['error']} |")
                continue
            err = 100.0 * (g["predicted"] / g["measured"] - 1.0) if g["measured"] else 0.0
            per_mb = 1e3 * (g["compute"] + g["ep"]) / g["m"]
            print(f"| {row_id} | {label} | {g['setting']} | {g['measured']:.3f} | "
                  f"{g['predicted']:.3f} | {err:+.1f} | {g['m']} | {g['compute']:.3f} | "
                  + " | ".join(f"{g[k]:.3f}" for k in GROUPS)
                  + f" | {g['bubble']:.3f} | {g['optimizer']:.3f} | {g['host']:.3f} | "
                  f"{per_mb:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
