"""Host work on Grace along the DeepSeek-V3 GB200 ladder, step by step (issue 17 scope 2; a
diagnostic, nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/host45_grace_ladder.py            # the tables (~2 min)
    PYTHONPATH=src python benchmarks/host45_grace_ladder.py --json     # the figures as JSON

``benchmarks/training_mcore_dsv3_gb200.csv`` (13 rungs of NVIDIA/Megatron-LM's
``deepseek-v3-gb200-optimization.md`` @ eb0783b6d3) is predicted too fast on every rung. host29
(``dsv3_gb200_host.py``) found the per-launch cost c* that each rung needs (72-129 us against
the fitted 30 us); blackwell35 (``blackwell_host.py``) scaled every host constant by a Grace
factor F. Printed here:

1. **Published host speeds, Grace against x86, by layer of the stack** (Python call, driver
   launch, a whole eager op, a Transformer Engine module), each with its source.
2. **What each measured step removed, per MoE layer pass** (the rung's gain spread over the
   busiest rank's 512 MoE layer passes) beside the launches the step removes (the guide's
   counts where it states them, trainsim's otherwise): the host cost per removed launch the
   step implies were its whole gain host time.
3. **trainsim's timeline per rung**: host and GPU time per MoE layer pass, and the factor on
   ``HOST_S_PER_KERNEL`` (30 us) at which the pass's launches alone would take as long as its GPU
   work (``F_bound``): below it the host hides behind the GPU except after the token-count sync.
4. **One per-launch cost on the ladder** (``HOST_S_PER_KERNEL`` set to each of ``GRID_US``):
   every rung's prediction, each rung's c* by interpolation, and for the four steps that change
   a column the predicted gain and the cost ``c_step`` at which trainsim's gain equals the
   measured one.
5. **The shared experts eager at rungs 6-9** (the run captured them only at rung 10, trainsim's
   0.16 profile does from rung 6 on): the rungs repriced with them out of the graphs.
6. **The router at the guide's counts** (``moe_block.MOE_KERNELS['router']``, trainsim (28, 12)
   top-k / loss launches beside the norm and the gating GEMM): 72 forward unfused (rungs 1-2),
   31 fused (rung 3), router + preprocess 17 with DeepEP (rung 4); the backward scaled with the
   forward (not stated). The router-fusion and DeepEP steps' predicted gains at each cost.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import dsv3_gb200_host as h29  # the ladder's rows, predictions and layer figures

from trainsim.compute import host
from trainsim.pricing import Pricer
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.graph_scope import layer_parts
from trainsim.workload.layers import layer_forward
from trainsim.workload.shard import shard_of

PASSES = h29.PASSES  # 512 MoE layer passes on the busiest pipeline rank
GRID_US = (0.0, 15.0, 30.0, 60.0, 82.5, 120.0, 160.0, 240.0)
"""Per-launch host costs tried: 30 the fitted x86 figure, 82.5 = 30 x 2.75 (TE#2053's Grace /
x86 ratio of a torch Linear forward's CPU time)."""
SHARED_EAGER_RUNGS = (6, 7, 8, 9)
CHILD_US = (0.0, 15.0, 30.0, 60.0, 82.5, 120.0)
"""Per-launch costs of the child-process what-ifs (sections 5 and 6)."""
ROUTER = {2: (70, 30), 3: (29, 12), 4: (15, 6)}
"""Top-k / loss launches (forward, backward) of the router at the guide's counts, per rung:
its router part less the norm and the gating GEMM (72 - 2, 31 - 2; with DeepEP router +
preprocess 17 - 2, trainsim's DeepEP preprocess being launch-free), the backward at
trainsim's 12 / 28 of the forward."""
"""Rungs after 'CUDA Graphs' (6) and before 'CUDA Graphs capture shared expert' (10)."""

PUBLISHED = [
    # (layer of the stack, what was timed, Grace us, x86 us or None, source)
    ("Python call", "direct f(*10), median per call", 0.0716, 0.0675,
     "pytorch/pytorch#187862 (zou3519, 2026-06-22): GB200 vs an H100 machine's host"),
    ("Python op wrapper", "torch OpOverload(*10), median per call", 0.1974, 0.1817,
     "pytorch/pytorch#187862 (same runs)"),
    ("driver launch", "cuLaunchKernel of a no-op Triton kernel, 0 / 19 args", 3.0, 3.0,
     ("meta-pytorch/tritonbench#1017 (2026-04-14) on GB200: 3.0 / 3.3 us; x86: trainsim's "
     "compute.roofline.LAUNCH_S 3 us")),
    ("whole eager op", "torch.nn.Linear bf16 forward, CPU time per call", 37.08, 13.48,
     ("NVIDIA/TransformerEngine#2053 (2025-08-11): GB200 37.08, GH200 33.17, H100 DGX (Xeon "
     "8480C) 13.48 us")),
    ("TE module", "te.Linear bf16 forward, CPU time per call", 99.66, None,
     ("NVIDIA/TransformerEngine#2053: GB200 99.66, GH200 90.53 us (x86 row not in the stored copy;"
     " TE#445's H100 NGC 23.08 te.Linear: 57.4 us)")),
]

# launches per MoE layer forward that a measured step removed, as the guide states them
GUIDE_REMOVED = {
    3: (72 - 31, "router part 72 -> 31 kernels (2.1.4, TE PR 1883); backward not counted"),
    4: (31 + 5 - 17, ("router 31 + trainsim's 5 all-to-all preprocess -> router + preprocess 17 "
        "(2.2.1)")),
}
GUIDE_SAYS = {
    2: "torch.zeros for MXFP8 scale allocation fused (2.1.2) + permute kernel (2.1.1): "
       "host and GPU, counts not stated",
    5: "up_proj recompute off: 'serious CPU overhead' (2.2.2)",
    6: "CUDA graphs attn, moe_router, moe_preprocess (2.3)",
    7: "DeepEP tuning: communication",
    8: "bindpcie NUMA binding: 'reduces per-GPU kernel launch latency' (2.4): host speed, "
       "no launch removed",
    9: "PDL for quantization kernels + fused swizzle (2.1.3): GPU gaps and kernels",
    10: "shared experts into the graphs",
    11: "HybridEP: communication + fused permute/pad (2.5)",
    12: "CPU-side optimization (TE host code)",
    13: "quantization fused into the norm (2.1.5)",
}


def rows() -> list[dict[str, str]]:
    return h29.rows()


def measured(row: dict[str, str]) -> float:
    return float(row["measured_iteration_s"])


def part_launches(row: dict[str, str]) -> dict[str, int]:
    """Host launches of one MoE layer forward by layer part (``graph_scope.layer_parts``),
    after the row's graph scopes; ``bwd`` the recompute and backward's total."""
    cfg = row_config(row, predict_training_row(row).chosen)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=True)
    _, order = pricer.price_ops(fwd)
    counts = pricer.scoped_counts(order) or [host.launches(o) for o in order]
    eager = [host.launches(o) for o in order]
    parts = layer_parts(fwd)
    out: dict[str, int] = {}
    for op, n, e in zip(order, counts, eager):
        part = parts.get(op.name, "other")
        out[part] = out.get(part, 0) + n
        out[part + "_eager"] = out.get(part + "_eager", 0) + e
    return out


def published_table() -> None:
    print("## 1. Published host speeds, Grace against x86\n")
    print("| layer | timed | Grace us | x86 us | Grace / x86 | source |")
    print("|---|---|---|---|---|---|")
    for layer, what, g, x, src in PUBLISHED:
        ratio = f"{g / x:.2f}" if x else "-"
        print(f"| {layer} | {what} | {g:g} | {x if x is not None else '-'} | {ratio} | {src} |")


def step_table(rs: list[dict[str, str]], figs: list[dict[str, float]]) -> list[dict]:
    """Each measured step's gain per MoE layer pass and the host cost per removed launch it
    implies were all of it host time (``figs``: ``h29.layer_figures`` per rung, plus the
    ``shared`` part's launches)."""
    print("\n## 2. What each measured step removed, per MoE layer pass (busiest rank, "
          f"{PASSES} passes)\n")
    print("| step | gain s | gain ms/pass | launches removed/pass | us per removed launch "
          "(all host) | the guide |")
    print("|---|---|---|---|---|---|")
    out = []
    for i in range(2, len(rs) + 1):
        gain = measured(rs[i - 2]) - measured(rs[i - 1])
        ms = gain / PASSES * 1e3
        a, b = figs[i - 2], figs[i - 1]
        if i in GUIDE_REMOVED:
            n, why = GUIDE_REMOVED[i]
            src = "guide, forward"
        elif i == 10:
            n, why = a["shared"], GUIDE_SAYS[i]
            src = "trainsim's shared-expert launches, forward"
        else:
            n = (a["fwd_launches"] + a["bwd_launches"]) - (b["fwd_launches"] + b["bwd_launches"])
            why, src = GUIDE_SAYS.get(i, ""), "trainsim, fwd+bwd"
        us = ms * 1e3 / n if n > 0 else float("nan")
        out.append({"step": i, "gain_s": gain, "gain_ms": ms, "removed": n, "us_per_launch": us})
        cell = f"{us:.0f}" if n > 0 else "-"
        print(f"| {i - 1} -> {i} | {gain:.3f} | {ms:.2f} | {n:.0f} ({src}) | {cell} | {why} |")
    return out


def timeline_table(rs: list[dict[str, str]], figs: list[dict[str, float]]) -> list[dict]:
    per = host.HOST_S_PER_KERNEL
    print(f"\n## 3. trainsim's timeline per rung (host at {per * 1e6:g} us a launch)\n")
    print("| rung | launches/pass | host ms/pass | GPU ms/pass | F_bound | host ms/pass at "
          "82.5 us | host-bound at 82.5 us |")
    print("|---|---|---|---|---|---|---|")
    out = []
    for i, f in enumerate(figs, 1):
        n = f["fwd_launches"] + f["bwd_launches"]
        gpu = (f["fwd_gpu_s"] + f["bwd_gpu_s"]) * 1e3
        hst = n * per * 1e3
        at = n * 82.5e-3
        out.append({"rung": i, "launches": n, "host_ms": hst, "gpu_ms": gpu, "f_bound": gpu / hst})
        print(f"| {i} | {n:.0f} | {hst:.1f} | {gpu:.1f} | {gpu / hst:.2f} | {at:.1f} | "
              f"{'yes' if at > gpu else 'no'} |")
    return out


def _cross(xs: list[float], ys: list[float], target: float) -> float:
    """The x where the piecewise-linear y(x) first reaches ``target`` (nan if it never does)."""
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if (y0 - target) * (y1 - target) <= 0 and y1 != y0:
            return x0 + (target - y0) * (x1 - x0) / (y1 - y0)
    return float("nan")


def grid_table(rs: list[dict[str, str]]) -> dict:
    print("\n## 4. One per-launch cost on the ladder: predicted s at each cost (us)\n")
    print("| rung | measured | " + " | ".join(f"{c:g}" for c in GRID_US) + " | c* us |")
    print("|---|---|" + "---|" * len(GRID_US) + "---|")
    pred = [[h29.predicted(r, c) for c in GRID_US] for r in rs]
    cstar = []
    for i, (r, p) in enumerate(zip(rs, pred), 1):
        c = _cross(list(GRID_US), p, measured(r))
        cstar.append(c)
        print(f"| {i} | {measured(r):.2f} | " + " | ".join(f"{x:.2f}" for x in p) +
              f" | {c:.0f} |")
    mape = [100 * sum(abs(p[j] / measured(r) - 1) for r, p in zip(rs, pred)) / len(rs)
            for j in range(len(GRID_US))]
    print("| MAPE % | | " + " | ".join(f"{m:.1f}" for m in mape) + " | |")
    print("\nColumn steps: predicted gain s at each cost; c_step = the cost at which it equals "
          "the measured gain\n")
    print("| step | measured gain | " + " | ".join(f"{c:g}" for c in GRID_US) + " | c_step us |")
    print("|---|---|" + "---|" * len(GRID_US) + "---|")
    steps = {}
    for a in (3, 4, 5, 10):  # 3->4 DeepEP, 4->5 recompute, 5->6 graphs, 10->11 HybridEP
        g = [pa - pb for pa, pb in zip(pred[a - 1], pred[a])]
        m = measured(rs[a - 1]) - measured(rs[a])
        c = _cross(list(GRID_US), g, m)
        steps[f"{a}->{a + 1}"] = {"measured": m, "predicted": g, "c_step": c}
        cell = f"{c:.0f}" if not math.isnan(c) else f"> {GRID_US[-1]:g}"
        print(f"| {a} -> {a + 1} | {m:+.2f} | " + " | ".join(f"{x:+.2f}" for x in g) +
              f" | {cell} |")
    return {"predicted": pred, "c_star": cstar, "mape": mape, "steps": steps}


def child(*args: str) -> dict[int, list[float]]:
    """A what-if priced in a child process (so no cache of this one holds the patch): rung ->
    predicted s at each of ``CHILD_US``."""
    import os

    import trainsim

    src = str(Path(trainsim.__file__).resolve().parents[1])  # this process's trainsim
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [src, *filter(None, [os.environ.get("PYTHONPATH")])]))
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True,
                         text=True, check=True, env=env)
    return {int(k): v for k, v in json.loads(out.stdout).items()}


def _child(what: str, rungs: list[int], router: list[int]) -> None:
    if what == "shared":
        import trainsim.workload.graph_scope as gs
        gs.shared_expert_overlap = lambda cfg: True  # 'shared' stays out of moe_router's graph
    elif what == "router":
        from trainsim.workload import moe_block
        moe_block.MOE_KERNELS["router"] = (router[0], router[1])
    rs = rows()
    print(json.dumps({i: [h29.predicted(rs[i - 1], c) for c in CHILD_US] for i in rungs}))


def router_table(rs: list[dict[str, str]]) -> dict:
    """Section 6: rungs 2, 3, 4 with the guide's router counts (``ROUTER``)."""
    got = {i: child("router", str(i), f"{a},{b}")[i] for i, (a, b) in ROUTER.items()}
    print("\n## 6. The router at the guide's counts: predicted s (trainsim's (28, 12) in "
          "brackets)\n")
    print("| rung | top-k/loss launches fwd, bwd | measured | " +
          " | ".join(f"{c:g} us" for c in CHILD_US) + " |")
    print("|---|---|---|" + "---|" * len(CHILD_US))
    base = {i: [h29.predicted(rs[i - 1], c) for c in CHILD_US] for i in ROUTER}
    for i, p in got.items():
        print(f"| {i} | {ROUTER[i][0]}, {ROUTER[i][1]} | {measured(rs[i - 1]):.2f} | " +
              " | ".join(f"{x:.2f} ({b:.2f})" for x, b in zip(p, base[i])) + " |")
    print("\n| step | measured gain | " + " | ".join(f"{c:g} us" for c in CHILD_US) +
          " | c_step us |")
    print("|---|---|" + "---|" * len(CHILD_US) + "---|")
    steps = {}
    for a, b in ((2, 3), (3, 4)):
        g = [x - y for x, y in zip(got[a], got[b])]
        m = measured(rs[a - 1]) - measured(rs[b - 1])
        c = _cross(list(CHILD_US), g, m)
        steps[f"{a}->{b}"] = {"measured": m, "predicted": g, "c_step": c}
        print(f"| {a} -> {b} | {m:+.2f} | " + " | ".join(f"{x:+.2f}" for x in g) +
              f" | {c:.0f} |")
    return {"predicted": got, "steps": steps}


def shared_table(rs: list[dict[str, str]], grid: dict, eager: dict[int, list[float]]) -> None:
    print("\n## 5. Rungs 6-9 with the shared experts eager (as the run had them): predicted s, "
          "eager (graphed)\n")
    print("| rung | measured | " + " | ".join(f"{c:g} us" for c in CHILD_US) + " |")
    print("|---|---|" + "---|" * len(CHILD_US))
    for i, p in eager.items():
        graphed = [grid["predicted"][i - 1][GRID_US.index(c)] for c in CHILD_US]
        print(f"| {i} | {measured(rs[i - 1]):.2f} | " +
              " | ".join(f"{e:.2f} ({g:.2f})" for e, g in zip(p, graphed)) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", nargs=3, metavar=("WHAT", "RUNGS", "ROUTER"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        what, rungs, router = args.child
        _child(what, [int(x) for x in rungs.split(",")], [int(x) for x in router.split(",")])
        return
    rs = rows()
    figs = []
    for r in rs:
        f = h29.layer_figures(r)
        f["shared"] = part_launches(r).get("shared_eager", 0)
        figs.append(f)
    published_table()
    steps = step_table(rs, figs)
    tl = timeline_table(rs, figs)
    grid = grid_table(rs)
    eager = child("shared", ",".join(map(str, SHARED_EAGER_RUNGS)), "0,0")
    shared_table(rs, grid, eager)
    router = router_table(rs)
    if args.json:
        print(json.dumps({"steps": steps, "timeline": tl, "grid": grid, "shared_eager": eager,
                              "router": router}, default=float))


if __name__ == "__main__":
    main()
