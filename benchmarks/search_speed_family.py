"""What a lower bound per (tp, pp, cp, vpp) family can take off the search's pruning work (issue 21
item 4, speed43's lead 1), measured with an exact prototype of it.

    PYTHONPATH=src python benchmarks/search_speed_family.py            # the 22B-on-64-A100 search
    PYTHONPATH=src python benchmarks/search_speed_family.py --model llama3-70b \
        --gpu h100-sxm-80gb --gpus 1024 --global-batch 1024 --seq 4096   # search_speed.py's default

The search (``search.waves``) pops each memory group first at its FLOP bound, gives it its order
then, works out its passes' bound (``Bounds.passes_bound`` of its pricing classes' leads: its
*low*) and queues it again there. The prototype queues it instead at its family's bound ``F``
where that is higher than the FLOP bound, with the same order, and works out its low only when
that entry is popped (then queued at the low, or ruled out). ``F`` is the least passes' bound
over every member of the family and every TP and expert all-to-all overlap setting that a
pricing class's lead can have: ``passes_bound`` reads only the memory key and those two
switches, so ``F`` is at most every low of the family (and so below every refined bound, which
``test_search_speed_bounds`` checks the passes' bound against, and every simulated time:
``tests/test_search_speed_family.py`` simulates random members). The search's answer is the same to the bit: an
entry at ``F`` pops no later than the entry at the low it stands for (``F <= low``, same order),
popping it changes nothing the later pops read but the heap, and a group it rules out would be
ruled out at its low (bounds only rise, the best times and the front only tighten); no order is
handed out that the plain search does not hand out in the same sequence.

It prints, for the plain search and the prototype at three family widths (the family; with the
micro-batch; with the micro-batch and recompute), the answer's identity, the lows worked out, the
heap pops, and where the branch and bound's CPU goes: the shapes priced for the passes' bounds
(what any bound from pass times must price first) and the per-group passes' bounds once priced.
"""

from __future__ import annotations

import argparse
import collections
import inspect
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

LEVELS: dict[str, Callable[[Any], tuple]] = {
    "family": lambda m: (m.num_gpus, m.tp, m.pp, m.cp, m.vpp, m.schedule),
    "family+mb": lambda m: (m.num_gpus, m.tp, m.pp, m.cp, m.vpp, m.schedule, m.micro_batch),
    "family+mb+rc": lambda m: (m.num_gpus, m.tp, m.pp, m.cp, m.vpp, m.schedule, m.micro_batch,
                               m.recompute),
}
"""How wide a family is: the memory-key fields its members share."""

_LOW = """\
                    family = siblings.get(c, ())
                    low = bounds.passes_low(c, _class_pairs(c, family))
                    if low is None:  # a class's passes not priced yet: its lead's config does
                        low = min(bounds.passes_bound(x) for x in _class_leads(c, family))
"""
_FIRST_POP = """\
                if refined is False:
                    order += 1
                    at = order
""" + _LOW
_DEFERRED_POP = """\
                if refined is False or refined == "family":
                    if refined is False:
                        order += 1
                        at = order
                        if _family is not None:
                            fb = _family(c)
                            if fb > lb:
                                heapq.heappush(heap, (fb, at, c, headroom, "family"))
                                continue
                    _counts["lows"] += 1
""" + _LOW
_START = "    tokens = base.training.global_batch_size * base.training.seq_length\n"
_PRUNED = {  # where a group is pruned -> what is counted there (candidates pruned, by where)
    "            if not keep:\n                group_size = 1 + len(siblings.pop(c, ()))\n":
        "_counts[f'pruned at {_AT[refined, keep0]}'] += group_size",
    "                    group_size = 1 + len(siblings.pop(c, ()))"
    "  # dominated whatever its memory\n":
        "_counts['pruned dominated whatever its memory (peak floor)'] += group_size",
    "                if mc is None or not mc.fits:\n"
    "                    group_size = 1 + len(siblings.pop(c, ()))\n":
        "_counts['pruned by memory'] += group_size",
    "                group_size = 1 + len(siblings.pop(c, ()))"
    "  # siblings no faster than their lead\n":
        "_counts['pruned after the memory check'] += group_size",
}
_AT = {(False, False): "first pop: FLOP bound", (False, True): "first pop: passes'/refined bound",
       ("family", False): "family bound", ("family", True): "family: passes'/refined bound",
       ("passes", False): "passes' bound", ("passes", True): "passes': refined bound",
       (True, False): "refined bound"}
"""Where a group is pruned: (its entry's kind, whether the bound it was popped at let it by)."""
_KEEP = ("            keep = headroom is not None or \\\n"
         "                not lb > pareto_slowdown * best_n.get(c.mem.num_gpus, INF)"
         " or may_rank(lb, c)\n")


def family_bound(bounds: Any, heap: list, width: Callable[[Any], tuple]
                 ) -> Callable[[Any], float]:
    """``F`` of the family of a candidate (the module's docstring), worked out when first asked
    from the memory groups the search enumerated (the heap's leads before the first pop)."""
    from trainsim.search.space import Candidate

    members: dict[tuple, list] = {}
    for entry in heap:
        members.setdefault(width(entry[2].mem), []).append(entry[2].mem)
    kept: dict[tuple, float] = {}

    def of(c: Any) -> float:
        f = width(c.mem)
        hit = kept.get(f)
        if hit is None:
            hit = kept[f] = min(bounds.passes_bound(Candidate(m, False, False, tp, False, ep))
                                for m in members[f] for tp in {False, m.tp > 1}
                                for ep in {False, m.ep > 1})
        return hit
    return of


def patched_run_waves(width: Callable[[Any], tuple] | None, counts: collections.Counter
                      ) -> Callable[..., Any]:
    """``search.waves.run_waves`` whose first pops count the lows they work out and, with a
    family ``width``, defer them to the family's bound (the module's docstring): its source
    with those lines changed, run in a copy of its module's namespace."""
    from trainsim.search import waves

    src = textwrap.dedent(inspect.getsource(waves.run_waves))
    for old in (_FIRST_POP, _START, _KEEP, *_PRUNED):
        if src.count(old) != 1:
            raise RuntimeError("search.waves.run_waves changed: update search_speed_family.py")
    src = src.replace(_FIRST_POP, _DEFERRED_POP)
    src = src.replace(_KEEP, _KEEP + "            keep0 = keep\n")
    for old, count in _PRUNED.items():
        line = old.splitlines()[-1]
        src = src.replace(old, old + line[:len(line) - len(line.lstrip())] + count + "\n")
    src = src.replace(_START, _START + "    _family = _make(bounds, heap) if _make else None\n")
    space = dict(vars(waves))
    space["_counts"], space["_AT"] = counts, _AT
    space["_make"] = (lambda b, h: family_bound(b, h, width)) if width else None
    exec(compile(src, waves.__file__, "exec"), space)  # noqa: S102 - the module's own source
    return space["run_waves"]


@contextmanager
def instrumented(width: Callable[[Any], tuple] | None) -> Iterator[collections.Counter]:
    """Within it the search runs the patched waves, its heap pops counted by kind and wave, its
    passes' bounds by calls and CPU, and the shapes priced for them and asked by refined
    bounds (by their pass times' identities); everything is put back on exit."""
    import heapq

    from trainsim.search import core, executors, lower_bounds

    counts: collections.Counter = collections.Counter()
    shapes: dict[str, set] = {"passes": set(), "refined": set()}
    inside = ["passes"]
    saved = (core.run_waves, executors.Stream.results, lower_bounds.Bounds.passes_bound,
             lower_bounds.Bounds.refined, lower_bounds.Bounds._pass_times,
             executors.evaluate_batch, lower_bounds.Bounds.passes_low)
    run_waves = patched_run_waves(width, counts)
    wave = [0]

    class Heapq:  # the patched module's heapq, its pops counted
        def __getattr__(self, name: str) -> Any:
            return getattr(heapq, name)

        @staticmethod
        def heappop(h: list) -> Any:
            e = heapq.heappop(h)
            counts[f"pops {e[4]}"] += 1
            if e[4] is False and wave[0] == 0:
                counts["first pops before the first results"] += 1
            return e
    run_waves.__globals__["heapq"] = Heapq()

    def results(self: Any) -> Any:
        wave[0] += 1
        return saved[1](self)

    def passes_bound(self: Any, c: Any) -> float:
        n0, t0 = len(self._passes), time.process_time()
        try:
            return saved[2](self, c)
        finally:
            kind = "priced" if len(self._passes) > n0 else "kept"
            counts[f"passes' bounds, shapes {kind}"] += 1
            counts[f"passes' bounds, shapes {kind}: CPU us"] += \
                round(1e6 * (time.process_time() - t0))

    def passes_low(self: Any, c: Any, pairs: Any) -> float | None:
        # (a group's low from shapes already priced: counted as kept shapes' bounds)
        t0 = time.process_time()
        try:
            return saved[6](self, c, pairs)
        finally:
            counts["passes' bounds, shapes kept"] += 1
            counts["passes' bounds, shapes kept: CPU us"] += \
                round(1e6 * (time.process_time() - t0))

    def evaluate_batch(*a: Any, **k: Any) -> Any:
        t0 = time.process_time()
        try:
            return saved[5](*a, **k)
        finally:
            counts["simulations: CPU us"] += round(1e6 * (time.process_time() - t0))

    def refined(self: Any, c: Any) -> float:
        inside.append("refined")
        try:
            return saved[3](self, c)
        finally:
            inside.pop()

    def pass_times(self: Any, *a: Any, **k: Any) -> Any:
        hit = saved[4](self, *a, **k)
        shapes[inside[-1]].add(id(hit))
        return hit

    core.run_waves, executors.Stream.results = run_waves, results
    executors.evaluate_batch = evaluate_batch
    b = lower_bounds.Bounds
    b.passes_bound, b.refined, b._pass_times = passes_bound, refined, pass_times
    b.passes_low = passes_low
    try:
        yield counts
    finally:
        core.run_waves, executors.Stream.results = saved[0], saved[1]
        b.passes_bound, b.refined, b._pass_times = saved[2:5]
        b.passes_low = saved[6]
        executors.evaluate_batch = saved[5]
        counts["shapes asked by passes' bounds"] = len(shapes["passes"])
        counts["shapes asked by refined bounds"] = len(shapes["refined"])
        counts["shapes asked by refined bounds alone"] = len(shapes["refined"] - shapes["passes"])
        counts["waves"] = wave[0]


def add_problem_arguments(ap: argparse.ArgumentParser) -> None:
    """The search problem of issue 21 item 4 as options, its 22B-on-64-A100 default: model, GPU,
    GPU count, global batch and sequence (the search scripts' common flags)."""
    ap.add_argument("--model", default="gpt-22b")
    ap.add_argument("--gpu", default="a100-sxm-80gb")
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--global-batch", type=int, default=512)
    ap.add_argument("--seq", type=int, default=2048)


def answer(r: Any) -> tuple:
    """What must not change: the top k, every evaluation in order, the front and the counts."""
    s = r.stats
    return (tuple((x.rank, x.evaluation.candidate, x.evaluation.iteration_time_s) for x in r.top),
            tuple((e.candidate, e.iteration_time_s, e.fits, e.memory_headroom_bytes)
                  for e in r.evaluated),
            tuple(e.candidate for e in r.pareto),
            (s.enumerated, s.memory_groups, s.memory_pruned, s.bound_pruned, s.simulated))


def measure(base: Any, gpus: int, width: str | None, space: Any = None) -> dict[str, Any]:
    """One serial search (no cache) with the plain waves (``width`` None) or the prototype:
    its answer, CPU and counts."""
    from trainsim.search import make_executor, search
    from trainsim.search.candidate import drop_parallels

    drop_parallels()
    with instrumented(LEVELS[width] if width else None) as counts:
        t0, w0 = time.process_time(), time.perf_counter()
        r = search(base, [gpus], space, executor=make_executor("serial", None), cache=None)
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    return {"answer": answer(r), "cpu": cpu, "wall": wall, "counts": counts, "result": r}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_problem_arguments(ap)
    ap.add_argument("--reps", type=int, default=1, help="alternations of the runs")
    ap.add_argument("--cli-space", action="store_true",
                    help="the space `trainsim search` builds by default (else SearchSpace())")
    ap.add_argument("--widths", default=",".join(LEVELS), help="family widths to run")
    ap.add_argument("--warm", action="store_true", help="one unmeasured search first")
    args = ap.parse_args()
    import os

    from trainsim.search.cli import build_base

    base = build_base(args.model, args.gpu, args.gpus, args.global_batch, args.seq, 8, 400.0,
                      "bf16")
    space = None
    if args.cli_space:
        from trainsim.search.cli_inputs import search_space

        space = search_space(None, None, None, None, 8, "none,selective,full", None, "search",
                             base=base)
    if args.warm:  # a search first, unmeasured: the process's own caches and imports warm
        measure(base, args.gpus, None, space)
    plain = None
    rows: dict[str, list[dict]] = {}
    for _ in range(args.reps):
        for width in (None, *args.widths.split(",")):
            got = measure(base, args.gpus, width, space)
            plain = plain or got["answer"]
            got["same"] = got["answer"] == plain
            rows.setdefault(width or "plain", []).append(got)
    s = rows["plain"][0]["result"].stats
    print(f"{args.model} on {args.gpus} x {args.gpu}: {s.enumerated:,} candidates, "
          f"{s.memory_groups:,} memory groups, {s.simulated} simulated; load "
          f"{os.getloadavg()[0]:.1f}")
    keys = sorted({k for runs in rows.values() for k in runs[0]["counts"]})
    print(f"{'':52}" + "".join(f"{w:>20}" for w in rows))
    print(f"{'same answer (top, evaluations, front, counts)':52}"
          + "".join(f"{all(r['same'] for r in runs)!s:>20}" for runs in rows.values()))

    def outside(r: dict) -> str:  # the CPU the branch and bound takes (all but simulations)
        return f"{r['cpu'] - 1e-6 * r['counts']['simulations: CPU us']:.2f}"
    for name, of in (("serial CPU s (each alternation)", lambda r: f"{r['cpu']:.2f}"),
                     ("  of it outside the simulations", outside),
                     ("wall s", lambda r: f"{r['wall']:.1f}"),
                     ("simulations per CPU-second", lambda r: f"{s.simulated / r['cpu']:.0f}")):
        print(f"{name:52}" + "".join(f"{'/'.join(map(of, runs)):>20}" for runs in rows.values()))
    # were the family bound free: the lows it avoids at the plain search's CPU per low
    c0 = rows["plain"][0]["counts"]
    per_low = 1e-6 * c0["passes' bounds, shapes kept: CPU us"] / c0["lows"]
    print(f"{'CPU s saved were F free (lows avoided x CPU a low)':52}" + "".join(
        f"{(c0['lows'] - runs[0]['counts']['lows']) * per_low:>20.3f}" for runs in rows.values()))
    for k in keys:
        print(f"{k:52}" + "".join(f"{runs[0]['counts'].get(k, 0):>20,}"
                                  for runs in rows.values()))
    return 0 if all(r["same"] for runs in rows.values() for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
