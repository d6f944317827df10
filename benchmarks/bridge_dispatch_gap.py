"""The Megatron-Bridge MoE rows whose dispatcher cell is empty: what the tuner's choice saves
over the recipe's, part by part, and whether each saving is priced from a measurement
(a diagnostic: nothing here feeds trainsim; issue 17 scope 4, 34th session).

    python benchmarks/bridge_dispatch_gap.py          # ~1 min on 2 busy cores

For every public Megatron-Bridge row with expert parallelism and an empty ``moe_dispatcher``
the row is priced three ways: as written (the tuner fills the dispatcher and the options), with
the recipe's dispatcher (``benchmarks/training_errata.csv``'s ``moe_dispatcher`` for the row)
and the options still tuned, and with every recipe cell the errata give. For the first two, one
MoE layer's forward and backward is taken apart as ``benchmarks/moe_parts.py`` does (``perm``:
permute / unpermute and the flex backends' own staging; ``xchg``: the expert-parallel
collectives at their network time; ``quant``: the experts' fp8 pad / unpad and casts; ``host``:
the launch time the layer is charged), and the difference in each part, times the heaviest
stage's layer passes a step, is the step time it accounts for. ``xchg MB`` is what one
dispatch sends: the flex backends (DeepEP, HybridEP) send a token once per destination rank
inside an NVLink domain and once per remote domain, Megatron-core's all-to-all dispatcher once
per routed expert (it permutes before the exchange).
"""

from __future__ import annotations

import csv
import sys
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import moe_parts

from trainsim.pricing import Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import read_errata
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Comm
from trainsim.workload.shard import shard_of

HERE = Path(__file__).resolve().parent
PUBLIC = BUNDLED_DIR / "training_public.csv"
ERRATA = HERE / "training_errata.csv"
PARTS = ("router", "perm", "xchg", "gemm", "quant", "host")


def candidates() -> list[tuple[dict[str, str], dict[str, str]]]:
    """(public row, its errata cells) for each Bridge row with EP > 1 and an empty dispatcher
    cell whose recipe dispatcher the errata name."""
    fixes: dict[str, dict[str, str]] = {}
    for (rid, field), fix in read_errata(ERRATA).items():
        fixes.setdefault(rid, {})[field] = fix["corrected_value"]
    with open(PUBLIC, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [(r, fixes[r["id"]]) for r in rows
            if r["framework"] == "megatron-bridge" and int(r["ep"] or 1) > 1
            and not r["moe_dispatcher"] and "moe_dispatcher" in fixes.get(r["id"], {})]


def dispatch_mb(row: dict[str, str]) -> float:
    """MB one micro-batch's dispatch all-to-all sends from a rank (the row's tuned settings)."""
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    sh = shard_of(cfg)
    layer = next(i for i in reversed(range(cfg.model.num_layers)) if cfg.model.is_moe_layer(i))
    ops = layer_forward(cfg, sh, moe=cfg.model.is_moe_layer(layer))
    Pricer(cfg)  # the config is priceable
    return sum(op.bytes for op in ops if isinstance(op, Comm) and op.group == "ep"
               and op.kind == "all_to_all" and "dispatch" in op.name and "probs" not in op.name
               ) / 1e6


def variants(job: tuple[dict[str, str], dict[str, str]]) -> dict[str, object]:
    row, fix = job
    tuned = row
    recipe_disp = {**row, "moe_dispatcher": fix["moe_dispatcher"]}
    recipe = {**row, **fix}
    out: dict[str, object] = {"id": row["id"], "recipe": fix["moe_dispatcher"],
                              "recipe_options": fix.get("options", row["options"])}
    for name, r in (("tuned", tuned), ("recipe_disp", recipe_disp)):
        got = moe_parts.parts(r)
        if got is None:
            continue
        res = predict_training_row(r)
        got["dispatcher"] = (res.chosen.get("moe_token_dispatcher_type")
                             or r["moe_dispatcher"] or "?")
        got["mb"] = dispatch_mb(r)
        out[name] = got
    res = predict_training_row(recipe)
    out["recipe_err"] = 100.0 * (res.predicted / res.measured - 1.0) if not res.error else None
    return out


def main() -> int:
    with Pool(2) as pool:
        got = pool.map(variants, candidates())
    for g in got:
        t, r = g.get("tuned"), g.get("recipe_disp")
        if not isinstance(t, dict) or not isinstance(r, dict):
            print(f"{g['id']}: not priced")
            continue
        passes = int(t["passes"])
        print(f"\n{g['id']} (measured {t['measured']:.3f} s, {passes} MoE layer passes a step "
              f"on the heaviest stage)")
        print(f"  {'variant':34s} {'err %':>6s} {'layer':>6s} " +
              " ".join(f"{p:>6s}" for p in PARTS) + f" {'xchgMB':>7s}   (ms a layer pass)")
        for label, v in ((f"as written: {t['dispatcher']} (tuned)", t),
                         (f"recipe dispatcher: {r['dispatcher']}", r)):
            err = 100.0 * (float(v["predicted"]) / float(v["measured"]) - 1.0)
            print(f"  {label:34s} {err:+6.1f} {1e3 * float(v['layer']):6.2f} " +
                  " ".join(f"{1e3 * float(v[p]):6.2f}" for p in PARTS) +
                  f" {float(v['mb']):7.1f}")
        step = float(r["predicted"]) - float(t["predicted"])
        by_part = {p: (float(r[p]) - float(t[p])) * passes for p in PARTS}
        layer = (float(r["layer"]) - float(t["layer"])) * passes
        print(f"  recipe dispatcher - tuned: step {step:+.3f} s; the layer as charged "
              f"{layer:+.3f} s, of which (each part alone) " +
              ", ".join(f"{p} {by_part[p]:+.3f}" for p in PARTS))
        if g["recipe_err"] is not None:
            print(f"  every recipe cell (errata applied: dispatcher {g['recipe']}, options "
                  f"{g['recipe_options']}): {float(g['recipe_err']):+.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
