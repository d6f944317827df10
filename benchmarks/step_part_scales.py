"""Which part of a row's predicted step its error sits in: each compute category's share of the
predicted iteration and the scale of that category alone that would close the error.

    python benchmarks/step_part_scales.py [TRAINING.csv ...] [--gpu A100] [--framework pytorch]

Every row is predicted as ``trainsim validate`` predicts it (its tuned settings; the public
file's errata applied where the file is the public one), then again with one category of compute
kernels priced ``STEP`` (10 %) faster: the GEMMs, the attention kernels, or every other compute
kernel (norms, activations, RoPE, copies, the loss: ``Elementwise``). The drop, over ``STEP``
times the prediction, is that category's **share** of the predicted step as the simulation
charges it (overlap included: a kernel whose time a collective or the host hides moves less).
The **closing scale** is the factor on that category's time alone that the measured time asks
for, linearised: 1 - (predicted - measured) / (share x predicted); below 1 the category is
priced slow, above 1 fast. A closing scale far from 1 (under ~0.8, over ~1.2) says the error is
not in that category alone. The exposed communication of the breakdown is printed beside them
(with FSDP it is mostly the compute slowed beside the hidden collectives: ``pricing.COMM_SMS``
of the GPU's SMs held while each runs); ``--comm-sms N`` adds each row's error with that share
at N SMs.

Pairs: rows of the same model, GPU, GPU count and micro-batch size that differ in ``options`` by ``compile`` (the
eager and the compiled run of one table) are printed with their measured and predicted ratio
eager / compiled, the gain torch.compile brought and the one the simulation gives it.

A check, not an input: nothing here feeds trainsim. The categories are scaled by wrapping
``compute.chain.ChainModel.explain`` (every compute kernel's price goes through it) in one
process per variant, so no price cached under one scale is read under another.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

STEP = 0.10
"""How much faster the scaled category runs in its variant (a small step: the response is near
linear there, and large enough to stand above the simulation's rounding)."""

CATEGORIES = ("gemm", "attention", "other")
ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import csv, json, sys
from trainsim.compute import chain
from trainsim.workload.ops import Attention, Gemm
from trainsim import pricing
from trainsim.validate.training import predict_training_row
cat, factor, path, comm_sms = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4])
ids = set(sys.argv[5:])
if comm_sms >= 0:
    pricing.COMM_SMS = comm_sms
explain = chain.ChainModel.explain
def kind(op):
    return "gemm" if isinstance(op, Gemm) else "attention" if isinstance(op, Attention) else "other"
def scaled(self, op):
    t, how = explain(self, op)
    return (t * factor if kind(op) == cat else t), how
chain.ChainModel.explain = scaled
out = {}
for row in csv.DictReader(open(path, newline="")):
    if ids and row["id"] not in ids:
        continue
    res = predict_training_row(row)
    if res.error:
        continue
    out[row["id"]] = {"predicted": res.predicted, "measured": res.measured,
                      "breakdown": res.extra.get("breakdown", {})}
json.dump(out, sys.stdout)
"""


def _public_corrected(path: str, tmp: str) -> str:
    """The public file with its errata applied (what ``validate`` and errata.py score)."""
    if Path(path).name != "training_public.csv":
        return path
    from trainsim.validate.errata import corrected_file
    fixed, _ = corrected_file(path, ROOT / "benchmarks" / "training_errata.csv", tmp)
    return str(fixed)


def _variant(cat: str, factor: float, path: str, ids: list[str], comm_sms: int = -1
             ) -> dict[str, dict]:
    """Every row of ``ids`` predicted with ``cat`` kernels' times times ``factor`` (and, where
    ``comm_sms`` >= 0, ``pricing.COMM_SMS`` set to it), in a process of its own."""
    run = subprocess.run([sys.executable, "-c", _CHILD, cat, repr(factor), path, str(comm_sms),
                          *ids],
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


def _selected(path: str, gpu: str | None, framework: str | None) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [r for r in rows
            if (gpu is None or gpu.lower() in r.get("gpu", "").lower())
            and (framework is None or r.get("framework", "") == framework)]


def parts(path: str, gpu: str | None = None, framework: str | None = None,
          comm_sms: int | None = None) -> list[dict]:
    """Per selected row: measured, predicted, each category's share and closing scale, the
    exposed communication; with ``comm_sms``, also the prediction with the collectives beside
    compute holding that many SMs (``pricing.COMM_SMS``) in place of 16."""
    with tempfile.TemporaryDirectory() as tmp:
        path = _public_corrected(path, tmp)
        rows = _selected(path, gpu, framework)
        ids = [r["id"] for r in rows]
        if not ids:
            return []
        base = _variant("gemm", 1.0, path, ids)
        moved = {c: _variant(c, 1.0 - STEP, path, ids) for c in CATEGORIES}
        sms = _variant("gemm", 1.0, path, ids, comm_sms) if comm_sms is not None else {}
    out = []
    for r in rows:
        b = base.get(r["id"])
        if b is None:
            continue
        pred, meas = b["predicted"], b["measured"]
        item = {"id": r["id"], "gpu": r["gpu"], "model": r["model"], "options": r.get("options", ""),
                "framework": r.get("framework", ""), "num_gpus": r["num_gpus"],
                "micro_batch_size": r.get("micro_batch_size", ""),
                "measured": meas, "predicted": pred, "error": pred / meas - 1,
                "exposed_comm_s": b["breakdown"].get("exposed_comm_s", 0.0)}
        if r["id"] in sms:
            item["comm_sms_error"] = sms[r["id"]]["predicted"] / meas - 1
        for c in CATEGORIES:
            share = (pred - moved[c][r["id"]]["predicted"]) / (STEP * pred)
            item[f"{c}_share"] = share
            item[f"{c}_close"] = 1 - (pred - meas) / (share * pred) if share > 1e-3 else None
        out.append(item)
    return out


def compile_pairs(items: list[dict]) -> list[tuple[dict, dict]]:
    """(eager, compiled) rows of one model, GPU, GPU count and micro-batch size (the first
    eager row of each)."""
    def key(i: dict) -> tuple[str, str, str, str]:
        return i["model"], i["gpu"], i["num_gpus"], i["micro_batch_size"]
    eager: dict[tuple[str, str, str, str], dict] = {}
    for i in items:
        if "compile" not in i["options"]:
            eager.setdefault(key(i), i)
    return [(eager[key(i)], i) for i in items if "compile" in i["options"] and key(i) in eager]


def _fmt(x: float | None) -> str:
    return "   -  " if x is None else f"{x:6.3f}"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", default=["benchmarks/training_pytorch.csv"])
    ap.add_argument("--gpu", help="only rows whose gpu contains this (case-insensitive)")
    ap.add_argument("--framework", help="only rows of this framework")
    ap.add_argument("--comm-sms", type=int, help="also predict with pricing.COMM_SMS at this")
    args = ap.parse_args(argv)
    for path in args.files:
        items = parts(path, args.gpu, args.framework, args.comm_sms)
        print(f"== {path}: {len(items)} rows (share of the predicted step / closing scale)")
        print(f"{'id':40s} {'err':>7s} {'comm s':>7s} {'gemm':>13s} {'attention':>13s} "
              f"{'other':>13s}")
        for i in items:
            cols = "  ".join(f"{i[c + '_share']:5.3f}/{_fmt(i[c + '_close'])}" for c in CATEGORIES)
            sms = f"  {i['comm_sms_error'] * 100:+6.1f}%" if "comm_sms_error" in i else ""
            print(f"{i['id']:40s} {i['error'] * 100:+6.1f}% {i['exposed_comm_s']:7.3f} {cols}{sms}")
        for gpu, fw in sorted({(i["gpu"], i["framework"]) for i in items}):
            sel = [i for i in items if (i["gpu"], i["framework"]) == (gpu, fw)
                   and i["gemm_close"] is not None]
            if sel:
                n = len(sel)
                sms = [i["comm_sms_error"] for i in sel if "comm_sms_error" in i]
                more = (f"; COMM_SMS {args.comm_sms}: MAPE {100 * sum(map(abs, sms)) / n:.1f} %, "
                        f"mean signed {100 * sum(sms) / n:+.1f} %") if sms else ""
                print(f"   {gpu} {fw}: {n} rows, MAPE {100 * sum(abs(i['error']) for i in sel) / n:.1f}"
                      f" %, mean signed {100 * sum(i['error'] for i in sel) / n:+.1f} %, GEMM closing"
                      f" scale mean {sum(i['gemm_close'] for i in sel) / n:.3f}{more}")
        pairs = compile_pairs(items)
        if pairs:
            print("-- eager / compiled pairs: measured and predicted ratio (torch.compile's gain)")
            for e, c in pairs:
                print(f"   {e['id']:30s} / {c['id']:30s} measured {e['measured'] / c['measured']:.3f}"
                      f"  predicted {e['predicted'] / c['predicted']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
