"""Where a search's CPU goes across its processes: the main process and each local worker,
against the same search in one process (issue 21 acceptance 4: ``search_speed.py`` counts
all of it, and two workers cost more than one process).

    python benchmarks/search_workers.py                  # the 22B search of issue 21, 2 workers
    python benchmarks/search_workers.py --workers 4 --model llama3-70b --gpu h100-sxm-80gb \
        --gpus 1024 --global-batch 1024 --seq 4096

The search runs once with the local executor and once with the serial one. Each worker writes,
after every batch, its process CPU (user + sys), its CPU inside ``evaluate_batch`` and how many
task graphs it built (``_TaskGraph.pipeline``), event loops it ran (``engine.loop._run``) and
op lists it priced (``Pricer._price_ops``); the rest of a worker's CPU is the executor's
(receiving batches, sending evaluations). Prints one dated line per process. The wrappers add
a little to every figure; compare the lines with each other, not with ``search_speed.py``.
"""

from __future__ import annotations

import collections
import datetime
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def main() -> int:
    from search_profile import problem_parser

    ap = problem_parser(__doc__)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    from trainsim import pricing, simulator
    from trainsim.engine import loop
    from trainsim.search import evaluation, executors, make_executor, search
    from trainsim.search.cli import build_base

    counts: collections.Counter = collections.Counter()

    def counted(owner: object, name: str, label: str) -> None:
        fn = getattr(owner, name)

        def wrapper(*a, **k):
            counts[label] += 1
            return fn(*a, **k)
        setattr(owner, name, wrapper)

    counted(simulator._TaskGraph, "pipeline", "graphs built")
    counted(loop, "_run", "loops run")
    counted(pricing.Pricer, "_price_ops", "op lists priced")
    inside = [0.0]
    out = Path(tempfile.mkdtemp(prefix="search_workers."))
    evaluate = evaluation.evaluate_batch

    def evaluate_batch(base, candidates, token=None):
        t = time.process_time()
        try:
            return evaluate(base, candidates, token)
        finally:
            inside[0] += time.process_time() - t
            counts["simulated"] += len(candidates)
            (out / f"{os.getpid()}.json").write_text(json.dumps(
                {"cpu": _cpu(resource.RUSAGE_SELF), "inside": inside[0], **counts}))
    # a forked worker looks the function up by this name (pickled by reference)
    evaluate_batch.__module__, evaluate_batch.__qualname__ = evaluate.__module__, "evaluate_batch"
    evaluation.evaluate_batch = executors.evaluate_batch = evaluate_batch

    base = build_base(args.model, args.gpu, args.gpus, args.global_batch, args.seq, 8, 400.0,
                      "bf16")
    day = datetime.date.today().isoformat()
    for name, workers in (("local", args.workers), ("serial", None)):
        counts.clear()
        inside[0] = 0.0
        for f in out.glob("*.json"):
            f.unlink()
        own0, kids0 = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        ex = make_executor(name, workers)
        try:
            r = search(base, [args.gpus], executor=ex, cache=None)
        finally:
            ex.close()
        own, kids = _cpu(resource.RUSAGE_SELF) - own0, _cpu(resource.RUSAGE_CHILDREN) - kids0
        main_counts = {k: v for k, v in counts.items() if k != "simulated"}
        print(f"{day} {args.model} on {args.gpus} x {args.gpu}, {name} x {ex.workers}: "
              f"{r.stats.simulated:,} simulated, {own + kids:.2f} s CPU in all "
              f"({r.stats.simulated / (own + kids):.0f} per CPU-second); main process "
              f"{own:.2f} s (in evaluate_batch {inside[0]:.2f} s) {main_counts}")
        for f in sorted(out.glob("*.json")) if name == "local" else ():
            w = json.loads(f.read_text())
            cpu, ins = w.pop("cpu"), w.pop("inside")
            print(f"  worker {f.stem}: {cpu:.2f} s CPU, {ins:.2f} s in evaluate_batch "
                  f"({cpu - ins:.2f} s outside), {w}")
        if name == "local":
            print(f"  workers in all: {kids:.2f} s CPU")
    for f in out.glob("*.json"):
        f.unlink()
    out.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
