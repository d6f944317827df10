"""FlashAttention-3's Hopper backward tiles and their ``wgmma`` operand reads against the H200
head-dim grids (43rd session, bwd43).

    PYTHONPATH=src python benchmarks/bwd43_fa3_tiles.py                     # markdown
    PYTHONPATH=src python benchmarks/bwd43_fa3_tiles.py --json
    PYTHONPATH=src python benchmarks/bwd43_fa3_tiles.py --off               # pacing off
    PYTHONPATH=src python benchmarks/bwd43_fa3_tiles.py --fa2-per-matmul    # the FA2 candidate

1. ``pace``: per FA3 head dim (``compute.fa3_bwd_traits.FA3_BWD_TRAITS``, from
   Dao-AILab/flash-attention@0251105a hopper/flash_bwd_launch_template.h), the tile, the MMA
   warp groups, each of the five matmuls' ``wgmma`` N and whether A is held in registers, and
   the pace (``fa3_bwd_smem_over_mma``): derived, nothing fitted.
2. ``signed``: trainsim's predicted over measured rate - 1 on the attention rows of
   ``benchmarks/h200_2026-11-27_s41/kernels_h200_s41_hd.csv`` (head dims 96, 160, 192) and
   ``kernels_h200_s41.csv`` (64, 128, 256), per backend, pass and head dim
   (``hd42_headdim.signed``), and each file's MAPE over all its rows.

Switches (each run in its own process: predictions are cached): ``--off`` sets
``fa3_bwd_traits.FA3_BWD_SMEM_BOUND`` False (the 42nd session's pricing);
``--fa2-per-matmul`` sets ``attention.FA2_SMEM_PER_MATMUL`` True (the candidate that paces each
FlashAttention-2 matmul by its own operand loads).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hd42_headdim import FILES, load_rows, signed

from trainsim.compute import attention, fa3_bwd_traits
from trainsim.compute.fa3_bwd_traits import (
    FA3_BWD_TRAITS,
    fa3_bwd_gemm_widths,
    fa3_bwd_smem_over_mma,
)
from trainsim.validate.kernels import predict_kernel_row


def pace() -> list[dict]:
    """One entry per FA3 backward kernel (``FA3_BWD_TRAITS``)."""
    out = []
    for (d, causal), t in sorted(FA3_BWD_TRAITS.items()):
        gemms = fa3_bwd_gemm_widths(t, d)
        out.append({"head_dim": d, "causal": causal, "tile": f"{t.block_m} x {t.block_n}",
                    "warpgroups": t.warpgroups,
                    "wgmma_n": [f"{n}{' RS' if rs else ''}" for n, rs, _ in gemms],
                    "pace": fa3_bwd_smem_over_mma(d, causal)})
    return out


def file_mape(path: Path) -> tuple[float, int]:
    """MAPE (%) and rows of a kernels file, as ``trainsim validate`` scores it."""
    errs = []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            res = predict_kernel_row(row)
            if res.predicted is not None:
                errs.append(abs(res.predicted / res.measured - 1.0))
    return 100.0 * sum(errs) / len(errs), len(errs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--off", action="store_true", help="FA3_BWD_SMEM_BOUND False")
    ap.add_argument("--fa2-per-matmul", action="store_true", help="FA2_SMEM_PER_MATMUL True")
    args = ap.parse_args()
    fa3_bwd_traits.FA3_BWD_SMEM_BOUND = not args.off
    attention.FA2_SMEM_PER_MATMUL = args.fa2_per_matmul
    result = {"pace": pace(), "signed": signed(load_rows()),
              "files": {p.name: file_mape(p) for p in FILES}}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print("| head dim | causal | tile | MMA warp groups | wgmma N: S, dP, dV, dK, dQ | pace |")
    print("|---|---|---|---|---|---|")
    for p in result["pace"]:
        print(f"| {p['head_dim']} | {p['causal']} | {p['tile']} | {p['warpgroups']} | "
              f"{', '.join(p['wgmma_n'])} | {p['pace']:.3f} |")
    print("\n| backend pass head dim | n | predicted / measured rate - 1: mean (min..max) |")
    print("|---|---|---|")
    for k, v in result["signed"].items():
        print(f"| {k} | {v['n']} | {v['mean']:+.1%} ({v['min']:+.1%}..{v['max']:+.1%}) |")
    print()
    for name, (m, n) in result["files"].items():
        print(f"{name}: {n} rows, MAPE {m:.2f} %")


if __name__ == "__main__":
    main()
