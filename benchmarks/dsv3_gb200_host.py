"""Host time along the DeepSeek-V3 GB200 optimization ladder (issue 17 scope 2; a diagnostic,
nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/dsv3_gb200_host.py            # the tables (~1 min)
    PYTHONPATH=src python benchmarks/dsv3_gb200_host.py --check    # the guide's figures vs mirror

``benchmarks/training_mcore_dsv3_gb200.csv`` holds the 13 steps of NVIDIA/Megatron-LM's
``deepseek-v3-gb200-optimization.md`` @ eb0783b6d3 (494 -> 970 TFLOPS per GPU); every row is
predicted too fast, most where the guide says the run was host-bound (section 2: "the CPU kernel
launch speed cannot keep up"). Printed:

1. **The ladder.** Per step: what the guide changed, which row cells change, the measured and
   predicted step and the gap; per MoE layer pass (a micro-batch's forward, recompute and
   backward of one MoE layer on the busiest pipeline rank): the launches trainsim's host issues
   (after the row's CUDA-graph scopes, ``compute.host.scoped_launches``), the host time they
   cost at ``HOST_S_PER_KERNEL`` and the GPU time trainsim prices; the exposed host wait per
   step (prediction minus the prediction with no host cost); the measured gap spread over the
   rank's MoE layer passes; and ``c*``, the cost per launch with which trainsim's prediction
   equals the measurement (bisection over ``HOST_S_PER_KERNEL``): the host time per launch the
   row implies if trainsim's launch counts were right.
2. **The steps that are columns**: measured against predicted gain.
3. **The guide's kernel counts** (section 2.1.4: router part 72 -> 31 kernels with router
   fusion; 2.2.1: router and preprocess 17 with DeepEP) beside trainsim's forward counts of the
   layer parts ``moe_router`` / ``moe_preprocess`` / the token-count sync (``moe_dtoh``).
4. **A Grace host**: every GB200 / GB300 row of the public, held-out and check files priced with
   one larger ``HOST_S_PER_KERNEL`` (TransformerEngine#2053 measured a bf16 ``torch.nn.Linear``
   forward's CPU time at 37.1 us on GB200 and 13.5 us on an H100 DGX, Xeon 8480C: 2.75x): the
   ladder against the other Grace-hosted rows.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import subprocess
import sys
from pathlib import Path

from trainsim.compute import host
from trainsim.pricing import HOST, Pricer
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.graph_scope import layer_parts
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

HERE = Path(__file__).resolve().parent
FILE = HERE / "training_mcore_dsv3_gb200.csv"
SHARED = HERE.parents[1] / "shared" / "validation" / "training_public.csv"
PUBLIC = SHARED if SHARED.exists() else (  # the bundled copy (the same file), as fit_host.py
    HERE.parent / "src" / "trainsim" / "data" / "validation" / "training_public.csv")
GRACE_FILES = [PUBLIC, *sorted(HERE.glob("training_*.csv"))]
GRACE_GPUS = ("gb200", "gb300", "gh200")
GRACE_US = (30.0, 45.0, 60.0, 100.0)

sys.path.insert(0, str(HERE))
import dsv3_gb200_ladder_rows as ladder  # the step table and the doc's location

MOE_LAYERS_PER_RANK = 8
"""MoE layers on the busiest pipeline rank: layout ``Et|(tt|)*30L`` is 32 virtual stages, rank r
holds stages r, r+8, r+16, r+24; ranks 2-6 hold four 2-layer stages of MoE layers (rank 0 holds 7
layers, rank 1 two dense layers 1-2 among its 8, rank 7 six and the loss)."""
MICRO_BATCHES = 2048 // (256 // 8)  # GBS / (DP 32 x MBS 1): 64 per rank
PASSES = MOE_LAYERS_PER_RANK * MICRO_BATCHES
CELLS = ("moe_dispatcher", "recompute_modules", "cuda_graph_scope")

# the guide's own figures (section, text in the doc @ eb0783b6d3 that --check finds)
GUIDE = {
    "router kernels unfused -> fused (2.1.4)": "from 72 to 31",
    "router + preprocess kernels with DeepEP (2.2.1)": "preprocess parts to 17",
    "CUDA graphs gain (2.3)": "84.8 TFLOPS",
    "bindpcie CPU binding gain (2.4)": "70.6 TFLOPS",
    "DeepEP gain, from less router/preprocess CPU work (2.2.2)": "54.3 TFLOPS",
    "no up_proj recompute gain, 'serious CPU overhead' (2.2.2)": "44.7 TFLOPS",
    "sync still left (3.1: 'device-host sync ... tokens per expert')": "device-host sync",
}


def rows() -> list[dict[str, str]]:
    with FILE.open(newline="") as f:
        return list(csv.DictReader(f))


def predicted(row: dict[str, str], us: float) -> float:
    """The row's prediction with ``HOST_S_PER_KERNEL`` set to ``us`` (restored after)."""
    kept = host.HOST_S_PER_KERNEL
    host.HOST_S_PER_KERNEL = us * 1e-6
    try:
        return predict_training_row(row).predicted or float("nan")
    finally:
        host.HOST_S_PER_KERNEL = kept


def implied_us(row: dict[str, str], lo: float = 0.0, hi: float = 400.0, steps: int = 14) -> float:
    """``c*``: the host cost per launch (us) at which the row's prediction equals its
    measurement (bisection; the prediction grows with the cost). ``lo`` if even no host cost
    is too slow, ``hi`` if that cost is still too fast."""
    target = float(row["measured_iteration_s"])
    if predicted(row, lo) >= target:
        return lo
    if predicted(row, hi) <= target:
        return hi
    for _ in range(steps):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if predicted(row, mid) < target else (lo, mid)
    return (lo + hi) / 2


def layer_figures(row: dict[str, str]) -> dict[str, float]:
    """One MoE layer pass of the row's config: host launches (forward; recompute + backward),
    host seconds at ``HOST_S_PER_KERNEL``, GPU seconds (compute and communication as priced) and
    the priced host wait; forward launches of the layer parts (router, preprocess, sync)."""
    cfg = row_config(row, predict_training_row(row).chosen)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=True)
    out: dict[str, float] = {}
    for name, ops in (("fwd", fwd), ("bwd", layer_recompute(cfg, sh, fwd) + backward_of(fwd, sh))):
        priced, order = pricer.price_ops(ops)
        counts = pricer.scoped_counts(order) or [host.launches(o) for o in order]
        out[f"{name}_launches"] = sum(counts)
        out[f"{name}_eager"] = sum(host.launches(o) for o in order)
        out[f"{name}_gpu_s"] = sum(t for cat, t, _ in priced.segments if cat != HOST)
        out[f"{name}_wait_s"] = sum(t for cat, t, _ in priced.segments if cat == HOST)
        if name == "fwd":
            parts = layer_parts(fwd)
            for part in ("moe_router", "moe_preprocess", "moe_dtoh"):
                out[part] = sum(n for o, n in zip(order, counts) if parts.get(o.name) == part)
    return out


def changed(prev: dict[str, str] | None, row: dict[str, str]) -> str:
    if prev is None:
        return "-"
    diff = [f"{c} {prev[c] or '-'} -> {row[c] or '-'}" for c in CELLS if prev[c] != row[c]]
    return "; ".join(diff) or "none (not a column)"


def ladder_table(rs: list[dict[str, str]]) -> list[dict[str, float]]:
    per_us = host.HOST_S_PER_KERNEL * 1e6
    print(f"## 1. The ladder (busiest rank: {MOE_LAYERS_PER_RANK} MoE layers x {MICRO_BATCHES} "
          f"micro-batches = {PASSES} MoE layer passes; host {per_us:g} us per launch)\n")
    print("| step | guide's change | cells changed | measured s | predicted s | gap s | "
          "launches/MoE pass fwd+bwd (eager) | host ms/pass | GPU ms/pass | exposed host s/step "
          "| gap ms/pass | c* us |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    out, prev = [], None
    for i, (row, step) in enumerate(zip(rs, ladder.TABLE), 1):
        meas, pred = float(row["measured_iteration_s"]), predicted(row, per_us)
        lf = layer_figures(row)
        n = lf["fwd_launches"] + lf["bwd_launches"]
        eager = lf["fwd_eager"] + lf["bwd_eager"]
        gpu = lf["fwd_gpu_s"] + lf["bwd_gpu_s"]
        exposed = pred - predicted(row, 0.0)
        c = implied_us(row)
        fig = dict(step=i, measured=meas, predicted=pred, gap=meas - pred, launches=n,
                   host_ms=n * per_us / 1e3, gpu_ms=gpu * 1e3, exposed=exposed,
                   gap_ms=(meas - pred) / PASSES * 1e3, c_us=c, **lf)
        out.append(fig)
        print(f"| {i} | {step[2].replace(chr(92), '')[:60]} | {changed(prev, row)} | {meas:.2f} | "
              f"{pred:.2f} | {meas - pred:.2f} | {lf['fwd_launches']:.0f}+{lf['bwd_launches']:.0f}"
              f" ({eager:.0f}) | {fig['host_ms']:.1f} | {fig['gpu_ms']:.1f} | {exposed:.2f} | "
              f"{fig['gap_ms']:.1f} | {c:.0f} |")
        prev = row
    return out


def column_steps(figs: list[dict[str, float]]) -> None:
    print("\n## 2. The steps that change cells: measured vs predicted gain (s per step)\n")
    print("| step | measured gain | predicted gain | c* before -> after (us) |")
    print("|---|---|---|---|")
    rs = rows()
    for a, b in itertools.pairwise(figs):
        if changed(rs[int(a["step"]) - 1], rs[int(b["step"]) - 1]).startswith("none"):
            continue
        print(f"| {a['step']:.0f} -> {b['step']:.0f} | {a['measured'] - b['measured']:+.2f} | "
              f"{a['predicted'] - b['predicted']:+.2f} | {a['c_us']:.0f} -> {b['c_us']:.0f} |")


def kernel_counts(figs: list[dict[str, float]]) -> None:
    print("\n## 3. Kernel counts, forward of one MoE layer: the guide vs trainsim's host launches\n")
    print("| step | dispatcher | moe_router | moe_preprocess | moe_dtoh (sync) | guide |")
    print("|---|---|---|---|---|---|")
    rs = rows()
    said = {1: "router part 72 (unfused)", 3: "router part 31 (fused; not a column)",
            4: "router + preprocess 17"}
    for f in figs:
        i = int(f["step"])
        if i in (1, 3, 4, 6, 11):
            print(f"| {i} | {rs[i - 1]['moe_dispatcher']} | {f['moe_router']:.0f} | "
                  f"{f['moe_preprocess']:.0f} | {f['moe_dtoh']:.0f} | {said.get(i, '')} |")


def grace_rows() -> list[tuple[str, dict[str, str]]]:
    out = []
    for path in GRACE_FILES:
        if not path.exists():
            continue
        with path.open(newline="") as f:
            for r in csv.DictReader(f):
                if r.get("gpu", "").lower().startswith(GRACE_GPUS) and r.get("measured_iteration_s"):
                    out.append((path.stem, r))
    return out


def grace_table() -> dict[float, dict[str, float]]:
    """MAPE of the ladder and of the other Grace-hosted rows with every Grace row's host cost at
    each of ``GRACE_US``."""
    groups: dict[str, list[dict[str, str]]] = {}
    for stem, r in grace_rows():
        key = {FILE.stem: "ladder", "training_public": "public",
               "training_heldout": "held-out"}.get(stem, "other check files")
        groups.setdefault(key, []).append(r)
    print("\n## 4. One host cost per launch for every Grace-hosted row (GB200/GB300/GH200): MAPE %"
          " (mean signed %)\n")
    print("| us per launch | " + " | ".join(f"{k} ({len(v)})" for k, v in groups.items()) + " |")
    print("|---|" + "---|" * len(groups))
    res: dict[float, dict[str, float]] = {}
    err: dict[float, dict[str, float]] = {}
    for us in GRACE_US:
        cells, res[us], err[us] = [], {}, {}
        for key, rs in groups.items():
            errs = [predicted(r, us) / float(r["measured_iteration_s"]) - 1 for r in rs]
            err[us].update({r["id"]: 100 * e for r, e in zip(rs, errs)})
            mape = 100 * sum(abs(e) for e in errs) / len(errs)
            res[us][key] = mape
            cells.append(f"{mape:.1f} ({100 * sum(errs) / len(errs):+.1f})")
        print(f"| {us:g} | " + " | ".join(cells) + " |")
    base = GRACE_US[0]
    ladder_ids = {r["id"] for r in groups.get("ladder", [])}
    worse = [(rid, e) for rid, e in err[base].items() if rid not in ladder_ids
             and abs(err[GRACE_US[2]][rid]) > abs(e) + 5.0]
    print(f"\nRows outside the ladder whose |error| grows by more than 5 points at "
          f"{GRACE_US[2]:g} us (signed % at " + " / ".join(f"{u:g}" for u in GRACE_US) + " us):")
    for rid, _ in worse:
        print(f"- {rid}: " + " / ".join(f"{err[u][rid]:+.1f}" for u in GRACE_US))
    return res


def check() -> int:
    """The guide's figures quoted in GUIDE, found in the mirror's doc text."""
    mirror = ladder._mirror()
    text = subprocess.run(["git", "--git-dir", str(mirror), "show",
                           f"{ladder.COMMIT}:{ladder.DOC}"], capture_output=True, text=True,
                          check=True).stdout
    text = " ".join(text.split())
    missing = [f"{k}: {v!r}" for k, v in GUIDE.items() if v not in text]
    print("\n".join(missing) or "the guide's figures as in the mirror")
    return 1 if missing else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--no-grace", action="store_true", help="skip table 4 (~20 s)")
    a = ap.parse_args(argv)
    if a.check:
        return check()
    figs = ladder_table(rows())
    column_steps(figs)
    kernel_counts(figs)
    if not a.no_grace:
        grace_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
