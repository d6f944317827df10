"""benchmarks/longseq59_parts.py: how much faster attention would have to run for a long-sequence
row to match, the ring step it prices, and the attention kernel rows at long sequences by clock."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.catalog import gpu as catalog_gpu

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = load_script(ROOT / "benchmarks" / "longseq59_parts.py")


def _row(rid: str) -> dict[str, str]:
    with (ROOT / "benchmarks" / "training_nemo_longseq.csv").open(newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == rid)


def test_needed_factor_shrinks_attention_by_the_gap_with_everything_else_held():
    # 12 s predicted of 10 measured, 8 s of it attention: attention must take 6 s, 8 / 6
    assert SCRIPT.needed_factor(10.0, 12.0, 8.0) == pytest.approx(4 / 3)
    # predicted fast: attention would have to run slower
    assert SCRIPT.needed_factor(10.0, 9.0, 8.0) == pytest.approx(8 / 9)
    # a gap as long as the attention itself, or no attention: no factor reaches it
    assert SCRIPT.needed_factor(10.0, 18.0, 8.0) is None
    assert SCRIPT.needed_factor(10.0, 12.0, 0.0) is None


def test_ring_step_is_the_pacing_ranks_half_keys_call_or_the_whole_causal_call():
    # 1M tokens, CP 32, TP 8: 32K local queries against 16K keys, 4 of Llama 2's 32 heads
    op = SCRIPT.ring_step(_row("nemo-longseq-llama2-7b-h100-1024k"), "flash2", True)
    assert (op.q_len, op.kv_len, op.heads, op.kv_heads, op.head_dim, op.causal, op.backward) \
        == (32768, 16384, 4, 4, 128, False, True)
    # no CP: the layer's own causal call over the whole sequence
    op = SCRIPT.ring_step(_row("nemo-longseq-llama2-7b-h100-4k"), "flash2", False)
    assert (op.q_len, op.kv_len, op.heads, op.causal) == (4096, 4096, 32, True)
    # GQA: Llama 3 8B's 8 KV heads over TP 4
    op = SCRIPT.ring_step(_row("nemo-longseq-llama3-8b-b200-1024k"), "cudnn", False)
    assert (op.q_len, op.kv_len, op.heads, op.kv_heads) == (65536, 32768, 8, 2)


def test_a_ring_steps_rate_at_the_burst_clock_is_its_training_rate_over_the_sustained_share():
    row = _row("nemo-longseq-llama2-7b-h100-1024k")
    fwd, bwd, fwd_burst, bwd_burst = SCRIPT.step_rates(row, "flash2")
    s = catalog_gpu("h100-sxm-80gb").sustained_of_burst
    assert fwd_burst * s == pytest.approx(fwd, rel=1e-3)
    assert bwd_burst * s == pytest.approx(bwd, rel=1e-3)
    assert bwd < fwd  # FlashAttention-2's backward runs below its forward's rate


def test_blackwell_cudnn_forward_rows_are_priced_slow_already_at_the_burst_clock():
    """cudnn-frontend's GB200 rows (benchmarks/kernels_blackwell.csv, never fitted) at 16K
    tokens and more: cuDNN's forward priced well over its measured time even at the burst
    clock, and the training clock (``sustained_of_burst``) adds its own factor on top."""
    rows = SCRIPT.long_attention_rows((ROOT / "benchmarks" / "kernels_blackwell.csv",))
    assert rows and all(int(r["seq_len"]) >= SCRIPT.MIN_SEQ for r in rows)
    got = SCRIPT.kernel_ratios(rows)
    fwd = got[("gb200", "cudnn", "fwd")]
    assert fwd["n"] >= 5 and fwd["burst"] > 1.2
    s = catalog_gpu("gb200").sustained_of_burst * catalog_gpu("gb200").power_scale
    assert fwd["training"] == pytest.approx(fwd["burst"] / s, rel=1e-3)
