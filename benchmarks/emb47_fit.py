"""Fit the constants of ``trainsim.compute.embedding_bwd`` (the dense embedding backward's
scatter) to the H200 measurements of the 47th session, and check the result against them and
against the bundled H100 database's independent ``embedding.bwd`` records.

Data: benchmarks/h200_2026-11-28_s47/device_checks47.json (``emb_bwd``: 4 vocabularies x hidden
2k/4k/8k x 2k/8k/32k tokens x uniform / Zipf(1.1) ids; the op, the fill alone) and
run2/device_checks47.json (``emb_tp``: Megatron-core's vocab-parallel lookup at TP 1-8, the ids
outside the rank's slice masked to row 0). The scatter is the op less its fill, both measured.

Linear least squares in relative error (each case weighted by 1 / its time), per path:
- sorted path (tokens > 3072): SORT_CLOCKS + (LAUNCH_CLOCKS x 2 T w + SEGMENT_CLOCKS x
  (P + U) w) / SMs, in SM clocks (w the padded hidden size, P partial segments, U distinct ids);
- small path: chunks x (leaders x (LEADER_CLOCKS or LEADER_CLOCKS_TWO) + chain x
  MATCH_CLOCKS), leaders the distinct ids among a chunk's 32, chain the largest group's
  serial adds.
Each measured op also paid one kernel launch gap in the simulator's terms (``roofline.
LAUNCH_S``), taken off before the fit (the roofline adds it back).

    PYTHONPATH=src python benchmarks/emb47_fit.py            # fit, table, H100 check
    PYTHONPATH=src python benchmarks/emb47_fit.py --check    # the module's constants only
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from trainsim.compute import embedding_bwd as eb
from trainsim.compute.roofline import LAUNCH_S
from trainsim.workload.token_ids import (
    CHUNK_ROWS,
    NROWS_PER_THREAD,
    expected_segments,
    zipf_weights,
)

HERE = Path(__file__).resolve().parent
DATA = HERE / "h200_2026-11-28_s47"
H200_SMS, H200_CLOCK_HZ = 132, 1980e6
ZIPF_S = 1.1  # device_checks47.py ZIPF_S: the draw the measurement used


def cases() -> list[dict]:
    """Every measured case: tokens, hidden, distinct, partials, top share, scatter seconds."""
    out = []
    emb = json.loads((DATA / "device_checks47.json").read_text())["sections"]["emb_bwd"]["cases"]
    for name, c in emb.items():
        t, v = c["tokens"], c["vocab"]
        if c["draw"] == "uniform":
            u, p = eb.uniform_segments(t, v)
            top, chunk = 1.0 / v, eb.uniform_segments(CHUNK_ROWS, v)[0]
        else:
            w = zipf_weights(v, ZIPF_S)
            u, p = expected_segments(t, w)
            top, chunk = float(w[0]), expected_segments(CHUNK_ROWS, w)[0]
        out.append({"name": name, "T": t, "h": c["hidden"], "U": u, "P": p, "top": top, "L": chunk,
                        "y": (c["op_us"] - c["fill_us"]) * 1e-6, "measured_U": c["unique_ids"]})
    tp = json.loads((DATA / "run2" / "device_checks47.json").read_text())["sections"]["emb_tp"]
    for name, c in tp["cases"].items():
        t, v, n = c["tokens"], c["vocab"], c["tp"]
        w = zipf_weights(v, ZIPF_S)
        u, p = expected_segments(t, w)
        masked = t - c["in_slice"]
        # the slice holds a random 1/tp of the ids (device_checks47 spreads them by a
        # permutation): its distinct ids and partials 1/tp of the whole draw's; the masked
        # ids are one more segment
        u_in, p_in, chunk = u / n, p / n, expected_segments(CHUNK_ROWS, w)[0] / n
        if masked:
            u_in, p_in = u_in + 1, p_in + math.ceil(masked / NROWS_PER_THREAD)
            chunk += 1
        top = max(masked / t, float(w[0]))
        out.append({"name": "tp:" + name, "T": t, "h": c["hidden"], "U": u_in, "P": p_in, "top": top, "L": chunk,
                        "y": (c["op_us"] - c["fill_us"]) * 1e-6})
    return out


def fit(rows: list[dict]) -> dict[str, float]:
    sorted_rows = [r for r in rows if r["T"] > eb.SMALL_PATH_MAX_TOKENS]
    a, b = [], []
    for r in sorted_rows:
        launched, segments = eb.sorted_path_terms(r["T"], r["h"], r["U"], r["P"])
        y = (r["y"] - LAUNCH_S) * H200_CLOCK_HZ
        a.append([1.0 / y, launched / H200_SMS / y, segments / H200_SMS / y])
        b.append(1.0)
    sort, launch, segment = np.linalg.lstsq(np.array(a), np.array(b), rcond=None)[0]
    small = [r for r in rows if r["T"] <= eb.SMALL_PATH_MAX_TOKENS]
    a, b = [], []
    for r in small:
        y = (r["y"] - LAUNCH_S) * H200_CLOCK_HZ
        cols = [eb.feature_kernel_clocks(r["T"], r["h"], H200_SMS, r["top"], r["L"], unit)
                for unit in ((1, 0, 0), (0, 1, 0), (0, 0, 1))]
        a.append([c / y for c in cols])
        b.append(1.0)
    leader, leader_two, match = np.linalg.lstsq(np.array(a), np.array(b), rcond=None)[0]
    return {"SORT_CLOCKS": sort, "LAUNCH_CLOCKS": launch, "SEGMENT_CLOCKS": segment,
            "LEADER_CLOCKS": leader, "LEADER_CLOCKS_TWO": leader_two, "MATCH_CLOCKS": match}


def h200():
    from trainsim.catalog import gpu as get_gpu
    return get_gpu("h200-sxm-141gb")


def predict(r: dict, gpu) -> float:
    return eb.scatter_time(gpu, r["T"], r["h"], r["U"], r["P"], r["top"], r["L"]) + LAUNCH_S


def report(rows: list[dict]) -> dict[str, float]:
    """Per-case table and the errors the check test reads (fractions)."""
    gpu = h200()
    errs = {}
    print(f"{'case':36} {'measured us':>11} {'model us':>9} {'err %':>7}")
    for r in rows:
        m = predict(r, gpu)
        errs[r["name"]] = m / r["y"] - 1.0
        print(f"{r['name']:36} {r['y'] * 1e6:11.1f} {m * 1e6:9.1f} {errs[r['name']] * 100:7.1f}")
    e = np.abs(np.array(list(errs.values())))
    print(f"H200: {len(e)} cases, mean |err| {e.mean() * 100:.2f} %, max {e.max() * 100:.1f} %")
    return errs


def h100_check() -> None:
    """The bundled H100 database's ``embedding.bwd`` records (the whole op, uniform ids, fill
    included; measured by ``trainsim profile`` on an H100, not used in the fit) against the
    scatter model plus the fill the simulator prices (``workload.head.embedding_zero_fill``
    at the roofline's memory-bound rate)."""
    from trainsim.catalog import gpu as get_gpu
    from trainsim.compute.roofline import RooflineModel
    from trainsim.workload.head import embedding_zero_fill

    src = Path(eb.__file__).resolve().parent.parent / "data" / "kernels"
    for gpu_name, fname in (("h100-sxm-80gb", "h100-sxm-80gb.json"),
                            ("h200-sxm-141gb", "h200-sxm-141gb.json")):
        gpu = get_gpu(gpu_name)
        roof = RooflineModel(gpu)
        for rec in json.loads((src / fname).read_text())["kernels"]:
            if rec.get("kernel") != "embedding.bwd":
                continue
            rows, cols = rec["zeroed"]["rows"], rec["zeroed"]["cols"]
            t = round(rec["bytes"] / (cols * 10))
            u, p = eb.uniform_segments(t, rows)
            lead = eb.uniform_segments(CHUNK_ROWS, rows)[0]
            scat = eb.scatter_time(gpu, t, cols, u, p, 1.0 / rows, lead) + LAUNCH_S
            fill = roof.time(embedding_zero_fill(rows, cols))
            print(f"{gpu_name} record T={t} h={cols} V={rows}: measured {rec['time_s'] * 1e6:.1f}"
                  f" us, model scatter {scat * 1e6:.1f} + fill {fill * 1e6:.1f} = "
                  f"{(scat + fill) * 1e6:.1f} us ({((scat + fill) / rec['time_s'] - 1) * 100:+.1f} %)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="report the module's constants only")
    args = ap.parse_args()
    rows = cases()
    if not args.check:
        consts = fit(rows)
        for k, v in consts.items():
            print(f"{k} = {v:.4g}   (module: {getattr(eb, k)})")
            setattr(eb, k, float(f"{v:.3g}"))
    report(rows)
    h100_check()


if __name__ == "__main__":
    main()
