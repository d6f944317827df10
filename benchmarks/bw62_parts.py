"""Issue 17 (Blackwell rows priced fast): which part of the step carries the Blackwell-only
deficit? (62nd session, bw62; a diagnostic: nothing here feeds trainsim.)

    PYTHONPATH=src:benchmarks python benchmarks/bw62_parts.py            # the pairs below
    PYTHONPATH=src:benchmarks python benchmarks/bw62_parts.py --json OUT # and the numbers

Each row is priced as ``trainsim validate`` prices it (its tuned settings kept: the config
``validate.training.row_config`` rebuilds from ``RowResult.chosen``), then re-simulated once per
part with that part made ``STEP`` slower on every GPU (the tuned layout held fixed). The step's
rise over ``STEP`` is the part's share ``s`` of the critical path: ``gemm`` (dense GEMMs),
``grouped`` (expert GEMMs), ``attention`` (fused attention kernels), ``memory`` (memory-bound
kernels: norms, casts, activations, optimizer kernels), ``comm:G`` (collectives and sends on
process group G: tp, cp, dp, pp, ep, ...), ``host`` (the GPU's waits for kernel launches).
Beside it the step's own breakdown (``Result.breakdown``) and, per GEMM site of one decoder
layer (forward + backward, each kernel priced alone), its shape and rate.

The signed error ``e`` over a part's share ``s`` is the slowdown that part alone would need to
close the row (``-e / s``). A Blackwell-only cause must close the Blackwell row and leave its
Hopper twin (same model and recipe family on H100 / H200) where it is, so the table prints,
per part, the slowdown the Blackwell row needs beyond its twin's: ``-(e_bw - e_hop) / s_bw``.

The pairs (the brief's): dgxc 25.05 Llama 3.1 405B bf16 on 128 GB200 (NeMo 25.04) with its H100
twin (dgxc 25.05.01, 512 H100, the same recipe at TP 8); Google Cloud's A4 (8 x B200) NeMo 25.02
Llama 3.1 70B fp8 with the A3 Ultra (H200) NeMo 24.07 run of the same layout (TP 2, PP 4, VP
20); MaxText's A4 Llama 3.1 70B fp8 (FSDP 256, full remat) with MaxText's A3 Ultra 70B bf16
(FSDP 128 x 2, selective remat; the nearest Hopper MaxText row, bf16).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import warnings
from multiprocessing import Pool
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEP = 0.10
PAIRS = (
    ("dgxc2505", "dgxc2505-llama3.1-405b-bf16-gb200-128",
     "dgxc_llama31_2505", "dgxc250501-llama3.1-405b-bf16-h100-512"),
    ("gpurecipes", "gpurecipes-a4-llama31-70b-fp8-256",
     "gpurecipes", "gpurecipes-a3ultra-llama31-70b-fp8-256"),
    ("gpurecipes", "gpurecipes-a4-maxtext-llama31-70b-fp8-256",
     "gpurecipes", "gpurecipes-a3ultra-maxtext-llama31-70b-bf16-256"),
)
PARTS = ("gemm", "grouped", "attention", "memory", "comm:tp", "comm:cp", "comm:dp", "comm:pp",
         "comm:ep", "host")
RATIOS = (
    ("same layout, H200 -> B200 (NeMo 24.07 -> 25.02, fp8, TP 2 PP 4 VP 20)",
     "gpurecipes-a3ultra-llama31-70b-fp8-256", "gpurecipes-a4-llama31-70b-fp8-256"),
    ("same B200 node type and batch: NeMo 25.02 -> MaxText 2025-03 (70B fp8, GBS 2048)",
     "gpurecipes-a4-llama31-70b-fp8-256", "gpurecipes-a4-maxtext-llama31-70b-fp8-256"),
    ("405B bf16 recipe: H100 (TP 8) -> GB200 (TP 4 CP 2)",
     "dgxc250501-llama3.1-405b-bf16-h100-512", "dgxc2505-llama3.1-405b-bf16-gb200-128"),
)
"""Pairs of the rows above read as one ratio: per-GPU seconds per sequence (step x GPUs /
global batch), second over first, measured and predicted."""
KERNEL_FILES = ("../shared/validation/kernels_published.csv", "benchmarks/kernels_blackwell.csv",
                "benchmarks/kernels_simumax_b200.csv")
SM100 = ("b200-sxm-180gb", "b200-sxm-180gb-750w", "gb200")
BREAKDOWN = ("compute_s", "exposed_comm_s", "pipeline_bubble_s", "optimizer_s", "other_s")


def read_row(name: str, row_id: str) -> dict[str, str]:
    with open(HERE / f"training_{name}.csv", newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == row_id)


def patch(part: str, step: float = STEP):
    """Make one part ``step`` slower in this process (every GPU); returns the undo."""
    from trainsim import pricing
    from trainsim.compute import chain, host
    if part == "base":
        return lambda: None
    if part.startswith("comm:"):
        group = part.split(":", 1)[1]
        orig_c = pricing.Pricer._comm_time

        def comm(self, op):
            t = orig_c(self, op)
            return t * (1 + step) if str(op.group) == group else t
        pricing.Pricer._comm_time = comm
        return lambda: setattr(pricing.Pricer, "_comm_time", orig_c)
    if part == "host":
        orig_h = host.exposed_s
        host.exposed_s = lambda *a, **k: orig_h(*a, **k) * (1 + step)
        return lambda: setattr(host, "exposed_s", orig_h)
    if part not in ("gemm", "grouped", "attention", "memory"):
        raise ValueError(f"unknown part {part!r}")
    orig = chain.ChainModel.explain

    def explain(self, op):
        t, how = orig(self, op)
        return (t * (1 + step) if hits(part, op) else t), how
    chain.ChainModel.explain = explain
    return lambda: setattr(chain.ChainModel, "explain", orig)


def hits(part: str, op) -> bool:
    """Whether ``op`` is the kind of kernel ``part`` names."""
    from trainsim.workload.ops import Attention, Elementwise, Gemm
    dense = isinstance(op, Gemm) and (not op.grouped or op.grouped == "userbuffers")
    return {"gemm": dense, "grouped": isinstance(op, Gemm) and not dense,
            "attention": isinstance(op, Attention),
            "memory": isinstance(op, Elementwise)}[part]


def need(error: float, share: float) -> float:
    """The slowdown of a part with critical-path ``share`` that closes a signed ``error``
    (predicted / measured - 1) alone: nan where the part is not on the path."""
    return -error / share if share > 1e-4 else float("nan")


def _config(row: dict[str, str]):
    from trainsim.validate.training import predict_training_row, row_config
    res = predict_training_row(row)
    if res.error:
        raise SystemExit(f"{row['id']}: {res.error}")
    return res, row_config(row, res.chosen)


def _step(job: tuple[str, str]) -> tuple[str, float]:
    from trainsim.simulator import simulate
    name, row_id = job
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, cfg = _config(read_row(name, row_id))
        return row_id, simulate(cfg).iteration_time_s


def steps(part: str, jobs: list[tuple[str, str]], procs: int) -> dict[str, float]:
    with Pool(procs, initializer=patch, initargs=(part,)) as pool:
        return dict(pool.map(_step, jobs))


def gemm_sites(name: str, row_id: str) -> list[dict]:
    """One decoder layer's GEMMs (forward + backward) as the row prices them, grouped by site."""
    from trainsim.pricing import Pricer
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.ops import Comm, Gemm
    from trainsim.workload.recompute import layer_recompute
    from trainsim.workload.shard import shard_of
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, cfg = _config(read_row(name, row_id))
        pricer, sh = Pricer(cfg), shard_of(cfg)
        lf = layer_forward(cfg, sh, moe=False)
        ops = lf + layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    out, total = [], 0.0
    for op in ops:
        if isinstance(op, Comm):
            continue
        t, how = pricer.compute.explain(op)
        total += t
        if isinstance(op, Gemm):
            out.append({"site": op.name, "m": op.m, "n": op.n, "k": op.k, "dtype": op.dtype,
                        "us": t * 1e6, "tflops": op.flops / t / 1e12, "model": how})
    for g in out:
        g["layer_share"] = g["us"] / (total * 1e6)
    return out


def collect(procs: int) -> dict:
    jobs = sorted({(n, i) for p in PAIRS for n, i in ((p[0], p[1]), (p[2], p[3]))})
    from trainsim.validate.training import predict_training_row
    info = {}
    for name, row_id in jobs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            row = read_row(name, row_id)
            res = predict_training_row(row)
        info[row_id] = {"file": name, "gpu": row["gpu"], "dtype": row["dtype"],
                        "measured": res.measured, "predicted": res.predicted,
                        "breakdown": dict(res.extra.get("breakdown", {})),
                        "sites": gemm_sites(name, row_id)}
    by_part = {p: steps(p, jobs, procs) for p in ("base",) + PARTS}
    for row_id, d in info.items():
        base = by_part["base"][row_id]
        d["base"] = base
        d["shares"] = {p: (by_part[p][row_id] / base - 1) / STEP for p in PARTS}
    return info


def err(d: dict) -> float:
    return d["predicted"] / d["measured"] - 1


def report(info: dict) -> None:
    print(f"Step parts as priced (+{STEP:.0%} per part; share = step rise / {STEP:.0%}); "
          "need = slowdown of that part alone to close the row; bw-only = beyond its twin's error\n")
    for bw, hop in ((p[1], p[3]) for p in PAIRS):
        b, h = info[bw], info[hop]
        eb, eh = err(b), err(h)
        print(f"## {bw} ({b['gpu']}, {b['dtype']}) {100 * eb:+.1f} %  vs  {hop} ({h['gpu']}, "
              f"{h['dtype']}) {100 * eh:+.1f} %")
        print(f"   measured / predicted s: {b['measured']:.3f} / {b['predicted']:.3f}  |  "
              f"{h['measured']:.3f} / {h['predicted']:.3f}  (re-simulated {b['base']:.3f} | "
              f"{h['base']:.3f})")
        print("   breakdown (s): " + ", ".join(
            f"{k.removesuffix('_s')} {b['breakdown'].get(k, 0):.3f} | {h['breakdown'].get(k, 0):.3f}"
            for k in BREAKDOWN))
        print("   | part | share (bw) | share (twin) | need (bw) | need (twin) | bw-only need |")
        print("   |---|---:|---:|---:|---:|---:|")
        for p in PARTS:
            sb, sh = b["shares"][p], h["shares"][p]
            if abs(sb) < 1e-4 and abs(sh) < 1e-4:
                continue
            need_b, need_h, only = need(eb, sb), need(eh, sh), need(eb - eh, sb)
            print(f"   | {p} | {sb:.3f} | {sh:.3f} | {100 * need_b:+.0f} % | {100 * need_h:+.0f} % "
                  f"| {100 * only:+.0f} % |")
        for label, d in ((bw, b), (hop, h)):
            print(f"   GEMM sites of one layer, {label} ({d['gpu']} {d['dtype']}):")
            for g in d["sites"]:
                print(f"     {g['site']:22s} m={g['m']:6d} n={g['n']:6d} k={g['k']:6d} "
                      f"{g['us']:8.1f} us {g['tflops']:7.1f} TFLOP/s  {100 * g['layer_share']:4.1f} % "
                      f"of layer  {g['model']}")
        print()


def gpu_seconds(row: dict[str, str], step_s: float) -> float:
    """Per-GPU seconds per sequence: the step x GPUs / global batch."""
    return step_s * int(row["num_gpus"]) / int(row["global_batch_size"])


def ratios(info: dict) -> None:
    print("Cross-row ratios (per-GPU seconds per sequence, second / first):")
    print("| pair | measured | predicted | predicted / measured |")
    print("|---|---:|---:|---:|")
    for label, first, second in RATIOS:
        a, b = info[first], info[second]
        ra, rb = read_row(a["file"], first), read_row(b["file"], second)
        meas = gpu_seconds(rb, b["measured"]) / gpu_seconds(ra, a["measured"])
        pred = gpu_seconds(rb, b["predicted"]) / gpu_seconds(ra, a["predicted"])
        print(f"| {label} | {meas:.3f} | {pred:.3f} | {pred / meas:.3f} |")
    print()


def kernel_rows(root: Path) -> list[tuple[str, dict[str, str]]]:
    out = []
    for rel in KERNEL_FILES:
        with open(root / rel, newline="") as fh:
            out += [(Path(rel).stem, r) for r in csv.DictReader(fh)
                    if r["gpu"].strip().lower() in SM100]
    return out


def family(row: dict[str, str]) -> str:
    """A kernel row's family: kind / implementation / dtype, GEMMs split at 2 x 4096^3 FLOP."""
    fam = f"{row['kind']}/{row['implementation']}/{row['dtype']}"
    if row["kind"] == "gemm" and row.get("m") and row.get("n") and row.get("k"):
        big = 2 * int(row["m"]) * int(row["n"]) * int(row["k"]) >= 2 * 4096 ** 3
        fam += " large" if big else " small"
    return fam


def kernels(root: Path) -> dict:
    """Every B200 / GB200 kernel row of ``KERNEL_FILES`` priced as ``trainsim validate`` prices it
    (a rate row's signed error: predicted / measured - 1; positive = priced faster than
    measured), by file and family."""
    from trainsim.validate.kernels import predict_kernel_row
    groups: dict[str, list[float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, row in kernel_rows(root):
            res = predict_kernel_row(row)
            if res.predicted is None or not res.measured:
                continue
            e = res.predicted / res.measured - 1
            if res.extra.get("unit") != "TFLOP/s":
                e = res.measured / res.predicted - 1  # a time: faster priced = shorter
            groups.setdefault(f"{name}: {row['gpu'].strip()} {family(row)}", []).append(e)
    return {k: {"n": len(v), "signed": sum(v) / len(v),
                "mape": sum(abs(x) for x in v) / len(v)} for k, v in sorted(groups.items())}


def kernels_report(table: dict) -> None:
    print("B200 / GB200 kernel rows (signed: + = trainsim prices the kernel faster than measured):")
    print("| file: gpu family | rows | signed % | MAPE % |")
    print("|---|---:|---:|---:|")
    for k, v in table.items():
        print(f"| {k} | {v['n']} | {100 * v['signed']:+.1f} | {100 * v['mape']:.1f} |")
    print()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="also write the numbers here")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--kernels-only", action="store_true", help="only the kernel-row table")
    args = ap.parse_args(argv)
    table = kernels(HERE.parent)
    kernels_report(table)
    if args.kernels_only:
        return 0
    info = collect(args.procs)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": info, "kernels": table}, indent=1))
    report(info)
    ratios(info)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
