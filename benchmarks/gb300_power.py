"""gb300 diagnostic (50th session, issue 17): why Megatron-Bridge's GB300 rows ran +5 % signed
and its GB200 rows -6 %, and what the GB300 entry's sustained matmul rate is derived from.

    PYTHONPATH=src python benchmarks/gb300_power.py               # derivation + pairs, priced now
    PYTHONPATH=src python benchmarks/gb300_power.py --json A.json  # pairs read from `trainsim
                                                                  #   validate --format json` files
    PYTHONPATH=src python benchmarks/gb300_power.py --kernels     # + cuDNN attention GB300 / GB200

**Pairs.** Two rows of one check file that differ only in the GPU (the id with ``gb300`` for
``gb200``): the same model, precision, release and GPU count, the layout as each recipe set it
(equal or not, printed). Per pair the measured and predicted time ratio (slower GPU over faster)
and the predicted compute-term ratio (``breakdown.compute_s``): where the layouts are equal and
the compute ratio carries the predicted one, the gap is the per-GPU rate, not what 288 GB buys.

**Derivation.** GB300's ``sustained_of_burst`` is GB200's measured one raised from GB200's board
power to GB300's by ``config.cluster.POWER_EXPONENT`` (catalog/gpus/gb300.yaml cites the sources).

**Kernels** (``--kernels``): NVIDIA/cudnn-frontend's attention benchmark on GB200 and GB300 (one
harness, one cuDNN; benchmarks/kernels_blackwell.csv ids ``cudnnfe919-*``, ``cudnnfe922-*``): the
measured GB300 / GB200 rate by sequence length, with the GB200 kernel's milliseconds. A clock that
falls under sustained power shows as a ratio growing with the kernel's length.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from trainsim.catalog import gpu as catalog_gpu
from trainsim.config.cluster import POWER_EXPONENT
from trainsim.validate.training import predict_training_row

HERE = Path(__file__).resolve().parent
FILES = ("training_bridge_archive.csv", "training_mlperf5.csv", "training_mlperf51_partners.csv")
SLOWER = {"gb300": "gb200", "b300": "b200"}
LAYOUT = {"tp": "tp", "pp": "pp", "cp": "cp", "ep": "ep", "vpp": "vpp", "micro_batch_size": "mbs"}


def derived_sustained(fast: str = "gb300", ref: str = "gb200") -> float:
    """``ref``'s sustained-over-burst matmul rate at ``fast``'s board power (rate ~ P^a)."""
    a, b = catalog_gpu(fast), catalog_gpu(ref)
    return min(1.0, b.sustained_of_burst * (a.tdp_w / b.tdp_w) ** POWER_EXPONENT)


def _partner(row_id: str) -> str | None:
    for fast, slow in SLOWER.items():
        token = f"-{fast}-"
        if token in row_id:
            return row_id.replace(token, f"-{slow}-")
    return None


def pairs() -> list[tuple[dict[str, str], dict[str, str]]]:
    """(faster-GPU row, slower-GPU row) of every check file in FILES."""
    out = []
    for name in FILES:
        with (HERE / name).open(newline="") as fh:
            rows = {r["id"]: r for r in csv.DictReader(fh)}
        for rid, row in rows.items():
            other = _partner(rid)
            # NVFP4 pairs differ in more than board power (GB300's dense fp4 is 1.5x GB200's):
            # not this diagnostic's premise
            if other in rows and row.get("fp8_recipe") != "nvfp4":
                out.append((row, rows[other]))
    return out


def predictions(paths: list[str], ids: set[str]) -> dict[str, dict]:
    """id -> {predicted, measured, compute_s} from validate JSON files, else predicted now."""
    found: dict[str, dict] = {}
    for path in paths:
        for r in json.loads(Path(path).read_text())["rows"]:
            if r["id"] in ids and r.get("predicted"):
                found[r["id"]] = {"predicted": r["predicted"], "measured": r["measured"],
                                  "compute_s": (r.get("breakdown") or {}).get("compute_s", 0.0)}
    return found


def predict_now(rows: list[dict[str, str]]) -> dict[str, dict]:
    out = {}
    for row in rows:
        res = predict_training_row(row)
        if res.error is None and res.predicted:
            out[row["id"]] = {"predicted": res.predicted, "measured": res.measured,
                              "compute_s": (res.extra.get("breakdown") or {}).get("compute_s", 0.0)}
    return out


def pair_table(preds: dict[str, dict]) -> list[str]:
    lines = ["| pair (GB300 row) | layout | measured | predicted | pred / meas | compute term |",
             "|---|---|---:|---:|---:|---:|"]
    ratios = []
    for fast, slow in pairs():
        if fast["id"] not in preds or slow["id"] not in preds:
            continue
        f, s = preds[fast["id"]], preds[slow["id"]]
        meas = s["measured"] / f["measured"]
        pred = s["predicted"] / f["predicted"]
        comp = s["compute_s"] / f["compute_s"] if f["compute_s"] else float("nan")
        moved = [k for k in LAYOUT if fast[k] != slow[k]]
        same = not moved
        lay = "same" if same else " / ".join(
            "".join(f"{LAYOUT[k]}{r[k]}" for k in moved) for r in (fast, slow))
        ratios.append((same, pred / meas))
        lines.append(f"| {fast['id']} | {lay} | {meas:.3f} | {pred:.3f} | {pred / meas:.3f} | "
                     f"{comp:.3f} |")
    for label, keep in (("same layout", True), ("other layout", False)):
        v = [x for same, x in ratios if same is keep]
        if v:
            mean = sum(v) / len(v)
            lines.append(f"| mean pred / meas, {label} ({len(v)}) | | | | {mean:.3f} | |")
    return lines


def kernel_table() -> list[str]:
    with (HERE / "kernels_blackwell.csv").open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["gpu"] in ("gb200", "gb300")
                and r["id"].startswith(("cudnnfe919-", "cudnnfe922-"))]
    by = {(r["id"][:10], r["gpu"], r["kind"], int(r["seq_len"])): r for r in rows}
    lines = ["| run, pass | s: GB300 / GB200 rate (GB200 kernel ms) |", "|---|---|"]
    for src in ("cudnnfe919", "cudnnfe922"):
        for kind in ("attention_fwd", "attention_bwd"):
            cells = []
            for s in sorted({k[3] for k in by if k[0] == src and k[2] == kind}):
                a, b = by.get((src, "gb200", kind, s)), by.get((src, "gb300", kind, s))
                if a and b:
                    ms = a["note"].split("; time ")[1].split(" ms")[0]
                    ratio = float(b["measured_value"]) / float(a["measured_value"])
                    cells.append(f"{s // 1024}k {ratio:.3f} ({float(ms):.1f})")
            lines.append(f"| {src}, {kind.split('_')[1]} | {'; '.join(cells)} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", nargs="*", default=[],
                    help="trainsim validate --format json outputs")
    ap.add_argument("--kernels", action="store_true")
    args = ap.parse_args()
    g3, g2, b2 = catalog_gpu("gb300"), catalog_gpu("gb200"), catalog_gpu("b200-sxm-180gb")
    print(f"POWER_EXPONENT {POWER_EXPONENT}; gb200 sustained {g2.sustained_of_burst} at "
          f"{g2.tdp_w:g} W, gb300 {g3.tdp_w:g} W -> derived {derived_sustained():.4f} (catalog "
          f"{g3.sustained_of_burst}); read from b200 ({b2.sustained_of_burst} at {b2.tdp_w:g} W): "
          f"{derived_sustained('gb300', 'b200-sxm-180gb'):.4f}")
    print(f"sustained bf16 GEMM ceiling gb300 / gb200: "
          f"{g3.gemm_ceiling('bf16') / g2.gemm_ceiling('bf16'):.3f}")
    rows = [r for p in pairs() for r in p]
    ids = {r["id"] for r in rows}
    preds = predictions(args.json, ids) if args.json else predict_now(rows)
    print("\n".join(pair_table(preds)))
    if args.kernels:
        print("\n".join(kernel_table()))


if __name__ == "__main__":
    main()
