"""The event loop alone on a search's task graphs (issue 21 acceptance 4): the graphs the
22B-on-64-A100 search's simulations hand ``engine.loop._run``, recorded once, then timed
best-of-N under this tree's loop and, with ``--compare``, under another loop module (a file:
``git show main:src/trainsim/engine/loop.py > /tmp/loop_main.py``), alternated, each checked
to give the recorded timelines to the bit; heap pushes and pops counted (a measure of its work
that the machine's load does not move).

    python benchmarks/loop_graphs.py                          # record and time this tree's loop
    python benchmarks/loop_graphs.py --compare /tmp/loop_main.py --repeat 7
    python benchmarks/loop_graphs.py --model llama3-70b --gpu h100-sxm-80gb --gpus 1024 \\
        --global-batch 1024 --seq 4096                        # search_speed.py's default

Prints the graphs and tasks, how many graphs start contended (a task slowing a stream among
the first quarter: the loop runs from time 0), each loop's best and median CPU seconds, its
microseconds a task, and its heap operations.
"""

from __future__ import annotations

import heapq
import importlib.util
import itertools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_profile import problem_parser, recorded_search


def record(args) -> list[tuple[list, bool, list[float], list[float]]]:
    """(tasks, prefix, start, end) of every graph the search's simulations run through the
    loop (the twin graphs and timelines shared as in one worker)."""
    from trainsim.engine import loop
    from trainsim.search.evaluation import SearchToken, evaluate_batch

    base, batches, _ = recorded_search(args)
    graphs = []
    real = loop._run

    def kept(tasks, prefix):
        tl = real(tasks, prefix)
        graphs.append((tasks, prefix, tl.start_s, tl.end_s))
        return tl

    loop._run = kept
    try:
        token = SearchToken(0, -1, time.time_ns())
        for b in batches:
            evaluate_batch(base, b, token)
    finally:
        loop._run = real
    return graphs


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


class _Counting:
    """``heapq`` as the loop calls it, counting pushes and pops."""

    def __init__(self) -> None:
        self.pushes = self.pops = 0
        self.heapify = heapq.heapify

    def heappush(self, h, e) -> None:
        self.pushes += 1
        heapq.heappush(h, e)

    def heappop(self, h):
        self.pops += 1
        return heapq.heappop(h)


def main() -> int:
    ap = problem_parser(__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--compare", default=None, help="another loop module's file")
    args = ap.parse_args()
    from trainsim.engine import loop

    graphs = record(args)
    tasks = sum(len(g[0]) for g in graphs)
    early = sum(1 for g in graphs if any(t.slows for t in g[0][: max(1, len(g[0]) // 4)]))
    print(f"{len(graphs)} graphs, {tasks:,} tasks; {early} contended in their first quarter")
    loops = {"this tree": loop}
    if args.compare:
        loops["compared"] = load(args.compare, "compared_loop")
    times: dict[str, list[float]] = {k: [] for k in loops}
    for _, (name, mod) in itertools.product(range(args.repeat), loops.items()):
        t0 = time.process_time()
        for g in graphs:
            mod._run(g[0], g[1])
        times[name].append(time.process_time() - t0)
    for name, mod in loops.items():
        counting, real = _Counting(), mod.heapq
        mod.heapq = counting
        try:
            same = all(tl.start_s == g[2] and tl.end_s == g[3]
                       for g in graphs for tl in [mod._run(g[0], g[1])])
        finally:
            mod.heapq = real
        best = min(times[name])
        print(f"{name}: best {best:.3f} s, median {statistics.median(times[name]):.3f} s CPU "
              f"({1e6 * best / tasks:.2f} us a task), {counting.pushes:,} heap pushes, "
              f"{counting.pops:,} pops; timelines {'as recorded' if same else 'DIFFERENT'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
