"""benchmarks/b300x57_parts.py (57th session, issue 17 item 2): the B300 rows read part by part,
paired with their B200 rows, and what sets the Nemotron 3 Super B300 rows apart (64 local experts
on an 8-GPU board, each expert's kernels issued eagerly from the host)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

from trainsim.catalog import gpu

SCRIPT = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "b300x57_parts.py")


def test_release_reads_archive_public_and_mlperf_ids():
    """The archive's and the public file's ids of one release share a key; MLPerf's by round."""
    assert SCRIPT.release("bridgearch2604p1-gpt-oss-120b-b300-64-bf16") == "bridge2604p1"
    assert SCRIPT.release("bridge2604p1-gpt-oss-120b-b200-64") == "bridge2604p1"
    assert SCRIPT.release("bridgearch2606-qwen3-30b-a3b-b300-8-mxfp8") == "bridge2606"
    assert SCRIPT.release("mlperf51-dell-llama3.1-8b-b300-8") == "mlperf51"


def test_pairs_hold_a_b300_row_against_a_b200_row_of_one_key():
    """Every pair: a B300 row and a B200 row of the same release, model, GPU count and
    precision; the 26.04.01 gpt-oss-120B BF16 pair (the one equal-layout Megatron-Bridge pair)
    and MLPerf v5.1's 8-GPU Llama 3.1 8B pair are among them."""
    prs = SCRIPT.pairs(SCRIPT.read_rows())
    assert prs
    for fast, slow in prs:
        assert (fast["gpu"], slow["gpu"]) == ("b300-sxm-288gb", "b200-sxm-180gb")
        assert SCRIPT.pair_key(fast) == SCRIPT.pair_key(slow)
    ids = {(f["id"], s["id"]) for f, s in prs}
    assert ("bridgearch2604p1-gpt-oss-120b-b300-64-bf16", "bridge2604p1-gpt-oss-120b-b200-64") in ids
    assert any(f["id"] == "mlperf51-dell-llama3.1-8b-b300-8" for f, _ in prs)
    same = next(s for f, s in prs if f["id"] == "bridgearch2604p1-gpt-oss-120b-b300-64-bf16")
    fast = next(f for f, _ in prs if f["id"] == "bridgearch2604p1-gpt-oss-120b-b300-64-bf16")
    assert all((fast[k] or "1") == (same[k] or "1") for k in SCRIPT.LAYOUT)


def test_super_b300_rows_hold_eight_times_the_local_experts_of_gb300():
    """Nemotron 3 Super's 512 experts: EP 8 on the HGX B300 board (64 a GPU) against EP 64 on
    the NVL72 racks (8 a GPU), as Megatron-Bridge's recipes set them."""
    rows = {r["id"]: r for _, r in SCRIPT.read_rows()}
    b300 = rows["bridgearch2606-nemotron-3-super-120b-a12b-b300-64-mxfp8"]
    gb300 = rows["bridgearch2606-nemotron-3-super-120b-a12b-gb300-64-mxfp8"]
    assert (SCRIPT.local_experts(b300), SCRIPT.local_experts(gb300)) == (64, 8)
    assert SCRIPT.local_experts(rows["bridgearch2604p1-llama3-70b-gb300-64-fp8"]) == 0


def test_b300_has_b200s_dense_peaks_and_sms():
    """NVIDIA's HGX table (B300 and B200 columns: FP8 72 PF, BF16 36 PF with sparsity per 8
    GPUs): the same 16- and 8-bit dense rates and 148 SMs; only FP4 up 1.5x and the exp rate 2x."""
    b3, b2 = gpu("b300-sxm-288gb"), gpu("b200-sxm-180gb")
    for dtype in ("bf16", "fp8"):
        assert b3.flops(dtype) == b2.flops(dtype)
    assert b3.num_sms == b2.num_sms == 148
    assert b3.flops("fp4") == pytest.approx(1.5 * b2.flops("fp4"))
    assert b3.flops_per_exp == b2.flops_per_exp / 2


def test_super_b300_step_is_mostly_host_wait():
    """The +36 % row: more than 40 % of its predicted step is the GPU waiting for the host's
    per-expert launches (``other_s``); on the GB300 rack the same model's row has none."""
    rows = {r["id"]: r for _, r in SCRIPT.read_rows()}
    b300 = SCRIPT._predict(rows["bridgearch2606-nemotron-3-super-120b-a12b-b300-64-mxfp8"])
    gb300 = SCRIPT._predict(rows["bridgearch2606-nemotron-3-super-120b-a12b-gb300-64-mxfp8"])
    assert b300["other"] > 0.4 * b300["predicted"]
    assert gb300["other"] < 0.01 * gb300["predicted"]
