"""zbpeak57: the memory estimate's in-flight peak (``workload.schedule.schedule_peak_in_flight``)
for the schedules that walk their order, every rank of pp 8, counts and one chunk weight: the
order positions walked, the zb_2p search's placed passes, and in-process CPU ms, at 256 to
16,384 micro-batches (orders and searches not cached between lengths). Runs on any checkout
(main: ``PYTHONPATH=/work/main/src``), so the two can be compared.

    PYTHONPATH=src python benchmarks/peak_period_cost.py [--lengths 256,1024,4096,16384] [--pp 8]
"""

from __future__ import annotations

import argparse
import time

from trainsim.workload import pipeline_schedules as ps
from trainsim.workload import schedule as sch
from trainsim.workload import zb_search

NAMES = ("gpipe", "zb_h1", "zb_h2", "zb_v", "interleaved_zb", "dualpipe", "dualpipe_v", "zb_2p")


def _clear() -> None:
    for f in (sch._order, ps.stage_order, ps._equal_zb_2p, ps._chosen,
              getattr(ps, "equal_zb_2p_peak_orders", None)):
        if f is not None:
            f.cache_clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="256,1024,4096,16384")
    ap.add_argument("--pp", type=int, default=8)
    args = ap.parse_args()
    walked, placed = [0], [0]
    real_walk, real_place = sch.peak_in_flight, zb_search._Builder.place

    def walk(order, weight=None):
        walked[0] += len(order)
        return real_walk(order, weight)

    def place(self, stage, kind):
        placed[0] += 1
        real_place(self, stage, kind)

    sch.peak_in_flight = walk
    zb_search._Builder.place = place
    pp = args.pp
    print("| schedule | " + " | ".join(f"{m} positions / placed / CPU ms"
                                        for m in args.lengths.split(",")) + " |")
    for name in NAMES:
        vpp = 2 if name in ("zb_v", "dualpipe_v", "interleaved_zb") else 1
        row = [name]
        for m in map(int, args.lengths.split(",")):
            _clear()
            walked[0] = placed[0] = 0
            t0 = time.process_time()
            for stage in range(pp):
                sch.schedule_peak_in_flight(stage, pp, vpp, m, name)
                sch.schedule_peak_in_flight(stage, pp, vpp, m, name, weight={0: 1.0, 1: 2.0})
            ms = 1e3 * (time.process_time() - t0)
            row.append(f"{walked[0]:,} / {placed[0]:,} / {ms:,.0f}")
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
