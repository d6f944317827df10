"""How many fp32 issue slots an accumulator element of a 1x128-by-1x128 fp8 GEMM costs per
128-deep k block (``compute.roofline.PROMOTION_OPS["outer"]``), read from two independent sets
of kernel timings (41st session, wgrad41).

    PYTHONPATH=src:benchmarks python benchmarks/wgrad41_promotion.py [--format json]

The count in src is derived from the kernels' source (an FMUL, an FFMA and a quarter of a
shared-memory request an element: 3; ``PROMOTION_OPS``' docstring). This script checks it and,
as a control, fits ONE count to each set with the other held out:

- **H200** (cuBLASLt through ``torch._scaled_mm``, 132 SMs; benchmarks/h200_2026-11-27_s40 and
  _s41): the nine 1x128-by-1x128 weight-gradient rows of ``kernels_h200_dsv3_measured.csv``,
  priced by the kernels validator as any row (fitted on); the block-over-per-tensor rate ratio
  of run 1 / run 2's same nine GEMMs, run 5's k sweep (1,024-32,768) and the 41st session's
  ``wgrad_mn`` (12 output shapes at k 8,192), each set's median against the model's (checks).
- **DeepSeek** (DeepGEMM's ``fp8_dptp128c_acc`` on an H800, deepseek-ai/profile-data@4496024
  ``train.json``, read by ``wgrad39_parts.py``; 112 CTAs, the SMs DeepEP leaves): the W GEMMs
  that run on one stream, the five MLA projections and the shared expert's fc1 and fc2, four
  MoE layers each, against trainsim's own W ops of that layer (``wgrad39_parts``' config)
  priced by the roofline on an H800 cut to 112 SMs (peaks x 112/132, waves over 112).

The fit of a set is the count at which its mean log(measured / predicted time) is zero
(bisection; the time rises monotonically with the count); on the H200 twice: on the nine rows'
times, and on the pooled block-over-tensor ratios (log(model / measured ratio)), which cancel
what the model gets wrong about the per-tensor kernel itself.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import statistics
from pathlib import Path

import trainsim.validate.kernels as vk
from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import roofline
from trainsim.config import GPUSpec
from trainsim.workload.ops import Gemm

HERE = Path(__file__).resolve().parent
DSV3_ROWS = HERE / "kernels_h200_dsv3_measured.csv"
S40 = HERE / "h200_2026-11-27_s40"
S41 = HERE / "h200_2026-11-27_s41"
TRACE_KEPT = HERE / "wgrad39_parts.json"
ONE_STREAM = ("out_proj", "kv_up_proj", "q_up_proj", "kv_down_proj", "q_down_proj",
              "shared_fc1", "shared_fc2")
TRACE_SMS = 112
DERIVED = 3  # FMUL + FFMA + one shared-memory request per 4 elements a thread (= 1 slot)


def set_count(ops: float) -> None:
    """Price ``outer`` GEMMs at ``ops`` slots an element (the validator's models cached per
    GPU are dropped so they read it)."""
    roofline.PROMOTION_OPS["outer"] = ops
    vk._model.cache_clear()


def h200_rows() -> list[dict[str, str]]:
    with open(DSV3_ROWS, newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["id"].endswith("-wgrad-fp8-block")]


def h200_log_errors(rows: list[dict[str, str]]) -> list[float]:
    """log(measured / predicted time) of each row (rates: predicted / measured)."""
    out = []
    for r in rows:
        res = vk.predict_kernel_row(r)
        out.append(math.log(res.predicted / res.measured))  # rates: measured / predicted time
    return out


def ratio_sets() -> dict[str, list[tuple[int, int, int, float]]]:
    """(m, n, k, measured block-over-tensor rate) of the weight-gradient (1x128 by 1x128)
    pairs of each H200 run."""
    sets: dict[str, list[tuple[int, int, int, float]]] = {}
    for name, path, section in (("s40 run 5 k sweep", S40 / "run5_device_checks40.json",
                                 "block_k_sweep"),
                                ("s41 wgrad_mn", S41 / "run1_device_checks41.json", "wgrad_mn")):
        ratios = json.loads(path.read_text())["sections"][section]["ratios"]
        pts = []
        for key, v in ratios.items():
            m, n, k, op = key.split("-")
            if op == "wgrad":
                pts.append((int(m[1:]), int(n[1:]), int(k[1:]), v["block_rate_of_tensor"]))
        sets[name] = pts
    rows = h200_rows()
    for run in ("run1", "run2"):
        rates = json.loads((S40 / f"{run}_device_checks40.json").read_text())
        rates = rates["sections"]["dsv3_gemms"]["rates"]
        pts = []
        for r in rows:
            name = r["id"].removeprefix("dc40-h200-dsv3-").removesuffix("-wgrad-fp8-block")
            block = rates.get(f"{name}/wgrad/fp8-block/sm132")
            tensor = rates.get(f"{name}/wgrad/fp8-tensor/sm132")
            if block and tensor:
                pts.append((int(r["m"]), int(r["n"]), int(r["k"]), tensor["us"] / block["us"]))
        sets[f"s40 {run.replace('run', 'run ')} DSv3 linears"] = pts
    return sets


def model_ratio(m: int, n: int, k: int) -> float:
    """The roofline's block-over-tensor rate of an (m, n, k) weight gradient on the H200 (both
    at one clock: a ratio, so the clock and the per-tensor kernel's own error cancel)."""
    h200 = catalog_gpu("h200-sxm-141gb")
    model = roofline.RooflineModel(h200)
    fast = Gemm("g", m, n, k, "fp8", fp8_fast_accum=True)
    outer = dataclasses.replace(fast, fp8_fast_accum=False, fp8_block_scales="outer")
    return model.time(fast) / model.time(outer)


def trace_ops() -> tuple[dict[str, Gemm], GPUSpec]:
    """trainsim's W GEMM of each one-stream family, one MoE layer (wgrad39_parts' config), and
    its GPU."""
    from dualpipe39_profile import CONFIG, DUALPIPE

    import trainsim
    from trainsim.pipeline import is_weight_grad
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.recompute import layer_recompute
    from trainsim.workload.shard import shard_of

    cfg = trainsim.load_run_config(CONFIG, DUALPIPE)
    sh = shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=True)
    lb = layer_recompute(cfg, sh, lf) + backward_of(lf, sh)
    ops = {op.name.removesuffix(".wgrad"): op for op in lb
           if is_weight_grad(op) and isinstance(op, Gemm)}
    return {name: ops[name] for name in ONE_STREAM}, cfg.cluster.gpu


def trace_log_errors(ops: dict[str, Gemm], gpu: GPUSpec, measured: dict,
                     layers: int) -> list[float]:
    """log(measured / predicted) of each family's four kernels on ``TRACE_SMS`` SMs."""
    scale = TRACE_SMS / gpu.num_sms
    cut = dataclasses.replace(gpu, num_sms=TRACE_SMS,
                              peak_flops={k: v * scale for k, v in gpu.peak_flops.items()})
    model = roofline.RooflineModel(cut)
    return [math.log(measured[name] / (layers * model.time(op))) for name, op in ops.items()]


def fit(errors_at, lo: float = 1.0, hi: float = 6.0) -> float:
    """The count at which the mean log error is zero (bisection)."""
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if statistics.mean(errors_at(mid)) > 0.0:  # measured slower than priced: more slots
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--format", choices=("table", "json"), default="table")
    args = ap.parse_args()
    saved = roofline.PROMOTION_OPS["outer"]
    rows = h200_rows()
    kept = json.loads(TRACE_KEPT.read_text())
    ops, h800 = trace_ops()

    def h200_at(c: float) -> list[float]:
        set_count(c)
        return h200_log_errors(rows)

    def trace_at(c: float) -> list[float]:
        set_count(c)
        return trace_log_errors(ops, h800, kept["wgrad_s"], kept["moe_layers"])

    sets = ratio_sets()
    pooled = [p for pts in sets.values() for p in pts]

    def ratios_at(c: float) -> list[float]:  # log(model / measured block-over-tensor rate)
        set_count(c)
        return [math.log(model_ratio(m, n, k) / r) for m, n, k, r in pooled]

    fits = {"h200": fit(h200_at), "h200_ratios": fit(ratios_at), "deepseek": fit(trace_at)}
    counts = {"40th session (FMUL + FFMA)": 2.0, "derived (+ B-scale loads)": float(DERIVED),
              "fitted on H200 rows": fits["h200"], "fitted on H200 ratios": fits["h200_ratios"],
              "fitted on DeepSeek's trace": fits["deepseek"]}
    table = []
    for label, c in counts.items():
        h = h200_at(c)
        t = trace_at(c)
        ratios = {name: statistics.median(model_ratio(m, n, k) for m, n, k, _ in pts)
                  for name, pts in sets.items()}
        table.append({"count": label, "value": round(c, 3),
                      "h200_mape": statistics.mean(abs(math.expm1(e)) for e in h),
                      "h200_signed_rate": statistics.mean(math.expm1(e) for e in h),
                      "trace_measured_over_priced": math.exp(statistics.mean(t)),
                      "trace_sum_ratio": sum(kept["wgrad_s"][n] for n in ONE_STREAM)
                      / sum(kept["wgrad_s"][n] / math.exp(e) for n, e in zip(ONE_STREAM, t)),
                      "model_median_ratio": ratios})
    set_count(saved)
    measured = {name: statistics.median(r for *_, r in pts) for name, pts in sets.items()}
    if args.format == "json":
        print(json.dumps({"fits": fits, "rows": table, "measured_median_ratio": measured},
                         indent=1))
        return
    print("| count | slots | H200 9 wgrad rows MAPE (signed rate) | DeepSeek 7 W families "
          "measured / priced (geo mean; sum) | model median block/tensor: "
          + " / ".join(sets) + " |")
    print("| --- | --- | --- | --- | --- |")
    print("| measured | - | - | - | " + " / ".join(f"{v:.3f}" for v in measured.values()) + " |")
    for r in table:
        print(f"| {r['count']} | {r['value']:.2f} | {100 * r['h200_mape']:.2f} % "
              f"({100 * r['h200_signed_rate']:+.2f} %) | {r['trace_measured_over_priced']:.3f}; "
              f"{r['trace_sum_ratio']:.3f} | "
              + " / ".join(f"{v:.3f}" for v in r["model_median_ratio"].values()) + " |")
    print(f"fits: H200 rows {fits['h200']:.2f}, H200 block/tensor ratios ({len(pooled)} pairs) "
          f"{fits['h200_ratios']:.2f} (DeepSeek held out); DeepSeek's trace {fits['deepseek']:.2f} "
          f"(H200 held out); derived {DERIVED}")


if __name__ == "__main__":
    main()
