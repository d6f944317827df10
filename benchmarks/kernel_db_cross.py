"""One GPU's measured kernel database scaled to another GPU, against that GPU's own measurements.

trainsim prices an op on a GPU it has no measurement of as a measured record's ratio to the
analytic model on the measured GPU times the analytic model of the target (``compute.chain``,
``compute.database``: "scaled by the bound that limits each kernel", SimAI's cross-GPU rule,
Wang et al. 2025 §4.2). Two GPUs measured with the same software make that rule testable:

* the H100 80GB HBM3 SXM (700 W): ``src/trainsim/data/kernels/h100-sxm-80gb.json`` (``trainsim
  profile``, 2026-11-23) and ``shared/validation/kernels_h100_measured.csv``
  (``measure_kernels.py``);
* the H200 SXM 141 GB (700 W): ``src/trainsim/data/kernels/h200-sxm-141gb.json`` (``trainsim
  profile``, 2026-11-27, the same command) and ``benchmarks/kernels_h200_measured.csv``
  (``measure_kernels.py`` at the H100 file's shapes); torch 2.11.0+cu130, driver 580.159.04 on
  both (``benchmarks/h200_2026-11-27/README.md``).

It prints two tables, both directions (H100 -> H200 and H200 -> H100):

1. **records against records** (one harness, ``trainsim profile``, the same shapes): each
   record of the target's database priced from the source database's record of the same op by
   the compute chain (``chain``: the ratio rule, except that between GPUs with the same SMs a
   memory-bound record's share beyond its modelled HBM traffic is held, ``chain.same_sms``),
   by the ratio rule alone (``ratio rule``: the whole record times the target's analytic model
   over the source's), by the target's analytic model alone (``roofline``) and the source's
   time unscaled (``unscaled``: the two GPUs taken as the same). Error of each against the
   target's record, per kind: MAPE and the geometric-mean signed error.
2. **the measured CSV** (another harness): ``trainsim validate`` of the target's CSV with
   ``--compute-db none`` (roofline), the target's own database and the source's database
   (scaled), on the rows both databases price from records, per kind.

    PYTHONPATH=src python benchmarks/kernel_db_cross.py
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute.chain import DATA_DIR, ChainModel
from trainsim.compute.database import KernelDatabase, _exact_key, op_from_record
from trainsim.compute.roofline import RooflineModel
from trainsim.validate import BUNDLED_DIR, validate_file
from trainsim.workload.ops import Attention, Gemm

ROOT = Path(__file__).resolve().parent.parent
GPUS = {
    "h100-sxm-80gb": (DATA_DIR / "h100-sxm-80gb.json", BUNDLED_DIR / "kernels_h100_measured.csv"),
    "h200-sxm-141gb": (DATA_DIR / "h200-sxm-141gb.json",
                       ROOT / "benchmarks" / "kernels_h200_measured.csv"),
}
"""Each GPU's bundled database and its measured CSV (the H100's: the package's copy of
``shared/validation/kernels_h100_measured.csv``, the same bytes)."""
PAIRS = (("h100-sxm-80gb", "h200-sxm-141gb"), ("h200-sxm-141gb", "h100-sxm-80gb"))
MEMORY = "memory-bound"
RECORD_COLUMNS = ("chain", "ratio rule", "roofline", "unscaled")


def kind_of(op: object) -> str:
    """GEMM by dtype, attention by implementation and direction, every memory-bound op one kind."""
    if isinstance(op, Gemm):
        return f"gemm {op.dtype}"
    if isinstance(op, Attention):
        return f"attention {op.impl} {'bwd' if op.backward else 'fwd'}"
    return MEMORY


def summary(logs: list[float]) -> tuple[float, float]:
    """(MAPE %, geometric-mean signed error %) of predicted/measured log ratios."""
    return (100 * statistics.mean(abs(math.exp(x) - 1) for x in logs),
            100 * (math.exp(statistics.mean(logs)) - 1))


def record_pairs(src: str, dst: str) -> dict[str, dict[str, list[float]]]:
    """Per kind, the log(predicted / measured) of each record of ``dst``'s database that
    ``src``'s database measured too, priced by each of ``RECORD_COLUMNS``."""
    source = KernelDatabase.load(GPUS[src][0], catalog_gpu)
    target_path = GPUS[dst][0]
    target = KernelDatabase.load(target_path, catalog_gpu)
    chain = ChainModel(target.spec, source)  # the target alone at its boost clock, as recorded
    roofline = RooflineModel(target.spec)
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for i, rec in enumerate(json.loads(Path(target_path).read_text())["kernels"]):
        op = op_from_record(rec, where=f"{target_path}: kernels[{i}]")
        measured = source.exact.get(_exact_key(op))
        if measured is None:
            continue
        t = float(rec["time_s"])
        cells = out[kind_of(op)]
        cells["chain"].append(math.log(chain.explain(op)[0] / t))
        cells["ratio rule"].append(math.log(measured * roofline.time(op)
                                            / source.analytic.time(op) / t))
        cells["roofline"].append(math.log(roofline.time(op) / t))
        cells["unscaled"].append(math.log(measured / t))
    return out


def print_record_pairs() -> dict[tuple[str, str], dict[str, dict[str, list[float]]]]:
    print("1. records against records (trainsim profile on both GPUs, same shapes): "
          "MAPE % (geometric-mean signed %)")
    print(f"{'source -> target':34} {'kind':24} {'n':>4}"
          + "".join(f" {c:>15}" for c in RECORD_COLUMNS))
    result = {}
    for src, dst in PAIRS:
        table = record_pairs(src, dst)
        result[(src, dst)] = table
        for kind in sorted(table):
            cells = table[kind]
            row = "".join(f" {m:6.1f} ({s:+5.1f})" for m, s in
                          (summary(cells[c]) for c in RECORD_COLUMNS))
            print(f"{src + ' -> ' + dst:34} {kind:24} {len(cells['chain']):4}{row}")
    return result


def csv_kind(extra: dict) -> str:
    kind = extra["kind"]
    if kind.startswith("attention"):
        return f"attention {extra['implementation']} {kind.removeprefix('attention_')}"
    if kind == "gemm":
        return f"gemm {extra['dtype']}"
    return MEMORY


def csv_rows(src: str, dst: str) -> dict[str, dict[str, list[float]]]:
    """Per kind, the log(predicted / measured) of ``dst``'s CSV rows priced by the roofline
    (``none``), ``dst``'s own database (``own``) and ``src``'s scaled (``scaled``), on the rows
    both databases priced from records."""
    path = GPUS[dst][1]
    runs = {name: {r.id: r for r in validate_file(path, compute_db=db)[1]}
            for name, db in (("none", None), ("own", str(GPUS[dst][0])),
                             ("scaled", str(GPUS[src][0])))}
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for rid, own in runs["own"].items():
        scaled = runs["scaled"][rid]
        rows = (runs["none"][rid], own, scaled)
        if any(r.predicted is None or r.error for r in rows) or own.extra.get("excluded"):
            continue
        if not all("database" in r.chosen.get("model", "") for r in (own, scaled)):
            continue
        cells = out[csv_kind(own.extra)]
        # time ratio: a rate row's predicted/measured is measured time over predicted time
        rate = own.extra["unit"] == "TFLOP/s"
        for name, r in zip(("none", "own", "scaled"), rows):
            x = math.log(r.predicted / r.measured)
            cells[name].append(-x if rate else x)
    return out


def print_csv_rows() -> dict[tuple[str, str], dict[str, dict[str, list[float]]]]:
    print("\n2. the measured CSV (measure_kernels.py, CUDA graphs), rows both databases price "
          "from records: time error MAPE % (geometric-mean signed %)")
    print(f"{'source -> target CSV':34} {'kind':24} {'n':>4} {'roofline':>15} {'own db':>15} "
          f"{'scaled db':>15}")
    result = {}
    for src, dst in PAIRS:
        table = csv_rows(src, dst)
        result[(src, dst)] = table
        for kind in sorted(table):
            cells = table[kind]
            row = "".join(f" {m:6.1f} ({s:+5.1f})" for m, s in
                          (summary(cells[c]) for c in ("none", "own", "scaled")))
            print(f"{src + ' -> ' + dst:34} {kind:24} {len(cells['own']):4}{row}")
    return result


def main() -> None:
    print_record_pairs()
    print_csv_rows()


if __name__ == "__main__":
    main()
