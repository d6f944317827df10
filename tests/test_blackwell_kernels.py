"""Blackwell kernels from sources outside the shared kernel file (benchmarks/kernels_blackwell.csv):
GB200's sustained GEMM rate, the notes that mark a fast-accumulating fp8 GEMM, the head-dim-64
attention rows, the cuDNN 9.19/9.22 Llama attention rows, FlashAttention-2's kernels on Blackwell;
and benchmarks/blackwell_gaps.py's selections."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.catalog import gpu
from trainsim.validate import validate_file
from trainsim.validate.kernels import kernel_ops, predict_kernel_row

BLACKWELL = Path(__file__).resolve().parents[1] / "benchmarks" / "kernels_blackwell.csv"


def _rows(prefix: str) -> list[dict[str, str]]:
    with BLACKWELL.open(newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["id"].startswith(prefix)]


def _signed(rows: list[dict[str, str]], compute_db: str | None = "auto") -> list[float]:
    """Signed rate error of each large GEMM (every side >= 6144: whole waves, k long enough
    that the tile overhead is a few per cent)."""
    out = []
    for r in rows:
        if min(int(r["m"]), int(r["n"]), int(r["k"])) < 6144:
            continue
        res = predict_kernel_row(r, compute_db)
        assert res.error is None, res.error
        out.append(res.predicted / res.measured - 1.0)
    return out


def test_every_blackwell_kernel_row_is_priced():
    """The file reads as a kernels file and every row gets a price."""
    _, results = validate_file(BLACKWELL, workers=1)
    assert len(results) == 137
    assert all(r.error is None and r.predicted for r in results)


def test_gb200_sustained_fp8_gemm_matches_azure_and_errs_as_hopper_does():
    """Azure's cuBLASLt fp8 benchmark after 10,000 warm-up iterations (the board at its power
    limit) on GB200. These GB200 rows are calibration, not held out: gb200.yaml's 0.82 is read
    from them (and from B200's MSMF/MAMF). What the test checks beyond that reading is the
    consistency with parts calibrated elsewhere: GB200 errs by the same amount, within 3 points,
    as the H100 and H200 that ran the same benchmark (their rates were not set from it). At
    H200's 0.85 GB200 sat 6 points faster than the Hopper parts. All three priced by the
    analytic model, whose calibration this compares: the H200's measured database (bundled
    since the 36th session) prices its fast-accumulation rows from records at the boost clock
    times the sustained clock, 13 % below Azure's power-limited loop on the 8192^3 GEMM
    (benchmarks/RESULTS.md, h200db)."""
    assert gpu("gb200").sustained_of_burst == 0.82
    gb200 = _signed(_rows("azure-gb200-"), None)
    hopper = _signed(_rows("azure-h100-"), None) + _signed(_rows("azure-h200-"), None)
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


@pytest.mark.parametrize("note, fast", [
    ("use_fast_accum=False", False), ("FAST_ACCUM off", False), ("without fast-accum", False),
    ("no fp8 fast accum", False), ("fast_accum: 0", False), ("non-fast-accum kernel", False),
    ("CUBLASLT_MATMUL_DESC_FAST_ACCUM = 0", False), ("fast accum disabled", False),
    ("FAST_ACCUM on for fp8", True), ("use_fast_accum=True", True), ("fast-accum", True),
    ("no bias; fast accum", True), ("CUBLASLT_MATMUL_DESC_FAST_ACCUM=1", True),
    # review 20c finding 7: a negation anywhere in the clause; a number not 0/1 is no switch
    ("fast accum not used", False), ("without the fp8 fast accum", False),
    ("FAST_ACCUM: off for fp8", False), ("fast accum 0.5 speedup", True),
    ("fast_accum=1 (not split)", True),
    ("superbench cublaslt_gemm (gitaumark fork, FAST_ACCUM on for fp8), random inputs; "
     + "calibration, not held out", True)])
def test_a_note_negating_fast_accum_is_the_split_accumulator(note, fast):
    """Only an affirmative mention marks fast accumulation: "use_fast_accum=False" matched."""
    row = {**_rows("azure-h100-fp8-m8192")[0], "note": note}
    (op,), _ = kernel_ops(row)
    assert op.fp8_fast_accum is fast


# the source files' time_ms column for the gpt-oss full-attention rows (cudnn-frontend
# benchmark/attention_inference/results/gpt_oss/{b200,gb200}/, see the rows' source column)
GPTOSS_FULL_MS = {
    "cudnnfe-b200-gptoss-full-hd64-s2048-fwd": 0.054336,
    "cudnnfe-b200-gptoss-full-hd64-s8192-fwd": 0.594397,
    "cudnnfe-b200-gptoss-full-hd64-s32768-fwd": 8.794086,
    "cudnnfe-gb200-gptoss-full-hd64-s2048-fwd": 0.051459,
    "cudnnfe-gb200-gptoss-full-hd64-s8192-fwd": 0.552673,
    "cudnnfe-gb200-gptoss-full-hd64-s32768-fwd": 8.099202,
}


def test_gptoss_attention_rows_are_gqa_head_dim_64_at_the_sources_flop_count():
    """Each gpt-oss row reads as one causal forward of 64 query heads over 8 KV heads at head
    dim 64, and its FLOPs at the row's TFLOP/s take the time the source measured (within
    0.1 %: the source counts 4*s^2/2*h*d, trainsim the s(s+1)/2 pairs a causal row sees)."""
    rows = _rows("cudnnfe-")
    rows = [r for r in rows if "gptoss" in r["id"]]
    assert sorted(r["id"] for r in rows) == sorted(GPTOSS_FULL_MS)
    for r in rows:
        (op,), flops = kernel_ops(r)
        assert (op.heads, op.kv_heads, op.head_dim, op.causal, op.backward) == (64, 8, 64, True,
                                                                               False)
        assert op.q_len == op.kv_len == int(r["seq_len"]) and op.window is None
        ms = flops / (float(r["measured_value"]) * 1e12) * 1e3
        assert abs(ms / GPTOSS_FULL_MS[r["id"]] - 1) < 1e-3, (r["id"], ms)


def test_cudnn_919_and_922_rows_are_llama_gqa_at_the_sources_time():
    """The cuDNN 9.19.1 rows (one profiler-timed harness on H200, GB200 and GB300) and the 9.22
    GB200/GB300 rows: 64 query heads over 8 KV heads at head dim 128, causal, bf16, forward and
    backward at 2k-32k tokens; FLOPs at the row's TFLOP/s give the time its note quotes from the
    source (within 0.1 % plus the source's rounding of the time to 0.001 ms: it rounds its TFLOP/s
    to whole numbers and counts 4*s^2/2*h*d per pass, trainsim the s(s+1)/2 pairs a causal row
    sees)."""
    rows = [r for r in _rows("cudnnfe9")]
    assert len(rows) == 50
    seen = set()
    for r in rows:
        (op,), flops = kernel_ops(r)
        assert (op.heads, op.kv_heads, op.head_dim, op.causal) == (64, 8, 128, True)
        assert op.backward == r["id"].endswith("-bwd") and op.q_len == op.kv_len
        ms = float(r["note"].split("; time ")[1].split(" ms")[0])
        rate_ms = flops / (float(r["measured_value"]) * 1e12) * 1e3
        assert abs(rate_ms / ms - 1) < 1e-3 + 5e-4 / ms, r["id"]
        seen.add((r["id"][:10], r["gpu"], op.q_len, op.backward))
    for gpu_name in ("h200-sxm-141gb", "gb200", "gb300"):
        for s in (2048, 4096, 8192, 16384, 32768):
            assert ("cudnnfe919", gpu_name, s, False) in seen
            assert ("cudnnfe919", gpu_name, s, True) in seen


def test_blackwell_gaps_pairs_rows_of_equal_work_and_finds_the_capped_cp_rows():
    """benchmarks/blackwell_gaps.py keys a pair on the cells that set a step's work: the NeMo
    25.02 and Bridge 25.11 Llama 3 8B B200 rows pair, the MLPerf 5.1 GB200/GB300 8B rows pair
    at 72 and at 512 GPUs, the 72- and 512-GPU rows do not; its CTA what-if takes the MLPerf
    5.x rows with CP > 1 (24: 405B on H100, H200, GB200, B200 and 8B on B200, GB200, GB300)."""
    gaps = load_script(BLACKWELL.parent / "blackwell_gaps.py")
    sel = gaps.rows()
    assert sel and all(r["gpu"] in gaps.BLACKWELL for _, r in sel)
    key = {r["id"]: tuple(gaps._cell(r, k) for k in gaps.WORK) for _, r in sel}
    assert key["nemo2502-llama3-8b-b200-8"] == key["bridge2511-llama3-8b-b200-8"]
    assert key["mlperf51-nvidia-llama3.1-8b-gb200-72"] == key["mlperf51-nvidia-llama3.1-8b-gb300-72"]
    assert key["mlperf51-nvidia-llama3.1-8b-gb200-512"] == key["mlperf51-nvidia-llama3.1-8b-gb300-512"]
    assert key["mlperf51-nvidia-llama3.1-8b-gb200-72"] != key["mlperf51-nvidia-llama3.1-8b-gb200-512"]
    capped = [r for _, r in gaps.cta_rows()]
    assert len(capped) == 24 and all(r["cp"] not in ("", "1") for r in capped)
    assert {r["gpu"] for r in capped} == {"h100-sxm-80gb", "h200-sxm-141gb", "gb200", "gb300",
                                          "b200-sxm-180gb"}


def test_flash_attention_2_on_blackwell_gets_half_its_hopper_share():
    """NVIDIA/cudnn-frontend's B200 and GB200 runs of torch SDPA's flash backend and flash-attn
    2.7.4 (Llama 405B heads, causal, 4k-128k tokens, forward and backward; never fitted): an
    Ampere-style kernel issues mma.sync at Ampere's rate per SM and clock, so on Blackwell it
    gets half of its Hopper share (compute.attention.ampere_kernel_share). Priced at the Hopper
    share these rows ran 55-115 % too fast."""
    rows = [r for r in _rows("cudnnfe-") if r["id"].endswith(("-fa2", "-sdpaflash"))]
    assert len(rows) == 36
    for gpu_name in ("b200-sxm-180gb", "gb200"):
        errors = []
        for r in rows:
            if r["gpu"] == gpu_name:
                res = predict_kernel_row(r)
                assert res.error is None, res.error
                errors.append(res.predicted / res.measured - 1.0)
        assert max(abs(e) for e in errors) < 0.20, gpu_name
        assert statistics.mean(abs(e) for e in errors) < 0.08, gpu_name
