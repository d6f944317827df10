"""What re-timing a repeated topology could save a search (issue 21 item 4, speed54): the graphs
its simulations hand the event loop, grouped by topology (every task's stream, dependencies and
what it slows, all equal: only durations differ), and for each lever the count that decides it.

    PYTHONPATH=src:benchmarks python benchmarks/speed54_retime.py             # the 22B search
    PYTHONPATH=src:benchmarks python benchmarks/speed54_retime.py --model mixtral-8x7b \
        --gpu h100-sxm-80gb --gpus 64 --global-batch 256 --seq 4096
    PYTHONPATH=src:benchmarks python benchmarks/speed54_retime.py --loop-ab /path/to/other/src
    PYTHONPATH=src:benchmarks python benchmarks/speed54_retime.py --prices h100-sxm-80gb

1. **A max-plus pass** (each task starts at the latest end of its stream's previous task and of
   its dependencies) gives the event loop's times to the bit where no contention acts: where
   no task that slows a stream (``Task.slows``) runs at any moment a task of that stream runs
   (``engine.loop``'s ``shift`` would book work at a changed rate and move a finish). A task
   that ends as a holder starts, or starts as it ends, counts as meeting it unless the later
   depends on the earlier (then the loop handles the end first; otherwise equal-time events
   go in task order and rounding need not come back to the bit). Checked here on the loop's
   own timeline; ``tests/test_retime_condition.py`` checks that the condition gives the
   loop's times to the bit. Graphs with no holder at all are already one pass
   (``_uncontended_prefix``, ``cut == inf``); the count that matters is the graphs with holders
   that meet the condition.
2. **A cache of the loop's setup** (stream ids, queues, dependents, holders) inside
   ``runs_shared``, keyed by the topology: its key has to be read off the tasks (the builder
   does not give one), so it is worth the setup it skips on repeats less the key it builds on
   every graph. Both are timed here on the recorded graphs, best of 5, the collector paused as
   in ``simulate``. ``--loop-ab SRC``: the recorded graphs run through this tree's loop and
   ``SRC``'s ``engine/loop.py``, each inside a fresh ``runs_shared`` a round (best of 3,
   ``--pairs`` alternated rounds), and every timeline compared to the bit (speed54 timed its
   cache, commit 60c62bb4, so against main's loop; not landed).
3. **Skipping placement** of a repeated topology (the builder split into structure and
   durations): its ceiling is the repeats' share of the builder's placement time, timed per
   graph build here (``pipeline`` plus ``optimizer_steps``). ``--prices GPU``: every graph
   built again, once as the search built it and once with the cluster's GPU swapped for
   ``GPU`` (every price changes), and their topologies compared: a structure that read a
   price (a schedule ordered by pass times, a bucket count from a duration) would differ.
"""

from __future__ import annotations

import gc
import time
from itertools import chain
from operator import attrgetter

from search_profile import problem_parser, recorded_search

_stream, _deps, _slows = attrgetter("stream"), attrgetter("deps"), attrgetter("slows")


def topology(tasks) -> tuple:
    """Every field the loop reads but durations, as one hashable value (C-level maps only)."""
    deps = list(map(_deps, tasks))
    return (tuple(map(_stream, tasks)), tuple(map(_slows, tasks)), tuple(map(len, deps)),
            tuple(chain.from_iterable(deps)))


def contention_free(tasks, tl) -> bool:
    """Whether no task that slows a stream meets a task of that stream: each ends before the
    holder starts (or at its start, as its dependency) or starts after it ends (or at its end,
    as its dependent); ``tests/test_retime_condition.py``."""
    for h, t in enumerate(tasks):
        if t.slows is None or t.slows[0] not in tl.queues:
            continue
        hs, he = tl.start_s[h], tl.end_s[h]
        for j in tl.queues[t.slows[0]]:
            if j != h and not (tl.end_s[j] < hs or tl.start_s[j] > he
                               or tl.end_s[j] == hs and j in t.deps
                               or tl.start_s[j] == he and h in tasks[j].deps):
                return False
    return True


def setup(tasks) -> None:
    """``engine.loop._run``'s setup pass as it stands (what a cached structure would skip):
    per task its duration, dependents, stream's queue and whether it slows a stream."""
    n = len(tasks)
    stream_of, duration, waiting = [0] * n, [0.0] * n, [0] * n
    ids: dict = {}
    queues: list[list[int]] = []
    holders = []
    dependents: list[list[int]] = [[] for _ in range(n)]
    for i, t in enumerate(tasks):
        duration[i] = t.duration_s
        deps = t.deps
        if deps:
            waiting[i] = len(deps)
            for dep in deps:
                dependents[dep].append(i)
        sid = ids.get(t.stream)
        if sid is None:
            sid = ids[t.stream] = len(queues)
            queues.append([])
        stream_of[i] = sid
        queues[sid].append(i)
        if t.slows is not None:
            holders.append(i)


def best(fn, graphs, n: int = 5) -> float:
    out = float("inf")
    for _ in range(n):
        t = time.process_time()
        for g in graphs:
            fn(g)
        out = min(out, time.process_time() - t)
    return out


def loop_ab(graphs, other_src: str, pairs: int) -> None:
    """This tree's loop against ``other_src``'s on ``graphs``, alternated (see the docstring)."""
    import importlib.util
    import sys

    from trainsim.engine import loop

    spec = importlib.util.spec_from_file_location("other_loop",
                                                  f"{other_src}/trainsim/engine/loop.py")
    other = importlib.util.module_from_spec(spec)
    sys.modules["other_loop"] = other  # a dataclass looks its module up while it is made
    spec.loader.exec_module(other)

    def one_round(mod) -> float:
        t = time.process_time()
        with mod.runs_shared():
            for g in graphs:
                mod._run(g, True)
        return time.process_time() - t

    for _ in range(pairs):
        a = min(one_round(other) for _ in range(3))
        b = min(one_round(loop) for _ in range(3))
        print(f"   loop inside runs_shared: other {a:.3f} s, this tree {b:.3f} s ({b / a - 1:+.1%})")
    with loop.runs_shared(), other.runs_shared():
        for g in graphs:
            x, y = loop._run(g, True), other._run(g, True)
            assert (x.start_s, x.end_s, x.queues) == (y.start_s, y.end_s, y.queues)
    print(f"   every timeline the same to the bit ({len(graphs)} graphs)")


def same_under_prices(built, args) -> int:
    """How many of the ``built`` graphs keep their topology with ``args.prices``' GPU."""
    import dataclasses

    import trainsim.simulator as sim
    from trainsim.pricing import Pricer
    from trainsim.search.cli_inputs import build_base

    gpu = build_base(args.model, args.prices, args.gpus, args.global_batch, args.seq, 8, 400.0,
                     "bf16").cluster.gpu

    def topology_of(cfg, layer_source, microbatches) -> tuple:
        g = sim._TaskGraph(cfg, Pricer(cfg), layer_source, microbatches)
        g.pipeline()
        g.optimizer_steps()
        return tuple((t.stream, tuple(t.deps), t.slows is None or t.slows[0]) for t in g.tasks)

    same = 0
    for cfg, layer_source, microbatches in built:
        other = dataclasses.replace(cfg, cluster=dataclasses.replace(cfg.cluster, gpu=gpu))
        same += topology_of(cfg, layer_source, microbatches) == \
            topology_of(other, layer_source, microbatches)
    return same


def main() -> int:
    ap = problem_parser(__doc__)
    ap.add_argument("--loop-ab", default=None, help="another tree's src/ to time its loop against")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--prices", default=None, help="a GPU whose prices to build every graph with")
    args = ap.parse_args()
    import trainsim.simulator as sim
    from trainsim.engine import loop

    runs: list = []  # (tasks, timeline, placement CPU of the graph's build or None)
    placed: dict[int, float] = {}
    built: list = []  # (config, micro-batches) of every graph built
    init = sim._TaskGraph.__init__

    def recorded_init(self, cfg, pricer, layer_source, microbatches=None):
        built.append((cfg, layer_source, microbatches))
        init(self, cfg, pricer, layer_source, microbatches)

    sim._TaskGraph.__init__ = recorded_init
    run_loop = loop._run
    pipeline, steps = sim._TaskGraph.pipeline, sim._TaskGraph.optimizer_steps

    def timed_pipeline(self):
        t = time.process_time()
        try:
            return pipeline(self)
        finally:
            placed[id(self.tasks)] = time.process_time() - t

    def timed_steps(self):
        t = time.process_time()
        try:
            return steps(self)
        finally:
            placed[id(self.tasks)] += time.process_time() - t

    def recording(tasks, prefix):
        tl = run_loop(tasks, prefix)
        runs.append((tasks, tl, placed.get(id(tasks))))
        return tl

    loop._run, sim._TaskGraph.pipeline, sim._TaskGraph.optimizer_steps = \
        recording, timed_pipeline, timed_steps
    try:
        recorded_search(args)
    finally:
        loop._run, sim._TaskGraph.pipeline, sim._TaskGraph.optimizer_steps = \
            run_loop, pipeline, steps
        sim._TaskGraph.__init__ = init

    seen: set = set()
    repeats: list = []
    first_place = repeat_place = 0.0
    for tasks, _, cpu in runs:
        key = topology(tasks)
        again = key in seen
        seen.add(key)
        if again:
            repeats.append(tasks)
        if cpu is not None:
            if again:
                repeat_place += cpu
            else:
                first_place += cpu
    n_tasks = sum(len(t) for t, _, _ in runs)
    no_holder = sum(all(t.slows is None or t.slows[0] not in tl.queues for t in tasks)
                    for tasks, tl, _ in runs)
    free = [tasks for tasks, tl, _ in runs if contention_free(tasks, tl)]
    stretched = [sum(tl.end_s[i] - tl.start_s[i] > t.duration_s * (1 + 1e-9) for i, t in enumerate(tasks))
                 for tasks, tl, _ in runs]
    print(f"{args.model} on {args.gpus} x {args.gpu}: {len(runs)} graphs run, {n_tasks:,} tasks;"
          f" {len(seen)} topologies, {len(repeats)} repeats ({sum(map(len, repeats)):,} tasks)")
    print(f"1. max-plus: {no_holder} graphs with no holder (one pass already); "
          f"{len(free) - no_holder} with holders and no contention ({sum(map(len, free)):,} "
          f"tasks in all); {sum(1 for s in stretched if s)} graphs with a task stretched, "
          f"{sum(stretched):,} tasks stretched (by over 1e-9 of their duration)")
    graphs = [t for t, _, _ in runs]
    was = gc.isenabled()
    gc.disable()
    try:
        loop_s = best(lambda g: run_loop(g, True), graphs)
        setup_s = best(setup, graphs)
        repeat_setup_s = best(setup, repeats)
        key_s = best(lambda g: hash(topology(g)), graphs)
    finally:
        if was:
            gc.enable()
    print(f"2. setup cache: the loop {loop_s:.3f} s, its setup {setup_s:.3f} s, the repeats' "
          f"setup {repeat_setup_s:.3f} s (what a cache skips) against the key on every graph "
          f"{key_s:.3f} s: net {repeat_setup_s - key_s:+.3f} s")
    print(f"3. placement: first builds {first_place:.3f} s, repeated topologies' builds "
          f"{repeat_place:.3f} s (a structure/duration split's ceiling, less pricing the "
          f"durations)")
    if args.prices:
        print(f"   graphs built, the same topology under {args.prices}'s prices: "
              f"{same_under_prices(built, args)} of {len(built)}")
    if args.loop_ab:
        gc.disable()
        try:
            loop_ab(graphs, args.loop_ab, args.pairs)
        finally:
            if was:
                gc.enable()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
