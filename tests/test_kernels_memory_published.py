"""Memory-bound kernels on B200 and H100 from published sources outside the shared kernel file
(benchmarks/kernels_memory_published.csv): NVIDIA/cccl's nvbench tables of cub::DeviceTransform
(PyTorch's elementwise ops) on B200, cold and batched; the CuTe DSL RMSNorm example of
NVIDIA/cutlass on B200; quack's torch.clone floor on H100."""

from __future__ import annotations

import csv
import functools
from pathlib import Path

from trainsim.validate import validate_file
from trainsim.validate.kernels import L2_RESIDENT

FILE = Path(__file__).resolve().parents[1] / "benchmarks" / "kernels_memory_published.csv"


def _rows() -> dict[str, dict[str, str]]:
    with FILE.open(newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh)}


@functools.cache
def _results():
    return validate_file(FILE, workers=1)[1]


def test_the_file_reads_and_every_row_is_priced():
    """17 rows, all memory-bound, every one priced; five batched rows whose operands stay in
    B200's 126 MB L2 are marked L2-resident (left out of the errors)."""
    rows = _rows()
    results = _results()
    assert len(results) == len(rows) == 17
    assert all(r.error is None and r.predicted and r.predicted > 0 for r in results)
    assert {r["kind"] for r in rows.values()} == {"memory_bound"}
    assert sum(bool(L2_RESIDENT.search(r["note"])) for r in rows.values()) == 5
    assert {r["gpu"] for r in rows.values()} == {"b200-sxm-180gb", "h100-sxm-80gb"}


def test_streaming_kernels_move_their_bytes_at_the_priced_rate():
    """Every row that moves 1 GB or more from HBM (B200 add and exp over 2^28 elements, cold
    and batched, the 2.1 GB RMSNorm; H100 clones) is priced within 10 % of its measured time:
    the HBM rate on both GPUs, read from outside any fitted source."""
    rows = _rows()
    results = _results()
    big = [r for r in results if float(rows[r.id]["bytes"]) >= 1e9]
    assert len(big) == 7
    assert all(r.ape < 0.10 for r in big), [(r.id, r.ape) for r in big]


def test_cold_call_harness_is_read_from_the_source_or_note():
    """do_bench (an L2 flush, then events around one call) and nvbench's cold measurement add
    ``COLD_CALL_S`` once; a CUDA-graph do_bench, nvbench's batch and Kineto do not."""
    from trainsim.compute import roofline
    from trainsim.validate.kernels import COLD_CALL, predict_kernel_row

    for text, cold in (("triton.testing.do_bench median", True), ("do_bench_cudagraph", False),
                       ("nvbench 'GPU Time' (cold: L2 flushed)", True),
                       ("nvbench 'Batch GPU' (back-to-back launches)", False),
                       ("Kineto kernel time", False)):
        assert bool(COLD_CALL.search(text)) is cold, text
    row = dict(_rows()["cccl7391-b200-add-f16-2e28-cold"])
    t_cold = predict_kernel_row(row).predicted
    row["note"] = row["note"].replace("cold", "warm")
    assert abs(t_cold - predict_kernel_row(row).predicted - roofline.COLD_CALL_S * 1e6) < 1e-9


def test_fit_script_reproduces_the_shipped_cold_call_cost():
    """benchmarks/fit_cold_call.py on its seven nvbench rows gives the shipped constant."""
    from helpers import load_script

    from trainsim.compute import roofline

    fit = load_script(FILE.parent / "fit_cold_call.py")
    rows = [r for r in fit.load(fit.OWN) if fit.cold(r) and fit.source(r) == "NVIDIA/cccl"]
    assert len(rows) == 7
    best = fit.golden(lambda c: fit.mape(fit.errors(rows, c)), 0.0, 10e-6, tol=1e-9)
    assert abs(best - roofline.COLD_CALL_S) < 0.1e-6
