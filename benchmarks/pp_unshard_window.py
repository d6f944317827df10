"""torchtitan's pipeline runtime window (profile ``pp_unshard_window``, torch >= 2.10): a few
FSDP + interleaved pipeline runs with the window and as if the profile line were removed.

Prints, per run: the all-gathers of each step (UNSHARD tasks; without the window one per chunk
inside its first forward), the iteration time and rank 0's allocated peak. No measurement of
such a run is published; these are the mechanism's own figures (benchmarks/RESULTS.md, 56th
session, ppwindow56).

    PYTHONPATH=src python benchmarks/pp_unshard_window.py
"""

from __future__ import annotations

from unittest import mock

import trainsim.workload.unshard_window as window_mod
from trainsim import simulate
from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import profile_supports
from trainsim.memory import cache_clear, estimate_stage_memory
from trainsim.pricing import Pricer
from trainsim.simulator import build_graph

RUNS = [  # (label, model, layers, tp, pp, vpp, GPUs, global batch)
    ("llama3-8b 16L pp2 vpp2", "llama3-8b", 16, 1, 2, 2, 8, 16),
    ("llama3-8b 16L pp2 vpp4", "llama3-8b", 16, 1, 2, 4, 8, 16),
    ("llama3-8b 16L pp2 vpp8", "llama3-8b", 16, 1, 2, 8, 8, 16),
    ("llama3-8b 32L pp2 vpp2", "llama3-8b", 32, 1, 2, 2, 8, 64),
    ("llama3-8b 32L pp2 vpp4", "llama3-8b", 32, 1, 2, 4, 8, 64),
    ("llama3-8b 32L pp2 vpp8", "llama3-8b", 32, 1, 2, 8, 8, 64),
    ("llama3-70b tp4 pp4 vpp2", "llama3-70b", 80, 4, 4, 2, 64, 64),
    ("llama3-70b tp4 pp4 vpp5", "llama3-70b", 80, 4, 4, 5, 64, 64),
]


def config(model: str, layers: int, tp: int, pp: int, vpp: int, gpus: int, batch: int):
    return run_config_from_dict({
        "model": {"preset": model, "num_layers": layers},
        "parallel": {"tp": tp, "pp": pp, "vpp": vpp, "zero_stage": 3,
                     "data_parallel_impl": "fsdp2", "recompute": "full"},
        "training": {"global_batch_size": batch, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16", "framework": "torchtitan", "framework_version": "2026-01"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": gpus, "gpus_per_node": 8},
    })


def figures(cfg) -> tuple[int, float, float]:
    cache_clear()
    graph = build_graph(cfg, Pricer(cfg))
    gathers = sum("UNSHARD all-gather" in t.label for t in graph.tasks)
    return (gathers, simulate(cfg).iteration_time_s,
            estimate_stage_memory(cfg, 0).allocated / 2**30)


def without(cfg, name):
    return False if name == "pp_unshard_window" else profile_supports(cfg, name)


def main() -> None:
    print("| run | m | gathers (window) | iteration s, no window | with window | change "
          "| rank 0 peak GiB, no window | with window |")
    print("|---|---|---|---|---|---|---|---|")
    for label, *shape in RUNS:
        cfg = config(*shape)
        gathers, t, mem = figures(cfg)
        with mock.patch.object(window_mod, "profile_supports", without):
            _, t0, mem0 = figures(cfg)
        print(f"| {label} | {cfg.num_microbatches} | {gathers} | {t0:.4f} | {t:.4f} | "
              f"{100 * (t / t0 - 1):+.2f} % | {mem0:.2f} | {mem:.2f} |")


if __name__ == "__main__":
    main()
