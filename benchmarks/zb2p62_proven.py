"""zb2p62: zb_2p's shortcut over tests/test_steady_zb2p.py's 200 random configs (``MIN_TASKS`` 0
as the tests): how many take the periodic shortcut, how each of zbproof61's 11 ran (which run,
or every micro-batch and why), the CPU ms of the shortcut's ``simulate`` against the full
simulation's and, with ``--check``, the largest relative difference from the full simulation
over the iteration time and every breakdown entry (``zbproof61_bfs.largest_difference``).
``--scale 1,2,4`` runs the ids at that many times their micro-batches instead (how the cost
follows the count). ``--pp64`` times benchmarks/pp64_speed.py's PP64 shape under zb_2p at
2,048 micro-batches. Runs on any checkout (main: ``PYTHONPATH=/work/main/src:tests:benchmarks``).

    PYTHONPATH=src:tests:benchmarks python benchmarks/zb2p62_proven.py [--ids ...] [--check]
    PYTHONPATH=src:tests:benchmarks python benchmarks/zb2p62_proven.py --ids 9,28 --scale 1,2,4
    PYTHONPATH=src:tests:benchmarks python benchmarks/zb2p62_proven.py --pp64
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from test_steady_zb2p import _configs
from zbproof61_bfs import largest_difference
from zbproof61_zb_drift import FALLBACKS

import trainsim.steady_state as steady
from trainsim import simulate


def scaled(cfg, factor: float):
    """``cfg`` with ``factor`` times its micro-batches (the global batch scaled)."""
    m0, tr = cfg.num_microbatches, cfg.training
    m = int(m0 * factor)
    return dataclasses.replace(cfg, training=dataclasses.replace(
        tr, global_batch_size=tr.global_batch_size // m0 * m))


def cpu_ms(cfg, **kw) -> tuple[float, object]:
    t0 = time.process_time()
    r = simulate(cfg, **kw)
    return 1e3 * (time.process_time() - t0), r


def pp64() -> None:
    from trainsim import run_config_from_dict

    cfg = run_config_from_dict({
        "model": {"preset": "llama3-70b", "num_layers": 128},
        "parallel": {"tp": 8, "pp": 64, "pipeline_schedule": "zb_2p"},
        "training": {"global_batch_size": 2048, "micro_batch_size": 1, "seq_length": 4096},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 512, "gpus_per_node": 8}})
    first, r = cpu_ms(cfg)
    best = min(cpu_ms(cfg)[0] for _ in range(3))
    print(f"PP64 x 2,048 zb_2p: first {first:.0f} ms, best of 3 {best:.0f} ms CPU; "
          f"{r.simulation['method']}: {r.simulation['reason']}; iteration {r.iteration_time_s:.6f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ids", default=FALLBACKS)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--scale", default="")
    ap.add_argument("--pp64", action="store_true")
    args = ap.parse_args()
    if args.pp64:
        pp64()
        return
    steady.MIN_TASKS = 0
    configs = _configs(200)
    if args.scale:
        for i in map(int, args.ids.split(",")):
            for factor in map(float, args.scale.split(",")):
                cfg = scaled(configs[i], factor)
                ms, r = cpu_ms(cfg)
                print(f"#{i} m {cfg.num_microbatches}: {r.simulation['method']} {ms:.0f} ms "
                      f"({r.simulation['reason']})", flush=True)
        return
    worst = 0.0
    for i in map(int, args.ids.split(",")):
        cfg = configs[i]
        ms_fast, fast = cpu_ms(cfg)
        ms_full, full = cpu_ms(cfg, keep_timeline=True)
        line = (f"#{i} pp {cfg.parallel.pp} m {cfg.num_microbatches}: {fast.simulation['method']}"
                f" {ms_fast:.0f} ms, full {ms_full:.0f} ms ({fast.simulation['reason']})")
        if args.check:
            diff = largest_difference(fast, full)
            worst = max(worst, diff)
            line += f" diff {diff:.1e}"
        print(line, flush=True)
    if args.check:
        print(f"largest relative difference {worst:.1e}")
    proven = sum(simulate(cfg).simulation["method"] == "steady-state" for cfg in configs)
    print(f"proven {proven} of {len(configs)}")


if __name__ == "__main__":
    main()
