"""The first FlashAttention's split-K exchange, cell by cell: the FA2 paper's FA1 bars
(``kernels_published.csv``, attention_fwd_bwd/fa1) priced as shipped and with the exchange taken
out (``compute.attention.FLASH1_SPLIT_K_WARPS`` = 0 and the matmuls at ``FLASH1_OF_FLASH2``, the
model before the 39th session), and head dim 128 over 64 at 16k tokens against the bars.
A diagnostic: nothing is written and no prediction moves.

    PYTHONPATH=src python benchmarks/attn39_fa1_split_k.py      # ~5 s
"""

from __future__ import annotations

import sys
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fit_kernels as fk
import kernel_rows as kr

from trainsim.compute import attention
from trainsim.validate import BUNDLED_DIR


@contextmanager
def without_exchange():
    """FA1 as priced before the exchange: no split-K term, matmuls at FA1's whole rate."""
    saved = attention.FLASH1_SPLIT_K_WARPS, attention.FLASH1_MMA_OF_FLASH2
    attention.FLASH1_SPLIT_K_WARPS = (0, 0)
    attention.FLASH1_MMA_OF_FLASH2 = attention.FLASH1_OF_FLASH2
    try:
        yield
    finally:
        attention.FLASH1_SPLIT_K_WARPS, attention.FLASH1_MMA_OF_FLASH2 = saved


def cell(r: kr.Row) -> str:
    op = r.ops[0]
    return f"{r.gpu.split('-')[0]} hd{op.head_dim} {'causal' if op.causal else 'non-causal'}"


def table(fa1: list[kr.Row], held: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """(cell, rows, split, time MAPE / signed before, after) per GPU, head dim and mask."""
    measured = np.array([r.measured_s for r in fa1])
    with without_exchange():
        before = fk.predict(fa1) / measured - 1
    after = fk.predict(fa1) / measured - 1
    cells: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(fa1):
        cells[cell(r)].append(i)
    out = []
    for name, idx in sorted(cells.items()) + [("all", list(range(len(fa1))))]:
        parts = sorted({fk.cell_part(fa1[i], held) for i in idx})
        b, a = before[idx], after[idx]
        out.append((name, str(len(idx)), "/".join(parts),
                    f"{100 * np.mean(abs(b)):.1f} / {100 * np.mean(b):+.1f}",
                    f"{100 * np.mean(abs(a)):.1f} / {100 * np.mean(a):+.1f}"))
    return out


def head_dim_ratios(fa1: list[kr.Row]) -> list[tuple[str, str, str, str]]:
    """(GPU and mask, measured, priced before, after): rate at head dim 128 over 64, 16k tokens."""
    by = {(r.gpu.split("-")[0], r.ops[0].causal, r.ops[0].head_dim): r for r in fa1
          if r.ops[0].q_len == 16384}

    def rates(pred: np.ndarray, keys: list) -> dict:
        return {k: sum(op.flops for op in by[k].ops) / t for k, t in zip(keys, pred)}

    keys = sorted(by)
    with without_exchange():
        old = rates(fk.predict([by[k] for k in keys]), keys)
    new = rates(fk.predict([by[k] for k in keys]), keys)
    meas = {k: sum(op.flops for op in by[k].ops) / by[k].measured_s for k in keys}
    out = []
    for gpu, causal in sorted({(k[0], k[1]) for k in keys}):
        lo, hi = (gpu, causal, 64), (gpu, causal, 128)
        out.append((f"{gpu} {'causal' if causal else 'non-causal'}",
                    *(f"{d[hi] / d[lo]:.3f}" for d in (meas, old, new))))
    return out


def main() -> int:
    rows = kr.load([BUNDLED_DIR / f for f in kr.FILES])
    held = kr.split(rows)
    fa1 = [r for r in fk.attention_rows(rows) if fk.attention_impl(r) == "flash1"]
    print("| FA1 cell | rows | split | time MAPE / signed, no exchange | shipped |")
    print("|---|---|---|---|---|")
    for line in table(fa1, held):
        print("| " + " | ".join(line) + " |")
    print()
    print("| 16k tokens | measured hd128 / hd64 | no exchange | shipped |")
    print("|---|---|---|---|")
    for line in head_dim_ratios(fa1):
        print("| " + " | ".join(line) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
