"""ss51: zb_2p's periodic shortcut over tests/test_steady_zb2p.py's 200 random configs (40 pp + 8
to 80 pp micro-batches): how many take it, and the shortcut path's in-process CPU (each config
simulated in full first, so its order search is cached and not counted), by outcome.

    PYTHONPATH=src:tests python benchmarks/ss51_zb2p_sample.py [--n 200]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from helpers import pipelined_configs

import trainsim.steady_state as steady
from trainsim import simulate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
    steady.MIN_TASKS = 0  # as the test: the shortcut on small runs too
    count, cpu = Counter(), Counter()
    for cfg in pipelined_configs(args.n, "zb_2p", lambda pp: (40 * pp + 8, 80 * pp)):
        simulate(cfg, keep_timeline=True)
        t0 = time.process_time()
        method = simulate(cfg).simulation["method"]
        cpu[method] += time.process_time() - t0
        count[method] += 1
    for method in sorted(count):
        print(f"{method:12s} {count[method]:4d} configs  {1e3 * cpu[method]:8.0f} CPU ms")
    print(f"{'all':12s} {sum(count.values()):4d} configs  {1e3 * sum(cpu.values()):8.0f} CPU ms")


if __name__ == "__main__":
    main()
