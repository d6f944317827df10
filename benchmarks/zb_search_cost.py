"""CPU cost of the ZB-2p order search (``workload.zb_search.search``), the figure behind
``limits.ZB_SEARCH_US`` (robust48: a zb_2p iteration of 4,096 micro-batches at pp=4 spent 8.8
CPU s in five searches, and nothing in the work limit counted them).

For a few (pp, micro-batches) shapes, each of the search's variants is built with equal pass
times (as the memory estimate asks) and the CPU seconds per variant per (stage, micro-batch)
position are printed, best of ``--repeat``; the median over the shapes is the constant.

    PYTHONPATH=src python benchmarks/zb_search_cost.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import statistics
import time

from trainsim.limits import ZB_SEARCH_US, ZB_SEARCH_VARIANTS
from trainsim.workload.pipeline_schedules import zb_w_fraction
from trainsim.workload.zb_search import VARIANTS, build_order

SHAPES = ((2, 2048), (4, 256), (4, 1024), (8, 512), (16, 256), (4, 4096))


def per_position_us(pp: int, m: int, repeat: int) -> float:
    """Best-of-``repeat`` CPU microseconds per variant per (stage, micro-batch)."""
    best = float("inf")
    w = zb_w_fraction(4096, 32, 4096)
    for _ in range(repeat):
        t = time.process_time()
        for variant in VARIANTS:
            build_order(pp, m, (1.0, 1.0, 1.0), 0.0, 2.0 * pp, w, variant)
        best = min(best, time.process_time() - t)
    return best / (len(VARIANTS) * pp * m) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    figures = []
    for pp, m in SHAPES:
        us = per_position_us(pp, m, args.repeat)
        figures.append(us)
        print(f"pp={pp:3d} m={m:5d}: {us:6.2f} us per variant-position")
    print(f"median {statistics.median(figures):.2f} us (limits.ZB_SEARCH_US = {ZB_SEARCH_US}); "
          f"variants {len(VARIANTS)} (limits.ZB_SEARCH_VARIANTS = {ZB_SEARCH_VARIANTS})")


if __name__ == "__main__":
    main()
