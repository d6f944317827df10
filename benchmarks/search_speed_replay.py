"""The search's bounds replayed alone (issue 21 item 4), to time two trees' ``Bounds`` against
each other where a whole search's CPU moves 10 % with the machine's load.

    PYTHONPATH=src python benchmarks/search_speed_replay.py            # the 22B-on-64-A100 search
    PYTHONPATH=/other/src python benchmarks/search_speed_replay.py     # the same, another tree

One serial search records, in order, every passes' and refined bound it asks
(``Bounds.passes_bound`` / ``Bounds.refined``, outermost calls) and every layout whose costs
it works out (``Bounds._layout_costs``); then each is replayed ``--reps`` times on a new
``Bounds`` of the same base: ``bounds`` with the search's priced shard shapes, layouts and
pricers handed over (what is left is the bounds' own bookkeeping: rows, shapes, stage sums,
composition), ``layouts`` with its pricers only (every layout's collectives, steps and ZeRO-3
floors worked out again). Prints the best and median process CPU of each and a digest of the
values (every bound as ``float.hex``, every layout's costs as ``repr``): two trees whose
digests agree gave the same floats.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from search_speed_family import add_problem_arguments


def record(model: str, gpu: str, gpus: int, global_batch: int, seq: int
           ) -> tuple[Any, list[tuple[bool, Any]], list[tuple[Any, Any]]]:
    """Run the search serially; its ``Bounds``, the bounds asked (passes' bound?, candidate)
    and the layouts asked (config, virtual stages), in order."""
    import trainsim.search.lower_bounds as lb
    from trainsim.search import make_executor, search
    from trainsim.search.cli import build_base

    asked: list[tuple[bool, Any]] = []
    layouts: list[tuple[Any, Any]] = []
    kept: dict[str, Any] = {}
    depth = [0]
    originals = lb.Bounds.refined, lb.Bounds.passes_bound, lb.Bounds._layout_costs

    def outer(fn: Any, passes: bool) -> Any:
        def wrapper(self: Any, c: Any) -> Any:
            kept["bounds"] = self
            if not depth[0]:
                asked.append((passes, c))
            depth[0] += 1
            try:
                return fn(self, c)
            finally:
                depth[0] -= 1
        return wrapper

    def layout(self: Any, cfg: Any, ranges: Any) -> Any:
        layouts.append((cfg, ranges))
        return originals[2](self, cfg, ranges)

    lb.Bounds.refined, lb.Bounds.passes_bound = outer(originals[0], False), outer(originals[1], True)
    lb.Bounds._layout_costs = layout  # type: ignore[method-assign]
    try:
        base = build_base(model, gpu, gpus, global_batch, seq, 8, 400.0, "bf16")
        search(base, [gpus], executor=make_executor("serial", None), cache=None)
    finally:
        lb.Bounds.refined, lb.Bounds.passes_bound, lb.Bounds._layout_costs = originals
    return kept["bounds"], asked, layouts


def replay(bounds: Any, asked: list[tuple[bool, Any]], layouts: list[tuple[Any, Any]],
           reps: int) -> dict[str, tuple[float, float, str]]:
    """(best, median CPU seconds, digest) of each replay."""
    from trainsim.search.lower_bounds import Bounds

    out = {}
    for what in ("bounds", "layouts"):
        times, values = [], ""
        for _ in range(reps):
            b = Bounds(bounds.base)
            b._pricers = dict(bounds._pricers)
            if what == "bounds":
                b.configs = bounds.configs
                b._passes, b._layouts = dict(bounds._passes), dict(bounds._layouts)
                p, r = b.passes_bound, b.refined
                t = time.process_time()
                got = [p(c) if passes else r(c) for passes, c in asked]
                times.append(time.process_time() - t)
                values = repr([v.hex() for v in got])
            else:
                t = time.process_time()
                costs = [b._layout_costs(cfg, ranges) for cfg, ranges in layouts]
                times.append(time.process_time() - t)
                values = repr(costs)
        times.sort()
        out[what] = (times[0], times[len(times) // 2],
                     hashlib.sha256(values.encode()).hexdigest()[:12])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_problem_arguments(ap)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    bounds, asked, layouts = record(args.model, args.gpu, args.gpus, args.global_batch,
                                    args.seq)
    gc.disable()  # (the search runs with its collector paused: trainsim.search.core)
    got = replay(bounds, asked, layouts, args.reps)
    print(f"{args.model} on {args.gpus} x {args.gpu}: {len(asked):,} bounds asked, "
          f"{len(layouts):,} layouts asked ({len(bounds._layouts):,} distinct); "
          f"load {os.getloadavg()[0]:.1f}")
    for what, (best, median, digest) in got.items():
        print(f"  {what:<8} best {best:.3f} s, median {median:.3f} s of {args.reps}; "
              f"digest {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
