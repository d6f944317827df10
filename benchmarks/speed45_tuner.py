"""Where ``trainsim validate``'s row CPU goes by the tuner's questions (issue 21 item 3, speed45):
each training row predicted serially in this process, its ``simulate`` and ``lower_bound_s``
calls wrapped (``validate.training``'s names), so that for every row the script reports its
CPU, the simulations and bounds it asked and their CPU, and for every simulation its time, its
bound (where the tuner asked one), its method (``Result.simulation``) and whether it lost:
its time above the row's answer. A simulation that lost was asked because its bound was below
the time it had to beat; how close the bounds are says how much a tighter bound could skip.

    PYTHONPATH=src python benchmarks/speed45_tuner.py [FILE] [--top 15] [--json OUT]

CPU is ``time.process_time`` (user + system of this process), so other jobs on a shared host
move it less than the wall; each wrapper's CPU includes what it calls. A bound's CPU is split
too (bound45): its ``simulator.shared_chunks`` (the priced chunks, whose forward and backward
passes it reads, kept for a simulation of the same chunk key) and the rest. No prediction
changes: the wrappers call the originals and give back what they return.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
import warnings
from collections import Counter
from contextlib import contextmanager
from typing import Any

PUBLIC = "../shared/validation/training_public.csv"


@contextmanager
def recorded(log: list[tuple]) -> Any:
    """Inside it, ``validate.training``'s ``simulate`` and ``lower_bound_s`` append
    ("sim", config id, CPU s, iteration s, method, reason) and ("bound", config id, CPU s,
    bound s, asker, chunks CPU s) to ``log`` (asker: the ``tune`` function that asked the
    bound, ``ruled_out`` or ``bound_of``, two frames up through ``_tuned``'s ``bound``; chunks
    CPU: the bound's calls of ``simulator.shared_chunks``); the originals are put back on
    exit."""
    from trainsim import simulator
    from trainsim.validate import training

    sim, bound, chunks = training.simulate, training.lower_bound_s, simulator.shared_chunks
    in_bound = [0.0, False]  # CPU of shared_chunks inside the bound now asked, inside one

    def shared_chunks(*args, **kwargs):
        if not in_bound[1]:
            return chunks(*args, **kwargs)
        t = time.process_time()
        try:
            return chunks(*args, **kwargs)
        finally:
            in_bound[0] += time.process_time() - t

    def simulate(cfg, *args, **kwargs):
        t = time.process_time()
        res = sim(cfg, *args, **kwargs)
        log.append(("sim", id(cfg), time.process_time() - t, res.iteration_time_s,
                    res.simulation["method"], res.simulation["reason"]))
        return res

    def lower_bound_s(cfg, pricer):
        asker = sys._getframe(2).f_code.co_name
        in_bound[:] = [0.0, True]
        t = time.process_time()
        try:
            got = bound(cfg, pricer)
        finally:
            in_bound[1] = False
        log.append(("bound", id(cfg), time.process_time() - t, got, asker, in_bound[0]))
        return got

    training.simulate, training.lower_bound_s = simulate, lower_bound_s
    simulator.shared_chunks = shared_chunks
    try:
        yield log
    finally:
        training.simulate, training.lower_bound_s = sim, bound
        simulator.shared_chunks = chunks


def kind(method: str, reason: str) -> str:
    """A simulation's method and its reason with the numbers taken out (one line per kind)."""
    return f"{method}: {re.sub(r'[0-9][0-9,.]*', 'N', reason)[:60]}"


def row_costs(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Per row: id, CPU, the answer (None where the row failed), its simulations (CPU, time,
    bound or None, kind, lost) and bounds (count, CPU, CPU of their chunks)."""
    from trainsim.validate.training import predict_training_row

    out, log = [], []
    with recorded(log), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row in rows:
            log.clear()
            t = time.process_time()
            res = predict_training_row(row)
            cpu = time.process_time() - t
            answer = res.predicted if res.error is None else None
            bounds = {x[1]: x[3] for x in log if x[0] == "bound"}
            sims = [{"cpu": x[2], "time": x[3], "bound": bounds.get(x[1]), "kind": kind(x[4], x[5]),
                     "lost": answer is not None and x[3] > answer} for x in log if x[0] == "sim"]
            out.append({"id": row.get("id", "?"), "cpu": cpu, "answer": answer, "sims": sims,
                        "bounds": sum(x[0] == "bound" for x in log),
                        "asked_by": dict(Counter(x[4] for x in log if x[0] == "bound")),
                        "bound_cpu": sum(x[2] for x in log if x[0] == "bound"),
                        "bound_chunks_cpu": sum(x[5] for x in log if x[0] == "bound")})
    return out


def _deciles(values: list[float]) -> list[float]:
    return [round(v, 4) for v in statistics.quantiles(values, n=10)] if len(values) > 1 \
        else [round(v, 4) for v in values]


def summary(costs: list[dict[str, Any]]) -> dict[str, Any]:
    """The file's totals: CPU of rows, simulations, bounds; the simulations that lost (with a
    bound asked, without), the deciles of their bound over their time and of their time over
    the row's answer; CPU and count by simulation kind."""
    sims = [s for r in costs for s in r["sims"]]
    lost = [s for s in sims if s["lost"]]
    answers = {id(s): r["answer"] for r in costs for s in r["sims"]}
    by_kind: Counter[str] = Counter()
    n_kind: Counter[str] = Counter()
    for s in sims:
        by_kind[s["kind"]] += s["cpu"]
        n_kind[s["kind"]] += 1
    bounded = [s for s in lost if s["bound"] is not None]
    return {
        "rows": len(costs), "row_cpu": sum(r["cpu"] for r in costs),
        "simulations": len(sims), "simulation_cpu": sum(s["cpu"] for s in sims),
        "bounds": sum(r["bounds"] for r in costs),
        "bound_cpu": sum(r["bound_cpu"] for r in costs),
        "bound_chunks_cpu": sum(r["bound_chunks_cpu"] for r in costs),
        "bounds_asked_by": dict(sum((Counter(r["asked_by"]) for r in costs), Counter())),
        "lost": len(lost), "lost_cpu": sum(s["cpu"] for s in lost),
        "lost_bounded": len(bounded), "lost_bounded_cpu": sum(s["cpu"] for s in bounded),
        "lost_bound_over_time": _deciles([s["bound"] / s["time"] for s in bounded]),
        "lost_time_over_answer": _deciles([s["time"] / answers[id(s)] for s in lost]),
        "kinds": {k: {"n": n_kind[k], "cpu": round(c, 3)} for k, c in by_kind.most_common()},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", default=PUBLIC)
    ap.add_argument("--top", type=int, default=15, help="rows shown, the most CPU first")
    ap.add_argument("--json", help="write every row's figures here")
    args = ap.parse_args(argv)
    from trainsim.validate import read_rows

    kind_of, rows = read_rows(args.file)
    if kind_of != "training":
        ap.error(f"{args.file} is a {kind_of} file, not a training file")
    costs = row_costs(rows)
    total = summary(costs)
    for key, value in total.items():
        if key != "kinds":
            print(f"{key:24s} {round(value, 3) if isinstance(value, float) else value}")
    for k, v in total["kinds"].items():
        print(f"{v['n']:5d} {v['cpu']:7.2f} s  {k}")
    for r in sorted(costs, key=lambda r: -r["cpu"])[:args.top]:
        lost = [s for s in r["sims"] if s["lost"]]
        print(f"{r['id'][:52]:52s} {r['cpu']:6.2f} s  {len(r['sims']):3d} sims "
              f"{sum(s['cpu'] for s in r['sims']):5.2f} s ({len(lost)} lost "
              f"{sum(s['cpu'] for s in lost):5.2f} s)  {r['bounds']:3d} bounds "
              f"{r['bound_cpu']:5.2f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": total, "rows": costs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
