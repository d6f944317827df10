"""Mark the memory-bound rows of a ``measure_kernels.py`` file whose input stays in the L2.

``measure_kernels.py`` times each memory-bound kernel over a CUDA-graph replay of back-to-back
calls on the same tensors, so where the kernel's input ``[tokens, hidden]`` (bf16) fits in the
GPU's L2 (the catalog's ``l2_bytes``: 50 MiB on the H100 and H200) every call after the first
reads it from the cache: the row times the L2, not HBM, which ``trainsim validate`` counts apart
(``validate/kernels.py`` ``L2_RESIDENT``). This is the rule the shared H100 file's 14 marked rows
follow; ``--check`` proves it reproduces them exactly.

    PYTHONPATH=src python benchmarks/mark_l2_resident.py RAW.csv OUT.csv
    PYTHONPATH=src python benchmarks/mark_l2_resident.py --check ../shared/validation/kernels_h100_measured.csv
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from trainsim.catalog import gpu as catalog_gpu

NOTE = ("L2-resident: working set within the {mib:.0f} MB L2 and reused each call, "
        "not an HBM figure")


def l2_resident(row: dict[str, str]) -> bool:
    """A memory-bound [tokens, hidden] bf16 row whose input fits in its GPU's L2."""
    if row.get("kind") != "memory_bound" or row.get("dtype") != "bf16":
        return False
    tokens, hidden = row.get("tokens") or "", row.get("hidden") or ""
    if not (tokens and hidden):
        return False
    return int(tokens) * int(hidden) * 2 <= catalog_gpu(row["gpu"]).l2_bytes


def marked(row: dict[str, str]) -> bool:
    return "L2-resident" in (row.get("note") or "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--check", action="store_true",
                   help="compare the rule with a file's own marks; exit 1 where they differ")
    a = p.parse_args(argv)
    with a.files[0].open(newline="") as fh:
        reader = csv.DictReader(fh)
        fields, rows = reader.fieldnames or [], list(reader)
    if a.check:
        differ = [r["id"] for r in rows if l2_resident(r) != marked(r)]
        print(f"{a.files[0].name}: rule marks {sum(map(l2_resident, rows))}, file marks "
              f"{sum(map(marked, rows))}, {len(differ)} differ {differ[:5]}")
        return 1 if differ else 0
    if len(a.files) != 2:
        p.error("give RAW.csv and OUT.csv (or --check FILE)")
    n = 0
    for r in rows:
        if l2_resident(r) and not marked(r):
            mib = catalog_gpu(r["gpu"]).l2_bytes / 2**20
            r["note"] = f"{r['note']}; {NOTE.format(mib=mib)}" if r.get("note") else NOTE.format(mib=mib)
            n += 1
    with a.files[1].open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {a.files[1]}: {len(rows)} rows, {n} marked L2-resident")
    return 0


if __name__ == "__main__":
    sys.exit(main())
