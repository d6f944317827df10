"""Counts behind speed53's changes (issue 21 item 4), on one search's simulations: the event loop's
heap pushes and pops, the tasks compared by ``engine.loop.run``'s kept-timeline near-misses, the
steady-state plans and ladders worked out, and the candidates and memory keys the search built.
Counts are the same whatever the load; the times beside them are not.

    PYTHONPATH=src:benchmarks python benchmarks/speed53_counts.py                # the 22B search
    PYTHONPATH=src:benchmarks python benchmarks/speed53_counts.py --loop-ab /path/to/other/src

``--loop-ab SRC``: ``engine/loop.py`` of another tree loaded beside this one's, both run on the
graphs the search's simulations gave the loop, alternated (``--pairs`` rounds, best of 3 each),
and every timeline (starts, ends, queues) checked to be the same to the bit.
"""

from __future__ import annotations

import heapq
import importlib.util
import sys
import time
from pathlib import Path

from search_profile import problem_parser, recorded_search


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # a dataclass looks its module up while it is made
    spec.loader.exec_module(mod)
    return mod


def _heap_ops(run, graphs) -> tuple[int, int, list]:
    """(pushes, pops, timelines) of ``run`` over ``graphs``."""
    counts = [0, 0]
    push, pop = heapq.heappush, heapq.heappop

    def counted_push(h, x):
        counts[0] += 1
        push(h, x)

    def counted_pop(h):
        counts[1] += 1
        return pop(h)

    heapq.heappush, heapq.heappop = counted_push, counted_pop
    try:
        out = [run(t, p) for t, p in graphs]
    finally:
        heapq.heappush, heapq.heappop = push, pop
    return counts[0], counts[1], out


def _best(run, graphs, n: int = 3) -> float:
    best = float("inf")
    for _ in range(n):
        t = time.process_time()
        for tasks, prefix in graphs:
            run(tasks, prefix)
        best = min(best, time.process_time() - t)
    return best


def main() -> int:
    ap = problem_parser(__doc__)
    ap.add_argument("--loop-ab", default=None, help="another tree's src/ to time its loop against")
    ap.add_argument("--pairs", type=int, default=6)
    args = ap.parse_args()

    import trainsim.steady_state as steady
    from trainsim.engine import loop
    from trainsim.search import candidate as cand
    from trainsim.search.core import EvaluationCache
    from trainsim.search.evaluation import SearchToken, evaluate_batch

    built = {"Candidate": 0, "MemoryKey": 0}
    inits = {name: getattr(cand, name).__init__ for name in built}

    def counting(name):
        def init(self, *a, **k):
            built[name] += 1
            inits[name](self, *a, **k)
        return init

    for name in built:
        getattr(cand, name).__init__ = counting(name)
    try:
        base, batches, first = recorded_search(args, EvaluationCache())
    finally:
        for name, init in inits.items():
            getattr(cand, name).__init__ = init

    graphs, compared, plans = [], [0, 0], [0]
    run, same, plan = loop._run, loop._same_graph, steady.plan

    def recording(tasks, prefix):
        graphs.append((tasks, prefix))
        return run(tasks, prefix)

    def comparing(a, b):
        compared[0] += 1
        n = 0
        for x, y in zip(reversed(a), reversed(b)):
            n += 1
            if not (x.duration_s == y.duration_s and x.stream == y.stream and x.deps == y.deps
                    and x.slows == y.slows):
                break
        compared[1] += n
        return same(a, b)

    loop._run, loop._same_graph = recording, comparing
    steady.plan = lambda cfg: plans.__setitem__(0, plans[0] + 1) or plan(cfg)
    try:
        token = SearchToken(0, -1, time.time_ns())
        for b in batches:
            evaluate_batch(base, b, token)
    finally:
        loop._run, loop._same_graph, steady.plan = run, same, plan
    pushes, pops, ref = _heap_ops(run, graphs)
    print(f"{args.model} on {args.gpus} x {args.gpu}: {first.stats.simulated} simulated; "
          f"{len(graphs)} graphs, {sum(len(t) for t, _ in graphs):,} tasks run; heap pushes "
          f"{pushes:,}, pops {pops:,}; kept-timeline near-misses {compared[0]} (tasks compared "
          f"from the end {compared[1]:,}); steady-state plans {plans[0]:,}; built through "
          f"__init__ (the search, its first run): {built}")
    if args.loop_ab:
        other = _load(Path(args.loop_ab) / "trainsim" / "engine" / "loop.py", "speed53_other_loop")
        o_push, o_pop, out = _heap_ops(other._run, graphs)
        same_bits = all((a.start_s, a.end_s, a.queues) == (b.start_s, b.end_s, b.queues)
                        for a, b in zip(ref, out))
        print(f"other loop: pushes {o_push:,}, pops {o_pop:,}; every timeline the same to the "
              f"bit: {same_bits}")
        mine, theirs = [], []
        for _ in range(args.pairs):
            theirs.append(_best(other._run, graphs))
            mine.append(_best(run, graphs))
        print("other s: " + " ".join(f"{x:.3f}" for x in theirs))
        print("this  s: " + " ".join(f"{x:.3f}" for x in mine))
        print(f"this lower in {sum(m < t for m, t in zip(mine, theirs))} of {args.pairs} pairs; "
              f"best {min(theirs):.3f} -> {min(mine):.3f} s")
        return 0 if same_bits else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
