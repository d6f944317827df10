"""Blackwell kernels from sources outside the shared kernel file (benchmarks/kernels_blackwell.csv):
GB200's sustained GEMM rate and the notes that mark a fast-accumulating fp8 GEMM."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

from trainsim.catalog import gpu
from trainsim.validate import validate_file
from trainsim.validate.kernels import kernel_ops, predict_kernel_row

BLACKWELL = Path(__file__).resolve().parents[1] / "benchmarks" / "kernels_blackwell.csv"


def _rows(prefix: str) -> list[dict[str, str]]:
    with BLACKWELL.open(newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["id"].startswith(prefix)]


def _signed(rows: list[dict[str, str]]) -> list[float]:
    """Signed rate error of each large GEMM (every side >= 6144: whole waves, k long enough
    that the tile overhead is a few per cent)."""
    out = []
    for r in rows:
        if min(int(r["m"]), int(r["n"]), int(r["k"])) < 6144:
            continue
        res = predict_kernel_row(r)
        assert res.error is None, res.error
        out.append(res.predicted / res.measured - 1.0)
    return out


def test_every_blackwell_kernel_row_is_priced():
    """The file reads as a kernels file and every row gets a price."""
    _, results = validate_file(BLACKWELL, workers=1)
    assert len(results) == 45
    assert all(r.error is None and r.predicted for r in results)


def test_gb200_sustained_fp8_gemm_matches_azure_and_errs_as_hopper_does():
    """Azure's cuBLASLt fp8 benchmark after 10,000 warm-up iterations (the board at its power
    limit) on GB200: trainsim's GB200 (sustained 0.82 of its MAMF) prices each large GEMM within
    6 %, and errs by the same amount, within 3 points, as on the H100 and H200 that ran the same
    benchmark. At H200's 0.85 GB200 sat 6 points faster than the Hopper parts."""
    assert gpu("gb200").sustained_of_burst == 0.82
    gb200 = _signed(_rows("azure-gb200-"))
    hopper = _signed(_rows("azure-h100-")) + _signed(_rows("azure-h200-"))
    assert len(gb200) == 4 and len(hopper) == 8
    assert all(abs(e) <= 0.06 for e in gb200)
    assert abs(statistics.mean(gb200) - statistics.mean(hopper)) <= 0.03


def test_fast_accum_note_marks_a_cublas_fp8_gemm():
    """A cuBLAS fp8 row whose note names CUBLASLT_MATMUL_DESC_FAST_ACCUM (or fast accumulation)
    is priced without the split accumulator; without the note, with it."""
    row = dict(_rows("azure-h100-fp8-m8192")[0])
    (op,), _ = kernel_ops(row)
    assert op.fp8_fast_accum
    row["note"] = "cuBLASLt, random inputs"
    (op,), _ = kernel_ops(row)
    assert not op.fp8_fast_accum
    row["note"] = "torch._scaled_mm with use_fast_accum=True"
    (op,), _ = kernel_ops(row)
    assert op.fp8_fast_accum
