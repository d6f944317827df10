"""What bound46's terms cost the public file's tuner bounds, with and without after46's row memo
(``bound._row_terms``: the optimizer steps, ``after_last_pass`` and ``first_gathers_s`` kept per
tuned row under every config field but ``bound.TERMS_LEFT_OUT``'s).

    PYTHONPATH=src python benchmarks/after46_terms.py [FILE] [--no-memo] [--top 12]

Predicts every row in this process (``validate_file``, one worker) under cProfile and prints:
the cumulative CPU of ``lower_bound_s`` and of the terms inside it (each term's own function:
``after_last_pass``, ``first_gathers_s``, ``OptimizerTasks.optimizer_step``), the memo's asks
and what it priced (a miss per distinct key; ``--no-memo``: no row dict is handed to the bound,
so every ask prices, as main did), and a digest of every bound returned (``float.hex``), which
must be the same with and without the memo. cProfile's own cost inflates every figure alike.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pstats
import sys
import time
import warnings

PUBLIC = "../shared/validation/training_public.csv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", default=PUBLIC)
    ap.add_argument("--no-memo", action="store_true", help="price every ask (main's way)")
    ap.add_argument("--top", type=int, default=0, help="also print the top N by cumulative CPU")
    args = ap.parse_args()

    from trainsim import bound
    from trainsim.validate import training as vt
    from trainsim.validate import validate_file

    asks: list[tuple] = []  # (name, priced)
    original_terms = bound._row_terms

    def counted_terms(cfg, pricer):
        shared = original_terms(cfg, pricer)

        def wrapped(name, price):
            priced = []

            def pricing():
                priced.append(1)
                return price()
            value = shared(name, pricing)
            asks.append((name if isinstance(name, str) else name[0], bool(priced)))
            return value
        return wrapped

    bounds: list[float] = []
    original_bound = vt.lower_bound_s

    def recorded_bound(cfg, pricer=None):
        value = original_bound(cfg, pricer)
        bounds.append(value)
        return value

    bound._row_terms = counted_terms
    vt.lower_bound_s = recorded_bound
    if args.no_memo:
        bound.row_kept = lambda: None
    prof = cProfile.Profile()
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prof.enable()
        validate_file(args.file, workers=1)
        prof.disable()
    total = time.process_time() - t0
    stats = pstats.Stats(prof)
    cum: dict[str, tuple[int, float]] = {}
    for (path, _, name), (_, calls, _, ct, _) in stats.stats.items():  # type: ignore[attr-defined]
        if path.endswith("bound.py") and name in ("lower_bound_s", "after_last_pass",
                                                   "first_gathers_s", "_exposed_reductions",
                                                   "_step_chain", "backward_work"):
            cum[name] = calls, ct
        if path.endswith("optimizer_tasks.py") and name == "optimizer_step":
            cum["optimizer_step (all callers)"] = calls, ct
        if path.endswith("memo.py") and name == "config_key":
            cum["memo.config_key (chunks' and terms' keys)"] = calls, ct
    print(f"{args.file}: {'no memo' if args.no_memo else 'memo'}; process CPU under cProfile "
          f"{total:.2f} s; {len(bounds)} bounds")
    for name, (calls, ct) in sorted(cum.items()):
        print(f"  {name:45s} calls {calls:6d}  cumulative {ct:7.3f} s")
    for kind in ("steps", "gathers", "after"):
        got = [p for n, p in asks if n == kind]
        print(f"  asks {kind:8s} {len(got):5d}  priced {sum(got):5d}")
    digest = hashlib.sha256(" ".join(b.hex() for b in bounds).encode()).hexdigest()[:16]
    print(f"  bounds digest {digest}")
    if args.top:
        stats.sort_stats("cumulative").print_stats(args.top)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
