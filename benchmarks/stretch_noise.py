"""Where a task's "stretch" is rounding and where contention (2026-11-29, chakra57): the data
behind ``trainsim.engine.loop.STRETCH_ULPS``.

Builds fuzz51's random exportrt runs (dense, MoE and MLA bases; schedules, parallel sizes,
data-parallel engines, overlaps), runs each task graph and splits every task whose end is past
``start + duration`` in two: tasks that a task slowing their stream overlapped for a positive
time (contention) and tasks none did (rounding). It prints, in units in the last place of the
task's end time (``math.ulp(end_s)``), the largest rounding difference and the smallest
contention one.

    PYTHONPATH=src python benchmarks/stretch_noise.py [--seeds 7,11,12,13] [--runs 60]
"""
from __future__ import annotations

import argparse
import collections
import copy
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def measure(seed: int, runs: int) -> tuple[list[float], list[float]]:
    """(rounding, contention) differences of ``runs`` random runs of ``seed``, in units in
    the last place of each task's end time."""
    import fuzz51

    from trainsim.catalog import run_config_from_dict
    from trainsim.engine import run
    from trainsim.errors import TrainsimError
    from trainsim.simulator import Pricer, build_tasks

    rng = random.Random(seed)
    rounding: list[float] = []
    contention: list[float] = []
    for _ in range(runs):
        cfg = fuzz51._random_run(rng)
        try:
            rc = run_config_from_dict(copy.deepcopy(cfg))
            tasks, _ = build_tasks(rc, Pricer(rc), None)
        except TrainsimError:
            continue  # a combination the config refuses
        tl = run(tasks)
        holders = collections.defaultdict(list)
        for j, t in enumerate(tasks):
            if t.slows is not None:
                holders[t.slows[0]].append(j)
        for i, t in enumerate(tasks):
            end = tl.end_s[i]
            diff = end - tl.start_s[i] - t.duration_s
            if diff <= 0:
                continue
            overlap = max((min(end, tl.end_s[j]) - max(tl.start_s[i], tl.start_s[j])
                           for j in holders.get(t.stream, [])), default=0.0)
            (contention if overlap > 0 else rounding).append(diff / math.ulp(end))
    return rounding, contention


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="7,11,12,13")
    ap.add_argument("--runs", type=int, default=60)
    args = ap.parse_args(argv)
    for seed in (int(s) for s in args.seeds.split(",")):
        rounding, contention = measure(seed, args.runs)
        print(f"seed {seed}: rounding {len(rounding)} tasks, at most "
              f"{max(rounding, default=0.0):.3g} ulp; contention {len(contention)} tasks, at "
              f"least {min(contention, default=math.inf):.3g} ulp")
    return 0


if __name__ == "__main__":
    sys.exit(main())
