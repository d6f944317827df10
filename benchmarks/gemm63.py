"""Why one H200's dense layer GEMMs (``benchmarks/h200_2026-11-29_s63``) are priced slow in bf16 and
nearly right in fp8: one row traced end to end, each row's error split into its parts, the same
shapes timed by two runs, and what the candidate readings would do (63rd session, gemm63; issue 17
item 1).

    PYTHONPATH=src:benchmarks python benchmarks/gemm63.py                  # trace, split, runs, heat
    PYTHONPATH=src:benchmarks python benchmarks/gemm63.py --trace ID       # one row (default below)
    PYTHONPATH=src:benchmarks python benchmarks/gemm63.py --whatif         # ~2 min
    PYTHONPATH=src:benchmarks python benchmarks/gemm63.py --overhead 219,100,50   # ~2 min a value

**Sign.** ``trainsim validate`` reports a kernel row's error in the row's unit: a rate row's
(predicted - measured) / measured of its TFLOP/s. The layer file's bf16 cell, -6.7 %, is a rate
priced 6.7 % low: a time priced slow, not fast.

**Trace** (``--trace``). A GEMM row on the H200 is priced by ``validate.kernels._model``: the
chain of the bundled H200 database (``compute.database``) and the roofline of a benchmark loop
(``roofline.loop_clock_factor`` toward ``sustained_of_burst`` x ``power_scale``), since the row's
harness (a CUDA graph of 10 calls, median of 3 replays) names neither MAMF nor MSMF. The
database answers with its record (exact) or with the burst roofline times its records' Gaussian-
weighted log ratio (interpolated / calibrated); the chain then multiplies by the loop roofline over
the burst one (``chain.ChainModel.measured``): the loop factor. The trace prints each factor and
checks that they multiply to the validator's prediction.

**Split** (``split``). Per row: log(database price at the burst clock / measured time) and
log(loop factor); their sum is the row's log error in time.

**Runs** (``runs``). The same (m, n, k, dtype) timed by ``kernels_h200_measured.csv`` (27 Nov,
``shared/validation/measure_kernels.py``: shapes back to back) and by the 29 Nov folders
(nvidia-smi read between shapes), and within one run the GPT-3 fc1 and fc2 forward / dgrad /
wgrad, which have identical shapes at TP 4 (12,288 x 12,288), timed in that order.

**Heat** (``heat``). The MSMF rows (timed after 8 s of replays) priced as training prices a GEMM
(the sustained clock), beside the record of the same shape where there is one.

**What-if** (``--whatif``) and **overhead** (``--overhead``): GEMM MAPE per GPU of
``kernels_published.csv``, both measured files and the three new folders, as shipped and with
``database.RECORD_LOOP``; and with ``roofline.GEMM_TILE_OVERHEAD_K`` set to other values (the llm.c
k = 768 shapes of ``llmc_shapes`` beside them). Nothing here changes trainsim's predictions.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from trainsim.compute import chain, roofline
from trainsim.validate import BUNDLED_DIR, validate_file
from trainsim.validate import kernels as vk
from trainsim.validate.kernel_notes import fast_accum_note
from trainsim.workload.ops import Gemm

HERE = Path(__file__).resolve().parent
S63 = HERE / "h200_2026-11-29_s63"
NEW = {name: S63 / name / "kernels.csv" for name in ("layer_gemms_heat", "grok_gemm", "mlperf_tokens")}
OLD = HERE / "kernels_h200_measured.csv"
LLMC = S63 / "llmc_shapes" / "device_checks62.jsonl"
GPU = "h200-sxm-141gb"
TRACE_ID = "dc62bw-h200-70b-tp2-fc2-wgrad-bf16"
BINS_S = (0.0, 3e-4, 1e-3, 3e-3, math.inf)


def gemm_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["kind"] == "gemm"]


def row_op(row: dict[str, str]) -> Gemm:
    """The op the validator builds for a plain cuBLAS GEMM row."""
    fast = row["dtype"] == "fp8" and fast_accum_note(row.get("note") or "")
    return Gemm("x", int(row["m"]), int(row["n"]), int(row["k"]), row["dtype"], fp8_fast_accum=fast)


def measured_s(row: dict[str, str], op: Gemm) -> float:
    assert row["measured_unit"] == "TFLOP/s", row["id"]
    return op.flops / (float(row["measured_value"]) * 1e12)


def parts(op: Gemm, sustained: bool = False) -> dict:
    """The factors of the price the validator gives ``op`` on the H200 in a benchmark loop (or, with
    ``sustained``, at the training clock)."""
    model = vk._model(GPU, "auto", sustained)
    db = model.db
    burst_model = db.modelled(op)
    t_db, how = db.lookup(op)
    target = model.db_roofline.time(op) - db.gaps(op)
    out = {"how": how, "burst_roofline_s": burst_model, "database_s": t_db,
           "ratio_to_roofline": t_db / burst_model, "clock_factor": target / burst_model,
           "priced_s": model.time(op)}
    out["product_s"] = t_db * out["clock_factor"] + db.gaps(op)
    return out


def trace(row_id: str = TRACE_ID) -> dict:
    """One row end to end: the GPU's figures, the roofline's tile and waves, the database's
    answer and its nearest records, the loop factor, and the validator's own prediction."""
    for path in (*NEW.values(), OLD):
        rows = {r["id"]: r for r in gemm_rows(path)}
        if row_id in rows:
            break
    else:
        raise SystemExit(f"no GEMM row {row_id!r} in {[str(p) for p in (*NEW.values(), OLD)]}")
    row, op = rows[row_id], row_op(rows[row_id])
    model = vk._model(GPU, "auto")
    spec, db = model.gpu, model.db
    p = parts(op)
    kind = db.kinds[("gemm", op.dtype, op.fp8_fast_accum and op.dtype == "fp8", False, "")]
    x = (math.log(op.m), math.log(op.n), math.log(op.k), 0.0)
    near = sorted(((sum((a - b) ** 2 for a, b in zip(c, x, strict=True)), c, r)
                   for c, r in zip(kind.coords, kind.log_ratio, strict=True)))[:4]
    _, results = validate_file(path)
    res = next(r for r in results if r.id == row_id)
    full = vk.catalog_gpu(GPU)
    loop = full.sustained_of_burst * full.power_scale
    return {
        "row": row_id, "file": path.name, "op": f"{op.m} x {op.n} x {op.k} {op.dtype}"
        + (" fast-accum" if op.fp8_fast_accum else ""),
        "measured_s": measured_s(row, op),
        "gpu": {"ceiling_TFLOPs": roofline.gemm_rate(spec, op) / 1e12,
                "mamf_fraction": spec.mamf_fraction, "loop_toward": loop,
                "tile_efficiency": model.roofline.gemm_efficiency(op)},
        **p,
        "nearest_records": [{"m_n_k": [round(math.exp(v)) for v in c[:3]],
                             "record_over_roofline": math.exp(r)} for _, c, r in near],
        "loop_clock_factor": roofline.loop_clock_factor(p["burst_roofline_s"], loop),
        "validator_rate_TFLOPs": res.predicted, "measured_rate_TFLOPs": res.measured,
    }


def split(path: Path) -> dict[str, dict[str, float]]:
    """Per dtype: mean log(database price at burst / measured) and mean log(loop factor), and
    the MAPE of the rate as shipped and without the loop factor."""
    acc: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row in gemm_rows(path):
        if "MSMF" in (row.get("note") or ""):
            continue
        op = row_op(row)
        p = parts(op)
        acc[row["dtype"]].append((math.log(p["database_s"] / measured_s(row, op)),
                                  math.log(p["clock_factor"])))
    out = {}
    for dt, v in sorted(acc.items()):
        n = len(v)
        out[dt] = {"rows": n, "record_vs_measured": sum(a for a, _ in v) / n,
                   "loop_factor": sum(b for _, b in v) / n,
                   "mape_shipped": sum(abs(math.exp(-(a + b)) - 1) for a, b in v) / n,
                   "mape_no_loop_factor": sum(abs(math.exp(-a) - 1) for a, _ in v) / n}
    return out


def runs() -> dict:
    """The same shapes in two runs (27 Nov over 29 Nov, by the 29 Nov time), and the GPT-3 fc2
    over fc1 at identical shapes within one run."""
    new: dict[tuple, list[float]] = defaultdict(list)
    for path in NEW.values():
        for row in gemm_rows(path):
            if "MSMF" not in (row.get("note") or ""):
                op = row_op(row)
                new[(op.m, op.n, op.k, op.dtype)].append(measured_s(row, op))
    bins: dict[str, list[float]] = defaultdict(list)
    for row in gemm_rows(OLD):
        op = row_op(row)
        for t in new.get((op.m, op.n, op.k, op.dtype), []):
            lo = max(b for b in BINS_S if b <= t)
            bins[f">= {lo * 1e3:g} ms"].append(measured_s(row, op) / t)
    mlperf = {r["id"]: r for r in gemm_rows(NEW["mlperf_tokens"])}
    fc = []
    for rid, row in mlperf.items():
        if "-fc1-" in rid:
            twin = mlperf.get(rid.replace("-fc1-", "-fc2-"))
            if twin and (twin["m"], twin["n"], twin["k"]) == (row["m"], row["n"], row["k"]):
                fc.append(float(row["measured_value"]) / float(twin["measured_value"]))
    return {"old_over_new_by_length": {k: {"pairs": len(v), "mean": sum(v) / len(v),
                                           "min": min(v), "max": max(v)}
                                       for k, v in sorted(bins.items())},
            "fc2_time_over_fc1_same_shape": {"pairs": len(fc), "mean": sum(fc) / len(fc),
                                             "min": min(fc), "max": max(fc)}}


def heat() -> list[dict]:
    """The MSMF rows priced at the training clock, beside the exact record where one exists."""
    out = []
    for row in gemm_rows(NEW["layer_gemms_heat"]):
        if "MSMF" not in (row.get("note") or ""):
            continue
        op = row_op(row)
        p = parts(op, sustained=True)
        t = measured_s(row, op)
        out.append({"row": row["id"], "measured_TFLOPs": op.flops / t / 1e12,
                    "priced_TFLOPs": op.flops / p["priced_s"] / 1e12, "how": p["how"],
                    "database_TFLOPs": op.flops / p["database_s"] / 1e12,
                    "rate_error": t / p["priced_s"] - 1})
    return out


@contextlib.contextmanager
def fresh(**flags) -> Iterator[None]:
    """``gemm39_db_loop.reading`` (``RECORD_LOOP`` / ``RECORD_GAPS``), every cache dropped."""
    import gemm39_db_loop

    with gemm39_db_loop.reading(**flags):
        yield


def cells() -> dict[str, dict[str, float]]:
    import gemm39_db_loop

    files = {"kernels_published": BUNDLED_DIR / "kernels_published.csv",
             "h100 measured": BUNDLED_DIR / "kernels_h100_measured.csv", "h200 measured 27 Nov": OLD,
             **NEW}
    return {name: {k: v for k, v in gemm39_db_loop.cells(p).items() if k.startswith("gemm ")}
            for name, p in files.items()}


def llmc(compute_db: str | None = "auto") -> dict[str, float]:
    """The llm.c 124M GEMMs timed on the H200 (a loop of calls: priced as a benchmark loop)."""
    model = vk._model(GPU, compute_db)
    errs = []
    with open(LLMC) as fh:
        for line in fh:
            r = json.loads(line)
            if r["kind"] == "gemm":
                op = Gemm("x", r["m"], r["n"], r["k"], "bf16")
                errs.append(op.flops / model.time(op) / 1e12 / r["tflops"] - 1)
    return {"rows": len(errs), "mape": sum(map(abs, errs)) / len(errs),
            "signed": sum(errs) / len(errs)}


def whatif() -> dict:
    out = {}
    for label, flags in (("shipped", {}), ("RECORD_LOOP", {"loop": True})):
        with fresh(**flags):
            out[label] = {"cells": cells(), "heat": [round(h["rate_error"], 3) for h in heat()]}
    return out


def overhead(values: list[int]) -> dict:
    saved, out = roofline.GEMM_TILE_OVERHEAD_K, {}
    try:
        for v in values:
            roofline.GEMM_TILE_OVERHEAD_K = v
            with fresh():
                out[v] = {"llmc database": llmc("auto"), "llmc roofline": llmc(None),
                          "cells": cells()}
    finally:
        roofline.GEMM_TILE_OVERHEAD_K = saved
        with fresh():
            pass
    return out


def ramp_fit(points: list[tuple[float, float]]) -> dict[str, float]:
    """rate(t) = late + (early - late) exp(-t / tau) fitted to (seconds since the loop began,
    TFLOP/s) by least squares over a grid of tau (the rates linear given tau)."""
    import numpy as np

    t = np.array([p[0] for p in points])
    y = np.array([p[1] for p in points])
    best = None
    for tau in np.geomspace(1e-3, 10.0, 400):
        x = np.exp(-t / tau)
        a = np.vstack([np.ones_like(x), x]).T
        coef, *_ = np.linalg.lstsq(a, y, rcond=None)
        err = float(((a @ coef - y) ** 2).sum())
        if best is None or err < best[0]:
            best = (err, float(tau), float(coef[0]), float(coef[0] + coef[1]))
    _, tau, late, early = best
    return {"tau_s": tau, "early_TFLOPs": early, "late_TFLOPs": late, "late_over_early": late / early,
            "first_TFLOPs": float(y[0]), "last_TFLOPs": float(y[-1])}


def device(folder: Path) -> dict:
    """The 63rd session's device run (``device_checks63_gemm63.py``): hot over idle per case and
    the ramp's wall-time fit."""
    data = json.loads((folder / "device_checks63_gemm63.json").read_text())
    secs = data["sections"]
    out = {"history": {c: {k: v for k, v in d.items() if not k.startswith("clocks")}
                       for c, d in secs.get("history", {}).get("cases", {}).items()}}
    for c, d in secs.get("ramp", {}).get("cases", {}).items():
        out[f"ramp {c}"] = ramp_fit([tuple(p) for p in d["elapsed_s_and_tflops"]])
    return out


def _pct(x: float) -> str:
    return f"{100 * x:+.1f} %"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", nargs="?", const=TRACE_ID)
    ap.add_argument("--whatif", action="store_true")
    ap.add_argument("--overhead", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--device", type=Path, help="a device_checks63_gemm63.py output folder")
    args = ap.parse_args()
    chain._LOADED.clear()
    if args.device:
        print(json.dumps(device(args.device), indent=1))
        return
    if args.whatif:
        print(json.dumps(whatif(), indent=1))
        return
    if args.overhead:
        print(json.dumps(overhead(args.overhead), indent=1))
        return
    print(json.dumps(trace(args.trace or TRACE_ID), indent=1))
    if args.trace:
        return
    for name, path in {**NEW, "kernels_h200_measured (27 Nov)": OLD}.items():
        for dt, s in split(path).items():
            print(f"split {name:32s} {dt:4s} rows {s['rows']:3d}  database vs measured "
                  f"{_pct(s['record_vs_measured'])} (log, time)  loop factor {_pct(s['loop_factor'])}"
                  f"  MAPE {100 * s['mape_shipped']:.1f} % shipped, "
                  f"{100 * s['mape_no_loop_factor']:.1f} % without the loop factor")
    print(json.dumps(runs(), indent=1))
    for h in heat():
        print(f"heat {h['row']:40s} measured {h['measured_TFLOPs']:7.1f} priced "
              f"{h['priced_TFLOPs']:7.1f} ({h['how']}; record {h['database_TFLOPs']:.1f})"
              f"  {_pct(h['rate_error'])} in rate")
    print("llm.c k 768 shapes:", json.dumps({"database": llmc("auto"), "roofline": llmc(None)}))


if __name__ == "__main__":
    main()
