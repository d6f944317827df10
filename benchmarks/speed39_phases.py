"""Where the wall time of ``trainsim validate FILE`` goes (issue 21 item 3): the parent's serial
start (interpreter, ``import trainsim.cli``, the command up to the worker pool), the pool (the
workers predicting rows side by side), and the parent's serial end (the table rendered). Runs
the command line in this process, as ``python -m trainsim validate FILE [ARGS]`` does, with
the pool's start and shutdown timed; prints one line to stderr (the command's own output goes
to stdout as usual).

    PYTHONPATH=src python benchmarks/speed39_phases.py [FILE] [ARGS...] > /dev/null

With W workers on as many idle cores, the wall is about start + (workers' CPU) / W + end: the
serial parts count in full, the workers' CPU divided among them (their balance is
``validate._in_workers``'s largest-first order).
"""

from __future__ import annotations

import atexit
import resource
import sys
import time

START = time.perf_counter(), time.process_time()  # after the interpreter's own start-up


def main() -> None:
    from concurrent.futures import process

    from trainsim import cli

    imported = time.perf_counter(), time.process_time()
    marks: dict[str, tuple[float, float]] = {}
    pool_init, pool_shutdown = process.ProcessPoolExecutor.__init__, \
        process.ProcessPoolExecutor.shutdown

    def init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        marks["pool"] = time.perf_counter(), time.process_time()
        pool_init(self, *args, **kwargs)

    def shutdown(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        out = pool_shutdown(self, *args, **kwargs)
        marks["end"] = time.perf_counter(), time.process_time()
        return out

    process.ProcessPoolExecutor.__init__ = init  # type: ignore[method-assign]
    process.ProcessPoolExecutor.shutdown = shutdown  # type: ignore[method-assign]

    def report() -> None:
        now = time.perf_counter(), time.process_time()
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        pool, end = marks.get("pool", now), marks.get("end", now)
        print(f"wall: import cli {imported[0] - START[0]:.2f} s, to pool "
              f"{pool[0] - imported[0]:.2f} s, pool {end[0] - pool[0]:.2f} s, after "
              f"{now[0] - end[0]:.2f} s | parent CPU {now[1]:.2f} s (before the pool "
              f"{pool[1]:.2f} s, after it {now[1] - end[1]:.2f} s) | workers' CPU "
              f"{kids.ru_utime + kids.ru_stime:.2f} s", file=sys.stderr)

    atexit.register(report)
    path = sys.argv[1] if len(sys.argv) > 1 else "../shared/validation/training_public.csv"
    sys.argv = ["trainsim", "validate", path, *sys.argv[2:]]
    cli.main(prog_name="trainsim")


if __name__ == "__main__":
    main()
