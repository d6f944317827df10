"""The most each part of a search's main process could save (issue 21 acceptance 4): the main
process timed with that part's answers replayed instead of worked out, one part at a time and
all at once (an experiment; nothing in ``src/`` changes).

    python benchmarks/search_ceilings.py                 # the 22B search of issue 21
    python benchmarks/search_ceilings.py --model llama3-70b --gpu h100-sxm-80gb --gpus 1024 \\
        --global-batch 1024 --seq 4096                   # search_speed.py's default

The search is deterministic, so it asks each part the same questions in the same order every
time. A recording round keeps every answer a part gives to a caller outside the replayed parts
(a call nested inside another replayed part is not asked when that one is replayed); the timed
rounds hand them back in order (``next`` on a list iterator: no hashing, no lookup) and check
that the search ends with the same statistics, top k and Pareto front. So "free" is what a
vectorised, cached or compiled version of that part could reach at best: the part gone, the
rest of the main process (enumeration, heap, the other parts) as it is. A replayed config
(``Candidate.to_config``) is the recording round's object, with what its configs worked out
and kept (``config.cached`` values, the parallel config's layer ranges): the figure is the
configs *and* what they keep. Parts (``search.waves`` and ``search.lower_bounds.Bounds``):
configs, FLOP bounds (``cheap``), passes' bounds, refined bounds, memory floors
(``peak_floor``), memory checks. Main process CPU (evaluations cached, as
``search_profile.py``'s *main*), best of ``--repeat``, the full process measured before and
after the parts, so a loaded machine shows in the two baselines.
"""

from __future__ import annotations

import datetime
import platform
import sys
import time

_END = object()
PARTS = {  # name -> (module path, owner, attribute)
    "configs": ("trainsim.search.candidate", "Candidate", "to_config"),
    "FLOP bounds": ("trainsim.search.lower_bounds", "Bounds", "cheap"),
    "passes' bounds": ("trainsim.search.lower_bounds", "Bounds", "passes_bound"),
    "refined bounds": ("trainsim.search.lower_bounds", "Bounds", "refined"),
    "memory floors": ("trainsim.search.waves", None, "peak_floor"),
    "memory checks": ("trainsim.search.waves", None, "check_memory"),
}


def _owner(name: str):
    import importlib

    module, owner, attr = PARTS[name]
    mod = importlib.import_module(module)
    return (getattr(mod, owner) if owner else mod), attr


def _replaying(names: list[str], run) -> tuple[float, object]:
    """Record the answers the outermost calls of ``names`` give in one ``run()``, then return
    a function running ``run`` with them handed back in order, and the recorded result."""
    saved = [(*_owner(n), getattr(*_owner(n))) for n in names]
    answers: list = []
    depth = [0]

    def recording(fn):
        def wrapped(*a, **k):
            depth[0] += 1
            try:
                out = fn(*a, **k)
            except Exception as exc:  # a refused config: refused again when replayed
                if depth[0] == 1:
                    answers.append((False, exc))
                raise
            finally:
                depth[0] -= 1
            if depth[0] == 0:
                answers.append((True, out))
            return out
        return wrapped

    for owner, attr, fn in saved:
        setattr(owner, attr, recording(fn))
    try:
        recorded = run()
    finally:
        for owner, attr, fn in saved:
            setattr(owner, attr, fn)

    def replay():
        it = iter(answers)

        def handed(*_a, **_k):
            ok, out = next(it)
            if not ok:
                raise out
            return out
        for owner, attr, _ in saved:
            setattr(owner, attr, handed)
        try:
            return run()
        finally:
            for owner, attr, fn in saved:
                setattr(owner, attr, fn)
            if next(it, _END) is not _END:
                raise AssertionError(f"{names}: answers left over (the calls changed)")
    return replay, recorded


def main() -> int:
    from search_profile import problem_parser

    ap = problem_parser(__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import trainsim
    from trainsim.search import search
    from trainsim.search.cli import build_base
    from trainsim.search.core import EvaluationCache

    base = build_base(args.model, args.gpu, args.gpus, args.global_batch, args.seq, 8, 400.0,
                      "bf16")
    cache = EvaluationCache()
    first = search(base, [args.gpus], cache=cache)  # simulates; every later round hits

    def run():
        return search(base, [args.gpus], cache=cache)

    def answer(r) -> tuple:
        return (r.stats.enumerated, r.stats.memory_pruned, r.stats.bound_pruned,
                r.stats.simulated + r.stats.cache_hits, r.top, r.pareto)

    def best(fn) -> float:
        out = []
        for _ in range(args.repeat):
            t = time.process_time()
            r = fn()
            out.append(time.process_time() - t)
            if answer(r) != answer(first):
                raise AssertionError("a replayed search gave another answer")
        return min(out)

    rows = [("none (the main process as it is)", best(run))]
    bounds = ["FLOP bounds", "passes' bounds", "refined bounds"]
    for names in [[n] for n in PARTS] + [bounds, ["configs", *bounds], list(PARTS)]:
        replay, _ = _replaying(names, run)
        rows.append((" + ".join(names) if len(names) < len(PARTS) else "all of them",
                     best(replay)))
    rows.append(("none, again", best(run)))
    base_s = min(rows[0][1], rows[-1][1])
    print(f"{datetime.date.today().isoformat()} search {args.model} on {args.gpus} x {args.gpu} "
          f"(batch {args.global_batch} x {args.seq}): {first.stats.memory_groups:,} memory "
          f"groups, {first.stats.simulated:,} simulated; main process CPU best of "
          f"{args.repeat} with each part's answers replayed ({platform.machine()}, Python "
          f"{platform.python_version()}, trainsim {trainsim.__version__})")
    for name, s in rows:
        print(f"  {name:<50} {s:6.3f} s  (saves {base_s - s:+.3f} s, "
              f"{100 * (base_s - s) / base_s:+.0f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
