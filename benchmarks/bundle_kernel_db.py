"""Build trainsim's bundled H100 kernel database from the one ``trainsim profile`` wrote on a
real H100 (``shared/validation/kernel-db/h100-sxm-80gb.json``, format 1).

What it changes, and why:

* every record is labelled with what was measured (format 2): the memory-bound kernel family
  and its implementation (``compute.database.PROFILED_IMPL``: what the profiler's PyTorch code
  runs) with its bytes restated for that implementation (format 1 wrote the fused op's bytes
  beside an eager kernel's time: ``workload.elementwise.bytes_relative_to_fused``), and the
  attention backend. Format 1 did not record the SDPA backend; the layer
  records of the same file, measured under the same backend choice, list cuDNN's fused
  attention kernels (``cudnn_generated_fort_native_sdpa_sm90_flash_*``), so the attention
  records are cuDNN's;
* records that are not measurements are dropped and listed under ``dropped``, with the reason:
  any record faster than the GPU's peak FLOP/s or HBM bandwidth
  (``compute.database.physical_violation``), e.g. the backward of a residual add without
  dropout, where autograd passes the gradient through and launches no kernel.

    python benchmarks/bundle_kernel_db.py [SOURCE] [--out src/trainsim/data/kernels/h100-sxm-80gb.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute.database import (
    FORMAT,
    op_from_record,
    physical_violation,
    record_label,
)

ROOT = Path(__file__).resolve().parent.parent
SHARED = next((p / "shared" / "validation" for p in ROOT.parents
               if (p / "shared" / "validation").is_dir()), ROOT.parent / "shared" / "validation")
"""The shared validation folder beside the checkout (or beside a worktree's parent)."""
SOURCE = SHARED / "kernel-db" / "h100-sxm-80gb.json"
OUT = ROOT / "src" / "trainsim" / "data" / "kernels" / "h100-sxm-80gb.json"
TIMING = ("each kernel alone between two CUDA events, queued behind a sleep kernel (no launch "
          "gap timed), inputs rotated past the L2, median of up to 50 (trainsim profile: "
          "profile/device.py measure, profile/kernels.py time_kernel); layer records: CUDA events "
          "around the layer's forward and backward, kernels from torch.profiler")
"""How the profiler that wrote the format-1 source timed (its code at the source's date); the
source does not say it, the bundled file does (``compute.database``: what a record timed)."""
BACKENDS = (("cudnn", ("cudnn", "sdpa")), ("flash2", ("flash_fwd",)),
            ("flash2", ("pytorch_flash",)), ("mem_efficient", ("fmha_cutlass",)))
"""Attention backend -> words that all appear in the name of its forward or backward kernel."""


def attention_backend(layers: list[dict]) -> str:
    """The SDPA backend the layer records' kernel names show (one for the whole file)."""
    names = [k["name"].lower() for layer in layers for k in layer.get("kernels", [])]
    found = {impl for impl, words in BACKENDS
             for name in names if all(w in name for w in words)}
    if len(found) != 1:
        sys.exit(f"cannot tell the attention backend from the layer records: {sorted(found)}")
    return found.pop()


def convert(src: dict) -> dict:
    spec = catalog_gpu(src["gpu"])
    backend = attention_backend(src.get("layers") or [])
    kept, dropped = [], []
    for i, row in enumerate(src["kernels"]):
        row = dict(row)
        if row["op"] == "elementwise":
            op = op_from_record(row)  # read as format 1: the kernel's own bytes
            row.update(kernel=op.kernel, impl=op.impl, bytes=op.bytes)
        elif row["op"] == "attention":
            row["impl"] = backend
        why = physical_violation(op_from_record(row), float(row["time_s"]), spec)
        if why:
            dropped.append({"record": i, "what": record_label(row), "why": why})
            continue
        kept.append(row)
    meta = {k: v for k, v in src.items() if k not in ("kernels", "layers", "format")}
    meta.setdefault("timing", TIMING)
    return {"format": FORMAT, **meta,
            "converted_by": f"python benchmarks/bundle_kernel_db.py (format 1 -> {FORMAT}: labelled "
                            "implementations, non-physical records dropped)",
            "dropped": dropped, "kernels": kept, "layers": src.get("layers") or []}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", nargs="?", default=str(SOURCE))
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    out = convert(json.loads(Path(args.source).read_text()))
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"{args.out}: {len(out['kernels'])} records kept, {len(out['dropped'])} dropped:")
    for d in out["dropped"]:
        print(f"  {d['what']}: {d['why']}")


if __name__ == "__main__":
    main()
