"""Issue 17 (the fp8 gain on Blackwell): where does trainsim's predicted fp8 / bf16 gain of the
GB200 twin rows come from, part by part, and how much of the fp8 rows' deficit is fp8's own?
(61st session, bwfp861; a diagnostic: nothing here feeds trainsim.)

    PYTHONPATH=src:benchmarks python benchmarks/bwfp861.py [--files dgxc2505 dgxc_llama4 ...]
                                                          [--gpu gb200] [--parts]

Twins: an fp8 row and the bf16 row whose id differs only in ``-fp8-`` / ``-bf16-`` (same
model, GPUs, layout and release; the bf16 row may add ``precision_aware_optimizer``: NeMo's
perf scripts turn it on for bf16 only). For each pair the table gives

* the measured and predicted gain (bf16 step / fp8 step) and both signed errors;
* the **carried** error: what the fp8 row's error would be if it missed exactly the seconds its
  bf16 twin misses (bf16 measured - predicted, over the fp8 step). A part of the step the two
  dtypes share (attention, norms, communication, host) that is priced short is short by the
  same seconds in both, which is a larger share of the shorter fp8 step: a flat deficit in
  points that is no fp8 mechanism;
* the **fp8-own** seconds: (fp8 measured - predicted) - (bf16 measured - predicted), the part
  no shared cost explains, and that as a share of the fp8 step;
* the step's parts (``Result.breakdown``) of both predictions.

``--parts`` adds one dense or MoE layer's forward + backward kernels priced alone on the row's
GPU (``layer_forward`` + ``backward_of``, the row's compute model; a kernel-time split, not the
critical path), by site: each GEMM (forward, dgrad, wgrad), the fp8 casts / transposes /
scaling updates, attention, the other memory-bound kernels; bf16 and fp8 microseconds and
their ratio. Only the GEMMs change rate between the dtypes; everything else is equal or
fp8's own extra.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections import defaultdict

from fp8pair60 import FP8_KERNELS, measured_rows, predict

DEFAULT = ["dgxc2505", "dgxc_llama4", "dgxc_grok1_2505", "dgxc_llama31_2505", "nemo_perf"]
STEP_PARTS = ("compute_s", "exposed_comm_s", "pipeline_bubble_s", "optimizer_s", "other_s")


def pairs(names: list[str], gpu: str | None) -> list[tuple[str, dict[str, str], dict[str, str]]]:
    """(file, bf16 row, fp8 row) for every fp8 row with a ``-bf16-`` twin id in the same file
    (on ``gpu`` when given)."""
    out = []
    for name in names:
        rows = {r["id"]: r for r in measured_rows(name)}
        for i, f in rows.items():
            b = rows.get(i.replace("-fp8-", "-bf16-"))
            if "-fp8-" not in i or b is None or f["dtype"] != "fp8" or b["dtype"] != "bf16":
                continue
            if gpu and f["gpu"] != gpu:
                continue
            out.append((name, b, f))
    return out


def carried(bf16_pred: float, bf16_meas: float, fp8_pred: float, fp8_meas: float,
            ) -> tuple[float, float]:
    """(the fp8 error in % if the fp8 row missed the bf16 row's seconds, the fp8-own seconds)."""
    miss_b = bf16_meas - bf16_pred
    own = (fp8_meas - fp8_pred) - miss_b
    return -100 * miss_b / fp8_meas, own


def breakdown(row: dict[str, str], chosen) -> dict[str, float]:
    from trainsim.simulator import simulate
    from trainsim.validate.training import row_config
    res = simulate(row_config(row, chosen))
    bd = res.breakdown if isinstance(res.breakdown, dict) else vars(res.breakdown)
    return {k: float(bd.get(k, 0.0)) for k in STEP_PARTS}


def site(op) -> str:
    """The part of the layer an op belongs to."""
    from trainsim.workload.ops import Attention, Elementwise, Gemm
    if isinstance(op, Gemm):
        return f"gemm {op.name}"
    if isinstance(op, Attention):
        return "attention"
    if isinstance(op, Elementwise) and op.kernel in FP8_KERNELS:
        return f"fp8 {op.kernel}"
    return "other memory-bound"


def layer_parts(row: dict[str, str], chosen) -> dict[str, float]:
    """Seconds of one layer's forward + backward kernels by ``site``, each priced alone."""
    from trainsim.pricing import Pricer
    from trainsim.validate.training import row_config
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.ops import Attention, Elementwise, Gemm
    from trainsim.workload.shard import shard_of
    cfg = row_config(row, chosen)
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    model = Pricer(cfg).compute
    out: dict[str, float] = defaultdict(float)
    for op in fwd + backward_of(fwd, sh):
        if isinstance(op, (Gemm, Attention, Elementwise)):
            out[site(op)] += model.time(op)
    return dict(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="*", default=DEFAULT)
    ap.add_argument("--gpu", default="gb200", help="only pairs on this GPU ('' for all)")
    ap.add_argument("--parts", action="store_true", help="the per-site layer split too")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    print("| fp8 row | GPU | meas. gain | pred. gain | bf16 err % | fp8 err % | carried % "
          "| fp8-own s | fp8-own % | bf16 parts (compute/comm/bubble/opt) s "
          "| fp8 parts s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    own_by: dict[str, list[float]] = defaultdict(list)  # by id stem and GPU
    split_rows = []
    for _name, b, f in pairs(args.files, args.gpu or None):
        rb, rf = predict(b), predict(f)
        if rb.predicted is None or rf.predicted is None:
            print(f"| {f['id']} | not simulated: {rb.error or rf.error} |")
            continue
        car, own = carried(rb.predicted, rb.measured, rf.predicted, rf.measured)
        pb, pf = breakdown(b, rb.chosen), breakdown(f, rf.chosen)
        parts_b = "/".join(f"{pb[k]:.3f}" for k in STEP_PARTS[:4])
        parts_f = "/".join(f"{pf[k]:.3f}" for k in STEP_PARTS[:4])
        print(f"| {f['id']} | {f['gpu']} | {rb.measured / rf.measured:.3f} "
              f"| {rb.predicted / rf.predicted:.3f} "
              f"| {100 * (rb.predicted / rb.measured - 1):+.1f} "
              f"| {100 * (rf.predicted / rf.measured - 1):+.1f} | {car:+.1f} | {own:+.3f} "
              f"| {100 * own / rf.measured:+.1f} | {parts_b} | {parts_f} |")
        own_by[f"{f['id'].split('-fp8-')[0]} ({f['gpu']})"].append(100 * own / rf.measured)
        if args.parts:
            split_rows.append((f["id"], layer_parts(b, rb.chosen), layer_parts(f, rf.chosen)))
    print("\n| rows (GPU) | pairs | mean fp8-own % of the fp8 step |")
    print("|---|---:|---:|")
    for model, v in sorted(own_by.items()):
        print(f"| {model} | {len(v)} | {sum(v) / len(v):+.1f} |")
    for rid, sb, sf in split_rows:
        print(f"\n{rid}: one layer's kernels, forward + backward, each priced alone (us)")
        print("| site | bf16 | fp8 | bf16 / fp8 |")
        print("|---|---:|---:|---:|")
        for k in sorted(set(sb) | set(sf)):
            x, y = sb.get(k, 0.0), sf.get(k, 0.0)
            ratio = f"{x / y:.3f}" if x and y else "-"
            print(f"| {k} | {1e6 * x:.1f} | {1e6 * y:.1f} | {ratio} |")
        tb, tf = sum(sb.values()), sum(sf.values())
        print(f"| total | {1e6 * tb:.1f} | {1e6 * tf:.1f} | {tb / tf:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
