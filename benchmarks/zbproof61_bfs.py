"""zbproof61: torch's looped BFS shortcut over tests/test_steady_bfs.py's 200 random configs
(``MIN_TASKS`` 0 as the tests): how each ran (the periodic shortcut on which truncated runs, or
every micro-batch and why), the CPU ms of the shortcut's ``simulate`` and, with ``--check``, the
largest relative difference from the full simulation over the iteration time and every breakdown
entry. Runs on any checkout (main: ``PYTHONPATH=/work/main/src:tests``).

    PYTHONPATH=src:tests python benchmarks/zbproof61_bfs.py [--n 200] [--ids 6,...] [--check]
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter

from test_steady_bfs import _configs

import trainsim.steady_state as steady
from trainsim import simulate


def largest_difference(fast, full) -> float:
    """The largest difference of the iteration time and the breakdown entries, relative to the
    larger of the entry and the iteration time (as ``helpers.assert_same_simulation`` holds
    them to 1e-9)."""
    pairs = [(fast.iteration_time_s, full.iteration_time_s)]
    pairs += [(fast.breakdown.get(k, 0.0), v) for k, v in full.breakdown.items()]
    return max(abs(a - b) / max(abs(b), full.iteration_time_s) for a, b in pairs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--ids", default="")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    steady.MIN_TASKS = 0
    configs = _configs(args.n)
    ids = [int(i) for i in args.ids.split(",")] if args.ids else range(len(configs))
    runs: Counter = Counter()
    cpu, worst = 0.0, 0.0
    for i in ids:
        cfg = configs[i]
        t0 = time.process_time()
        fast = simulate(cfg)
        ms = 1e3 * (time.process_time() - t0)
        cpu += ms
        how = fast.simulation
        found = re.search(r"runs of ([\d,]+) and ([\d,]+)", how["reason"])
        runs[found.group(1) if found else how["method"]] += 1
        line = (f"#{i} pp {cfg.parallel.pp} vpp {cfg.parallel.vpp} m {cfg.num_microbatches}: "
                f"{how['method']} {ms:.1f} ms ({how['reason']})")
        diff = 0.0
        if args.check:
            diff = largest_difference(fast, simulate(cfg, keep_timeline=True))
            worst = max(worst, diff)
            line += f" diff {diff:.1e}"
        if args.ids or how["method"] != "steady-state" or args.check and diff > 1e-11:
            print(line, flush=True)
    proven = sum(n for k, n in runs.items() if k not in ("full",))
    print(f"proven {proven} of {len(ids)}; A's length (or method) taken: "
          f"{dict(sorted(runs.items(), key=lambda kv: (len(kv[0]), kv[0])))}")
    print(f"CPU of the shortcut's simulate calls: {cpu:,.0f} ms"
          + (f"; largest relative difference {worst:.1e}" if args.check else ""))


if __name__ == "__main__":
    main()
