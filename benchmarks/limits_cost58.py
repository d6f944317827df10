"""What ``limits.check_simulation`` charges a long non-Megatron pipeline against the CPU its
simulation takes (zbpeak57 lead 1): main charged the memory estimate's walk of ``2 m vpp pp``
positions and two full zb_2p searches, both growing with the micro-batches ``m``, though the
walk and the searches stopped growing once their periods were proven (zbpeak57). Each row: one
``simulate`` in this process with every ``functools`` cache of trainsim cleared first (the
searches and orders are cached per process), its CPU seconds (``time.process_time``), and the
charge in CPU seconds (tasks' worth x ``limits.TASK_US``): now and as main charged it.

    PYTHONPATH=src python benchmarks/limits_cost58.py [--pp 8] [--ms 64,256,...] [--schedules ...]
"""

from __future__ import annotations

import argparse
import functools
import sys
import time

from trainsim import run_config_from_dict, simulate
from trainsim.limits import (
    POSITIONS_PER_TASK,
    TASK_US,
    ZB_SEARCH_US,
    ZB_SEARCH_VARIANTS,
    simulation_work,
    zb_first_probe,
)
from trainsim.steady_state import simulated_tasks

V_SHAPED = ("zb_v", "dualpipe_v", "dualpipe")


def config(schedule: str, pp: int, m: int):
    """A small model (one layer a virtual stage) on ``pp`` GPUs, ``m`` micro-batches."""
    vpp = 2 if schedule in V_SHAPED or schedule == "interleaved_zb" else 1
    par = {"pp": pp, "pipeline_schedule": schedule}
    if schedule == "interleaved_zb":
        par["vpp"] = vpp
    return run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": pp * vpp, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "parallel": par, "training": {"global_batch_size": m, "seq_length": 256},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": pp, "gpus_per_node": min(pp, 8),
                    "compute_db": None}})


def charged_s(cfg) -> float:
    """What ``simulate`` is checked against now, in CPU seconds (``limits.simulation_work``'s
    three counts of the shortcut's runs, summed)."""
    return sum(simulation_work(cfg, simulated_tasks(cfg))) * TASK_US * 1e-6


def main_charged_s(cfg) -> float:
    """The same as main (b9f1bd1f) counted it: a walk of every position, two full searches."""
    p, m = cfg.parallel, cfg.num_microbatches
    worth = simulated_tasks(cfg)
    if p.pipeline_schedule not in (None, "1f1b", "interleaved_1f1b"):
        worth += 2.0 * m * p.vpp * p.pp / POSITIONS_PER_TASK
    if p.pipeline_schedule == "zb_2p":
        one = float(ZB_SEARCH_VARIANTS * min(zb_first_probe(p.pp), m) + m) * p.pp
        worth += 2 * one * ZB_SEARCH_US / TASK_US
    return worth * TASK_US * 1e-6


def clear_caches() -> None:
    """Every ``functools`` cache of trainsim's modules: a fresh process's searches and orders."""
    for name, module in list(sys.modules.items()):
        if name.startswith("trainsim"):
            for value in list(vars(module).values()):
                if isinstance(value, functools._lru_cache_wrapper):
                    value.cache_clear()


def measured_s(cfg) -> tuple[float, dict]:
    """CPU seconds of one ``simulate`` of ``cfg`` from cleared caches, and how it ran."""
    clear_caches()
    t0 = time.process_time()
    result = simulate(cfg)
    return time.process_time() - t0, result.simulation


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pp", type=int, default=8)
    ap.add_argument("--ms", default="64,256,1024,4096,16384")
    ap.add_argument("--schedules", default="zb_2p,zb_h1,zb_v,interleaved_zb,dualpipe_v,gpipe")
    args = ap.parse_args()
    simulate(config("zb_h1", 2, 16))  # imports and catalogs loaded before the first row
    print("| schedule | m | CPU s | charged s now | charged s main | how |")
    print("|---|---|---|---|---|---|")
    for schedule in args.schedules.split(","):
        for m in map(int, args.ms.split(",")):
            cfg = config(schedule, args.pp, m)
            cpu, how = measured_s(cfg)
            print(f"| {schedule} | {m:,} | {cpu:.3f} | {charged_s(cfg):.3f} | "
                  f"{main_charged_s(cfg):.3f} | {how['method']} |", flush=True)


if __name__ == "__main__":
    main()
