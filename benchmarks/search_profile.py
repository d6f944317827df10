"""Where a search's CPU goes: its main process alone and its simulations alone, each replayed
in one process and timed best-of-N (issue 21 acceptance 4; less noisy on a shared machine than
`search_speed.py`'s one run, whose main process and workers also wait on each other).

    python benchmarks/search_profile.py                      # the 22B search of issue 21
    python benchmarks/search_profile.py --model llama3-70b --gpu h100-sxm-80gb --gpus 1024 \
        --global-batch 1024 --seq 4096                       # search_speed.py's default
    python benchmarks/search_profile.py --repeat 5 --profile main   # cProfile, top 25

1. The serial search runs once, recording the batches it simulates.
2. *main*: the same search again with every evaluation a cache hit (enumeration, bounds,
   memory checks, heap), best of ``--repeat``.
3. *simulations*: ``evaluate_batch`` over the recorded batches under a new search token each
   time (prices, twin graphs and timelines shared as in one worker), best of ``--repeat``.

Prints one dated line: counts, both CPU times, and simulations per CPU-second of their sum
(what one worker and the main process cost together; the executor's own overhead aside).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import itertools
import platform
import pstats
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gpt-22b")
    ap.add_argument("--gpu", default="a100-sxm-80gb")
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--global-batch", type=int, default=512)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", choices=["main", "simulations"], default=None,
                    help="print cProfile's top 25 (by own time) of one more round of that part")
    args = ap.parse_args()

    import trainsim
    from trainsim.search import executors, search
    from trainsim.search.cli import build_base
    from trainsim.search.core import EvaluationCache
    from trainsim.search.evaluation import SearchToken, evaluate_batch

    base = build_base(args.model, args.gpu, args.gpus, args.global_batch, args.seq, 8, 400.0,
                      "bf16")
    batches: list[list] = []

    def recording(b, candidates, token=None):
        batches.append(list(candidates))
        return evaluate_batch(b, candidates, token)

    cache = EvaluationCache()
    executors.evaluate_batch = recording  # SerialExecutor.map calls it by this name
    try:
        first = search(base, [args.gpus], cache=cache)
    finally:
        executors.evaluate_batch = evaluate_batch
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
    if args.profile:
        pr = cProfile.Profile()
        pr.runcall(main_part if args.profile == "main" else simulations)
        pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
