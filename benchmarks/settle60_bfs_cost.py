"""What a torch looped BFS (``LoopedBFS``) iteration costs by its micro-batch count: the CPU of
one ``simulate`` from cleared caches, how it ran (the periodic shortcut, ``steady_bfs``, or every
micro-batch), the engine tasks it simulated and what ``limits.check_simulation`` charges it
(issue 21 item 2: any config's cost independent of the micro-batches). A small model, one layer
a virtual stage, torchtitan (the one framework that runs it), its default sharding and sends.

    PYTHONPATH=src:benchmarks python benchmarks/settle60_bfs_cost.py [--pp 8] [--vpp 2]
        [--ms 64,256,...] [--dp 1]
"""

from __future__ import annotations

import argparse

from limits_cost58 import measured_s

from trainsim import run_config_from_dict, simulate
from trainsim.limits import TASK_US, simulation_work
from trainsim.steady_state import simulated_tasks


def config(pp: int, vpp: int, m: int, dp: int = 1):
    """A small model (one layer a virtual stage) under LoopedBFS on ``pp x dp`` GPUs."""
    return run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": pp * vpp, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "parallel": {"pp": pp, "vpp": vpp, "pipeline_schedule": "LoopedBFS"},
        "training": {"global_batch_size": m * dp, "seq_length": 256, "framework": "torchtitan"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": pp * dp,
                    "gpus_per_node": min(pp * dp, 8), "compute_db": None}})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pp", type=int, default=8)
    ap.add_argument("--vpp", type=int, default=2)
    ap.add_argument("--dp", type=int, default=1)
    ap.add_argument("--ms", default="64,256,1024,4096,16384")
    args = ap.parse_args()
    simulate(config(2, 1, 16))  # imports and catalogs loaded before the first row
    print("| m | CPU s | tasks simulated | charged s | how |")
    print("|---|---|---|---|---|")
    for m in map(int, args.ms.split(",")):
        cfg = config(args.pp, args.vpp, m, args.dp)
        cpu, how = measured_s(cfg)
        charged = sum(simulation_work(cfg, simulated_tasks(cfg))) * TASK_US * 1e-6
        print(f"| {m:,} | {cpu:.3f} | {simulated_tasks(cfg):,.0f} | {charged:.3f} | "
              f"{how['method']} |", flush=True)


if __name__ == "__main__":
    main()
