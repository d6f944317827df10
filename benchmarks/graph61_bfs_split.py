"""Where one torch looped BFS (``LoopedBFS``) ``simulate`` at PP64 vpp 2 spends its CPU (issue 21
item 2, graph61): the periodic shortcut's two graph builds (``build_graph``), their two event-loop
runs (``engine.run``), the proof (``bfs_proven``) and the summary (``two_run_summary``), each timed
with ``time.process_time`` around the call inside ``steady_state``, the minimum of ``--repeat``
``simulate`` calls from cleared caches (``limits_cost58.measured_s``), with the load average.

    PYTHONPATH=src:benchmarks python benchmarks/graph61_bfs_split.py [--pp 64] [--vpp 2]
        [--m 2048] [--repeat 5] [--schedule looped_bfs]
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict

from limits_cost58 import measured_s
from settle60_bfs_cost import config as bfs_config

import trainsim.steady_state as steady
from trainsim import run_config_from_dict, simulate

PARTS = ("build_graph", "run", "bfs_proven", "two_run_summary", "_extrapolate", "attempt")


def other_config(schedule: str, pp: int, vpp: int, m: int):
    """The same small model under another schedule (``1f1b``, ``interleaved_1f1b``, ...)."""
    par = {"pp": pp, "pipeline_schedule": schedule}
    if vpp > 1:
        par["vpp"] = vpp
    return run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": pp * vpp, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "parallel": par, "training": {"global_batch_size": m, "seq_length": 256},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": pp, "gpus_per_node": min(pp, 8),
                    "compute_db": None}})


def timed(spent: dict, name: str, fn):
    def wrapper(*args, **kwargs):
        t0 = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.process_time() - t0
    return wrapper


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pp", type=int, default=64)
    ap.add_argument("--vpp", type=int, default=2)
    ap.add_argument("--m", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--schedule", default="looped_bfs")
    args = ap.parse_args()
    if args.schedule == "looped_bfs":
        cfg = bfs_config(args.pp, args.vpp, args.m)
    else:
        cfg = other_config(args.schedule, args.pp, args.vpp, args.m)
    simulate(bfs_config(2, 1, 16))  # imports and catalogs loaded first
    spent: dict[str, float] = defaultdict(float)
    originals = {name: getattr(steady, name) for name in PARTS if hasattr(steady, name)}
    best: dict[str, float] = {}
    try:
        for name, fn in originals.items():
            setattr(steady, name, timed(spent, name, fn))
        for _ in range(args.repeat):
            spent.clear()
            total, how = measured_s(cfg)
            for name, value in [("simulate", total), *spent.items()]:
                best[name] = min(best.get(name, value), value)
    finally:
        for name, fn in originals.items():
            setattr(steady, name, fn)
    load = os.getloadavg()[0]
    print(f"{args.schedule} pp {args.pp} vpp {args.vpp} m {args.m}: {how['method']}, "
          f"load {load:.1f}, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, "
          f"min of {args.repeat}")
    for name in ("simulate", *originals):
        print(f"  {name:16s} {best.get(name, 0.0) * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
