"""settle56: zb_2p's fallbacks among tests/test_steady_zb2p.py's 200 random configs (40 pp + 8 to
80 pp micro-batches, ``MIN_TASKS`` 0 as the tests), at their own length and at 256 / 1,024 /
4,096 micro-batches: the method, in-process CPU ms (one run, the config's search and pricing
not cached) and the tasks of the graphs built (the shortcut's truncated runs, the full
iteration's, or both where the shortcut failed). Runs on any checkout (main:
``PYTHONPATH=/work/main/src:tests``), so the two can be compared config by config.

    PYTHONPATH=src:tests python benchmarks/settle56_cost.py [--lengths own,256,1024,4096] [--ids 3,5,...] [--no-replay]

Without ``--ids``: the sample's summary at their own lengths (how many take each method, the
shortcut's CPU), then every config that falls back there, at each length.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import Counter

from helpers import pipelined_configs

import trainsim.steady_state as steady
from trainsim import simulate, simulator


def at(cfg, m: int):
    per = cfg.training.global_batch_size // cfg.num_microbatches
    return dataclasses.replace(cfg, training=dataclasses.replace(
        cfg.training, global_batch_size=m * per))


def measure(cfg, built: list[int]) -> tuple[str, float, float, str]:
    built.clear()
    t0 = time.process_time()
    result = simulate(cfg)
    ms = 1e3 * (time.process_time() - t0)
    method = result.simulation["method"]
    tasks = sum(built)
    return method, ms, tasks, result.simulation["reason"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="own,256,1024,4096")
    ap.add_argument("--ids", default="")
    ap.add_argument("--no-replay", action="store_true",
                    help="settle56's lengths without the transient's replay (steady_zb2p)")
    args = ap.parse_args()
    steady.MIN_TASKS = 0
    if args.no_replay:
        steady.past_transient = lambda *a: None
    built: list[int] = []
    real = simulator.build_graph

    def counting(*a, **k):
        graph = real(*a, **k)
        built.append(len(graph.tasks))
        return graph

    steady.build_graph = simulator.build_graph = counting
    configs = pipelined_configs(200, "zb_2p", lambda pp: (40 * pp + 8, 80 * pp))
    if args.ids:
        ids = [int(i) for i in args.ids.split(",")]
    else:
        methods: Counter = Counter()
        cpu: Counter = Counter()
        ids = []
        for i, cfg in enumerate(configs):
            method, ms, _, reason = measure(cfg, built)
            kind = method if method == "steady-state" else "full: " + " ".join(reason.split()[:4])
            methods[kind] += 1
            cpu[method] += ms
            if method != "steady-state":
                ids.append(i)
        spent = {k: round(v) for k, v in cpu.items()}
        print(f"own lengths: {dict(methods)}; CPU ms {spent}")
        print("falling back:", ",".join(map(str, ids)))
    lengths = args.lengths.split(",")
    total: Counter = Counter()
    for i in ids:
        row = [f"{i:3d} pp{configs[i].parallel.pp}"]
        for length in lengths:
            cfg = configs[i] if length == "own" else at(configs[i], int(length))
            method, ms, tasks, _ = measure(cfg, built)
            total[length] += ms
            row.append(f"{cfg.num_microbatches:5d} {method[:4]} {ms:6.0f} ms {tasks:8,.0f} t")
        print(" | ".join(row), flush=True)
    print("CPU ms by length:", {k: round(v) for k, v in total.items()})


if __name__ == "__main__":
    main()
