"""Fit ``collectives.scale_terms.FABRIC_DOUBLING_COST`` on published nccl-tests runs that span
more than two nodes, with sources held out.

    PYTHONPATH=src python benchmarks/fit_collectives.py [--csv FILE] [--algos ring,tree,...]
                                                        [--no-fit] [--efa]

Rows: those of the collectives file (default benchmarks/collectives_published.csv) that the
validator counts (not ``comparable = no``: ``extra["excluded"]``) and whose group spans more
than two nodes: the only rows the constant moves. A row's source is its id's first field
(``nccl1229``, ``nccltests78``, ...).
``HELD_OUT`` sources never reach the fit; every source is also predicted by a fit on all the
others (leave one source out). Loss: mean |ln(predicted / measured)| (over- and
under-prediction alike). Search: golden section on [0, 0.2]. ``--algos`` names the algorithms
that pay the cost (``scale_terms.FABRIC_SCALE_ALGOS``, default: the module's); ``--no-fit``
reports the module's value only. The whole file's MAPE (comparable rows) is printed at 0 and at
the fitted value. Rows with ``fabric = efa`` are left out: ``--efa`` fits
``scale_terms.EFA_HOP_US`` and ``EFA_BW_SHARE`` on their all_reduce rows alone, the others
held out (``fit_efa``).
"""

from __future__ import annotations

import argparse
import csv
import functools
import math
import sys
from pathlib import Path

from fit_kernels import golden

from trainsim.collectives import scale_terms
from trainsim.validate import _guarded, read_rows, summarize, validate_file
from trainsim.validate.collectives import predict_collective_row

PUBLISHED = Path(__file__).resolve().parent / "collectives_published.csv"
HELD_OUT = ("nccltests78", "nccl1368", "nccltests119")
"""Held out: 256 V100 on DGX-2 with NCCL 2.8.4 (nccl-tests #78), 5 x 8 H100 on 4x 400G RoCE with
NCCL 2.20 (NVIDIA/nccl #1368, ring and tree), 3 x 8 A100 on 4x HDR (nccl-tests #119): other GPUs,
NCCL versions and fabrics than the fitted sources; chosen before any fit was run."""


def _efa_ids(path: Path) -> set[str]:
    with path.open(newline="", encoding="utf-8") as f:
        return {r["id"] for r in csv.DictReader(f) if (r.get("fabric") or "").strip() == "efa"}


def _source(row_id: str) -> str:
    return row_id.split("-", 1)[0]


def _rows(path: Path) -> set[str]:
    """Ids of the rows the validator counts whose group spans more than two nodes."""
    with path.open(newline="", encoding="utf-8") as f:
        nodes = {r["id"]: int(r["num_gpus"]) // int(r["gpus_per_node"])
                 for r in csv.DictReader(f)}
    _, results = validate_file(path)
    efa = _efa_ids(path)
    return {r.id for r in results
            if not r.extra.get("excluded") and nodes[r.id] > 2 and r.id not in efa}


def ratios(path: Path, ids: set[str] | None = None) -> dict[str, float]:
    """predicted / measured of each row in ``ids`` (every row: None) at the module's constants.
    With ``ids``, only those rows are predicted (each through ``validate._guarded``, as
    ``validate_file`` predicts a row: alone, so the same numbers): a fit asks ~170 times for
    ~17 of the file's ~210 rows."""
    if ids is None:
        results = validate_file(path)[1]
    else:
        stat = path.stat()
        results = [_guarded(predict_collective_row, row)
                   for row in _file_rows(path, stat.st_mtime_ns, stat.st_size) if row["id"] in ids]
    out = {}
    for r in results:
        if ids is None or r.id in ids:
            if r.error:
                raise SystemExit(f"{r.id}: {r.error}")
            out[r.id] = r.predicted / r.measured
    return out


@functools.lru_cache(maxsize=4)
def _file_rows(path: Path, mtime_ns: int, size: int) -> tuple[dict[str, str], ...]:
    """The collectives file's rows as ``validate_file`` reads them (read again only when the
    file's modification time or size changed)."""
    kind, rows = read_rows(path)
    if kind != "collectives":
        raise SystemExit(f"{path}: a {kind} file, not a collectives file")
    return tuple(rows)


def _ratios(path: Path, ids: set[str], cost: float) -> dict[str, float]:
    """``ratios`` with the doubling cost at ``cost``."""
    scale_terms.FABRIC_DOUBLING_COST = cost
    return ratios(path, ids)


def log_loss(ratios: dict[str, float], ids: set[str]) -> float:
    """Mean |ln(predicted / measured)| over ``ids``: the loss every collectives fit minimises."""
    return sum(abs(math.log(ratios[i])) for i in ids) / len(ids)


def _fit(path: Path, ids: set[str], all_ids: set[str]) -> float:
    return golden(lambda c: log_loss(_ratios(path, all_ids, c), ids), 0.0, 0.2, tol=1e-4)


def stats(ratios: dict[str, float], ids: set[str]) -> str:
    errs = [ratios[i] - 1 for i in ids]
    if not errs:
        return "n=  0"
    mape = 100 * sum(map(abs, errs)) / len(errs)
    return f"n={len(errs):3d}  MAPE {mape:6.2f} %  signed {100 * sum(errs) / len(errs):+6.2f} %"


def _file_mape(path: Path, cost: float) -> str:
    scale_terms.FABRIC_DOUBLING_COST = cost
    s = summarize(validate_file(path)[1])  # the rows marked not comparable counted apart
    return f"{s['n']} comparable rows, MAPE {100 * s['mape']:.2f} %"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", default=str(PUBLISHED), help="a collectives validation file")
    ap.add_argument("--algos", help="comma-separated algorithms that pay the cost")
    ap.add_argument("--no-fit", action="store_true", help="report the module's constant only")
    ap.add_argument("--efa", action="store_true", help="fit the EFA constants on the EFA rows")
    args = ap.parse_args(argv)
    path = Path(args.csv)
    if args.efa:
        from fit_efa import fit_efa
        return fit_efa(path, _efa_ids(path), args.no_fit)
    if args.algos:
        scale_terms.FABRIC_SCALE_ALGOS = tuple(a.strip() for a in args.algos.split(","))
    module_value = scale_terms.FABRIC_DOUBLING_COST
    all_ids = _rows(path)
    held = {i for i in all_ids if _source(i) in HELD_OUT}
    fit_ids = all_ids - held
    print(f"algorithms paying the cost: {', '.join(scale_terms.FABRIC_SCALE_ALGOS)}")
    print(f"rows beyond two nodes: {len(all_ids)} ({len(fit_ids)} fit, {len(held)} held out: "
          f"{100 * len(held) / len(all_ids):.0f} %, sources {', '.join(HELD_OUT)})")
    cost = module_value if args.no_fit else _fit(path, fit_ids, all_ids)
    kind = "module" if args.no_fit else "fitted"
    for label, c in (("without (0)", 0.0), (f"{kind} {cost:.4f}", cost)):
        r = _ratios(path, all_ids, c)
        print(f"{label:16s} fit      {stats(r, fit_ids)}")
        print(f"{'':16s} held out {stats(r, held)}")
        print(f"{'':16s} file     {_file_mape(path, c)}")
    if not args.no_fit:
        print("leave one source out (fitted on every other source, this one predicted):")
        for src in sorted({_source(i) for i in all_ids}):
            mine = {i for i in all_ids if _source(i) == src}
            c = _fit(path, all_ids - mine, all_ids)
            print(f"  {src:14s} c={c:.4f}  {stats(_ratios(path, all_ids, c), mine)}")
    if args.no_fit:
        return 0
    print(f"per row at {cost:.4f} (ratio predicted / measured):")
    r = _ratios(path, all_ids, cost)
    for i in sorted(all_ids, key=lambda x: (_source(x), x)):
        tag = "held out" if i in held else "fit"
        print(f"  {i:40s} {r[i]:6.3f}  {tag}")
    scale_terms.FABRIC_DOUBLING_COST = module_value
    return 0


if __name__ == "__main__":
    sys.exit(main())
