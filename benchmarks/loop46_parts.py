"""Tasks and events per simulation, and the event loop timed by replay (issue 21 items 2-4,
loop46): what the event loop is given in the 22B search, the public validation file and PP64,
and the loop replayed alone on those graphs, two versions alternated in one process.

    PYTHONPATH=src python benchmarks/loop46_parts.py counts [search|public|pp64]
    PYTHONPATH=src python benchmarks/loop46_parts.py loop [search|public] --against /other/tree/src \
        [--reps 8]

``counts``: every graph the event loop runs (``engine.loop._run``) in that source: tasks per
graph by stream, the tasks that slow a stream, the tasks a chain merge could fold into their
stream's previous task (depending on it alone or on nothing, it depended on by nothing else,
neither slowing nor on a stream anything slows: then its start is that task's end), the
uncontended prefix's outcome and the loop's heap pushes and pops. ``loop``: the source's
graphs run by this tree's ``engine.loop._run`` and by the other tree's (loaded as a module of
its own), alternated, best of ``--reps``; every start, end and queue must be the same.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import heapq
import importlib.util
import sys
import time
from collections import Counter
from typing import Any

PUBLIC = "../shared/validation/training_public.csv"


def _source(which: str) -> None:
    """Run the source whose graphs are recorded: the 22B search (serial), the public file
    (one process) or PP64 x 2,048 micro-batches, 1F1B and vpp 2."""
    if which == "search":
        from trainsim.search import make_executor, search
        from trainsim.search.cli import build_base

        base = build_base("gpt-22b", "a100-sxm-80gb", 64, 512, 2048, 8, 400.0, "bf16")
        search(base, [64], executor=make_executor("serial", None))
    elif which == "public":
        from trainsim.validate import validate_file

        validate_file(PUBLIC, workers=1)
    else:
        from trainsim import run_config_from_dict, simulate

        for vpp in (None, 2):
            simulate(run_config_from_dict({
                "model": {"preset": "llama3-70b", "num_layers": 128},
                "parallel": {"tp": 8, "pp": 64, "vpp": vpp},
                "training": {"global_batch_size": 2048, "micro_batch_size": 1,
                             "seq_length": 4096},
                "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 512, "gpus_per_node": 8}}))


def record(which: str) -> tuple[list[list[Any]], Counter]:
    """The loop's graphs in ``which`` (copied: stream, duration, deps, slows) and its heap
    pushes and pops."""
    from trainsim.engine import loop

    graphs: list[list[Any]] = []
    heap: Counter = Counter()
    run, push, pop = loop._run, heapq.heappush, heapq.heappop

    inside = [False]  # the loop's heap alone (the search keeps a heap of its own)

    def counted_push(h: list, x: Any) -> None:
        heap["pushes"] += inside[0]
        push(h, x)

    def counted_pop(h: list) -> Any:
        heap["pops"] += inside[0]
        return pop(h)

    def recording(tasks: list, prefix: bool) -> Any:
        graphs.append([(t.stream, t.duration_s, list(t.deps), t.slows) for t in tasks])
        inside[0] = True
        try:
            return run(tasks, prefix)
        finally:
            inside[0] = False

    loop._run, heapq.heappush, heapq.heappop = recording, counted_push, counted_pop
    try:
        _source(which)
    finally:
        loop._run, heapq.heappush, heapq.heappop = run, push, pop
    return graphs, heap


def counts(which: str) -> None:
    import math

    from trainsim.engine import loop

    graphs, heap = record(which)
    c: Counter = Counter({"chain-mergeable": 0})
    cuts: Counter = Counter()
    for g in graphs:
        n = len(g)
        c["tasks"] += n
        targets = {sl[0] for *_, sl in g if sl is not None}
        dependents = [0] * n
        for _, _, deps, _ in g:
            for d in deps:
                dependents[d] += 1
        prev: dict = {}
        for i, (stream, _, deps, sl) in enumerate(g):
            c["stream " + stream[1]] += 1
            c["slowing"] += sl is not None
            p = prev.get(stream)
            if (p is not None and set(deps) <= {p} and dependents[p] == (p in deps)
                    and sl is None and g[p][3] is None and stream not in targets):
                c["chain-mergeable"] += 1
            prev[stream] = i
        tasks = [loop.Task(s, d, deps, "", (), None, sl) for s, d, deps, sl in g]
        ids = {t.stream: k for k, t in enumerate({t.stream: t for t in tasks}.values())}
        sid = [ids[t.stream] for t in tasks]
        hold = [None if t.slows is None or t.slows[0] not in ids else (ids[t.slows[0]], 0)
                for t in tasks]
        cut = loop._uncontended_prefix(tasks, sid, [t.duration_s for t in tasks], hold,
                                       len(ids), [0.0] * n, [0.0] * n)
        kind = "none slows" if cut == math.inf else "contended from the start" if not cut \
            else "prefix, then the loop"
        cuts[kind] += 1
        c["tasks in graphs: " + kind] += n
    print(f"{which}: {len(graphs)} graphs run by the loop, {c['tasks']:,} tasks "
          f"({c['tasks'] / max(1, len(graphs)):.0f} a graph), heap pushes {heap['pushes']:,}, "
          f"pops {heap['pops']:,} ({heap['pops'] / max(1, c['tasks']):.2f} a task)")
    for key in sorted(c):
        if key != "tasks":
            print(f"  {key:<45} {c[key]:>10,} {c[key] / max(1, c['tasks']):7.1%}")
    print("  graphs by prefix outcome:", dict(cuts))


def _module(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def loop_replay(which: str, against: str, reps: int) -> None:
    from trainsim.engine import loop

    other = _module(f"{against}/trainsim/engine/loop.py", "other_loop")
    graphs, _ = record(which)
    gs = [[loop.Task(s, d, list(deps), "", (), None, sl) for s, d, deps, sl in g]
          for g in graphs]
    digests = []
    for run in (loop._run, other._run):
        h = hashlib.sha256()
        for g in gs:
            tl = run(g, True)
            h.update(repr((tl.start_s, tl.end_s, tl.queues)).encode())
        digests.append(h.hexdigest())
    assert digests[0] == digests[1], "the timelines differ"
    times = _alternate({"this tree": lambda: [loop._run(g, True) for g in gs],
                        against: lambda: [other._run(g, True) for g in gs]}, reps)
    n = sum(map(len, gs))
    print(f"{which}: {len(gs)} loop graphs, {n:,} tasks, timelines identical "
          f"(sha256 {digests[0][:12]})")
    for name, ts in times.items():
        print(f"  {name:<30} best {min(ts):.3f} s ({min(ts) / n * 1e6:.2f} us a task), "
              f"median {sorted(ts)[len(ts) // 2]:.3f} s")


def _alternate(runs: dict, reps: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in runs}
    was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(reps):
            for name, fn in runs.items():
                t0 = time.process_time()
                fn()
                times[name].append(time.process_time() - t0)
    finally:
        if was:
            gc.enable()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("counts", "loop"))
    ap.add_argument("source", nargs="?", default="search", choices=("search", "public", "pp64"))
    ap.add_argument("--against", default="/work/main/src")
    ap.add_argument("--reps", type=int, default=8)
    args = ap.parse_args()
    if args.mode == "counts":
        counts(args.source)
    else:
        loop_replay(args.source, args.against, args.reps)


if __name__ == "__main__":
    main()
