"""How often ``chunks.chunks`` assembles the same virtual stage again (issue 21, chunk46): each
training row of a file predicted serially in this process, or the 22B search run serially,
with every call of ``chunks.chunks`` wrapped (in each module that imported it), so that the
script reports its calls, their CPU, the virtual stages they built and how many distinct
compositions those were: (first, last, the layer kinds in order) within a call, the same
with the call's pricer signature across calls; and across calls how many layer-kind prices
(one forward and one backward per kind a call priced) had the same segments as a layer
priced by an earlier call (what a per-process layer memo could save at most).

    PYTHONPATH=src python benchmarks/chunk46_compositions.py [FILE]
    PYTHONPATH=src:benchmarks python benchmarks/chunk46_compositions.py --search   # the 22B search
    PYTHONPATH=src python benchmarks/chunk46_compositions.py --misses  # the pricing misses

``--misses``: every ``Pricer._price_ops`` call (a miss of the shared prices) recorded, with how many
priced an op list priced before under another signature, and how many of those had a signature
that differed only in the spans of groups the list does not use (the same cluster object, so within
one row).

CPU is ``time.process_time``. No prediction changes: the wrapper calls the original and gives
back what it returns.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PUBLIC = "../shared/validation/training_public.csv"
IMPORTERS = (("trainsim.memo", "chunks"), ("trainsim.twin_graphs", "chunks"),
             ("trainsim.pipeline", "priced_chunks"), ("trainsim.combined_1f1b", "chunks"))
"""The modules that call ``chunks.chunks`` by a name of their own, and that name."""


@contextmanager
def counted(stats: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Inside it, every ``chunks.chunks`` call is counted into ``stats``."""
    import importlib

    from trainsim import chunks as chunks_mod

    original = chunks_mod.chunks
    stats.update(calls=0, cpu=0.0, stages=0, in_call=0, across=set(), layer_prices=0,
                 layer_seen=set(), layer_repeats=0)

    def wrapped(cfg, pricer, sh, layer_source=None):
        t = time.process_time()
        out = original(cfg, pricer, sh, layer_source)
        stats["cpu"] += time.process_time() - t
        stats["calls"] += 1
        stats["stages"] += len(out)
        m = cfg.model
        rec = cfg.recomputed_layers
        kinds = [(m.is_moe_layer(i), m.layer_window(i) is not None, i in rec)
                 for i in range(m.num_layers)]
        ranges = cfg.virtual_stage_layers()
        comps = {(v == 0, v == len(ranges) - 1, tuple(kinds[i] for i in r))
                 for v, r in enumerate(ranges)}
        stats["in_call"] += len(comps)
        sig = getattr(pricer, "_sig", None)
        stats["across"].update((id(cfg.model), sig, c) for c in comps)
        # one forward and one backward per layer kind priced: the distinct layer passes
        layer_passes = {p.segments for ch in out.values()
                        for p in (*ch.fwd_parts[2:-1], *ch.bwd_layers)}
        stats["layer_prices"] += len(layer_passes)
        stats["layer_repeats"] += len(layer_passes & stats["layer_seen"])
        stats["layer_seen"] |= layer_passes
        return out

    mods = [(importlib.import_module(name), attr) for name, attr in IMPORTERS]
    kept = [getattr(mod, attr) for mod, attr in mods]
    chunks_mod.chunks = wrapped
    for mod, attr in mods:
        setattr(mod, attr, wrapped)
    try:
        yield stats
    finally:
        chunks_mod.chunks = original
        for (mod, attr), fn in zip(mods, kept):
            setattr(mod, attr, fn)


@contextmanager
def misses(rec: list) -> Iterator[list]:
    """Inside it, every ``Pricer._price_ops`` call appends (signature, the span names, ops, groups
    the ops use, CPU s) to ``rec``."""
    from trainsim.pricing import Pricer
    from trainsim.workload.ops import Comm

    original = Pricer._price_ops

    def wrapped(self, ops, compute_time):
        t = time.process_time()
        out = original(self, ops, compute_time)
        rec.append((getattr(self, "_sig", None), tuple(self.spans), tuple(ops),
                    frozenset(o.group for o in ops if isinstance(o, Comm)),
                    time.process_time() - t))
        return out

    Pricer._price_ops = wrapped
    try:
        yield rec
    finally:
        Pricer._price_ops = original


def report_misses(rec: list) -> None:
    seen, reduced = set(), set()
    again = alike = 0
    again_s = alike_s = 0.0
    for sig, names, ops, groups, dt in rec:
        if sig is None:
            continue
        try:
            hash(ops)
        except TypeError:
            continue
        if ops in seen:
            again, again_s = again + 1, again_s + dt
        seen.add(ops)
        # the signature's second item is the spans, in the order of ``Pricer.spans``
        key = (sig[0], tuple(s for n, s in zip(names, sig[1]) if n in groups), sig[2:], ops)
        if key in reduced:
            alike, alike_s = alike + 1, alike_s + dt
        reduced.add(key)
    print(f"pricing misses                {len(rec)}  CPU {sum(r[-1] for r in rec):.2f} s")
    print(f"  op lists priced before under another signature  {again}  CPU {again_s:.2f} s")
    print(f"  of them, signature differing only in unused spans  {alike}  CPU {alike_s:.2f} s")


def report(stats: dict[str, Any], total_cpu: float) -> None:
    print(f"whole run CPU                 {total_cpu:.2f} s")
    print(f"chunks.chunks calls           {stats['calls']}  CPU {stats['cpu']:.2f} s")
    print(f"virtual stages built          {stats['stages']}")
    print(f"distinct compositions a call  {stats['in_call']}  (summed over calls)")
    print(f"distinct (model, pricer sig, composition) across calls  {len(stats['across'])}")
    print(f"layer passes priced (distinct per call, summed)  {stats['layer_prices']}; "
          f"the same segments as an earlier call's: {stats['layer_repeats']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", default=PUBLIC)
    ap.add_argument("--search", action="store_true",
                    help="the 22B-on-64-A100 search (serial) instead of a file")
    ap.add_argument("--misses", action="store_true",
                    help="report the pricing misses instead (the file's rows)")
    args = ap.parse_args(argv)
    stats: dict[str, Any] = {}
    if args.search:
        from search_speed_answer import run

        with counted(stats):
            t = time.process_time()
            run("gpt-22b", "a100-sxm-80gb", 64, 512, 2048)
            report(stats, time.process_time() - t)
        return 0
    from trainsim.validate import read_rows
    from trainsim.validate.training import predict_training_row

    kind_of, rows = read_rows(args.file)
    if kind_of != "training":
        ap.error(f"{args.file} is a {kind_of} file, not a training file")
    if args.misses:
        rec: list = []
        with misses(rec), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for row in rows:
                predict_training_row(row)
        report_misses(rec)
        return 0
    with counted(stats), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        for row in rows:
            predict_training_row(row)
        report(stats, time.process_time() - t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
