"""Host cost per mechanism against one global per-launch cost: a grid over the candidates,
scored on the published runs with leave-one-framework-out (as ``benchmarks/fit_host.py``).

    git apply benchmarks/candidates/host_mechanisms.patch   # the hooks (not on main)
    python benchmarks/fit_host_mechanisms.py            # the default grid (~20 min, 2 cores)
    python benchmarks/fit_host_mechanisms.py --grid 30/10/0/0/0,30/0/0/60/1 --rows ID,ID

A setting is (``HOST_S_PER_KERNEL`` us, ``GROUPED_SPLIT_HOST_S`` us per expert of a per-expert
GEMM loop, ``FP8_GEMM_HOST_S`` us per fp8 GEMM call, ``TE_MODULE_HOST_S`` us per
Transformer Engine module call, ``HOST_LEAD_CARRY``), all in
``trainsim.compute.host``. For each framework the setting is refitted on the other frameworks'
rows and that framework's rows are scored with it.
"""

from __future__ import annotations

import argparse
import csv
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from fit_host import _mape, row_errors

DATA = Path(__file__).resolve().parents[1] / "src" / "trainsim" / "data" / "validation"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "validation" / "training_public.csv"
Setting = tuple[float, float, float, float, bool]
GRID: tuple[Setting, ...] = (
    (30.0, 0.0, 0.0, 0.0, False), (30.0, 10.0, 0.0, 0.0, False),
    (30.0, 0.0, 20.0, 0.0, False), (30.0, 0.0, 0.0, 60.0, False),
    (30.0, 0.0, 0.0, 0.0, True), (30.0, 20.0, 0.0, 0.0, True),
    (30.0, 30.0, 0.0, 0.0, True), (30.0, 30.0, 0.0, 60.0, True),
    (30.0, 0.0, 0.0, 60.0, True), (25.0, 30.0, 0.0, 0.0, True),
    (35.0, 0.0, 0.0, 0.0, True), (30.0, 0.0, 20.0, 0.0, True),
)


def _errors(args: tuple[Setting, str]) -> dict[str, float]:
    (us, split_us, fp8_us, te_us, carry), path = args
    from trainsim.compute import host

    host.HOST_S_PER_KERNEL = us * 1e-6
    host.GROUPED_SPLIT_HOST_S = split_us * 1e-6
    host.FP8_GEMM_HOST_S = fp8_us * 1e-6
    host.TE_MODULE_HOST_S = te_us * 1e-6
    host.HOST_LEAD_CARRY = carry
    return row_errors(path)


def _name(s: Setting) -> str:
    return f"{s[0]:g}/{s[1]:g}/{s[2]:g}/{s[3]:g}{'/c' if s[4] else ''}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(SHARED if SHARED.exists() else
                                          DATA / "training_public.csv"))
    ap.add_argument("--rows", default="")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--grid", default="", help="settings us/split/fp8/te/carry(0|1), comma-"
                    "separated (default: GRID)")
    a = ap.parse_args(argv)
    from trainsim.compute import host
    if not hasattr(host, "GROUPED_SPLIT_HOST_S"):
        print("apply benchmarks/candidates/host_mechanisms.patch first (the candidate hooks)")
        return 2
    grid_of = tuple((float(u), float(sp), float(f8), float(te), c == "1") for u, sp, f8, te, c in
                    (g.split("/") for g in a.grid.split(","))) if a.grid else GRID
    with open(a.data, newline="") as f:
        framework = {r["id"]: r["framework"] for r in csv.DictReader(f)}
    with ProcessPoolExecutor(max_workers=a.workers) as pool:
        grid = dict(zip(grid_of, pool.map(_errors, [(s, a.data) for s in grid_of])))

    def mape(s: Setting, keep) -> float:
        return _mape([e for rid, e in grid[s].items() if keep(framework[rid])])

    fws = sorted(set(framework.values()))
    print("setting (us a launch / per expert split / per fp8 GEMM / per TE module call / carry): all-row "
          "MAPE, then per framework")
    print(f"{'setting':18} {'all':>6} " + " ".join(f"{fw[:10]:>10}" for fw in fws))
    for s in grid_of:
        print(f"{_name(s):18} {mape(s, lambda f: True):6.2f} " + " ".join(
            f"{mape(s, lambda f, fw=fw: f == fw):10.1f}" for fw in fws))
    best = min(grid_of, key=lambda s: round(mape(s, lambda f: True), 6))
    print(f"fit on every row: {_name(best)} (MAPE {mape(best, lambda f: True):.2f} %)")
    held = []
    for fw in fws:
        refit = min(grid_of, key=lambda s, fw=fw: round(mape(s, lambda f, fw=fw: f != fw), 6))
        errs = [e for rid, e in grid[refit].items() if framework[rid] == fw]
        held += errs
        print(f"  left out {fw:20} n={len(errs):3} refit {_name(refit):18} held-out MAPE "
              f"{_mape(errs):5.1f} %  signed {100 * sum(errs) / len(errs):+6.1f} %")
    print(f"leave-one-framework-out, all rows: MAPE {_mape(held):.2f} %")
    for rid in filter(None, a.rows.split(",")):
        print(f"{rid}: " + ", ".join(f"{_name(s)} {100 * grid[s][rid]:+.1f}" for s in grid_of))
    return 0


if __name__ == "__main__":
    sys.exit(main())
