"""Speed of `trainsim search`: a 70B model on 1,024 GPUs, >= 10,000 candidate configurations.

    python benchmarks/search_speed.py                 # local processes, all cores
    python benchmarks/search_speed.py --workers 2 --executor ray
    python benchmarks/search_speed.py --model gpt-22b --gpu a100-sxm-80gb --gpus 64 \
        --global-batch 512 --seq 2048 --workers 2     # issue 21's 22B-on-64-A100 search

Llama 3 70B on 1,024 H100 SXM (8 per node, 400 Gbit/s per GPU), global batch 1,024 x 4,096
tokens (4M tokens), bf16; the default search space (tp 1-8, every even pp, cp 1-8, vpp up to 8,
micro batch up to 8, three recompute modes, SP, four optimizer shardings, four overlap
switches). Prints one dated line: candidates enumerated, how many memory and the time bound
pruned, how many were simulated, the wall time and the rates, the CPU time (user + sys of this
process and its workers, after imports: on a shared machine the wall time is other jobs' too),
simulations per CPU-second (issue 21 item 4's "simulated configurations": those whose time the
search established by simulating them) and, beside it, candidates decided per CPU-second (those
simulated and those a memory check or a proven lower bound ruled out without a simulation), and
the best configuration.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executor", default="local", choices=["local", "ray", "serial"])
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--model", default="llama3-70b")
    ap.add_argument("--gpu", default="h100-sxm-80gb")
    ap.add_argument("--gpus", type=int, default=1024)
    ap.add_argument("--global-batch", type=int, default=1024)
    ap.add_argument("--seq", type=int, default=4096)
    args = ap.parse_args()

    t0 = time.perf_counter()
    import trainsim
    from trainsim.search import make_executor, search
    from trainsim.search.cli import build_base

    def cpu_s() -> float:
        own, kids = resource.getrusage(resource.RUSAGE_SELF), \
            resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    cpu0 = cpu_s()
    base = build_base(args.model, args.gpu, args.gpus, args.global_batch, args.seq, 8, 400.0,
                      "bf16")
    ex = make_executor(args.executor, args.workers)
    try:
        r = search(base, [args.gpus], executor=ex, cache=None)
    finally:
        ex.close()
    total = time.perf_counter() - t0
    cpu = cpu_s() - cpu0  # the workers' counted once they have exited (close waits for them)
    s, best = r.stats, r.best
    print(f"{datetime.date.today().isoformat()} search {args.model} on {args.gpus} x {args.gpu} "
          f"(batch {args.global_batch} x {args.seq}): {s.enumerated:,} candidates enumerated, "
          f"{s.memory_pruned:,} pruned by memory, {s.bound_pruned:,} by the time bound, "
          f"{s.simulated:,} simulated in {s.elapsed_s:.1f} s ({total:.1f} s with imports): "
          f"{s.candidates_per_s:,.0f} candidates/s, {s.simulated_per_s:.1f} simulations/s "
          f"({s.simulated_per_s / s.workers:.1f} per worker; issue 21 asks >= 1,000 per core); "
          f"{cpu:.1f} s CPU with the workers', {s.simulated / cpu:.1f} simulations per "
          f"CPU-second ({s.enumerated / cpu:,.0f} candidates decided per CPU-second: simulated, "
          f"or ruled out by memory or a proven bound); "
          f"{s.executor} x {s.workers} on {os.cpu_count()} cores ({platform.machine()}, Python "
          f"{platform.python_version()}, trainsim {trainsim.__version__}); best "
          f"{best.label if best else '-'} "
          f"{best.iteration_time_s if best else float('nan'):.3f} s/iteration")
    return 0 if s.enumerated >= 10_000 and s.elapsed_s < 60 else 1


if __name__ == "__main__":
    sys.exit(main())
