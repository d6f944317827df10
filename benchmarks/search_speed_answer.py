"""A search's whole answer as one fingerprint, to check that a speed change of the search's own
work (enumeration, bounds, pruning: issue 21 item 4) moves nothing: the top k (order, labels,
times as ``float.hex``), the Pareto front, every evaluation in the order simulated (candidate,
time, fit, headroom) and every count of the stats but the elapsed time.

    PYTHONPATH=src python benchmarks/search_speed_answer.py            # the 22B-on-64-A100 search
    PYTHONPATH=src python benchmarks/search_speed_answer.py --model llama3-70b \
        --gpu h100-sxm-80gb --gpus 1024 --global-batch 1024 --seq 4096   # search_speed.py's
    PYTHONPATH=src python benchmarks/search_speed_answer.py --reps 3   # and serial CPU, each run
    PYTHONPATH=src python benchmarks/search_speed_answer.py --own --reps 3  # the search's own
        # work alone: every evaluation from a cache a first (untimed) search filled

Serial, in this process (the answer does not depend on the executor: ``search.waves``). Prints
the sha256 of the answer's JSON, its counts and each run's process CPU; ``--dump FILE`` writes
the JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from typing import Any

from search_speed_family import add_problem_arguments


def answer(result: Any) -> dict[str, Any]:
    """What must not move: ranks, front, evaluations (in order) and counts, floats as hex."""
    def ev(e: Any) -> list[Any]:
        return [repr(e.candidate), e.iteration_time_s.hex(), e.fits,
                float(e.memory_headroom_bytes).hex()]

    s = result.stats
    return {"top": [[r.rank, repr(r.evaluation.candidate), r.evaluation.iteration_time_s.hex(),
                     list(r.reasons)] for r in result.top],
            "front": [ev(e) for e in result.pareto],
            "evaluated": [ev(e) for e in result.evaluated],
            "counts": [s.enumerated, s.memory_groups, s.memory_pruned, s.bound_pruned,
                       s.simulated, s.cache_hits],
            "refused": result.refused}


def _merged(got: dict[str, Any]) -> dict[str, Any]:
    """``got`` with its simulated and cache-hit counts summed (a cached search simulates none)."""
    c = got["counts"]
    return {**got, "counts": [*c[:4], c[4] + c[5]]}


def run(model: str, gpu: str, gpus: int, global_batch: int, seq: int, cache: Any = None
        ) -> tuple[dict, float]:
    """One serial search's answer and process CPU; ``cache``: an ``EvaluationCache`` (a
    filled one: the search's own work alone, no simulation)."""
    from trainsim.search import make_executor, search
    from trainsim.search.cli import build_base

    base = build_base(model, gpu, gpus, global_batch, seq, 8, 400.0, "bf16")
    t0 = time.process_time()
    r = search(base, [gpus], executor=make_executor("serial", None), cache=cache)
    return answer(r), time.process_time() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_problem_arguments(ap)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--dump", default=None)
    ap.add_argument("--own", action="store_true",
                    help="time the search's own work: every evaluation from a cache filled by "
                         "a first search (not timed; its answer is the first checked)")
    args = ap.parse_args()
    digests = set()
    cache = None
    if args.own:
        from trainsim.search import EvaluationCache

        cache = EvaluationCache()
        got, cpu = run(args.model, args.gpu, args.gpus, args.global_batch, args.seq, cache)
        text = json.dumps(_merged(got), sort_keys=True)
        digests.add(hashlib.sha256(text.encode()).hexdigest())
        print(f"filling run: serial CPU {cpu:.3f} s", flush=True)
    for i in range(args.reps):
        got, cpu = run(args.model, args.gpu, args.gpus, args.global_batch, args.seq, cache)
        if cache is not None:
            got = _merged(got)
        text = json.dumps(got, sort_keys=True)
        digests.add(hashlib.sha256(text.encode()).hexdigest())
        print(f"run {i}: serial CPU {cpu:.3f} s, counts {got['counts']}, "
              f"sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]}", flush=True)
        if args.dump and i == 0:
            with open(args.dump, "w") as f:
                f.write(text)
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
