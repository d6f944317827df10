"""Where a search's CPU goes: its main process alone and its simulations alone, each replayed
in one process and timed best-of-N (issue 21 acceptance 4; less noisy on a shared machine than
`search_speed.py`'s one run, whose main process and workers also wait on each other).

    python benchmarks/search_profile.py                      # the 22B search of issue 21
    python benchmarks/search_profile.py --model llama3-70b --gpu h100-sxm-80gb --gpus 1024 \
        --global-batch 1024 --seq 4096                       # search_speed.py's default
    python benchmarks/search_profile.py --repeat 5 --profile main   # cProfile, top 25
    python benchmarks/search_profile.py --parts               # both parts' CPU by part
    python benchmarks/search_profile.py --sample main         # sampled shares, by function

1. The serial search runs once, recording the batches it simulates.
2. *main*: the same search again with every evaluation a cache hit (enumeration, bounds,
   memory checks, heap), best of ``--repeat``.
3. *simulations*: ``evaluate_batch`` over the recorded batches under a new search token each
   time (prices, twin graphs and timelines shared as in one worker), best of ``--repeat``.

Prints one dated line: counts, both CPU times, and simulations per CPU-second of their sum
(what one worker and the main process cost together; the executor's own overhead aside).
``--parts`` adds one more round of the main process and of the simulations with process-CPU
wrappers around their parts (refined bounds, configs built, memory floors; graphs built,
event-loop runs, steady-state attempts) and the graphs' shape: how many tasks
could be merged with the next task of their stream (neither slows a stream, and only that
task waits on the first: the exact limit of contracting chains before the loop runs), how
many have no task that slows a stream (where the loop's times are a longest path, which a
topology could be re-timed by) and their longest chains over dependency and stream-order
edges (the steps of a pass in topological order vectorised by level), how
many distinct topologies the graphs run have (equal but for durations and shares), and how
many of the simulated configurations the answer (top k and Pareto front) holds.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import dataclasses
import datetime
import itertools
import platform
import pstats
import sys
import time

from search_speed_family import add_problem_arguments


def problem_parser(doc: str) -> argparse.ArgumentParser:
    """The search problem the speed scripts time (``--model --gpu --gpus --global-batch --seq``,
    the 22B-on-64-A100 search of issue 21 by default), with ``doc``'s first line as help."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    add_problem_arguments(ap)
    return ap



def recorded_search(args, cache=None):
    """(base config, the candidate batches the search simulated, its result): the problem of
    ``problem_parser``'s ``args`` searched once in this process, every batch it handed the
    evaluator recorded (to replay the simulations alone)."""
    from trainsim.search import executors, search
    from trainsim.search.cli import build_base
    from trainsim.search.evaluation import evaluate_batch

    base = build_base(args.model, args.gpu, args.gpus, args.global_batch, args.seq, 8, 400.0,
                      "bf16")
    batches: list[list] = []

    def recording(b, candidates, token=None):
        batches.append(list(candidates))
        return evaluate_batch(b, candidates, token)

    executors.evaluate_batch = recording  # SerialExecutor.map calls it by this name
    try:
        first = search(base, [args.gpus], cache=cache)
    finally:
        executors.evaluate_batch = evaluate_batch
    return base, batches, first


def main() -> int:
    ap = problem_parser(__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", choices=["main", "simulations"], default=None,
                    help="print cProfile's top 25 (by own time) of one more round of that part")
    ap.add_argument("--sample", choices=["main", "simulations"], default=None,
                    help="sample that part's stack every 0.5 ms of CPU over --repeat more rounds "
                         "and print each function's share, inclusive and own (cProfile's "
                         "per-call cost inflates small functions several-fold)")
    ap.add_argument("--parts", action="store_true",
                    help="print the simulations' CPU by part and the task graphs' shape")
    args = ap.parse_args()

    import trainsim
    from trainsim.search import search
    from trainsim.search.core import EvaluationCache
    from trainsim.search.evaluation import SearchToken, evaluate_batch

    cache = EvaluationCache()
    base, batches, first = recorded_search(args, cache)
    tokens = itertools.count(1)

    def main_part() -> None:
        search(base, [args.gpus], cache=cache)

    def simulations() -> None:
        token = SearchToken(0, -next(tokens), time.time_ns())
        for b in batches:
            evaluate_batch(base, b, token)

    def best(fn) -> float:
        out = []
        for _ in range(args.repeat):
            t = time.process_time()
            fn()
            out.append(time.process_time() - t)
        return min(out)

    main_s, sim_s = best(main_part), best(simulations)
    s = first.stats
    best_eval = first.best
    print(f"{datetime.date.today().isoformat()} search {args.model} on {args.gpus} x {args.gpu} "
          f"(batch {args.global_batch} x {args.seq}): {s.enumerated:,} candidates, "
          f"{s.memory_groups:,} memory groups, {s.simulated:,} simulated in {len(batches)} "
          f"batches; CPU best of {args.repeat}: main process {main_s:.3f} s, simulations "
          f"{sim_s:.3f} s ({1e3 * sim_s / max(1, s.simulated):.2f} ms each); "
          f"{s.simulated / (main_s + sim_s):.0f} simulations per CPU-second "
          f"({platform.machine()}, Python {platform.python_version()}, trainsim "
          f"{trainsim.__version__}); best {best_eval.label if best_eval else '-'} "
          f"{best_eval.iteration_time_s if best_eval else float('nan'):.3f} s/iteration")
    if args.parts:
        _main_parts(main_part)
        _parts(simulations, first)
    if args.sample:
        _sampled(main_part if args.sample == "main" else simulations, args.repeat)
    if args.profile:
        pr = cProfile.Profile()
        pr.runcall(main_part if args.profile == "main" else simulations)
        pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(25)
    return 0


def _sampled(fn, rounds: int, top: int = 40) -> None:
    """``fn`` run ``rounds`` times under a CPU-time interval timer (``ITIMER_PROF``, every
    0.5 ms): each sample counts once for every function on the stack (inclusive) and once for
    the innermost (own); functions named by path under ``trainsim/`` and name."""
    import signal

    incl: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0

    def name(code) -> str:
        return f"{code.co_filename.rsplit('trainsim/', 1)[-1]}:{code.co_name}"

    def on_sample(_sig, frame) -> None:
        nonlocal total
        total += 1
        own[name(frame.f_code)] += 1
        seen = set()
        while frame is not None:
            k = name(frame.f_code)
            if k not in seen:
                seen.add(k)
                incl[k] += 1
            frame = frame.f_back

    previous = signal.signal(signal.SIGPROF, on_sample)
    signal.setitimer(signal.ITIMER_PROF, 0.0005, 0.0005)
    try:
        for _ in range(rounds):
            fn()
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, previous)
    print(f"sampled {total:,} times over {rounds} rounds; % of samples, inclusive | own")
    for (k, v), (k2, v2) in zip(incl.most_common(top), own.most_common(top)):
        print(f"  {100 * v / total:5.1f} {k:<55} | {100 * v2 / total:5.1f} {k2}")


def _timed(wrapped: list, cpu: dict, calls: dict, module, name: str, part: str,
           record: list | None = None) -> None:
    """Replace ``module.name`` by a wrapper adding its process CPU to ``cpu[part]`` (undone
    from ``wrapped``)."""
    fn = getattr(module, name)
    wrapped.append((module, name, fn))

    def timed(*a, **k):
        if record is not None:
            record.append(a[0])
        t = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            cpu[part] = cpu.get(part, 0.0) + time.process_time() - t
            calls[part] = calls.get(part, 0) + 1
    setattr(module, name, timed)


def _main_parts(main_part) -> None:
    """One more round of the main process with process-CPU wrappers around its parts (a part
    inside another is counted in both: the refined bounds hold their pass times and shapes,
    the shapes their layout costs)."""
    from trainsim.search import core, lower_bounds, waves
    from trainsim.search.candidate import Candidate

    cpu: dict[str, float] = {}
    calls: dict[str, int] = {}
    saved: list = []
    bounds = lower_bounds.Bounds
    for module, name, part in (
            (bounds, "refined", "refined bounds (all)"),
            (bounds, "_pass_times", "  their pass times (op lists priced on a miss)"),
            (bounds, "_shape_of", "  their bound shapes (one per shape key)"),
            (bounds, "_layout_costs", "    the shapes' layout costs"),
            (Candidate, "to_config", "RunConfig built (enumeration's validation, bounds)"),
            (waves, "peak_floor", "memory floors (groups dominated whatever their memory)"),
            (waves, "check_memory", "memory checks"),
            (bounds, "cheap", "FLOP bounds"),
            (core.Family, "of", "families")):
        _timed(saved, cpu, calls, module, name, part)
    t = time.process_time()
    try:
        main_part()
    finally:
        total = time.process_time() - t
        for module, name, fn in reversed(saved):
            setattr(module, name, fn)
    print(f"main process, one round with wrappers: {total:.3f} s CPU")
    for part, seconds in cpu.items():
        print(f"  {part}: {seconds:.3f} s in {calls[part]:,} calls")
    print(f"  the rest (enumeration, heap, regrouping, setup): "
          f"{total - sum(v for k, v in cpu.items() if not k.startswith(' ')):.3f} s")


def _parts(simulations, result) -> None:
    """One more round of ``simulations`` with process-CPU wrappers around its parts (a part
    inside another is counted in both: a steady-state attempt's graphs and loop runs are in
    the attempts' figure too, every graph's ``pipeline()`` in the graphs'), and the shape of
    the graphs the loop ran."""
    from trainsim import simulator, steady_state
    from trainsim.engine import loop

    cpu: dict[str, float] = {}
    calls: dict[str, int] = {}
    graphs: list[list] = []
    saved: list = []

    built: list = []  # every _TaskGraph built (its tasks complete once the round is over)

    def wrap(module, name: str, part: str, record: list | None = None) -> None:
        _timed(saved, cpu, calls, module, name, part, record)

    # build_graph (twin graphs handed back included), asked by the full simulations and by
    # the steady-state attempts (each module holds its own name for it)
    wrap(simulator, "build_graph", "graphs asked for by full simulations")
    wrap(steady_state, "build_graph", "graphs asked for by steady-state attempts")
    wrap(simulator._TaskGraph, "pipeline", "pipeline() of every graph built (passes placed)",
         built)
    wrap(loop, "_run", "loop runs", graphs)
    wrap(steady_state, "attempt", "steady-state attempts (all, nested parts too)")
    wrap(simulator, "summarize", "summaries of full runs")
    t = time.process_time()
    try:
        simulations()
    finally:
        total = time.process_time() - t
        for module, name, fn in reversed(saved):
            setattr(module, name, fn)
    print(f"simulations, one round with wrappers: {total:.3f} s CPU")
    for part in sorted(cpu, key=lambda p: -cpu[p]):
        print(f"  {part}: {cpu[part]:.3f} s in {calls[part]:,} calls")
    tasks = mergeable = slowing = 0
    for g in graphs:
        waiters: list[list[int]] = [[] for _ in g]
        for i, task in enumerate(g):
            for d in task.deps:
                waiters[d].append(i)
        last: dict = {}
        for i, task in enumerate(g):
            p = last.get(task.stream)
            if p is not None and task.slows is None and g[p].slows is None and \
                    waiters[p] == [i] and all(d == p or g[d].stream == task.stream
                                               for d in task.deps):
                mergeable += 1
            last[task.stream] = i
            slowing += task.slows is not None
        tasks += len(g)
    # issue 21 acceptance 4's re-timing route: where no task slows a stream, the loop's times
    # are a longest path over dependency and stream-order edges, which a topology laid out once
    # could re-time for new durations; a pass in topological order, vectorised, takes a step
    # per level (the longest chain of those edges, in tasks)
    free = [g for g in graphs if all(task.slows is None for task in g)]
    depth = []
    for g in graphs:
        level, tail = [0] * len(g), {}
        for i, task in enumerate(g):
            prev = tail.get(task.stream)
            level[i] = 1 + max([level[d] for d in task.deps if d < i]
                               + ([level[prev]] if prev is not None else []), default=0)
            tail[task.stream] = i
        depth.append(max(level, default=0) / max(1, len(g)))
    depth.sort()
    print(f"graphs with no task that slows a stream (the loop a longest path, re-timeable): "
          f"{len(free):,} of {len(graphs):,}; longest chain over dependency and stream-order "
          f"edges, in tasks: median {100 * depth[len(depth) // 2]:.0f} % of the graph's tasks "
          f"(min {100 * depth[0]:.0f} %, max {100 * depth[-1]:.0f} %)")
    answer = {id(r.evaluation) for r in result.top} | {id(e) for e in result.pareto}
    print(f"graphs run: {len(graphs):,}, {tasks:,} tasks ({slowing:,} slow a stream); "
          f"mergeable into the task before them on their stream: {mergeable:,} "
          f"({100 * mergeable / max(1, tasks):.1f} %)")
    # graphs that differ only in their tasks' durations (and the shares they slow by): what
    # a graph built once per topology and re-timed could share; of the graphs built, which
    # parallel fields (and micro batch) a repeat's config differs in from its topology's first
    def topology(tasks: list) -> tuple:
        return tuple((t.stream, tuple(t.deps), t.slows and t.slows[0]) for t in tasks)

    print(f"distinct topologies (streams, dependencies, streams slowed) among them: "
          f"{len({topology(g) for g in graphs}):,}")
    first: dict[tuple, object] = {}
    differ: collections.Counter = collections.Counter()
    for g in built:
        c = g.cfg
        c0 = first.setdefault(topology(g.tasks), c)
        if c0 is not c:
            differ[tuple([f.name for f in dataclasses.fields(c.parallel)
                          if getattr(c.parallel, f.name) != getattr(c0.parallel, f.name)]
                         + ["micro_batch"] * (c.training.micro_batch_size
                                              != c0.training.micro_batch_size))] += 1
    print(f"graphs built: {len(built):,} in {len(first):,} topologies; the repeats differ from "
          f"their topology's first in: " + "; ".join(
              f"{' + '.join(k) or 'nothing'} {n}" for k, n in differ.most_common(8)))
    print(f"the answer (top {len(result.top)} and Pareto front {len(result.pareto)}) holds "
          f"{len(answer)} of the {result.stats.simulated:,} simulated configurations")


if __name__ == "__main__":
    sys.exit(main())
