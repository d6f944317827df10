"""What a compiled event loop would save a search (issue 21 acceptance 4), measured: the loop of
``trainsim.engine.loop._run`` written in C with the same arithmetic, run on every task graph a
search's simulations run, its timelines compared to the Python loop's bit for bit, and both timed.

    python benchmarks/compiled_loop.py                       # the 22B search of issue 21
    python benchmarks/compiled_loop.py --model llama3-70b --gpu h100-sxm-80gb --gpus 1024 \
        --global-batch 1024 --seq 4096                       # search_speed.py's default

An experiment, not a part of trainsim (which has no compiled code): the C source below is built
with the system's C compiler (``cc -O2 -ffp-contract=off``: no fused multiply-add, no fast-math,
so each ``+``, ``-``, ``*`` and ``/`` rounds as CPython's floats do) into a temporary directory
and called through ``ctypes``. It is the loop from the first task (``_run(tasks, prefix=False)``,
which the engine keeps bit-identical to its prefix pass): a heap of (finish time, task, version)
events, a task started when it heads its idle stream with its dependencies ended, and a task that
slows a stream moving that stream's running task's finish (``MIN_RATE``, the 1e-12 residue) as
``shift`` does. The tasks are turned into arrays (streams numbered in order of first use, the
dependencies flattened) on each call: that conversion is timed with it, as a compiled loop
called from the Python graph builder would pay it. Prints one dated line: graphs, tasks, whether
every timeline is identical, the Python loop's best CPU time, the C loop's with and without the
conversion.
"""

from __future__ import annotations

import ctypes
import datetime
import itertools
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

C_SOURCE = r"""
#include <stdlib.h>
typedef struct { double t; long i; long v; } Ev;
static int less(const Ev *a, const Ev *b) {
    if (a->t != b->t) return a->t < b->t;
    if (a->i != b->i) return a->i < b->i;
    return a->v < b->v;
}
static void push(Ev *h, long *n, Ev e) {
    long k = (*n)++;
    h[k] = e;
    while (k > 0) {
        long p = (k - 1) >> 1;
        if (!less(&h[k], &h[p])) break;
        Ev t = h[k]; h[k] = h[p]; h[p] = t; k = p;
    }
}
static Ev pop(Ev *h, long *n) {
    Ev top = h[0];
    h[0] = h[--(*n)];
    long k = 0;
    for (;;) {
        long l = 2 * k + 1, r = l + 1, m = k;
        if (l < *n && less(&h[l], &h[m])) m = l;
        if (r < *n && less(&h[r], &h[m])) m = r;
        if (m == k) break;
        Ev t = h[k]; h[k] = h[m]; h[m] = t; k = m;
    }
    return top;
}
/* Returns the tasks that ran (n unless a deadlock). */
long run(long n, long ns, double min_rate, const int *stream_of, const double *duration,
         const long *dep_ptr, const long *dep_idx, const int *hold_sid, const double *hold_share,
         const long *q_ptr, const long *q_idx, double *start, double *end) {
    long *dptr = calloc(n + 1, sizeof(long)), *didx = malloc((dep_ptr[n] + 1) * sizeof(long));
    long *fill = calloc(n + 1, sizeof(long)), *waiting = calloc(n + 1, sizeof(long));
    for (long i = 0; i < n; i++) {
        waiting[i] = dep_ptr[i + 1] - dep_ptr[i];
        for (long k = dep_ptr[i]; k < dep_ptr[i + 1]; k++) dptr[dep_idx[k] + 1]++;
    }
    for (long i = 0; i < n; i++) dptr[i + 1] += dptr[i];
    for (long i = 0; i < n; i++)  /* dependents in task order, as the Python loop's lists */
        for (long k = dep_ptr[i]; k < dep_ptr[i + 1]; k++) {
            long d = dep_idx[k];
            didx[dptr[d] + fill[d]++] = i;
        }
    long *head = calloc(ns + 1, sizeof(long)), *running = malloc((ns + 1) * sizeof(long));
    double *held = calloc(ns + 1, sizeof(double));
    double *left = calloc(n + 1, sizeof(double)), *since = calloc(n + 1, sizeof(double));
    long *version = calloc(n + 1, sizeof(long));
    Ev *heap = malloc((3 * n + 16) * sizeof(Ev));
    long hn = 0, done = 0;
    for (long s = 0; s < ns; s++) running[s] = -1;
#define SHIFT(TSID, SHARE, NOW) do { \
        long ts_ = (TSID); double h_ = held[ts_]; long r_ = running[ts_]; \
        if (r_ >= 0) { double rate_ = 1.0 - h_; if (rate_ < min_rate) rate_ = min_rate; \
                       left[r_] -= ((NOW) - since[r_]) * rate_; } \
        h_ = h_ + (SHARE); if (!(h_ >= 1e-12)) h_ = 0.0; held[ts_] = h_; \
        if (r_ >= 0) { since[r_] = (NOW); double lf_ = left[r_]; if (lf_ < 0.0) lf_ = 0.0; \
                       double rate_ = 1.0 - h_; if (rate_ < min_rate) rate_ = min_rate; \
                       double e_ = (NOW) + lf_ / rate_; end[r_] = e_; \
                       Ev ev_ = {e_, r_, ++version[r_]}; push(heap, &hn, ev_); } \
    } while (0)
#define BEGIN(SID, I, NOW) do { \
        long sd_ = (SID), i_ = (I); running[sd_] = i_; start[i_] = since[i_] = (NOW); \
        double d_ = left[i_] = duration[i_]; double h_ = held[sd_]; \
        if (h_ != 0.0) { double rate_ = 1.0 - h_; if (rate_ < min_rate) rate_ = min_rate; \
                         d_ = d_ / rate_; } \
        double e_ = (NOW) + d_; end[i_] = e_; Ev ev_ = {e_, i_, 0}; push(heap, &hn, ev_); \
        if (hold_sid[i_] >= 0) SHIFT(hold_sid[i_], hold_share[i_], (NOW)); \
    } while (0)
    for (long s = 0; s < ns; s++)
        if (q_ptr[s + 1] > q_ptr[s] && !waiting[q_idx[q_ptr[s]]] && running[s] < 0)
            BEGIN(s, q_idx[q_ptr[s]], 0.0);
    while (hn) {
        Ev ev = pop(heap, &hn);
        long i = ev.i;
        double now = ev.t;
        if (ev.v != version[i]) continue;  /* rescheduled by a change of contention */
        done++;
        long sid = stream_of[i];
        running[sid] = -1;
        long k = ++head[sid];
        if (hold_sid[i] >= 0) SHIFT(hold_sid[i], -hold_share[i], now);
        for (long p = dptr[i]; p < dptr[i + 1]; p++) {
            long j = didx[p];
            if (!--waiting[j]) {
                long sj = stream_of[j];
                if (running[sj] < 0 && q_idx[q_ptr[sj] + head[sj]] == j) BEGIN(sj, j, now);
            }
        }
        if (k < q_ptr[sid + 1] - q_ptr[sid] && running[sid] < 0) {
            long nx = q_idx[q_ptr[sid] + k];
            if (!waiting[nx]) BEGIN(sid, nx, now);
        }
    }
    free(dptr); free(didx); free(fill); free(waiting); free(head); free(running); free(held);
    free(left); free(since); free(version); free(heap);
    return done;
}
"""


def build(directory: str) -> ctypes.CDLL | None:
    """The C loop compiled in ``directory`` and loaded, or None without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    src, lib = Path(directory) / "loop.c", Path(directory) / "loop.so"
    src.write_text(C_SOURCE)
    subprocess.run([cc, "-O2", "-ffp-contract=off", "-fPIC", "-shared", "-o", str(lib),
                    str(src)], check=True)
    out = ctypes.CDLL(str(lib))
    out.run.restype = ctypes.c_long
    out.run.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_double] + [ctypes.c_void_p] * 10
    return out


def run_c(lib: ctypes.CDLL, tasks: list, convert_only: bool = False
          ) -> tuple[list[float], list[float]]:
    """(start, end) of every task from the C loop (``convert_only``: the arrays built, no run)."""
    import numpy as np

    from trainsim.engine.loop import MIN_RATE

    n = len(tasks)
    sids: dict = {}
    stream_of = np.fromiter((sids.setdefault(t.stream, len(sids)) for t in tasks), np.int32, n)
    deps = [t.deps for t in tasks]
    dep_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.fromiter(map(len, deps), np.int64, n), out=dep_ptr[1:])
    dep_idx = np.fromiter(itertools.chain.from_iterable(deps), np.int64, int(dep_ptr[-1]))
    hold_sid, hold_share = np.full(n, -1, np.int32), np.zeros(n)
    for i, t in enumerate(tasks):
        if t.slows is not None and t.slows[0] in sids:
            hold_sid[i], hold_share[i] = sids[t.slows[0]], t.slows[1]
    duration = np.fromiter((t.duration_s for t in tasks), float, n)
    q_ptr = np.zeros(len(sids) + 1, np.int64)
    np.cumsum(np.bincount(stream_of, minlength=len(sids)), out=q_ptr[1:])
    q_idx = np.argsort(stream_of, kind="stable").astype(np.int64)  # each stream in task order
    start, end = np.empty(n), np.empty(n)
    if convert_only:
        return [], []
    done = lib.run(n, len(sids), MIN_RATE, *(a.ctypes.data for a in (
        stream_of, duration, dep_ptr, dep_idx, hold_sid, hold_share, q_ptr, q_idx, start, end)))
    if done != n:
        raise RuntimeError(f"deadlock: {n - done} tasks never ran")
    return start.tolist(), end.tolist()


def main() -> int:
    from search_profile import problem_parser

    ap = problem_parser(__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from trainsim.engine import loop
    from trainsim.search import search
    from trainsim.search.cli import build_base
    from trainsim.search.core import EvaluationCache

    with tempfile.TemporaryDirectory() as tmp:
        lib = build(tmp)
        if lib is None:
            print("no C compiler (cc, gcc) on PATH: nothing measured")
            return 1
        graphs: list[list] = []
        run = loop._run

        def recording(tasks: list, prefix: bool):
            graphs.append(tasks)
            return run(tasks, prefix)

        base = build_base(args.model, args.gpu, args.gpus, args.global_batch, args.seq, 8,
                          400.0, "bf16")
        loop._run = recording
        try:  # one process: every graph its simulations run the loop on
            search(base, [args.gpus], cache=EvaluationCache())
        finally:
            loop._run = run
        same = all(run_c(lib, g) == ((tl := run(g, False)).start_s, tl.end_s)
                   and run(g, True).end_s == tl.end_s for g in graphs)

        def best(fn) -> float:
            out = []
            for _ in range(args.repeat):
                t = time.process_time()
                for g in graphs:
                    fn(g)
                out.append(time.process_time() - t)
            return min(out)

        py = best(lambda g: run(g, True))
        c = best(lambda g: run_c(lib, g))
        conv = best(lambda g: run_c(lib, g, convert_only=True))
    print(f"{datetime.date.today().isoformat()} {args.model} on {args.gpus} x {args.gpu}: "
          f"{len(graphs)} graphs, {sum(map(len, graphs)):,} tasks; C timelines "
          f"{'bit-identical to' if same else 'DIFFERENT from'} the Python loop's; CPU best of "
          f"{args.repeat}: Python loop {py:.3f} s, C loop {c:.3f} s of which the conversion "
          f"to arrays {conv:.3f} s ({platform.machine()}, Python {platform.python_version()})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
