"""Fit the host launch cost to the published training runs, and leave each framework out.

    python benchmarks/fit_host.py              # grid fit + leave-one-framework-out table
    python benchmarks/fit_host.py --markdown   # the same as a RESULTS.md table

``trainsim.compute.host.HOST_S_PER_KERNEL`` (CPU seconds to issue one kernel from eager
PyTorch) is the only global constant trainsim fits to training runs. It is searched on a grid
over the physically plausible range (a PyTorch op costs some 5-25 us of CPU before its kernel
runs: Python, the dispatcher with autograd, the CUDA launch), minimising the time MAPE of
``training_public.csv``. Leave one framework out: for each framework, the value is refitted on
the other frameworks' rows only and that framework's rows are scored with it; that is the error
a user sees on runs from a framework nobody showed the tool.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

GRID_US = (0.0, 5.0, 10.0, 15.0, 20.0, 30.0)
DATA = Path(__file__).resolve().parents[1] / "src" / "trainsim" / "data" / "validation"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "validation" / "training_public.csv"


def _errors(args: tuple[float, str]) -> dict[str, float]:
    """Signed relative error of every row's iteration time with the host cost set to ``us``."""
    us, path = args
    from trainsim.compute import host

    host.HOST_S_PER_KERNEL = us * 1e-6
    return row_errors(path)


def row_errors(path: str) -> dict[str, float]:
    """Signed relative error of every row's iteration time with the host constants as set."""
    from trainsim.validate.training import predict_training_row

    out = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            r = predict_training_row(row)
            out[row["id"]] = (r.predicted / r.measured - 1.0) if r.predicted else float("nan")
    return out


def _mape(errs: list[float]) -> float:
    ok = [abs(e) for e in errs if not math.isnan(e)]
    return 100.0 * sum(ok) / len(ok) if ok else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(SHARED if SHARED.exists() else
                                          DATA / "training_public.csv"))
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    with open(a.data, newline="") as f:
        framework = {r["id"]: r["framework"] for r in csv.DictReader(f)}
    with ProcessPoolExecutor(max_workers=min(len(GRID_US), os.cpu_count() or 1)) as pool:
        grid = dict(zip(GRID_US, pool.map(_errors, [(us, a.data) for us in GRID_US])))

    def mape(us: float, keep) -> float:
        return _mape([e for rid, e in grid[us].items() if keep(framework[rid])])

    best = min(GRID_US, key=lambda us: (round(mape(us, lambda f: True), 6), us))
    rows = []
    for fw in sorted(set(framework.values())):
        refit = min(GRID_US, key=lambda us: (round(mape(us, lambda f, fw=fw: f != fw), 6), us))
        errs = [e for rid, e in grid[refit].items() if framework[rid] == fw]
        signed = 100.0 * sum(errs) / len(errs)
        rows.append((fw, len(errs), refit, _mape(errs), signed, mape(best, lambda f, fw=fw: f == fw)))
    p = print
    p(f"grid (us): {', '.join(f'{us:g}' for us in GRID_US)}")
    p("all-row MAPE per grid value: " + ", ".join(
        f"{us:g} us {mape(us, lambda f: True):.2f} %" for us in GRID_US))
    p(f"fit on every row: HOST_S_PER_KERNEL = {best:g} us "
      f"(MAPE {mape(best, lambda f: True):.2f} %)")
    if a.markdown:
        p("\n| framework (left out) | rows | refit (us) | held-out MAPE | held-out mean signed "
          "| MAPE with the all-row fit |\n|---|---|---|---|---|---|")
        for fw, n, us, m, s, full in rows:
            p(f"| {fw} | {n} | {us:g} | {m:.1f} % | {s:+.1f} % | {full:.1f} % |")
    else:
        for fw, n, us, m, s, full in rows:
            p(f"{fw:20} n={n:3} refit={us:4g} us  held-out MAPE {m:5.1f} %  signed {s:+6.1f} %"
              f"  (all-row fit {full:5.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
