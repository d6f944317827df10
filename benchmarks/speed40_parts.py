"""Where the CPU of ``trainsim validate FILE`` goes, in CPU seconds measured without a profiler
(issue 21 item 3), and a replay of the event loop's graphs that times two trees' loops against
each other in one process.

``cProfile`` charges every Python call ~1 us: it made the call-heavy parts (graph building, the
pricer's lookups) look several times dearer than the loop-heavy ones (the event loop's own
bytecode), 112 s profiled for ~20 s run. Here each part is a function wrapped to add the
process CPU time (``time.process_time``) spent inside it, counted once where it recurses;
the command runs serially in this process (``--workers 1``: the workers' CPU, which is what
the wall waits on with 2 cores, is this divided among them).

    PYTHONPATH=src python benchmarks/speed40_parts.py [FILE] > /dev/null
    PYTHONPATH=src python benchmarks/speed40_parts.py loop --against /path/to/other/src \
        [--reps 4] [FILE]

``loop``: records the graph of every ``engine.loop._run`` call the command makes (each task's
stream, duration, dependencies and what it slows: all the loop reads), then runs them through
this tree's ``_run`` and the other tree's, alternately ``--reps`` times each, and prints the
best CPU of each and whether every timeline (starts, ends, queues) is the same to the bit. The
machine's load moves a whole run by 5-10 %; alternating in one process compares the two to ~1 %.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib
import importlib.util
import struct
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

PUBLIC = "../shared/validation/training_public.csv"

PARTS: tuple[tuple[str, str, str], ...] = (
    ("trainsim.validate.training", "tune", "the tuner, every candidate (rows with unknowns)"),
    ("trainsim.validate.training", "simulate", "  simulations the tuner asks for"),
    ("trainsim.validate.training", "lower_bound_s", "  the tuner's lower bounds"),
    ("trainsim.validate.training", "run_config_from_dict", "  candidate configs built"),
    ("trainsim.validate.training", "_peak_within", "  candidates' memory checks"),
    ("trainsim.simulator:_TaskGraph", "__init__", "graphs' passes priced (bounds' included)"),
    ("trainsim.pipeline_passes:PipelineTasks", "pipeline", "pipeline passes placed"),
    ("trainsim.optimizer_tasks:OptimizerTasks", "optimizer_steps",
     "reductions and optimizer steps placed"),
    ("trainsim.engine.loop", "_run", "the event loop"),
    ("trainsim.steady_state", "_one_run", "period proofs on one truncated run"),
)
"""(module[:class], function, what it is): each wrapped where its callers look it up."""


@contextmanager
def timed(parts: tuple[tuple[str, str, str], ...] = PARTS
          ) -> Iterator[dict[str, list[float]]]:
    """Within it, each part's function adds the CPU time spent inside it to
    ``out[name] = [seconds, calls]`` (a call inside a call of the same part counted once);
    the originals are put back on exit."""
    out: dict[str, list[float]] = {}
    undo: list[tuple[Any, str, Any]] = []
    for where, name, _ in parts:
        mod, _, cls = where.partition(":")
        owner: Any = importlib.import_module(mod)
        if cls:
            owner = getattr(owner, cls)
        original = owner.__dict__[name] if cls else getattr(owner, name)
        out[name] = [0.0, 0]
        undo.append((owner, name, original))
        setattr(owner, name, _wrapped(original, out[name]))
    try:
        yield out
    finally:
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)


def _wrapped(fn: Callable, acc: list[float]) -> Callable:
    depth = [0]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if depth[0]:
            return fn(*args, **kwargs)
        depth[0] += 1
        acc[1] += 1
        t = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[0] += time.process_time() - t
            depth[0] -= 1

    return wrapper


def _validate(path: str) -> None:
    from trainsim import cli

    try:
        cli.main(["validate", path, "--workers", "1"], prog_name="trainsim")
    except SystemExit as exc:
        if exc.code:
            raise


def parts(path: str) -> None:
    t0 = time.process_time()
    with timed() as out:
        _validate(path)
    total = time.process_time() - t0
    print(f"serial CPU {total:.2f} s (this process, imports after the interpreter's start)",
          file=sys.stderr)
    for (_, name, what) in PARTS:
        sec, calls = out[name]
        print(f"{what:<45} {name:<22} {sec:7.2f} s {sec / total:6.1%} {int(calls):>7,} calls",
              file=sys.stderr)


def record(path: str) -> list[tuple[list[tuple], bool]]:
    """Every graph ``engine.loop._run`` is given while ``validate`` runs ``path``: per task
    (stream, duration, dependencies, slows), and the ``prefix`` flag."""
    from trainsim.engine import loop

    graphs: list[tuple[list[tuple], bool]] = []
    run = loop._run

    def keep(tasks: list, prefix: bool) -> Any:
        graphs.append(([(t.stream, t.duration_s, list(t.deps), t.slows) for t in tasks], prefix))
        return run(tasks, prefix)

    loop._run = keep  # type: ignore[assignment]
    try:
        _validate(path)
    finally:
        loop._run = run  # type: ignore[assignment]
    return graphs


def loop_of(src: str) -> Any:
    """``trainsim/engine/loop.py`` of the tree ``src`` as a module of its own."""
    name = f"_speed40_loop_{abs(hash(src))}"
    spec = importlib.util.spec_from_file_location(name, f"{src}/trainsim/engine/loop.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = mod  # dataclasses look the module up
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def digest(timelines: list) -> str:
    """One hash of every timeline's starts, ends (their bits) and queues."""
    h = hashlib.sha256()
    for tl in timelines:
        h.update(struct.pack(f"{len(tl.start_s)}d", *tl.start_s))
        h.update(struct.pack(f"{len(tl.end_s)}d", *tl.end_s))
        h.update(repr(sorted(tl.queues.items())).encode())
    return h.hexdigest()


def replay(graphs: list[tuple[list[tuple], bool]], runs: dict[str, Callable], reps: int
           ) -> dict[str, tuple[float, str]]:
    """Best CPU of ``reps`` runs of every graph through each of ``runs`` (taken in turn), and
    the digest of each one's timelines."""
    from trainsim.engine.loop import Task

    built = [([Task(s, d, deps, "", (), None, sl) for s, d, deps, sl in g], p) for g, p in graphs]
    best = {k: float("inf") for k in runs}
    sums: dict[str, str] = {}
    was = gc.isenabled()
    gc.disable()  # as simulate() runs the loop (engine.gc_paused)
    try:
        for _ in range(reps):
            for k, run in runs.items():
                t = time.process_time()
                out = [run(tasks, p) for tasks, p in built]
                best[k] = min(best[k], time.process_time() - t)
                sums[k] = digest(out)
                del out
    finally:
        if was:
            gc.enable()
    return {k: (best[k], sums[k]) for k in runs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", nargs="?", default="parts")
    ap.add_argument("file", nargs="?", default=PUBLIC)
    ap.add_argument("--against", help="another tree's src/ (loop mode)")
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()
    if args.mode not in ("parts", "loop"):  # a file given without a mode
        args.mode, args.file = "parts", args.mode
    if args.mode == "parts":
        parts(args.file)
        return
    from trainsim.engine import loop

    graphs = record(args.file)
    runs = {"this tree": loop._run}
    if args.against:
        runs["against"] = loop_of(args.against)._run
    got = replay(graphs, runs, args.reps)
    tasks = sum(len(g) for g, _ in graphs)
    print(f"{len(graphs)} graphs, {tasks:,} tasks", file=sys.stderr)
    for k, (sec, h) in got.items():
        print(f"{k:<10} best of {args.reps}: {sec:.3f} s ({sec / tasks * 1e6:.2f} us a task) "
              f"timelines {h[:16]}", file=sys.stderr)
    if args.against:
        same = len({h for _, h in got.values()}) == 1
        print(f"ratio {got['against'][0] / got['this tree'][0]:.3f}; timelines "
              f"{'bit-identical' if same else 'DIFFER'}", file=sys.stderr)


if __name__ == "__main__":
    main()
