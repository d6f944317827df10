"""The fp8 MoE rows' predicted gain over bf16, part by part (a diagnostic: nothing here feeds
trainsim; issue 17 items 1 and 4, 55th session).

    PYTHONPATH=src:benchmarks python benchmarks/fp8moe55_parts.py [--file F ...] [--ops]

For every fp8 MoE row of the named check files (default: the dgxc Llama 4, Grok-1 and
Grok-1 25.05 files), the row as written and its bf16 twin (the same cells with ``dtype`` bf16,
no recipe) are predicted; one MoE decoder layer's forward and backward ops (the row's tuned
settings) are priced alone and summed by part:

* ``xgemm``: the routed experts' GEMMs (forward, dgrad, wgrad);
* ``xquant``: the experts' casts, transposes, pads, scale updates;
* ``gemm``: every other GEMM (attention projections, shared experts, router);
* ``quant``: every other cast / transpose / scale update / amax reduction;
* ``attn``: the attention kernels;
* ``elem``: every other memory-bound kernel;
* ``comm``: the layer's collectives at their network time (overlapped or not).

``ratio`` is the predicted (and, where the file has the bf16 twin as a row of its own,
measured) fp8 step over the bf16 step. With ``--ops`` the layer's fp8 ops of the experts are
listed with their price in both dtypes.
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
FILES = [str(HERE / f"training_{n}.csv") for n in ("dgxc_llama4", "dgxc_grok1", "dgxc_grok1_2505")]
PARTS = ("xgemm", "xquant", "gemm", "quant", "attn", "elem", "comm")
QUANT = ("cast_transpose", "fp8_cast", "fp8_transpose", "fp8_scale_update", "mxfp8_swizzle",
         "amax", "fp8_pad", "fp8_unpad", "fp8_store_cast")


def part_of(op: Op) -> str:
    """The part of a decoder layer an op belongs to."""
    name = op.name.removeprefix("recompute.")
    expert = name.startswith(("expert_", "moe_fc")) or "fp8_pad" in name
    if isinstance(op, Comm):
        return "quant" if "amax" in name else "comm"
    if isinstance(op, Gemm):
        return "xgemm" if expert else "gemm"
    if any(q in name for q in QUANT):
        return "xquant" if expert else "quant"
    if isinstance(op, Attention):
        return "attn"
    return "elem"


def _op_s(pricer: Pricer, op: Op) -> float:
    return pricer.comm_time(op) if isinstance(op, Comm) else pricer.compute.explain(op)[0]


def layer_parts(row: dict[str, str], show_ops: bool = False) -> tuple[dict[str, float], object]:
    """One row's MoE layer (forward + backward, seconds) by part, and its prediction."""
    res = predict_training_row(row)
    if res.error:
        raise SystemExit(f"{row['id']}: {res.error}")
    cfg = row_config(row, res.chosen)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    layer = next(i for i in reversed(range(cfg.model.num_layers)) if cfg.model.is_moe_layer(i))
    lf = layer_forward(cfg, sh, moe=True) if cfg.model.is_moe_layer(layer) else []
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    out = dict.fromkeys(PARTS, 0.0)
    for op in lf + lb:
        s = _op_s(pricer, op)
        out[part_of(op)] += s
        if show_ops and (part_of(op) in ("xgemm", "xquant") or "fp8" in op.name):
            desc = f"m{op.m} n{op.n} k{op.k} b{op.batch} {op.grouped}" if isinstance(op, Gemm) \
                else ""
            print(f"    {op.name:40s} {1e3 * s:8.3f} ms  {desc}")
    return out, res


def twin(row: dict[str, str]) -> dict[str, str]:
    """The bf16 twin of an fp8 row: the same cells, bf16, no recipe."""
    return {**row, "dtype": "bf16", "fp8_recipe": "", "id": row["id"] + "-bf16twin"}


def measured_twin(rows: list[dict[str, str]], row: dict[str, str]) -> float | None:
    """The measured step of the file's bf16 row on the same GPUs and layout, if any."""
    keys = ("model", "gpu", "num_gpus", "tp", "pp", "ep", "vpp", "global_batch_size")
    for r in rows:
        if r["dtype"] == "bf16" and all(r[k] == row[k] for k in keys) \
                and r.get("framework_version") == row.get("framework_version"):
            return float(r["measured_iteration_s"])
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", action="append", help="training CSV (repeatable)")
    ap.add_argument("--ops", action="store_true", help="list the experts' ops")
    args = ap.parse_args()
    print(f"{'row':46s} {'meas':>6s} {'pred':>6s} {'m.ratio':>7s} {'p.ratio':>7s}  "
          + " ".join(f"{p:>13s}" for p in PARTS))
    for path in args.file or FILES:
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        for row in rows:
            if row["dtype"] != "fp8":
                continue
            if args.ops:
                print(row["id"])
            f8, r8 = layer_parts(row, args.ops)
            if args.ops:
                print("  bf16 twin")
            b16, r16 = layer_parts(twin(row), args.ops)
            meas_b = measured_twin(rows, row)
            m_ratio = f"{r8.measured / meas_b:7.3f}" if meas_b else f"{'-':>7s}"
            cells = " ".join(f"{1e3 * f8[p]:6.2f}/{1e3 * b16[p]:6.2f}" for p in PARTS)
            print(f"{row['id'][:46]:46s} {r8.measured:6.2f} {r8.predicted:6.2f} {m_ratio} "
                  f"{r8.predicted / r16.predicted:7.3f}  {cells}")
    print("cells: fp8 / bf16 twin, ms per MoE layer forward + backward")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
