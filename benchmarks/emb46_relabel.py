"""Label each bundled kernel database's ``embedding.bwd`` records with the table they zeroed.

``trainsim profile`` times PyTorch's dense embedding backward (``torch.autograd.grad`` of
``F.embedding`` on a vocabulary x hidden table: profile/kernels.py), which starts from
``at::zeros({num_weights, dim})`` (pytorch/pytorch@1c94016e aten/src/ATen/native/cuda/
Embedding.cu ``embedding_dense_backward_cuda``, EmbeddingBackwardKernel.cu
``embedding_backward_cuda_kernel``). The simulator prices that fill as its own op
(``workload.head.embedding_zero_fill``), so the database takes the fill off each record
(``compute.database.KernelDatabase.without_fill``) and needs to know the table each record
zeroed. A record keys only its bytes (tokens x hidden x 10), not the table; the table is that of
the first sweep case whose record it is (``profile.shapes.distinct_cases``: the first of equal
keys is kept), rebuilt here from the file's own ``command`` line (models, TP, sequences, CP and
micro-batch), the same walk the profiler made. Every such record of both bundled files is of
TP 1 (the full 128,256-row Llama 3 vocabulary).

    PYTHONPATH=src python benchmarks/emb46_relabel.py          # show what each record zeroed
    PYTHONPATH=src python benchmarks/emb46_relabel.py --write  # label the bundled files
"""

from __future__ import annotations

import argparse
import copy
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from trainsim.compute.chain import BUNDLED, DATA_DIR
from trainsim.profile.shapes import distinct_cases, sweep_configs

FAMILY = "embedding.bwd"


def _flag(argv: list[str], name: str, default: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else default


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def tables(data: dict[str, Any]) -> dict[int, dict[str, int]]:
    """Bytes of each ``embedding.bwd`` record the file's sweep wrote -> the table it zeroed."""
    argv = shlex.split(str(data["command"]))
    cfgs = sweep_configs(_flag(argv, "--models", "llama3-8b,llama3-70b").split(","),
                         _ints(_flag(argv, "--tp", "1,2,4,8")),
                         _ints(_flag(argv, "--seq", "4096,8192")), str(data["gpu"]),
                         cps=tuple(_ints(_flag(argv, "--cp", "1"))),
                         micro_batch_size=int(_flag(argv, "--mbs", "1")))
    out: dict[int, dict[str, int]] = {}
    for case in distinct_cases(cfgs):
        if case.kernel.kind != FAMILY:
            continue
        size = case.kernel.size
        for rec in case.records:
            # the sweep's first case of equal bytes wrote the record (profilers before the 47th
            # session keyed a scatter by its bytes alone)
            out.setdefault(round(rec["bytes"]), {"rows": int(size["vocab"]), "cols": int(size["cols"])})
    return out


def relabel(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with every ``embedding.bwd`` record carrying ``zeroed`` (rows, cols); a record
    the file's own sweep did not write is an error."""
    out = copy.deepcopy(data)
    known = tables(out)
    for rec in out["kernels"]:
        if rec.get("kernel") != FAMILY:
            continue
        table = known.get(round(rec["bytes"]))
        if table is None:
            raise SystemExit(f"{data['gpu']}: no sweep case wrote the {FAMILY} record of "
                             f"{rec['bytes']:.0f} bytes")
        rec["zeroed"] = table
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="write the labels into the bundled files")
    args = ap.parse_args()
    for name in BUNDLED.values():
        path = DATA_DIR / name
        data = json.loads(path.read_text())
        new = relabel(data)
        for rec in new["kernels"]:
            if rec.get("kernel") == FAMILY:
                z = rec["zeroed"]
                print(f"{data['gpu']}: {rec['bytes'] / 1e6:.1f} MB record, {rec['time_s'] * 1e3:.3f}"
                      f" ms, zeroed {z['rows']} x {z['cols']}")
        if args.write:
            Path(path).write_text(json.dumps(new, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
