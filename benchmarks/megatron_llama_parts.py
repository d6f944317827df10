"""Where Alibaba's Megatron-LLaMA rows (benchmarks/training_megatron_llama.csv) miss, in parts
(issue 17 item 2, mllama57; a diagnostic: nothing here feeds trainsim).

    PYTHONPATH=src:benchmarks python benchmarks/megatron_llama_parts.py

Per row as validated: micro-batches per data-parallel rank (m); measured and predicted step; one
micro-batch's kernels priced alone by kind (``flagperf_parts.kinds``: GEMMs, attention, other
memory-bound kernels, TP collectives at their network time); the simulated timeline's data-
parallel stream: its reduce-scatters, bucket copies and parameter all-gathers (seconds of
work, one rank), and how much they stretched the compute stream (their SMs,
``pricing.COMM_SMS``); the breakdown's compute and exposed communication.

Then, per scale, what the three optimizers' measurements say together if one micro-batch
costs the same ``c`` under all three and the gradient reduce-scatter ``R`` (the fp32 buffer:
the all-gather of the bf16 parameters is R / 2 by bytes) is the only difference: Megatron's
DistributedOptimizer exposes R + R / 2, the first OverlappedDistributedOptimizer R / 2 (its
reductions hidden), e3d671a's nothing. Two equations give c and R from the DO and first-ODO
rows; e3d671a's row then checks them (m c against its measured step). The same algebra on the
predictions shows which part the tool misses.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from flagperf_parts import kinds
from layer_prices import chosen_config

from trainsim.simulator import simulate

FILE = str(Path(__file__).resolve().parent / "training_megatron_llama.csv")
ROW = "mllama2309-llama-13b-a100-{gpus}-{opt}"
OPTS = ("do", "odo2309", "odo")


def parts(row_id: str) -> dict[str, float]:
    """The row's priced parts (seconds)."""
    res, cfg = chosen_config([row_id, FILE])
    m = cfg.training.global_batch_size // (cfg.training.micro_batch_size * cfg.dp)
    out = {"m": m, "measured": res.measured, "predicted": res.predicted,
           **{f"mb_{k}": v for k, v in kinds(cfg).items()}}
    result = simulate(cfg, keep_timeline=True)
    tl = result.timeline
    for key in ("reduce_scatter", "bucket copy", "all-gather"):
        out[key] = sum(t.duration_s for t in tl.tasks
                       if t.stream[1] == "dp" and key in t.label)
    out["stretch"] = sum(tl.stretch_s(i) for i, t in enumerate(tl.tasks)
                         if t.stream[1] == "compute")
    out["compute_s"] = result.breakdown["compute_s"]
    out["exposed_comm_s"] = result.breakdown["exposed_comm_s"]
    return out


def solve(do: float, odo2309: float, m: int) -> tuple[float, float]:
    """(c, R) from DO = m c + 3 R / 2 and first ODO = m c + R / 2."""
    r = do - odo2309
    return (odo2309 - r / 2) / m, r


def main() -> int:
    print("| row | m | measured s | predicted s | error | 1 mb: GEMM / attn / other / TP ms "
          "| DP stream: RS / copies / AG s | compute stretch s | exposed comm s |")
    print("|---|---:|---:|---:|---:|---|---|---:|---:|")
    got = {}
    for gpus in (32, 256, 512):
        for opt in ("odo2309",) if gpus == 32 else OPTS:
            rid = ROW.format(gpus=gpus, opt=opt)
            p = got[rid] = parts(rid)
            print(f"| {gpus}-{opt} | {p['m']} | {p['measured']:.3f} | {p['predicted']:.3f} "
                  f"| {100 * (p['predicted'] / p['measured'] - 1):+.1f} % "
                  f"| {p['mb_gemm'] * 1e3:.0f} / {p['mb_attn'] * 1e3:.0f} / "
                  f"{p['mb_other'] * 1e3:.0f} / {p['mb_comm'] * 1e3:.0f} "
                  f"| {p['reduce_scatter']:.2f} / {p['bucket copy']:.2f} / {p['all-gather']:.2f} "
                  f"| {p['stretch']:.2f} | {p['exposed_comm_s']:.2f} |")
    print()
    print("| scale | from | c: one micro-batch s | R: grad reduce-scatter s | e3d671a row: m c "
          "against its step |")
    print("|---|---|---:|---:|---|")
    for gpus in (256, 512):
        rows = [got[ROW.format(gpus=gpus, opt=o)] for o in OPTS]
        m = rows[0]["m"]
        for what in ("measured", "predicted"):
            c, r = solve(rows[0][what], rows[1][what], m)
            print(f"| {gpus} | {what} | {c:.3f} | {r:.3f} | {m * c:.3f} against "
                  f"{rows[2][what]:.3f} |")
    c32 = got[ROW.format(gpus=32, opt="odo2309")]
    print(f"\n32 GPUs (first ODO, m {c32['m']}): measured {c32['measured'] / c32['m']:.3f} s "
          f"a micro-batch (step / m, its reductions and gather included), predicted "
          f"{c32['predicted'] / c32['m']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
