"""ss52: how pp-2 DualPipe runs take the periodic shortcut -- ss51's 40 random configs at their
own 32-88 micro-batches (seed 51) and tests/test_steady_affine.py's 200 (seed 52, 32-600
micro-batches, every one with overlapped sends) -- by the way each was proven or why not, with
the shortcut path's and the full simulation's in-process CPU (each config's full simulation
first; ``MIN_TASKS`` 0, as the tests, so the short ones take the shortcut too).

    PYTHONPATH=src:tests python benchmarks/ss52_pp2_sample.py [--n 200]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import Counter

from helpers import pp2_dualpipe_configs

import trainsim.steady_state as steady
from trainsim import simulate


def way(result) -> str:
    """The method and the first words of its reason (how proven, or why not)."""
    reason = result.simulation.get("reason", "")
    for key, name in (("one mode", "ladder ended: one mode"),
                      ("transient or contention", "ladder exhausted"),
                      ("affine orbit", "affine orbit"), ("loop's state", "state, one run"),
                      ("a truncated run of", "one run"), ("truncated runs of", "two runs")):
        if key in reason:
            return f"{result.simulation['method']}: {name}"
    return f"{result.simulation['method']}: {reason[:40]}"


def sample(name: str, cfgs: list) -> None:
    count, cpu, full_cpu = Counter(), Counter(), Counter()
    for cfg in cfgs:
        t0 = time.process_time()
        simulate(cfg, keep_timeline=True)
        t1 = time.process_time()
        result = simulate(cfg)
        t2 = time.process_time()
        key = way(result)
        count[key] += 1
        cpu[key] += t2 - t1
        full_cpu[key] += t1 - t0
    for key in sorted(count):
        print(f"{name:8s} {key:38s} {count[key]:4d}  shortcut {1e3 * cpu[key]:7.0f} CPU ms"
              f"  full {1e3 * full_cpu[key]:7.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
    steady.MIN_TASKS = 0
    sample("seed 51", pp2_dualpipe_configs(40))
    overlapped = [dataclasses.replace(cfg, parallel=dataclasses.replace(
        cfg.parallel, overlap_p2p_comm=True)) for cfg in pp2_dualpipe_configs(args.n, 52, (32, 600))]
    sample("seed 52", overlapped)


if __name__ == "__main__":
    main()
