"""b300x57 diagnostic (57th session, issue 17 item 2): why Blackwell Ultra rows on an 8-GPU HGX
B300 board were priced slow (Nemotron 3 Super +26..+58 %) while the same models on GB200 / GB300
NVL72 racks were priced fast, read part by part; nothing here feeds trainsim.

    PYTHONPATH=src:benchmarks python benchmarks/b300x57_parts.py            # rows + pairs
    PYTHONPATH=src:benchmarks python benchmarks/b300x57_parts.py --percall  # + host what-if

**Rows.** Every B300 / GB300 row of the public, held-out and check files (``FILES``) with its
signed error and its predicted step by part: compute, exposed communication, and ``other``
(the GPU waiting for the host's launches, ``compute.host``), the local experts a GPU holds
(``num_experts / ep``) and whether the Megatron-Bridge profile's defaults gave the row CUDA
graphs or the expert all-to-all overlap (``moe_recipe_options``, keyed by an NVLink domain
larger than a board: NVL72 racks only).

**Pairs.** Each B300 row against the B200 row of the same release, model, GPU count and
precision (the archive's tables and MLPerf v5.1's 8B submissions), the layouts as each recipe
set them: measured and predicted B300 / B200 speed. Where the layouts are equal the ratio is the
per-GPU rate the catalog's B300 entry carries (same dense peaks, 1,100 against 1,000 W).

**Per-call what-if** (``--percall``): the B300 / GB300 rows with Transformer Engine's C++ loops
(a ``GroupedLinear``'s per-expert GEMMs, ``split_quantize``'s per-expert casts) priced as one
Python-level call plus ``host.CPP_LAUNCH_S`` a further kernel (``benchmarks/host51_percall.py``,
the 51st session's candidate at its landed 30 us), against the per-kernel model as landed.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ULTRA = ("b300-sxm-288gb", "gb300")
FILES = ("training_heldout.csv", "training_bridge_archive.csv", "training_nemotron3.csv",
         "training_mlperf5.csv", "training_mlperf51_nvfp4.csv", "training_mlperf51_partners.csv",
         "training_moe_modelzoo.csv")
LAYOUT = ("tp", "pp", "cp", "ep", "vpp", "micro_batch_size", "global_batch_size")


def _paths() -> list[Path]:
    from trainsim.validate import BUNDLED_DIR
    return [BUNDLED_DIR / "training_public.csv"] + [HERE / f for f in FILES]


def read_rows() -> list[tuple[str, dict[str, str]]]:
    """(file name, row) of every public, held-out and check row."""
    out = []
    for path in _paths():
        if path.exists():
            with path.open(newline="") as fh:
                out += [(path.name, r) for r in csv.DictReader(fh)]
    return out


def release(row_id: str) -> str:
    """The release an id names: ``2604p1`` of ``bridgearch2604p1-...`` / ``bridge2604p1-...``,
    ``mlperf51`` of ``mlperf51-<submitter>-...``."""
    m = re.match(r"(?:bridgearch|bridge)(\d{4}(?:p\d)?)-", row_id)
    if m:
        return "bridge" + m.group(1)
    return row_id.split("-", 1)[0]


def precision(row: dict[str, str]) -> str:
    return row.get("fp8_recipe") or row["dtype"]


def pair_key(row: dict[str, str]) -> tuple[str, str, str, str]:
    return (release(row["id"]), row["model"], row["num_gpus"], precision(row))


def pairs(rows: list[tuple[str, dict[str, str]]]) -> list[tuple[dict[str, str], dict[str, str]]]:
    """(B300 row, B200 row) of the same release, model, GPU count and precision; the first B200
    row of a key (MLPerf: several submitters of one config) stands for it."""
    b200: dict[tuple, dict[str, str]] = {}
    for _, r in rows:
        if r["gpu"] == "b200-sxm-180gb" and r.get("framework") in ("megatron-bridge", "mlperf-nemo"):
            b200.setdefault(pair_key(r), r)
    return [(r, b200[pair_key(r)]) for _, r in rows
            if r["gpu"] == "b300-sxm-288gb" and pair_key(r) in b200]


def local_experts(row: dict[str, str]) -> int:
    """Routed experts one GPU holds (0 for a dense model)."""
    from trainsim.catalog import model_dict
    experts = row.get("num_experts") or model_dict(row["model"]).get("num_experts") or 0
    return int(experts) // max(1, int(row.get("ep") or 1)) if int(experts) > 1 else 0


def _predict(row: dict[str, str]) -> dict:
    from trainsim.validate.training import predict_training_row
    res = predict_training_row(row)
    if res.error or not res.predicted:
        return {"error": res.error or "no prediction"}
    b, s = res.extra["breakdown"], res.extra["settings"]
    return {"predicted": res.predicted, "measured": res.measured,
            "compute": b["compute_s"], "comm": b["exposed_comm_s"],
            "bubble": b["pipeline_bubble_s"], "other": b["other_s"],
            "graphs": s["cuda_graphs"], "ep_overlap": s["moe_overlap_ep_comm"]}


def _predict_percall(row: dict[str, str]) -> dict:
    from host51_percall import install_per_call
    restore = install_per_call()
    try:
        return _predict(row)
    finally:
        restore()


def predict_all(rows: list[dict[str, str]], percall: bool = False, workers: int = 2) -> dict:
    fn = _predict_percall if percall else _predict
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return dict(zip((r["id"] for r in rows), pool.map(fn, rows, chunksize=4)))


def _err(p: dict) -> str:
    return f"{100 * (p['predicted'] / p['measured'] - 1):+.1f}" if "predicted" in p else "fails"


def row_table(rows: list[tuple[str, dict[str, str]]], preds: dict) -> list[str]:
    out = [("| file | row | measured s | predicted s | err % | compute | exp. comm | bubble | "
            "other (host) | local experts | graphs / ep overlap |"),
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in rows:
        p = preds[r["id"]]
        if "predicted" not in p:
            out.append(f"| {name} | {r['id']} | {r['measured_iteration_s']} | - | {p['error']} |")
            continue
        out.append(f"| {name.removeprefix('training_').removesuffix('.csv')} | {r['id']} | "
                   f"{p['measured']:.3f} | {p['predicted']:.3f} | {_err(p)} | {p['compute']:.3f} | "
                   f"{p['comm']:.3f} | {p['bubble']:.3f} | {p['other']:.3f} | {local_experts(r)} | "
                   f"{'y' if p['graphs'] else 'n'} / {'y' if p['ep_overlap'] else 'n'} |")
    return out


def pair_table(prs: list[tuple[dict[str, str], dict[str, str]]], preds: dict) -> list[str]:
    out = [("| B300 row | B200 row | layout (B300 / B200) | measured B300/B200 speed | "
            "predicted | pred / meas |"), "|---|---|---|---:|---:|---:|"]
    for fast, slow in prs:
        f, s = preds[fast["id"]], preds[slow["id"]]
        if "predicted" not in f or "predicted" not in s:
            continue
        moved = [k for k in LAYOUT if (fast.get(k) or "1") != (slow.get(k) or "1")]
        lay = "same" if not moved else " / ".join(
            " ".join(f"{k.replace('micro_batch_size', 'mbs').replace('global_batch_size', 'gbs')}"
                     f"{r.get(k)}" for k in moved) for r in (fast, slow))
        meas, pred = s["measured"] / f["measured"], s["predicted"] / f["predicted"]
        out.append(f"| {fast['id']} | {slow['id']} | {lay} | {meas:.3f} | {pred:.3f} | "
                   f"{pred / meas:.3f} |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--percall", action="store_true")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args(argv)
    rows = read_rows()
    ultra = [(n, r) for n, r in rows if r["gpu"] in ULTRA]
    prs = pairs(rows)
    need = {r["id"]: r for _, r in ultra} | {s["id"]: s for _, s in prs}
    preds = predict_all(list(need.values()), workers=a.workers)
    print("\n".join(row_table(ultra, preds)))
    print()
    print("\n".join(pair_table(prs, preds)))
    if a.percall:
        alt = predict_all([r for _, r in ultra], percall=True, workers=a.workers)
        print("\n| row | local experts | per-kernel err % (other s) | per-call err % (other s) |\n"
              "|---|---:|---:|---:|")
        for _, r in ultra:
            p, q = preds[r["id"]], alt[r["id"]]
            if "predicted" in p and "predicted" in q:
                print(f"| {r['id']} | {local_experts(r)} | {_err(p)} ({p['other']:.3f}) | "
                      f"{_err(q)} ({q['other']:.3f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
