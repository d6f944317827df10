"""The passes' bounds' shard shapes priced with their op lists built per shape, or once for both
TP-overlap settings (``search.lower_bounds.Bounds._ops_of``, search50), replayed in one process.

    PYTHONPATH=src python benchmarks/search50_ops.py                # the 22B-on-64-A100 search
    PYTHONPATH=src python benchmarks/search50_ops.py --model llama3-70b --gpu h100-sxm-80gb \
        --gpus 1024 --global-batch 1024 --seq 4096                  # search_speed.py's default

A serial search records every shard shape ``Bounds._pass_times`` prices (its config and
switches, in order); then both ways are replayed alternately, each under a fresh pricing store
(``pricing.shared``) as a search's, and the process CPU of each replay is printed with whether
every float of both is the same (``repr`` of all the pass times) and how many op-list sets
each builds.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from search_speed_family import add_problem_arguments


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_problem_arguments(ap)
    ap.add_argument("--reps", type=int, default=8)
    args = ap.parse_args()
    from trainsim.memory.state import states_shared
    from trainsim.pricing import shared
    from trainsim.search import lower_bounds, make_executor, search
    from trainsim.search.cli import build_base

    base = build_base(args.model, args.gpu, args.gpus, args.global_batch, args.seq, 8, 400.0,
                      "bf16")
    priced = lower_bounds.Bounds._priced_passes
    calls = []

    def record(cfg, compute_only, split, ops=None):
        calls.append((cfg, compute_only, split))
        return priced(cfg, compute_only, split, ops)

    lower_bounds.Bounds._priced_passes = staticmethod(record)
    try:
        search(base, [args.gpus], executor=make_executor("serial", None), cache=None)
    finally:
        lower_bounds.Bounds._priced_passes = staticmethod(priced)

    def per_shape() -> list:  # each shape's op lists built from its own config
        return [priced(cfg, co, sp) for cfg, co, sp in calls]

    def kept() -> list:
        b = lower_bounds.Bounds(base)
        out = [priced(cfg, co, sp, b._ops_of(cfg)) for cfg, co, sp in calls]
        kept.built = len(b._op_lists)
        return out

    tokens = itertools.count()
    cpu: dict[str, list[float]] = {"per shape": [], "kept": []}
    got: dict[str, str] = {}
    for rep in range(args.reps):
        order = (("per shape", per_shape), ("kept", kept))
        for name, fn in order if rep % 2 == 0 else order[::-1]:
            with shared(("search50_ops", next(tokens))), states_shared():
                t = time.process_time()
                out = fn()
                cpu[name].append(time.process_time() - t)
            got.setdefault(name, repr(out))
    print(f"{args.model} on {args.gpus} x {args.gpu}: {len(calls)} shard shapes priced; op-list "
          f"sets built: per shape {len(calls)}, kept {kept.built}; every float the same: "
          f"{got['per shape'] == got['kept']}; load {os.getloadavg()[0]:.1f}")
    for name, v in cpu.items():
        v = sorted(v)
        print(f"  {name:9s} CPU best {v[0]:.3f} s, median {v[len(v) // 2]:.3f} s "
              f"({args.reps} replays, alternated)")
    return 0 if got["per shape"] == got["kept"] else 1


if __name__ == "__main__":
    sys.exit(main())
