"""Why the H200 database priced FlashAttention-2's backward 16-24 % slow at 8k-64k tokens, and the
causal backward tail (``compute.causal_bwd_tail``) that removes it.

1. The database's FA2 head-dim-128 causal backward records (batch 1, 4-64 query heads, 4k and
   8k tokens, GQA 4 or 8) against the analytic model without and with the tail: their
   log(measured / modelled) without it runs +0.02 .. +0.66 and follows the tail (the heads'
   heaviest key blocks left running alone on a few SMs), with it -0.05 .. +0.01.
2. Without the tail the records' mean log ratio (+0.20) is the prior every shape far from them
   takes (``database.PRIOR_WEIGHT``): a long multi-head sequence, whose thousands of CTAs leave
   no tail, was priced exp(0.20) = 1.22x slow. With it the prior is -0.02.
3. The attention rows of the committed H200 and H100 measurements (session 41's grid, session
   47's long rows), validated with the tail nowhere, in the database's reading (shipped) and
   in the roofline too (not shipped: ``attention.FA2_BWD_TAIL``).

usage: PYTHONPATH=src python benchmarks/h200db48_bwd_tail.py
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from trainsim import catalog
from trainsim.compute import attention, database
from trainsim.compute.causal_bwd_tail import causal_backward_tail
from trainsim.compute.chain import DATA_DIR
from trainsim.compute.database import KernelDatabase, op_from_record

HERE = Path(__file__).resolve().parent
FILES = (HERE / "h200_2026-11-28_s47" / "kernels.csv",
         HERE / "h200_2026-11-27_s41" / "kernels_h200_s41.csv",
         HERE / "h100_2026-11-28_s47" / "dc47" / "kernels.csv")
RUN = ("import sys, trainsim.compute.attention as a, trainsim.compute.database as d; "
       "d.RECORD_BWD_TAIL = sys.argv[1] != 'off'; a.FA2_BWD_TAIL = sys.argv[1] == 'roofline'; "
       "from trainsim.cli import main; main(sys.argv[2:], prog_name='trainsim')")
MODES = ("off", "database", "roofline")
"""The tail nowhere (before), in a database's reading of its records (shipped), in the roofline
too (``attention.FA2_BWD_TAIL``, not shipped)."""


def records(tail: bool, impl: str = "flash2") -> list[tuple[object, float]]:
    """(op, log(measured / modelled)) of the H200 database's causal backward records of ``impl``."""
    saved = database.RECORD_BWD_TAIL
    database.RECORD_BWD_TAIL = tail
    try:
        path = DATA_DIR / "h200-sxm-141gb.json"
        db = KernelDatabase.load(path, catalog.gpu)
        data = json.loads(path.read_text())
        out = []
        for row in data["kernels"]:
            if row.get("op") != "attention" or not row.get("backward") or row.get("impl") != impl:
                continue
            op = op_from_record(row, fmt=data["format"])
            out.append((op, math.log(row["time_s"] / db.modelled(op))))
        return out
    finally:
        database.RECORD_BWD_TAIL = saved


def validated(path: Path, mode: str) -> list[dict]:
    cmd = [sys.executable, "-c", RUN, mode, "validate", str(path),
           "--format", "json", "--workers", "1"]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)["rows"]


def main() -> int:
    gpu = catalog.gpu("h200-sxm-141gb")
    sms = gpu.num_sms
    before, after = records(False), records(True)
    print("| heads / kv | tokens | CTAs | log ratio without | tail (log) | log ratio with |")
    print("|---|---|---|---|---|---|")
    for (op, lr0), (_, lr1) in zip(before, after):
        bm, bn = attention.attention_tile(op.impl, op.head_dim, op.causal, True,
                                          arch=gpu.sm_arch)
        tail = causal_backward_tail(op.batch * op.heads, math.ceil(op.q_len / bm),
                                    math.ceil(op.kv_len / bn), bm, bn, sms)
        print(f"| {op.heads} / {op.kv_heads} | {op.q_len} | {op.batch * op.heads * op.kv_len // bn}"
              f" | {lr0:+.3f} | {math.log(tail):+.3f} | {lr1:+.3f} |")
    for name, rs in (("without", before), ("with", after)):
        lr = [x for _, x in rs]
        print(f"{name} the tail: mean log ratio {statistics.mean(lr):+.3f} (the prior), "
              f"sd {statistics.pstdev(lr):.3f}")
    cudnn = records(True, "cudnn")
    print(f"cuDNN backward records (no tail: its grid is not published): log ratio "
          f"{min(x for _, x in cudnn):+.3f} .. {max(x for _, x in cudnn):+.3f}")
    print()
    print("| file | kind / impl | n | MAPE off / database / roofline "
          "| signed off / database / roofline |")
    print("|---|---|---|---|---|")
    for path in FILES:
        runs = [validated(path, mode) for mode in MODES]
        groups: dict[str, list[list[float]]] = defaultdict(lambda: [[] for _ in MODES])
        for i, rows in enumerate(runs):
            for r in rows:
                if r.get("ape") is None or not r["kind"].startswith("attention"):
                    continue
                groups[f"{r['kind']} / {r['implementation']}"][i].append(
                    r["predicted"] / r["measured"] - 1.0)
        for key, errs in sorted(groups.items()):
            mape = " / ".join(f"{100 * statistics.mean(map(abs, e)):.1f}" for e in errs)
            signed = " / ".join(f"{100 * statistics.mean(e):+.1f}" for e in errs)
            print(f"| {path.parent.name}/{path.name} | {key} | {len(errs[0])} | {mape} % "
                  f"| {signed} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
