"""FlashAttention-2's shared-memory-bound main loop (``attention.fa2_smem_over_mma``) against
the measured attention rows, with and without it (41st session, attn41).

    PYTHONPATH=src python benchmarks/attn41_check.py              # markdown tables
    PYTHONPATH=src python benchmarks/attn41_check.py --no-stack   # s41 backward without the copy

Each FlashAttention-2 warp loads its own ``mma.sync`` operands from shared memory; the bytes a
FLOP follow from the kernel's tile and warp layout (``compute.fa2_traits``). Where they take
longer at ``SMEM_BYTES_PER_SM_CLOCK`` than the matmuls at ``MMA_SYNC_FLOPS_PER_SM_CLOCK`` (head
dim 256 and 192 forward, 16 query rows a warp; head dim 256 backward on Hopper), the main loop
runs at the shared-memory pipe's pace: no constant, no fit (the other attention constants are
``fit_kernels.py``'s, unchanged: no row it fits has a head dim above 128).

Rows: the 41st session's H200 grid (``benchmarks/h200_2026-11-27_s41/kernels_h200_s41.csv``:
the FA3 paper's Fig. 5 shapes at head dim 64 / 128 / 256 through SDPA's FLASH_ATTENTION and
CUDNN_ATTENTION backends), the FA3 paper's H100 FlashAttention-2 rows (held out of every fit)
and every attention row ``fit_kernels.py`` prices, per GPU and part. The s41 backward rows are
forward + backward minus forward of SDPA on views of one packed ``qkv``
(``benchmarks/device_checks41.py`` ``attn_grid``: ``qkv.unbind(2)``), so each also runs
autograd's ``UnbindBackward`` stack of dQ, dK and dV (``validate.kernels.unbind_stack``, about
0.1 ms at 16k tokens x hidden 2048); the script prices it as a note "qkv.unbind" would.
Signed error: predicted time over measured - 1 (negative: priced too fast).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fit_kernels as fk
from kernel_rows import FILES, Row, load, split

from trainsim.compute import attention
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.kernels import unbind_stack
from trainsim.workload.ops import Attention

S41 = Path(__file__).resolve().parent / "h200_2026-11-27_s41" / "kernels_h200_s41.csv"


def attn_op(r: Row) -> Attention:
    return next(op for op in r.ops if isinstance(op, Attention))


def s41_rows(stack: bool = True) -> list[Row]:
    """The s41 file's attention rows, each backward with its harness's unbind stack copy."""
    rows = [r for r in load([S41]) if r.kind.startswith("attention")]
    for r in rows:
        r.source = "h200 s41"
        if stack:
            r.ops = [*r.ops, *unbind_stack({"note": "qkv.unbind"}, attn_op(r))]
    return rows


def fa3_paper_fa2(rows: list[Row]) -> list[Row]:
    """The FA3 paper's FlashAttention-2 rows (H100, held out of every fit)."""
    return [r for r in rows if "FlashAttention-3 paper" in r.full_source
            and fk.attention_impl(r) == "flash2"]


def errors(rows: list[Row], bound: bool) -> np.ndarray:
    saved = attention.FA2_SMEM_BOUND
    try:
        attention.FA2_SMEM_BOUND = bound
        return fk.predict(rows) / np.array([r.measured_s for r in rows]) - 1.0
    finally:
        attention.FA2_SMEM_BOUND = saved


def table(groups: dict[tuple, list[Row]], head: str) -> str:
    out = [f"| {head} | n | MAPE without | MAPE with | signed without | signed with |",
           "|" + "---|" * (head.count("|") + 6)]
    for key, rows in sorted(groups.items()):
        before, after = errors(rows, False), errors(rows, True)
        out.append(f"| {' | '.join(map(str, key))} | {len(rows)} | "
                   f"{np.mean(np.abs(before)) * 100:.1f} % | {np.mean(np.abs(after)) * 100:.1f} % | "
                   f"{np.mean(before) * 100:+.1f} % | {np.mean(after) * 100:+.1f} % |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-stack", action="store_true")
    args = ap.parse_args(argv)
    rows = load([BUNDLED_DIR / f for f in FILES])
    held = split(rows)
    rows = fk.with_gpu_files(rows, held)
    groups: dict[tuple, list[Row]] = defaultdict(list)
    for r in s41_rows(not args.no_stack):
        a = attn_op(r)
        groups[("H200 s41", r.kind[10:], a.impl, a.head_dim)].append(r)
    for r in fa3_paper_fa2(rows):
        groups[("FA3 paper H100", r.kind[10:], "flash2", attn_op(r).head_dim)].append(r)
    print(table(groups, "rows | kind | impl | head dim"))
    cells: dict[tuple, list[Row]] = defaultdict(list)
    for r in fk.attention_rows(rows):
        cells[(r.gpu, fk.cell_part(r, held))].append(r)
    print()
    print(table(cells, "GPU | part"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
