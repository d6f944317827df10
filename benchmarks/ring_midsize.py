"""One-node ring all_reduce at mid sizes (1 MiB-1 GiB): what the published sweeps measure, what
trainsim prices, and two candidate NCCL mechanisms tried as what-ifs (a diagnostic: nothing
here feeds trainsim).

    PYTHONPATH=src python benchmarks/ring_midsize.py [--training]

1. Every comparable one-node all_reduce row of ``benchmarks/collectives_published.csv`` that the
   model runs as a ring (Azure ND A100 v4, `-g 8`, NCCL 2.18.5; stas00/ml-engineering's A100
   node, `-g 8`, default algorithm, NCCL version not stated; Azure ND GB200 v6, `-g 4`, ring
   forced, NCCL 2.25.1; the DGX H100 sample's ring sizes; one A100 node swept one process per
   GPU and one process for 8 GPUs, the thanos rows): measured and modelled time, the
   model's protocol, and the gap in microseconds.
2. Per sweep and protocol band (the model's choice: LL128, Simple), a least-squares fit of
   ``t = a + f S / B`` (f the bus factor): the measured latency ``a`` and bus bandwidth ``B``
   beside the model's (the Simple band fitted up to 8 GiB).
3. Two candidate NCCL mechanisms, each one global number, read on every comparable row of the
   file: (a) LL128 moves a smaller share of the link than its 120/128 payload
   (``nccl.PROTOCOL_EFFICIENCY["LL128"]``); (b) a slower Simple ring step on NVLink
   (``nccl._HOP_US["nvlink"]["ring"]["Simple"]``, NCCL's tuner 3.4 us); and both at once at the
   values the A100 sweep's band fits imply (``band_implied``). Neither alone can reach the A100
   16 MiB point: slowing one protocol hands the size to the other.
   ``--training`` also prices every public training row under both (per framework MAPE).
   Last, both at the values the one-process-per-GPU A100 sweep implies (``thanos-...-np8``,
   ``mpirun -np 8 -g 1``, 30th session), on compute capability 8.0 only (``on_ampere``: the GPU
   NCCL runs with P2P reads on NVLink), every other GPU at the model's constants.
"""

from __future__ import annotations

import argparse
import csv
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from trainsim.collectives import nccl
from trainsim.validate import BUNDLED_DIR, summarize, validate_file
from trainsim.validate.training import predict_training_row

PUBLISHED = Path(__file__).resolve().parent / "collectives_published.csv"
SWEEPS = ("azure-a100x8-allreduce-", "stas-a100x8-allreduce-", "azure-gb200x4-allreduce-",
          "dgxc-h100x8-allreduce-", "thanos-a100x8-allreduce-np8-", "thanos-a100x8-allreduce-g8-")
"""The one-node all_reduce sweeps of the file (row-id prefixes); the last two are one A100 node
swept twice, one process per GPU (``np8``, as training runs) and one process for 8 GPUs (``g8``)."""
FIT_SWEEP = SWEEPS[0]
ONE_PROCESS_SWEEP = SWEEPS[4]
AMPERE = 80
"""Compute capability of A100: the one GPU whose NVLink rings NCCL runs with P2P reads (NCCL
2.18.5 src/graph/paths.cc L334-338 ``ncclTopoCheckP2p``: "Enable P2P Read for Ampere/NVLink
only"), the receiver reading the Simple buffer from the sender's memory; others write."""
MID = (2**20, 2**30)
"""Sizes read in sections 1-2 (bytes, inclusive)."""


def _rows() -> dict[str, dict[str, str]]:
    with PUBLISHED.open(newline="", encoding="utf-8") as fh:
        return {r["id"]: r for r in csv.DictReader(fh)}


def _results():
    return {r.id: r for r in validate_file(PUBLISHED)[1]}


def _time_us(row: dict[str, str], busbw_GBps: float) -> float:
    n, size = int(row["num_gpus"]), float(row["message_bytes"])
    return 1e6 * nccl.BUS_FACTOR[row["collective"]](n) * size / (busbw_GBps * 1e9)


def _sweep_rows(rows, res, prefix: str, lo: float = MID[0], hi: float = MID[1]):
    out = []
    for rid, r in rows.items():
        x = res.get(rid)
        if (rid.startswith(prefix) and r["comparable"] == "yes" and x and not x.error
                and lo <= float(r["message_bytes"]) <= hi
                and x.chosen.get("algorithm", "").startswith("ring")):
            out.append((r, x))
    return sorted(out, key=lambda p: float(p[0]["message_bytes"]))


def section1(rows, res) -> None:
    print("1. One-node ring all_reduce rows, 1 MiB-1 GiB (time in us)")
    print(f"   {'row':34s} {'meas us':>9s} {'model us':>9s} {'gap us':>8s} {'err':>7s}  model")
    for prefix in SWEEPS:
        for r, x in _sweep_rows(rows, res, prefix):
            tm, tp = _time_us(r, x.measured), _time_us(r, x.predicted)
            print(f"   {r['id']:34s} {tm:9.1f} {tp:9.1f} {tm - tp:+8.1f} "
                  f"{100 * (x.predicted / x.measured - 1):+6.1f} %  {x.chosen.get('algorithm')}")


def _fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(a us, B GB/s) of t = a + w / B over (w = f S bytes, t us) points."""
    w = np.array([p[0] for p in points])
    t = np.array([p[1] for p in points])
    slope, a = np.polyfit(w, t, 1)
    return float(a), float(1e-3 / slope)


def section2(rows, res) -> None:
    print("\n2. Per band: t = a + f S / B (least squares), measured vs model")
    print(f"   {'sweep':26s} {'band':7s} {'sizes':>15s}  {'a meas':>7s} {'B meas':>7s}  "
          f"{'a model':>7s} {'B model':>7s}")
    for prefix in SWEEPS:
        sel = _sweep_rows(rows, res, prefix)
        for proto in ("LL", "LL128", "Simple"):
            band = [(r, x) for r, x in sel if x.chosen.get("algorithm", "").endswith("/" + proto)]
            if len(band) < 2:
                continue
            f = [nccl.BUS_FACTOR["all_reduce"](int(r["num_gpus"])) * float(r["message_bytes"])
                 for r, _ in band]
            am, bm = _fit([(w, _time_us(r, x.measured)) for w, (r, x) in zip(f, band)])
            ap, bp = _fit([(w, _time_us(r, x.predicted)) for w, (r, x) in zip(f, band)])
            sizes = f"{_mib(band[0][0])}-{_mib(band[-1][0])} MiB"
            print(f"   {prefix.rstrip('-'):26s} {proto:7s} {sizes:>15s}  {am:7.1f} {bm:7.1f}  "
                  f"{ap:7.1f} {bp:7.1f}")


def _mib(r) -> str:
    return f"{float(r['message_bytes']) / 2**20:g}"


@contextmanager
def ll128_share(x: float):
    old = nccl.PROTOCOL_EFFICIENCY["LL128"]
    nccl.PROTOCOL_EFFICIENCY["LL128"] = x
    try:
        yield
    finally:
        nccl.PROTOCOL_EFFICIENCY["LL128"] = old


@contextmanager
def simple_nvlink_hop(us: float):
    old = nccl._HOP_US["nvlink"]["ring"]["Simple"]
    nccl._HOP_US["nvlink"]["ring"]["Simple"] = us
    try:
        yield
    finally:
        nccl._HOP_US["nvlink"]["ring"]["Simple"] = old


@contextmanager
def both(v: tuple[float, float]):
    with ll128_share(v[0]), simple_nvlink_hop(v[1]):
        yield


def band_implied(prefix: str = FIT_SWEEP) -> tuple[float, float]:
    """(LL128 share, Simple NVLink hop us) that an A100 sweep's band fits imply (default: the
    Azure sweep): LL128's measured busbw over the Simple band's, times the Simple share (1); the
    Simple band's measured latency less NCCL's ring base (8.4 us), over the ring's 2 (n - 1)
    steps."""
    rows, res = _rows(), _results()
    sel = _sweep_rows(rows, res, prefix, 2**20, 2**33)
    fits = {}
    for proto in ("LL128", "Simple"):
        band = [(r, x) for r, x in sel if x.chosen.get("algorithm", "").endswith("/" + proto)]
        fits[proto] = _fit([(nccl.BUS_FACTOR["all_reduce"](int(r["num_gpus"]))
                             * float(r["message_bytes"]), _time_us(r, x.measured))
                            for r, x in band])
    n = int(sel[0][0]["num_gpus"])
    return (fits["LL128"][1] / fits["Simple"][1],
            (fits["Simple"][0] - nccl._BASE_US["ring"]["Simple"]) / (2 * (n - 1)))


@contextmanager
def on_ampere(v: tuple[float, float]):
    """``both(v)`` for collectives on compute capability 8.0 only (the P2P-read GPU, ``AMPERE``);
    every other GPU keeps the model's constants."""
    time = nccl._time

    def priced(kind, size, span, f, algo, proto):
        if f.compute_capability != AMPERE:
            return time(kind, size, span, f, algo, proto)
        with both(v):
            return time(kind, size, span, f, algo, proto)

    nccl._time = priced
    try:
        yield
    finally:
        nccl._time = time


VARIANTS = ((ll128_share, (0.75, 0.6, 0.5), "LL128 share {:.3g} (model 0.9375)"),
            (simple_nvlink_hop, (6.0, 10.0, 14.0), "Simple NVLink hop {:.3g} us (model 3.4)"))


def _read(label: str, rows) -> None:
    res = _results()
    s = summarize(list(res.values()))
    ok = {rid: x for rid, x in res.items() if rows[rid]["comparable"] == "yes" and not x.error}
    one = [x for rid, x in ok.items()
           if int(rows[rid]["num_gpus"]) <= int(rows[rid]["gpus_per_node"])]
    multi = [x for rid, x in ok.items()
             if int(rows[rid]["num_gpus"]) > int(rows[rid]["gpus_per_node"])]
    print(f"   {label:44s} file {100 * s['mape']:5.2f} %, one node {_mape(one):5.2f} % "
          f"(n={len(one)}), multi-node {_mape(multi):5.2f} % (n={len(multi)})")
    for p in SWEEPS:
        errs = [100 * (x.predicted / x.measured - 1) for _, x in _sweep_rows(rows, res, p)]
        sizes = [_mib(r) for r, _ in _sweep_rows(rows, res, p)]
        print(f"   {'':44s}   {p.rstrip('-'):24s} "
              + " ".join(f"{z}M {e:+.0f}" for z, e in zip(sizes, errs)))


def _mape(xs) -> float:
    return 100 * float(np.mean([abs(x.predicted / x.measured - 1) for x in xs])) if xs else 0.0


def section3(rows, training: bool) -> None:
    print("\n3. Candidate mechanisms, each global, read on the whole file (comparable rows; per "
          "sweep: its 1 MiB-1 GiB ring rows' errors in %)")
    _read("model as is", rows)
    for ctx, values, label in VARIANTS:
        for v in values:
            with ctx(v):
                _read(label.format(v), rows)
    implied = band_implied()
    label = f"both at A100-implied {implied[0]:.2f}, {implied[1]:.1f} us"
    with both(implied):
        _read(label, rows)
    one = band_implied(ONE_PROCESS_SWEEP)
    label1 = f"A100 only, one-process {one[0]:.2f}, {one[1]:.1f} us"
    with on_ampere(one):
        _read(label1, rows)
    if training:
        section4(((label, both, implied), (label1, on_ampere, one)))


def section4(variants) -> None:
    print("\n4. Public training rows (training_public.csv): MAPE (mean signed) per framework")
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))

    def errs() -> dict[str, list[float]]:
        by: dict[str, list[float]] = {}
        for r in rows:
            p = predict_training_row(r)
            if p.predicted is not None:
                by.setdefault(r["framework"], []).append(p.predicted / p.measured - 1)
        return by

    cols = [("model", errs())]
    for label, ctx, v in variants:
        with ctx(v):
            cols.append((label, errs()))
    print(f"   {'framework':20s} {'n':>3s}  " + "  ".join(f"{c:>22s}" for c, _ in cols))
    fws = sorted(cols[0][1])
    for fw in fws + ["all"]:
        cells = []
        for _, by in cols:
            e = np.array([v for f in fws for v in by[f]] if fw == "all" else by[fw])
            cells.append(f"{100 * np.mean(np.abs(e)):6.2f} % ({100 * np.mean(e):+6.2f})")
        n = sum(len(cols[0][1][f]) for f in fws) if fw == "all" else len(cols[0][1][fw])
        print(f"   {fw:20s} {n:3d}  " + "  ".join(f"{c:>22s}" for c in cells))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--training", action="store_true",
                    help="also price the public training rows under each candidate")
    args = ap.parse_args(argv)
    rows, res = _rows(), _results()
    section1(rows, res)
    section2(rows, res)
    section3(rows, args.training)
    return 0


if __name__ == "__main__":
    sys.exit(main())
