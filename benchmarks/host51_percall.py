"""What-if, not the model: host cost per Python-level call plus ``CPP_LAUNCH_S`` per C++-issued kernel.

    PYTHONPATH=src:benchmarks python benchmarks/host51_percall.py            # grid + left-out table
    PYTHONPATH=src:benchmarks python benchmarks/host51_percall.py --router   # + Bridge's fused router

trainsim prices every host-issued kernel at ``compute.host.HOST_S_PER_KERNEL`` (30 us, the bound of
``fit_host.py``'s grid in every leave-one-framework-out fold). Transformer Engine issues most of
an MoE layer's kernels from C++ loops inside one Python call (launches51_audit.py): a
``GroupedLinear``'s per-expert GEMMs inside one ``general_grouped_gemm`` (TE v2.9
module/grouped_linear.py, common/gemm/cublaslt_gemm.cu ``multi_stream_cublas_gemm``), the
per-expert casts inside one ``tex.split_quantize`` (csrc/extensions/cast.cpp L496+), and a
current-scaling ``quantize``'s amax / scale / cast inside one call (csrc/quantizer.cpp
``Float8CurrentScalingQuantizer::quantize_impl``). This script re-prices those as one
Python-level call (the per-call constant, searched on a grid) plus ``host.CPP_LAUNCH_S``
(measured, pytorch/pytorch#54943 + ``LAUNCH_S``) for each further kernel, by replacing
``host.launches`` and ``host.hooks_host_s`` / ``host.loop_host_s`` in the worker processes
(each grid point in a fresh process). Every other op keeps one call per kernel.

The grid's bound: a whole Transformer Engine ``Linear`` forward (one module call, bf16, one
GEMM) took 99.66 us of CPU on GB200 and 90.53 us on GH200, against torch's ``nn.Linear``
37.08 / 33.17 us there and 13.48 us on an H100 DGX (Xeon 8480C) (NVIDIA/TransformerEngine#2053,
2025-08-11, table in the description): ~36 us for TE's on x86 by the same ratio. A single
Python-level call cannot plausibly cost more than a Grace TE module's, so the grid stops at
100 us; x86 rows (every public row but the GB200 ones) plausibly sit near 36 us.

``--router``: Megatron-Bridge MoE rows with the router's top-k and loss at the fused count (6 / 6:
``moe_router_fusion = True`` in the Bridge v0.4.0 perf recipes, launches51's audit), as that
session's ``--whatif`` did under the per-kernel model.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

GRID_US = (0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 80.0, 100.0)
ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ROOT.parent / "shared" / "validation" / "training_public.csv"
HELDOUT = ROOT / "benchmarks" / "training_heldout.csv"


def install_per_call():
    """Replace the host's per-kernel count by Python-level calls, the C++-issued rest priced at
    ``CPP_LAUNCH_S`` (in the calling process only); returns a function that undoes it."""
    from trainsim.compute import host
    from trainsim.workload.ops import Elementwise, Gemm
    from trainsim.workload.shard import CAST_KERNEL, FP8_GATHER_CAST_KERNEL

    kernel_launches, loop, hooks = host.launches, host.loop_host_s, host.hooks_host_s

    def te_loop(op) -> bool:  # one Python call, the rest of its kernels from C++
        if isinstance(op, Gemm):
            return op.grouped == "multi_stream" and op.batch > 1
        return isinstance(op, Elementwise) and op.kernel in (CAST_KERNEL, FP8_GATHER_CAST_KERNEL)

    def launches(op) -> int:
        n = kernel_launches(op)
        return min(n, 1) if te_loop(op) else n

    def cpp_rest(op) -> float:
        return (kernel_launches(op) - 1) * host.CPP_LAUNCH_S if te_loop(op) and \
            kernel_launches(op) > 1 else 0.0

    def restore() -> None:
        host.launches, host.loop_host_s, host.hooks_host_s = kernel_launches, loop, hooks

    host.launches = launches
    host.loop_host_s = lambda op: loop(op) + cpp_rest(op)
    host.hooks_host_s = lambda op: hooks(op) + cpp_rest(op)
    return restore


def _errors(args: tuple[str, float, bool, str]) -> dict[str, float]:
    """Signed relative error of every row of ``path`` under ``mode`` (``kernel``: trainsim as it
    is, ``call``: per Python-level call) with the host constant at ``us``."""
    mode, us, router, path = args
    from trainsim.compute import host
    from trainsim.validate.training import predict_training_row
    from trainsim.workload import moe_block

    if mode == "call":
        install_per_call()
    host.HOST_S_PER_KERNEL = us * 1e-6
    kept = moe_block.MOE_KERNELS["router"]
    out = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            fused = router and row["framework"] == "megatron-bridge" and row.get("num_experts")
            moe_block.MOE_KERNELS["router"] = (6, 6) if fused else kept
            try:
                r = predict_training_row(row)
            finally:
                moe_block.MOE_KERNELS["router"] = kept
            out[row["id"]] = (r.predicted / r.measured - 1.0) if r.predicted else float("nan")
    return out


def _mape(errs) -> float:
    ok = [abs(e) for e in errs if not math.isnan(e)]
    return 100.0 * sum(ok) / len(ok) if ok else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--router", action="store_true")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args(argv)
    if not PUBLIC.exists():
        print(f"needs {PUBLIC}")
        return 1
    with open(PUBLIC, newline="") as f:
        framework = {r["id"]: r["framework"] for r in csv.DictReader(f)}
    jobs = [("kernel", 30.0, False, str(PUBLIC)), ("kernel", 30.0, False, str(HELDOUT))]
    for us in GRID_US:
        jobs += [("call", us, a.router, str(PUBLIC)), ("call", us, a.router, str(HELDOUT))]
    with ProcessPoolExecutor(max_workers=a.workers, max_tasks_per_child=1) as pool:
        res = dict(zip(jobs, pool.map(_errors, jobs)))
    base_pub = res[jobs[0]]
    print(f"per-kernel model as landed (30 us): public {_mape(base_pub.values()):.4f} %, "
          f"held-out {_mape(res[jobs[1]].values()):.4f} %")
    grid = {us: res[("call", us, a.router, str(PUBLIC))] for us in GRID_US}
    held = {us: res[("call", us, a.router, str(HELDOUT))] for us in GRID_US}
    print(f"per-call model{' + fused Bridge router' if a.router else ''}, grid (us) -> public / "
          "held-out MAPE:")
    for us in GRID_US:
        print(f"  {us:5g} us  {_mape(grid[us].values()):.4f} %  {_mape(held[us].values()):.4f} %")

    def mape(us: float, keep) -> float:
        return _mape([e for rid, e in grid[us].items() if keep(framework[rid])])

    best = min(GRID_US, key=lambda us: (round(mape(us, lambda f: True), 6), us))
    edge = "at the grid's bound" if best in (GRID_US[0], GRID_US[-1]) else "interior"
    print(f"fit on every public row: {best:g} us ({edge}), public {mape(best, lambda f: True):.4f} "
          f"%, held-out {_mape(held[best].values()):.4f} %")
    print("\n| framework (left out) | rows | refit (us) | held-out MAPE | signed | per-kernel "
          "model (30 us) |\n|---|---|---|---|---|---|")
    for fw in sorted(set(framework.values())):
        refit = min(GRID_US, key=lambda us: (round(mape(us, lambda f, fw=fw: f != fw), 6), us))
        errs = [e for rid, e in grid[refit].items() if framework[rid] == fw]
        old = [e for rid, e in base_pub.items() if framework[rid] == fw]
        print(f"| {fw} | {len(errs)} | {refit:g} | {_mape(errs):.1f} % | "
              f"{100 * sum(errs) / len(errs):+.1f} % | {_mape(old):.1f} % |")
    print("\nrows moving > 2 points at the fit (signed %, per-kernel -> per-call):")
    for rid, e in sorted(grid[best].items()):
        if abs(e - base_pub[rid]) > 0.02:
            print(f"  {rid}: {100 * base_pub[rid]:+.2f} -> {100 * e:+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
