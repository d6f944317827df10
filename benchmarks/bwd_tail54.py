"""The Blackwell causal backward's critical path (``compute.causal_bwd_tail.
warp_specialised_bwd_tail``, 54th session, simumax54), checked two ways:

    PYTHONPATH=src python benchmarks/bwd_tail54.py --moved    # every kernel row it moves
    PYTHONPATH=src python benchmarks/bwd_tail54.py --hopper   # Hopper's cuDNN records, per-head tail

``--moved`` prices every attention backward row of the kernels files (shared validation/ where
present, benchmarks/kernels_*.csv, the H200 s54 runs) with and without the factor and prints
the rows whose price moves. ``--hopper`` reads the bundled H100 and H200 kernel databases' cuDNN
causal backward records against the roofline (burst clock, as the databases are read) and prints
each record's measured / model, the per-head heavy-first tail (``causal_backward_tail``) and
measured / (model x tail): the records follow that dispatch, not the grid-wide bound.
"""

from __future__ import annotations

import csv
import dataclasses
import glob
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def moved() -> list[str]:
    from trainsim.compute import attention
    from trainsim.validate import kernels

    own = attention.warp_specialised_bwd_tail
    files = sorted({*glob.glob(str(ROOT.parent / "shared/validation/kernels_*.csv")),
                    *glob.glob(str(ROOT / "benchmarks/kernels_*.csv")),
                    *glob.glob(str(ROOT / "benchmarks/h200_*/**/kernels*.csv"), recursive=True)})
    out = []
    for path in files:
        with open(path, newline="") as fh:
            rows = [r for r in csv.DictReader(fh)
                    if (r.get("kind") or "").strip() in ("attention_bwd", "attention_fwd_bwd")]
        for row in rows:
            priced = []
            for factor in (lambda *a: 1.0, own):
                attention.warp_specialised_bwd_tail = factor
                kernels._model.cache_clear()
                priced.append(kernels.predict_kernel_row(row))
            attention.warp_specialised_bwd_tail = own
            before, after = priced
            if before.error is None and before.predicted != after.predicted:
                out.append(f"{Path(path).name} {row['id']}: {before.predicted / before.measured - 1:+.3f}"
                           f" -> {after.predicted / after.measured - 1:+.3f}")
    return out


def hopper() -> list[str]:
    from trainsim.catalog import gpu as catalog_gpu
    from trainsim.compute.causal_bwd_tail import causal_backward_tail
    from trainsim.compute.database import op_from_record
    from trainsim.compute.roofline import RooflineModel
    from trainsim.workload.ops import Attention

    out = ["gpu heads seq measured/model tail measured/(model x tail)"]
    for name in ("h100-sxm-80gb", "h200-sxm-141gb"):
        data = json.loads((ROOT / "src/trainsim/data/kernels" / f"{name}.json").read_text())
        spec = catalog_gpu(data["gpu"])
        burst = dataclasses.replace(spec, sustained_of_burst=1.0)
        for record in data["kernels"]:
            op = op_from_record(record, fmt=str(data["format"]))
            if not (isinstance(op, Attention) and op.backward and op.causal and op.impl == "cudnn"):
                continue
            model = RooflineModel(burst, None, (), True).time(op)
            blocks = math.ceil(op.q_len / 128)
            tail = causal_backward_tail(op.batch * op.heads, blocks, blocks, 128, 128, spec.num_sms)
            ratio = record["time_s"] / model
            out.append(f"{name} {op.heads} {op.q_len} {ratio:.3f} {tail:.3f} {ratio / tail:.3f}")
    return out


if __name__ == "__main__":
    print("\n".join(moved() if sys.argv[1:] == ["--moved"] else hopper()))
