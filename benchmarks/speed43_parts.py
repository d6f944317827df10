"""Where one simulated configuration's CPU goes in ``trainsim search`` (issue 21 item 4), in CPU
seconds measured without a profiler, and what that leaves the item's rate at best.

    PYTHONPATH=src python benchmarks/speed43_parts.py            # the 22B-on-64-A100 search
    PYTHONPATH=src python benchmarks/speed43_parts.py --model llama3-70b --gpu h100-sxm-80gb \
        --gpus 1024 --global-batch 1024 --seq 4096             # search_speed.py's default
    PYTHONPATH=src python benchmarks/speed43_parts.py --plain    # no wrappers: the total only

The search runs serially in this process (``executor=serial``: the workers' CPU of a local
search is its ``evaluate`` rows, shared among them; the rest is its main process's). Each part is
a function wrapped to add the process CPU time spent inside it (``speed40_parts.timed``: counted
once where it recurses, no per-call tax as cProfile's, which charged the call-heavy parts up to
5x). Parts nest (indented rows are inside the row above them) and some are called from more than
one place ("all": every call, e.g. a steady-state attempt's graphs are in "full graphs built").

The ceilings: issue 21 counts simulated configurations per CPU-second of the whole search (main
process and workers). With S simulations, M the CPU outside ``evaluate`` (enumeration, bounds,
memory checks, the waves' bookkeeping) and E the CPU inside it, the rate is S / (M + E); were
every simulation free it would be S / M, were the branch and bound free S / E.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from search_speed_family import add_problem_arguments
from speed40_parts import timed

PARTS: tuple[tuple[str, str, str], ...] = (
    ("trainsim.search.lower_bounds:Bounds", "prime", "enumeration: configs kept for bounds"),
    ("trainsim.search.lower_bounds:Bounds", "cheap", "cheap (FLOP) bounds, all"),
    ("trainsim.search.core", "run_waves", "waves: bounds, memory checks, simulations"),
    ("trainsim.search.evaluation", "evaluate", "  evaluate (one candidate simulated)"),
    ("trainsim.search.candidate:Candidate", "to_config", "    candidate configs built, all"),
    ("trainsim.search.evaluation", "simulate", "    simulate"),
    ("trainsim.simulator", "check_simulation", "      task-limit checks"),
    ("trainsim.simulator:Pricer", "__init__", "      pricers made, all"),
    ("trainsim.steady_state", "attempt", "      steady-state plans and attempts"),
    ("trainsim.steady_state", "_attempt", "        attempts not kept by a twin"),
    ("trainsim.simulator", "kept_graph", "      twin graph lookups"),
    ("trainsim.simulator", "build_graph", "      graphs built by simulate itself"),
    ("trainsim.simulator:_TaskGraph", "__init__", "        graphs' passes priced"),
    ("trainsim.pipeline_passes:PipelineTasks", "pipeline", "        pipeline passes placed"),
    ("trainsim.last_backward:SplitBackwardTasks", "backward", "          split backwards"),
    ("trainsim.pipeline_passes:PipelineTasks", "pass_specs", "          pass specs"),
    ("trainsim.optimizer_tasks:OptimizerTasks", "optimizer_steps", "        optimizer steps"),
    ("trainsim.engine.loop", "_run", "      the event loop, all"),
    ("trainsim.simulator", "summarize", "      summaries"),
    ("trainsim.simulator", "kept_memories", "      memories"),
    ("trainsim.simulator", "hardware_flops_per_iteration", "      hardware FLOPs"),
    ("trainsim.search.lower_bounds:Bounds", "refined", "  refined bounds"),
    ("trainsim.search.lower_bounds:Bounds", "passes_bound", "  passes' bounds"),
    ("trainsim.search.lower_bounds:Bounds", "_pass_times", "    passes priced for bounds"),
    ("trainsim.search.lower_bounds:Bounds", "_pipeline_bound", "    refined: pipeline bound"),
    ("trainsim.search.waves", "_class_leads", "  pricing classes' leads"),
    ("trainsim.search.waves", "check_memory", "  memory checks"),
    ("trainsim.search.waves", "peak_floor", "  peak floors (most headroom)"),
)
"""(module[:class], function, what it is): each wrapped where its callers look it up."""


def measure(model: str = "gpt-22b", gpu: str = "a100-sxm-80gb", gpus: int = 64,
            global_batch: int = 512, seq: int = 2048, plain: bool = False,
            space: Any = None) -> dict[str, Any]:
    """Run the search serially in this process; its result, the total CPU, each part's
    ``[seconds, calls]`` (none with ``plain``) and the tasks the loop ran and the pipeline
    placed."""
    from trainsim.engine import loop
    from trainsim.pipeline_passes import PipelineTasks
    from trainsim.search import make_executor, search
    from trainsim.search.cli import build_base

    counts = {"loop tasks": 0, "placed tasks": 0}
    run, pipeline = loop._run, PipelineTasks.pipeline

    def counted_run(tasks: list, prefix: bool) -> Any:
        counts["loop tasks"] += len(tasks)
        return run(tasks, prefix)

    def counted_pipeline(self: Any) -> None:
        n = len(self.tasks)
        pipeline(self)
        counts["placed tasks"] += len(self.tasks) - n

    loop._run = counted_run  # type: ignore[assignment]
    PipelineTasks.pipeline = counted_pipeline  # type: ignore[method-assign]
    try:
        t0 = time.process_time()
        base = build_base(model, gpu, gpus, global_batch, seq, 8, 400.0, "bf16")
        ex = make_executor("serial", 1)
        out: dict[str, list[float]] = {}
        if plain:
            r = search(base, [gpus], space, executor=ex, cache=None)
        else:
            with timed(PARTS) as out:
                r = search(base, [gpus], space, executor=ex, cache=None)
        total = time.process_time() - t0
    finally:
        loop._run = run  # type: ignore[assignment]
        PipelineTasks.pipeline = pipeline  # type: ignore[method-assign]
    return {"result": r, "total": total, "parts": out, **counts}


def ceilings(m: dict[str, Any]) -> dict[str, float]:
    """Simulations per CPU-second as measured, and were the simulations (``evaluate``) or the
    rest of the search free."""
    sims = m["result"].stats.simulated
    inside = m["parts"]["evaluate"][0]
    outside = m["total"] - inside
    return {"simulated": sims, "candidates": m["result"].stats.enumerated,
            "rate": sims / m["total"], "simulations free": sims / outside,
            "branch and bound free": sims / inside,
            "ms per simulation": 1e3 * inside / sims,
            "ms of the rest per simulation": 1e3 * outside / sims,
            "us of the rest per candidate": 1e6 * outside / m["result"].stats.enumerated}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_problem_arguments(ap)
    ap.add_argument("--plain", action="store_true", help="no wrappers: the total only")
    args = ap.parse_args()
    m = measure(args.model, args.gpu, args.gpus, args.global_batch, args.seq, args.plain)
    r, total = m["result"], m["total"]
    print(f"{args.model} on {args.gpus} x {args.gpu}: serial CPU {total:.2f} s, "
          f"{r.stats.enumerated:,} candidates, {r.stats.simulated:,} simulated: "
          f"{r.stats.simulated / total:.1f} per CPU-second; best {r.best.label} "
          f"{r.best.iteration_time_s!r}; loop tasks {m['loop tasks']:,}, placed tasks "
          f"{m['placed tasks']:,}; load {os.getloadavg()[0]:.1f}")
    if args.plain:
        return
    for (_, name, what) in PARTS:
        sec, calls = m["parts"][name]
        print(f"{what:<48} {sec:7.3f} s {sec / total:6.1%} {int(calls):>8,} calls")
    c = ceilings(m)
    loop_s, placed_s = m["parts"]["_run"][0], m["parts"]["pipeline"][0]
    print(f"per simulation {c['ms per simulation']:.2f} ms inside evaluate, "
          f"{c['ms of the rest per simulation']:.2f} ms of the rest "
          f"({c['us of the rest per candidate']:.1f} us per candidate enumerated); loop "
          f"{1e6 * loop_s / max(1, m['loop tasks']):.2f} us a task, placing "
          f"{1e6 * placed_s / max(1, m['placed tasks']):.2f} us a task")
    print(f"simulations per CPU-second {c['rate']:.1f}; were every simulation free "
          f"{c['simulations free']:.1f}; were the branch and bound free "
          f"{c['branch and bound free']:.1f} (issue 21 asks >= 1,000)")


if __name__ == "__main__":
    main()
