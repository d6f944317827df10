"""The search's own work (issue 21 item 4) of two ``run_waves``, alternated in one process: this
tree's and another checkout's ``search/waves.py`` (loaded from its file; it runs on this tree's
``Bounds`` and everything else), every evaluation from a cache a first search filled, so only the
enumeration, bounds, memory checks and bookkeeping are timed; best and median process CPU, and
each answer's fingerprint (``search_speed_answer.answer``, counts merged).

    PYTHONPATH=src:benchmarks python benchmarks/search51_ab.py --other /work/main/src/trainsim/search/waves.py
    PYTHONPATH=src:benchmarks python benchmarks/search51_ab.py --other ... --model llama3-70b \
        --gpu h100-sxm-80gb --gpus 1024 --global-batch 1024 --seq 4096 --pairs 6

``--other-keeps-young``: the other run also leaves the search's survivors in the collector's
youngest generation (``core._survivors_to_oldest`` a no-op), as main before the 51st session.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import statistics
import sys
import time

from search_speed_answer import _merged, answer
from search_speed_family import add_problem_arguments


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_problem_arguments(ap)
    ap.add_argument("--other", required=True, help="another checkout's search/waves.py")
    ap.add_argument("--other-keeps-young", action="store_true")
    ap.add_argument("--pairs", type=int, default=6)
    args = ap.parse_args()
    if not os.path.isfile(args.other):
        ap.error(f"--other {args.other}: no such file (a checkout's src/trainsim/search/waves.py)")

    from trainsim.search import EvaluationCache, core, search
    from trainsim.search.cli import build_base

    spec = importlib.util.spec_from_file_location("trainsim.search.waves_other", args.other)
    other = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = other  # type: ignore[union-attr]
    spec.loader.exec_module(other)  # type: ignore[union-attr]
    mine, move = core.run_waves, core._survivors_to_oldest
    runs = {"this": (mine, move),
            "other": (other.run_waves, (lambda: None) if args.other_keeps_young else move)}
    base = build_base(args.model, args.gpu, args.gpus, args.global_batch, args.seq, 8, 400.0,
                      "bf16")
    cache = EvaluationCache()
    search(base, [args.gpus], cache=cache)  # fills the cache (not timed)
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    digests: dict[str, set[str]] = {k: set() for k in runs}
    try:
        for i in range(args.pairs):
            for name in ("this", "other") if i % 2 == 0 else ("other", "this"):
                core.run_waves, core._survivors_to_oldest = runs[name]
                t0 = time.process_time()
                r = search(base, [args.gpus], cache=cache)
                cpu[name].append(time.process_time() - t0)
                text = json.dumps(_merged(answer(r)), sort_keys=True)
                digests[name].add(hashlib.sha256(text.encode()).hexdigest()[:16])
    finally:
        core.run_waves, core._survivors_to_oldest = mine, move
    for name, v in cpu.items():
        print(f"{name}: best {min(v):.3f} s, median {statistics.median(v):.3f} s "
              f"({' '.join(f'{x:.3f}' for x in v)}); answers {sorted(digests[name])}")
    print(f"load {os.getloadavg()[0]:.1f}")
    return 0 if len(digests["this"] | digests["other"]) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
