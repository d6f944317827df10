"""benchmarks/mla43_dsv3_fa3_bwd.py: DeepSeek's traced FA3 backward tile (64 x 128, two MMA warp
groups, q/k 192 and v 128) against bwd43's hd192 tile, under bwd43's operand-read pacing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from trainsim.compute import fa3_bwd_traits as ft

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
try:
    import mla43_dsv3_fa3_bwd as m
finally:
    sys.path.remove(str(BENCH))


def test_trace_tile_keeps_up_bwd43_tile_does_not():
    bwd43, trace = m.tiles()
    # bwd43's hd192 tile: S and dP 64 x 32 both operands from shared memory, 1.5x
    assert [g["n"] for g in bwd43["gemms"]] == [32, 32, 96, 96, 64]
    assert bwd43["pace_mla"] == pytest.approx(1.1923, abs=1e-4)
    assert bwd43["pace_mla"] == pytest.approx(
        ft.fa3_bwd_smem_over_mma(192, True, 128), abs=1e-4)
    # the trace's tile: S/dP transposed at N 64, dV / dK from registers, dQ 64 x 96
    assert [(g["n"], g["a_in_regs"]) for g in trace["gemms"]] == [
        (64, False), (64, False), (128, True), (192, True), (96, False)]
    assert trace["pace_mla"] == 1.0


def test_trace_tile_matches_the_kernel_name():
    tpl = m.trace_template()
    if tpl is None:
        pytest.skip("deepseek-ai/profile-data mirror not fetched")
    t = m.TRACE_TILE
    assert tpl["tile_mnk"] == [t.block_m, t.block_n, 192]
    assert tpl["tile_mnk_v"] == [t.block_m, t.block_n, 128]
    assert tpl["threads"] == 128 * (t.warpgroups + 1)
    # Is_causal, Varlen, Deterministic, dKV_swapAB, dQ_swapAB, AtomLayoutMSdP / NdKV / MdQ
    assert tpl["args_after_arch"] == ["true", "true", "false", "false", "false", "1", "2", "1"]
    assert (t.dkv_swap, t.dq_swap, t.atom_sdp, t.atom_dkv, t.atom_dq) == (False, False, 1, 2, 1)
