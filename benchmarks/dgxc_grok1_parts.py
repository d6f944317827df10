"""Where Grok-1's H100 step goes, part by part, in the two stacks that ran one layout (a diagnostic:
nothing here feeds trainsim; issue 17 item 2, 57th session).

    PYTHONPATH=src:benchmarks python benchmarks/dgxc_grok1_parts.py [--rows ID ...] [--etp1]

NeMo 24.09 / 24.12 (training_dgxc_grok1.csv) and NeMo 25.04 (training_dgxc_grok1_2505.csv) ran
Grok-1 on 512 H100 with TP 4, PP 8, CP 2, EP 8, VP 8, GBS 1,024, and differ in the expert
tensor parallelism (24.09 / 24.12: the experts split over the TP group, expert TP 4; 25.04's
launch.sh ``ET=1``), the attention kernel (flash-attn 2 under ``NVTE_FUSED_ATTN=0``; cuDNN) and
the Megatron-core around them. For each row (default: the 512-GPU rows of both files, both
dtypes) this prints the step's predicted parts (``Result.breakdown``) and one MoE decoder
layer's forward + backward ops, priced alone and summed by part:

* ``attn``: the attention kernels and CP's ring steps around them;
* ``gemm``: the attention projections and the router; ``xgemm``: the experts' GEMMs;
* ``quant``: every fp8 cast / transpose / scale update; ``elem``: every other memory-bound op;
* ``tp`` / ``cp``: the sequence-parallel gathers and reduce-scatters, the ring's KV exchange;
* ``ep``: the dispatcher's all-to-alls and its count all-gather; ``etp``: its all-gather and
  reduce-scatter of the exchanged tokens over the expert-TP group.

``x pass`` is a part's seconds in the step: ms per layer pass x the layer passes a rank runs
(layers per pipeline rank x micro-batches). ``--etp1`` adds each 24.09 / 24.12 row as data54 read
it (expert TP 1, EP inside one node) to show what the expert-TP cell moves. ``--ladder`` walks
the NeMo 24.12 row to the NeMo 25.04 row of the same layout one differing cell at a time (expert
TP, attention, framework version, options), each dtype, and prints the prediction at each rung.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from trainsim.pricing import Pricer
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Comm, Gemm, Op
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

HERE = Path(__file__).parent
FILES = (HERE / "training_dgxc_grok1.csv", HERE / "training_dgxc_grok1_2505.csv")
ROWS = ("dgxc2411-grok1-314b-bf16-h100-512", "dgxc2411-grok1-314b-fp8-h100-512",
        "dgxc2502-grok1-314b-bf16-h100-512", "dgxc2502-grok1-314b-fp8-h100-512",
        "dgxc2505-grok1-314b-bf16-h100-512", "dgxc2505-grok1-314b-fp8-h100-512")
PARTS = ("attn", "gemm", "xgemm", "quant", "elem", "tp", "cp", "ep", "etp")
QUANT = ("cast_transpose", "fp8_cast", "fp8_transpose", "fp8_scale_update", "amax", "fp8_pad",
         "fp8_unpad")
STEP = ("compute_s", "exposed_comm_s", "pipeline_bubble_s", "other_s", "optimizer_s")


def part_of(op: Op) -> str:
    """The part of a decoder layer an op belongs to."""
    name = op.name.removeprefix("recompute.")
    if isinstance(op, Comm):
        if "amax" in name:
            return "quant"
        return op.group if op.group in ("tp", "cp", "ep", "etp") else "tp"
    if any(q in name for q in QUANT):
        return "quant"
    if isinstance(op, Gemm):
        return "xgemm" if name.startswith(("expert_", "moe_fc")) else "gemm"
    if isinstance(op, Attention) or name.startswith("attn_core"):
        return "attn"
    return "elem"


def moe_layer_pass(row: dict[str, str]):
    """One row's prediction, its config, a pricer of it and one MoE layer pass's ops as a rank
    runs them (forward, the recompute it chose, backward)."""
    res = predict_training_row(row)
    if res.error:
        raise SystemExit(f"{row['id']}: {res.error}")
    cfg = row_config(row, res.chosen)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=True)
    return res, cfg, pricer, lf + layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)


def layer_parts(row: dict[str, str]) -> tuple[dict[str, float], object, int]:
    """One row's MoE layer (forward + backward, seconds) by part, its prediction, and the
    layer passes one rank runs in a step."""
    res, cfg, pricer, ops = moe_layer_pass(row)
    out = dict.fromkeys(PARTS, 0.0)
    for op in ops:
        s = pricer.comm_time(op) if isinstance(op, Comm) else pricer.compute.explain(op)[0]
        out[part_of(op)] += s
    p = cfg.parallel
    passes = cfg.model.num_layers // p.pp * cfg.training.global_batch_size // (
        cfg.training.micro_batch_size * cfg.dp)
    return out, res, passes


LADDER = ("etp", "attention", "framework_version", "options")
"""The cells in which training_dgxc_grok1.csv's v25.02 512-GPU rows differ from
training_dgxc_grok1_2505.csv's H100 rows (besides the measurement), in the order walked; the
25.04 rows leave attention empty: Transformer Engine's choice, cuDNN on Hopper from NeMo 24.09
(the nemo profile), so the empty cell reads as cuDNN at 24.12 too."""


def ladder(rows: dict[str, dict[str, str]]) -> None:
    """Print the 24.12 row's prediction as each ``LADDER`` cell takes its 25.04 value."""
    for dtype in ("bf16", "fp8"):
        old = rows[f"dgxc2502-grok1-314b-{dtype}-h100-512"]
        new = rows[f"dgxc2505-grok1-314b-{dtype}-h100-512"]
        row = dict(old)
        print(f"{dtype}: 24.12 measured {old['measured_iteration_s']} s, 25.04 measured "
              f"{new['measured_iteration_s']} s")
        print(f"  {'24.12 row as written':44s} {predict_training_row(row).predicted:6.2f}")
        for col in LADDER:
            if row[col] == new[col]:
                continue
            row[col] = new[col]
            res = predict_training_row(row)
            print(f"  {'+ ' + col + ' ' + (new[col] or '(empty)'):44s} {res.predicted:6.2f}"
                  f"  {res.extra['settings']['attention'] if col == 'attention' else ''}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="+", default=list(ROWS), help="row ids")
    ap.add_argument("--etp1", action="store_true", help="add the expert-TP-1 reading of each "
                    "24.09 / 24.12 row")
    ap.add_argument("--ladder", action="store_true", help="walk the 24.12 row to the 25.04 one")
    args = ap.parse_args()
    rows = {}
    for path in FILES:
        with open(path, newline="") as fh:
            rows.update({r["id"]: r for r in csv.DictReader(fh)})
    if args.ladder:
        ladder(rows)
        return 0
    todo = []
    for rid in args.rows:
        todo.append((rid, rows[rid]))
        if args.etp1 and rows[rid].get("etp") not in ("", "1", None) and "2505" not in rid:
            todo.append((rid + " etp1", {**rows[rid], "etp": "1"}))
    print(f"{'row':40s} {'meas':>6s} {'pred':>6s} {'err%':>6s}  "
          + " ".join(f"{s[:-2][:8]:>8s}" for s in STEP) + "  passes")
    parts = {}
    for rid, row in todo:
        parts[rid] = out, res, passes = layer_parts(row)
        print(f"{rid:40s} {res.measured:6.2f} {res.predicted:6.2f} "
              f"{100 * (res.predicted / res.measured - 1):+6.1f}  "
              + " ".join(f"{res.extra['breakdown'][s]:8.2f}" for s in STEP) + f"  {passes:6d}")
    print(f"\none MoE layer, forward + backward, ms by part (x passes: s in the step)\n{'row':40s} "
          + " ".join(f"{p:>6s}" for p in PARTS) + f" {'sum':>6s} {'x pass':>7s}")
    for rid, (out, _res, passes) in parts.items():
        total = sum(out.values())
        print(f"{rid:40s} " + " ".join(f"{1e3 * out[p]:6.2f}" for p in PARTS)
              + f" {1e3 * total:6.2f} {total * passes:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
