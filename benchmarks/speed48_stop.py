"""How much of ``trainsim validate``'s lost simulations a stopped run saves (issue 21 item 3,
speed48): each training row predicted serially in this process with ``validate.training``'s
``simulate`` and ``simulate_to_beat`` and the event loop (``engine.loop._run``) wrapped. For
every simulation the tuner asks it records the time it had to beat (None: asked in full), its
answer (None: stopped, lost), its CPU and its event loop's CPU; a loop that stopped is run again
in full right after (outside the timed part) so that its whole loop CPU and task count are known.

    PYTHONPATH=src python benchmarks/speed48_stop.py [FILE] [--json OUT]

CPU is ``time.process_time``. No prediction changes: the wrappers call the originals and give
back what they return (the re-run's timeline is dropped).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from contextlib import contextmanager
from typing import Any

PUBLIC = "../shared/validation/training_public.csv"


@contextmanager
def recorded(log: list[dict[str, Any]]) -> Any:
    """Inside it, every simulation ``validate.training`` asks appends a dict to ``log``: beat
    (None for ``simulate``), time (None where it stopped), cpu, loop_cpu (its event loops),
    and for a stopped one full_loop_cpu (its loop run again without the beat) and tasks."""
    from trainsim.engine import loop
    from trainsim.validate import training

    sim, to_beat, run_ = training.simulate, training.simulate_to_beat, loop._run
    loops: list[list[float]] = []  # per simulation in progress: [loop CPU, full loop CPU, tasks]

    def _run(tasks, prefix, beat=None, ends=()):
        t = time.process_time()
        got = run_(tasks, prefix, beat, ends)
        cpu = time.process_time() - t
        if loops:
            loops[-1][0] += cpu
            if got is None:  # stopped: its whole loop, untimed by the caller
                t = time.process_time()
                run_(tasks, prefix)
                loops[-1][1] += time.process_time() - t
                loops[-1][2] += len(tasks)
                loops[-1][3] += time.process_time() - t
            else:
                loops[-1][1] += cpu
        return got

    def wrapped(fn, beat_of):
        def call(cfg, *args, **kwargs):
            loops.append([0.0, 0.0, 0, 0.0])
            t = time.process_time()
            res = fn(cfg, *args, **kwargs)
            cpu = time.process_time() - t
            lp, full, n, extra = loops.pop()
            log.append({"cfg": id(cfg), "beat": beat_of(args), "cpu": cpu - extra,
                        "time": None if res is None else res.iteration_time_s,
                        "loop_cpu": lp, "full_loop_cpu": full, "tasks": n,
                        "method": None if res is None else res.simulation["method"]})
            return res
        return call

    training.simulate = wrapped(sim, lambda a: None)
    training.simulate_to_beat = wrapped(to_beat, lambda a: a[0])
    loop._run = _run
    try:
        yield log
    finally:
        training.simulate, training.simulate_to_beat, loop._run = sim, to_beat, run_


@contextmanager
def paired(pairs: list[tuple[float, float, bool]], reps: int = 3) -> Any:
    """Inside it, every event loop run with a beat is run ``reps`` times more each way, with
    and without the beat, alternated (which goes first alternates too); appends (best CPU
    with the beat, best CPU without, whether it stopped) to ``pairs``: the stop's gain less its
    bookkeeping (``engine.loop._tails`` and the checks), loop by loop."""
    from trainsim.engine import loop

    run_ = loop._run

    def _run(tasks, prefix, beat=None, ends=()):
        got = run_(tasks, prefix, beat, ends)
        if beat is not None:
            best = [float("inf"), float("inf")]
            for k in range(2 * reps):
                way = (k + len(pairs)) % 2
                t = time.process_time()
                run_(tasks, prefix, beat if way == 0 else None, ends)
                best[way] = min(best[way], time.process_time() - t)
            pairs.append((best[0], best[1], got is None))
        return got

    loop._run = _run
    try:
        yield pairs
    finally:
        loop._run = run_


def rows_costs(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Per row: id, CPU, answer (None where it failed), its simulations (``recorded``)."""
    from trainsim.validate.training import predict_training_row

    out: list[dict[str, Any]] = []
    log: list[dict[str, Any]] = []
    with recorded(log), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row in rows:
            log.clear()
            t = time.process_time()
            res = predict_training_row(row)
            cpu = time.process_time() - t
            out.append({"id": row.get("id", "?"), "cpu": cpu,
                        "answer": res.predicted if res.error is None else None,
                        "sims": list(log)})
    return out


def summary(costs: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals: simulations asked in full / against a time to beat, those that lost (stopped, or
    ran to an end above the row's answer), the stopped ones' CPU and loop CPU against their
    loops run in full (the loop work saved)."""
    sims = [s for r in costs for s in r["sims"]]
    answer = {id(s): r["answer"] for r in costs for s in r["sims"]}
    stopped = [s for s in sims if s["time"] is None]
    ran_lost = [s for s in sims if s["time"] is not None and answer[id(s)] is not None
                and s["time"] > answer[id(s)]]
    saved = [1.0 - s["loop_cpu"] / s["full_loop_cpu"] for s in stopped if s["full_loop_cpu"]]
    return {
        "rows": len(costs), "row_cpu": round(sum(r["cpu"] for r in costs), 3),
        "simulations": len(sims), "simulation_cpu": round(sum(s["cpu"] for s in sims), 3),
        "asked_in_full": sum(s["beat"] is None for s in sims),
        "asked_to_beat": sum(s["beat"] is not None for s in sims),
        "stopped": len(stopped), "stopped_cpu": round(sum(s["cpu"] for s in stopped), 3),
        "stopped_no_loop_run": sum(not s["full_loop_cpu"] for s in stopped),
        "lost_ran_to_end": len(ran_lost),
        "lost_ran_to_end_cpu": round(sum(s["cpu"] for s in ran_lost), 3),
        "lost_ran_to_end_full_method": sum(s["method"] == "full" for s in ran_lost),
        "stopped_loop_cpu": round(sum(s["loop_cpu"] for s in stopped), 3),
        "stopped_full_loop_cpu": round(sum(s["full_loop_cpu"] for s in stopped), 3),
        "loop_saved_deciles": [round(v, 3) for v in statistics.quantiles(saved, n=10)]
        if len(saved) > 1 else saved,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", default=PUBLIC)
    ap.add_argument("--json", help="write every row's simulations here")
    ap.add_argument("--paired", type=int, default=0, metavar="REPS",
                    help="instead: every loop run with a beat timed REPS times with and without "
                         "it (best of each), the totals printed")
    args = ap.parse_args(argv)
    from trainsim.validate import read_rows

    kind_of, rows = read_rows(args.file)
    if kind_of != "training":
        ap.error(f"{args.file} is a {kind_of} file, not a training file")
    if args.paired:
        from trainsim.validate.training import predict_training_row

        pairs: list[tuple[float, float, bool]] = []
        with paired(pairs, args.paired), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for row in rows:
                predict_training_row(row)
        for name, sel in (("stopped", [p for p in pairs if p[2]]),
                          ("ran to the end", [p for p in pairs if not p[2]]), ("all", pairs)):
            w, wo = sum(p[0] for p in sel), sum(p[1] for p in sel)
            print(f"{name:15} loops {len(sel):4d}  CPU with the beat {w:.4f} s, without "
                  f"{wo:.4f} s, saved {wo - w:+.4f} s")
        return 0
    costs = rows_costs(rows)
    for k, v in summary(costs).items():
        print(f"{k:28} {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary(costs), "rows": costs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
