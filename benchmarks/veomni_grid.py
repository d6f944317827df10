"""VeOmni #460's Triton fused-MoE rows against the grid VeOmni's kernel launches (diagnostic).

    PYTHONPATH=src python benchmarks/veomni_grid.py            # table of the rows
    PYTHONPATH=src python benchmarks/veomni_grid.py --markdown

The kernels file (``kernels_published.csv``) writes ``implementation = triton`` for VeOmni's
Triton MoE and for the ``torch._grouped_mm`` rows of the same PR; the validator prices a
Triton MoE block as a fused grouped GEMM over real tiles (Liger-Kernel's structure, on which
``compute.grouped.GROUPED_OF_GEMM['triton']`` is fitted). Read at the PR's date
(ByteDance-Seed/VeOmni bfe4b650, 2026-02-06):

* ``veomni/ops/fused_moe/group_gemm.py`` ``FusedMoeExpertFunction.forward`` runs three grouped
  GEMMs (gate, up, down) with ``max_M=scatter_output.shape[0]``: every routed row;
* ``veomni/ops/group_gemm/kernel/group_gemm.py`` ``group_gemm_same_nk`` launches a grid of
  ``cdiv(max_M, BLOCK_M) * cdiv(N, BLOCK_N)`` programs for each of the ``G`` experts; a program
  whose row block lies beyond its expert's rows returns after loading two ``cumsum_M`` entries.
  No pre-tuned file ships (no ``*.bpex`` in the tree), so the ``pretuned`` fallback
  ``BLOCK_M = BLOCK_N = 128`` holds;
* VeOmni's own design note (docs/design/fused_moe_kernels.md at HEAD) calls ``max_M`` "a
  per-expert launch bound" and the total scattered row count its "conservative safe bound".

So nearly every program of VeOmni's grid is empty. This script counts them from those
formulas, prices each row with the shipped validator, and reports the cost per empty program
each Triton row implies, and the range of one such cost that would take the held-out
``moe_block`` H100 cell (the PR's four rows) to 15 %. No constant is fitted or shipped: the
two Triton rows are a held-out source. The cost was then unmeasured; the 36th session's H200
probe (``empty_program_probe.py``) measured it, and ``compute.grouped`` prices it for a
``veomni`` (``triton_max_m``) grouped GEMM: the last line gives the cell with it.
"""

from __future__ import annotations

import argparse
import csv
import math
from dataclasses import dataclass

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute.grouped import EMPTY_PROGRAM_SM_S
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.kernels import predict_kernel_row

KERNELS = BUNDLED_DIR / "kernels_published.csv"
SOURCE = "VeOmni PR #460"
BLOCK_M = 128
BLOCK_N = 128
"""VeOmni's ``pretuned`` fallback for ``group_gemm_same_nk`` (group_gemm.py, bfe4b650)."""
CELL_TARGET = 0.15
"""Issue 17 item 1: every grouped GEMM / MoE block cell within 15 %."""


@dataclass(frozen=True)
class Grid:
    """Programs VeOmni's three expert GEMMs launch (``launched``) and the ones that reach the
    main loop (``real``: each expert's rows in whole row blocks, the last one half full on
    average, as ``compute.grouped`` reads dropless routing)."""

    launched: int
    real: float

    @property
    def empty(self) -> float:
        return self.launched - self.real


def veomni_grid(tokens: int, top_k: int, hidden: int, ffn: int, experts: int,
                block_m: int = BLOCK_M, block_n: int = BLOCK_N) -> Grid:
    """Programs of gate (N = ffn, K = hidden), up (the same) and down (N = hidden, K = ffn),
    each over ``experts`` groups of ``cdiv(routed rows, block_m)`` row blocks."""
    routed = tokens * top_k
    widths = (ffn, ffn, hidden)
    row_blocks = math.ceil(routed / block_m)
    launched = sum(row_blocks * math.ceil(n / block_n) * experts for n in widths)
    per_expert = max(1.0, routed / experts / block_m + 0.5)
    real = sum(per_expert * math.ceil(n / block_n) * experts for n in widths)
    return Grid(launched, real)


@dataclass(frozen=True)
class RowCheck:
    id: str
    triton: bool
    measured_s: float
    predicted_s: float
    grid: Grid | None

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1.0

    def error_with(self, cost_s: float) -> float:
        """Signed time error with ``cost_s`` per empty program added (Triton rows only)."""
        extra = cost_s * self.grid.empty if self.grid is not None else 0.0
        return (self.predicted_s + extra) / self.measured_s - 1.0


def _seconds(row: dict[str, str], value: float) -> float:
    return value * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[row["measured_unit"].strip()]


def rows(path=KERNELS, implementation: str | None = None) -> list[RowCheck]:
    """The PR's moe_block rows, priced by ``trainsim validate`` as shipped (the Triton rows'
    library read as ``implementation`` where given: ``veomni``, their erratum)."""
    out = []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["kind"] != "moe_block" or SOURCE not in (row.get("source") or ""):
                continue
            triton = "torch._grouped_mm" not in (row.get("note") or "")
            if triton and implementation:
                row = dict(row, implementation=implementation)
            res = predict_kernel_row(row)
            grid = (veomni_grid(*(int(row[c]) for c in ("tokens", "top_k", "hidden", "ffn",
                                                         "experts")))
                    if triton else None)
            out.append(RowCheck(row["id"], triton, _seconds(row, res.measured),
                                _seconds(row, res.predicted), grid))
    return out


def cell_mape(checks: list[RowCheck], cost_s: float = 0.0) -> float:
    return sum(abs(c.error_with(cost_s)) for c in checks) / len(checks)


def passing_costs(checks: list[RowCheck], target: float = CELL_TARGET,
                  top_s: float = 2e-9, steps: int = 4000) -> tuple[float, float] | None:
    """The interval of one cost per empty program (s, GPU-wide) that puts the cell's time MAPE
    at or under ``target`` (scanned on a grid up to ``top_s``), or None."""
    ok = [i * top_s / steps for i in range(steps + 1)
          if cell_mape(checks, i * top_s / steps) <= target]
    return (min(ok), max(ok)) if ok else None


def report(markdown: bool = False) -> str:
    checks = rows()
    sms = catalog_gpu("h100-sxm-80gb").num_sms
    head = ("| row | measured ms | trainsim ms | error | programs launched | empty | "
            "implied ns per empty program (GPU / per SM) |")
    lines = [head, "|---|---|---|---|---|---|---|"] if markdown else []
    for c in checks:
        implied = ((c.measured_s - c.predicted_s) / c.grid.empty if c.grid else None)
        cells = [c.id, f"{c.measured_s * 1e3:.3f}", f"{c.predicted_s * 1e3:.3f}",
                 f"{c.error * 100:+.1f} %",
                 f"{c.grid.launched:,}" if c.grid else "-",
                 f"{c.grid.empty:,.0f} ({c.grid.empty / c.grid.launched:.1%})" if c.grid else "-",
                 f"{implied * 1e9:.3f} / {implied * 1e9 * sms:.0f}" if implied else "-"]
        lines.append(("| " + " | ".join(cells) + " |") if markdown else "  ".join(cells))
    span = passing_costs(checks)
    lines.append("")
    lines.append(f"cell (4 rows) time MAPE as shipped: {cell_mape(checks) * 100:.1f} %")
    if span:
        lo, hi = span
        lines.append(f"one cost per empty program that takes it to <= {CELL_TARGET:.0%}: "
                     f"{lo * 1e9:.3f} .. {hi * 1e9:.3f} ns GPU-wide "
                     f"({lo * 1e9 * sms:.0f} .. {hi * 1e9 * sms:.0f} ns per program on one of "
                     f"{sms} SMs)")
    else:
        lines.append(f"no single cost per empty program takes it to {CELL_TARGET:.0%}")
    measured = EMPTY_PROGRAM_SM_S / sms
    lines.append(f"measured (H200 probe, compute.grouped.EMPTY_PROGRAM_SM_S over {sms} SMs): "
                 f"{measured * 1e9:.3f} ns GPU-wide; the cell with it added to the shipped "
                 f"Triton price: {cell_mape(checks, measured) * 100:.1f} %; "
                 f"priced by the validator as 'veomni' (kernels_errata.csv): "
                 f"{cell_mape(rows(implementation='veomni')) * 100:.1f} %")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    print(report(ap.parse_args().markdown))


if __name__ == "__main__":
    main()
