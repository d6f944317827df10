"""hsearch51: the search's lower bounds against every simulated configuration of a hybrid
model's space, and the pruned search's top k against the exhaustive ranking.

    PYTHONPATH=src python benchmarks/hybrid_search_bounds.py                  # nemotron-h-8b, 16 H100
    PYTHONPATH=src python benchmarks/hybrid_search_bounds.py --model nemotron-3-nano-30b-a3b

Prints, per bound (FLOP, refined, passes, scheduled), how many simulated iterations it exceeds
and its largest ratio to the iteration; then whether the top k (``--rank-by``) is the same.
"""

from __future__ import annotations

import argparse
import math
import time

from trainsim.search.cli_inputs import build_base
from trainsim.search.core import search
from trainsim.search.lower_bounds import Bounds, lower_bound_s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="nemotron-h-8b")
    ap.add_argument("--gpu", default="h100-sxm-80gb")
    ap.add_argument("--gpus", type=int, default=16)
    ap.add_argument("--global-batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--rank-by", default="split", choices=("split", "layout", "config"))
    a = ap.parse_args(argv)
    base = build_base(a.model, a.gpu, a.gpus, a.global_batch, a.seq, 8, 400.0, "bf16")
    runs = {}
    for exhaustive in (False, True):
        t0 = time.perf_counter()
        runs[exhaustive] = r = search(base, [a.gpus], top_k=a.top, exhaustive=exhaustive,
                                      rank_by=a.rank_by)
        print(f"exhaustive={exhaustive}: {r.stats.simulated} simulated, "
              f"{time.perf_counter() - t0:.1f} s")
    bounds = Bounds(base)
    over = {k: 0 for k in ("flop", "refined", "passes", "scheduled")}
    worst = dict.fromkeys(over, 0.0)
    n = 0
    for e in runs[True].evaluated:
        c, t = e.candidate, e.iteration_time_s
        if not math.isfinite(t):
            continue
        n += 1
        got = {"flop": lower_bound_s(c.mem, base), "refined": bounds.refined(c),
               "passes": bounds.passes_bound(c), "scheduled": bounds.scheduled(c)}
        for k, v in got.items():
            over[k] += v > t
            worst[k] = max(worst[k], v / t)
    print(f"{n} simulated iterations; bounds above them: {over}")
    print("largest bound / iteration: " + ", ".join(f"{k} {v:.10f}" for k, v in worst.items()))

    def top(r):
        return [(repr(x.evaluation.candidate), x.evaluation.iteration_time_s.hex()) for x in r.top]
    same = top(runs[False]) == top(runs[True])
    print(f"top {a.top} ({a.rank_by}) the same as the exhaustive ranking: {same}")
    return 0 if same and not any(over.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
