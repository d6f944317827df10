"""benchmarks/dgxc63_moe_gb200.py (dgxc63, 2026-11-29): the dgxc v25.05 MoE rows against their
own expert exchange. The rows it reads, the MoE layer passes it spreads a step's gap over, the
bytes one rank sends in an all-to-all, and the rate arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
DIAG = load_script(ROOT / "benchmarks" / "dgxc63_moe_gb200.py")
L4 = "dgxc2505-llama4-maverick-bf16-gb200-128"


def test_implied_rate_is_bytes_over_priced_plus_gap():
    # four all-to-alls of 83 MB each, priced 0.51 ms together, a 7.21 ms gap: ~43 GB/s
    assert DIAG.implied_rate(83e6, 4, 0.51e-3, 7.21e-3) == pytest.approx(43.0e9, rel=1e-2)
    assert DIAG.implied_rate(1e6, 2, 1e-3, 0.0) == pytest.approx(2e9)


def test_reads_the_moe_rows_of_the_three_files():
    rows = DIAG.read_rows()
    assert len(rows) == 5 + 8 + 8  # DeepSeek-V3, Llama 4 Maverick, Grok-1
    assert all(int(r["ep"]) > 1 for r in rows.values())
    assert sum("deepseek" in i for i in rows) == 5 and sum("grok1" in i for i in rows) == 8


def test_llama4_gb200_exchange_is_a_whole_sequence_per_all_to_all():
    x = DIAG.exchange(DIAG.read_rows()[L4])
    # PP 2 x VP 12: 24 layers a rank, every second one MoE; GBS 1024 over DP 64: 16 micro-batches
    assert x["moe_passes"] == pytest.approx(12 * 16)
    # dispatch and combine, forward and backward
    assert x["exchanges"] == 4
    # top-1 of 128 experts padded to capacity 1.0: 8192 tokens x 5120 x 2 bytes, 63/64 sent off
    assert x["remote_bytes"] == pytest.approx(8192 * 5120 * 2 * 63 / 64, rel=1e-6)
    assert x["ep"] == 64 and x["priced_s"] > 0


def test_trays_only_where_the_tensor_parallel_group_fits_a_tray():
    rows = DIAG.read_rows()
    assert DIAG.trays(rows["dgxc2505-llama4-maverick-bf16-h100-512"]) is None
    wide = {**rows[L4], "tp": "8"}
    assert DIAG.trays(wide) is None


def test_grace_key_groups_by_framework_release_family_and_graphs():
    rows = DIAG.read_rows()
    assert DIAG.grace_key(rows[L4]) == ("nemo", "25.04", "moe", "eager")
    grok = rows["dgxc2505-grok1-314b-bf16-gb200-128"]
    assert DIAG.grace_key(grok) == ("nemo", "25.04", "moe", "graphs")
    dense = {"framework": "megatron-bridge", "framework_version": "26.06.01", "ep": "",
             "options": "dp_overlap;cuda_graphs_partial"}
    assert DIAG.grace_key(dense) == ("megatron-bridge", "26.06", "dense", "eager")
