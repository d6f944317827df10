"""FlashAttention-2's kernel traits and exposed shared-memory loads (41st session, attn41):
``compute.fa2_traits``, ``attention.fa2_smem_s`` and the H200 s41 attention rows as a check."""

from __future__ import annotations

import csv
import dataclasses
import statistics
from pathlib import Path

import pytest

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import attention
from trainsim.compute.fa2_traits import Fa2Traits, fa2_smem_bytes_per_flop, fa2_traits
from trainsim.validate.kernels import predict_kernel_row
from trainsim.workload.ops import Attention

ROOT = Path(__file__).resolve().parents[1]
S41 = ROOT / "benchmarks" / "h200_2026-11-27_s41" / "kernels_h200_s41.csv"
H100, A100, L40S = 90, 80, 89


def test_traits_are_the_launch_templates_choices():
    """flash_fwd_launch_template.h / flash_bwd_launch_template.h @0251105a, as read by hand."""
    assert fa2_traits(256, False, False, arch=H100) == Fa2Traits(64, 64, 4)
    assert fa2_traits(256, False, False, arch=A100) == Fa2Traits(128, 64, 8)
    assert fa2_traits(192, False, False, arch=H100) == Fa2Traits(128, 64, 8)
    assert fa2_traits(128, True, False, arch=H100) == Fa2Traits(128, 64, 4)
    assert fa2_traits(128, False, True, arch=H100) == Fa2Traits(64, 128, 8, 2, 4, 2, False)
    assert fa2_traits(128, False, True, arch=L40S) == Fa2Traits(64, 64, 8, 4, 2, 2, True)
    assert fa2_traits(256, False, True, arch=H100) == Fa2Traits(64, 64, 8, 4, 2, 2, False)
    assert fa2_traits(256, False, True, arch=L40S) == Fa2Traits(64, 32, 8, 4, 1, 2, True)
    assert fa2_traits(64, False, True, arch=H100) == Fa2Traits(128, 128, 8, 4, 4, 4, False)
    assert fa2_traits(32, False, True, dropout=True, arch=H100).v_in_regs is False
    assert fa2_traits(32, False, True, arch=H100).v_in_regs is True
    # the tile fa2_tile reports is the traits' tile, for every head dim, mask, direction, GPU
    for hd in (32, 64, 80, 96, 128, 160, 192, 256):
        for arch in (None, 80, 86, 89, 90, 100, 120):
            for causal in (False, True):
                for bwd in (False, True):
                    for drop in (False, True):
                        t = fa2_traits(hd, causal, bwd, drop, arch)
                        assert attention.fa2_tile(hd, causal, bwd, drop, arch) == t[:2]
                        assert t.block_m * t.block_n > 0


def test_smem_bytes_per_flop_by_hand():
    """Forward, 4 warps of 32 rows at hd64 (128 x 128) and hd128 (128 x 64): S reads Q (1/N)
    and K (1/rows), P V reads V (1/rows): 1/32 + 1/(2 * 128) = 0.03516 and 1/32 + 1/128 =
    0.03906; hd256's 64 x 64 tile of 4 warps, 16 rows a warp: 1/16 + 1/128 = 0.0703.
    Backward hd128 (64 x 128, 8 warps, atoms 2/4/2): S and dP 1/32 + 1/32, dK and dV
    1/64 + 1/32, dQ 1/32 + 1/32: 0.05625; hd256 (64 x 64, 4/2/2): S, dP 1/32 + 1/16, dK, dV,
    dQ 1/64 + 1/32: 0.06563."""
    def per(hd, bwd):
        return fa2_smem_bytes_per_flop(fa2_traits(hd, False, bwd, arch=H100), hd, bwd)

    assert per(64, False) == pytest.approx(1 / 32 + 1 / 256)
    assert per(128, False) == pytest.approx(1 / 32 + 1 / 128)
    assert per(256, False) == pytest.approx(1 / 16 + 1 / 128)
    assert per(128, True) == pytest.approx((3 * (1 / 32 + 1 / 32) + 2 * (1 / 64 + 1 / 32)) / 5)
    assert per(256, True) == pytest.approx((2 * (1 / 32 + 1 / 16) + 3 * (1 / 64 + 1 / 32)) / 5)
    # V in registers: dP reads dO only
    t = fa2_traits(128, False, True, arch=L40S)
    assert fa2_smem_bytes_per_flop(t, 128, True) < fa2_smem_bytes_per_flop(
        t._replace(v_in_regs=False), 128, True)


def _op(hd: int, backward: bool = False, impl: str = "flash2", s: int = 16384) -> Attention:
    return Attention(name="attn", batch=16384 // s, q_len=s, kv_len=s, heads=2048 // hd,
                     kv_heads=2048 // hd, head_dim=hd, causal=False, backward=backward,
                     impl=impl)  # type: ignore[arg-type]


def test_smem_over_mma_by_hand():
    """An SM loads 128 B of shared memory and issues 2,048 mma.sync FLOPs a clock: 16 B a FLOP
    of loads take as long as the matmuls. Hopper: forward hd256 0.0703 * 16 = 1.125 (both its
    matmuls at or over 1); backward hd256 their mean 0.0656 * 16 = 1.05, or with each matmul
    paced on its own (43rd session, bwd43, the candidate ``FA2_SMEM_PER_MATMUL``): S and dP
    0.094 * 16 = 1.5, dV, dK, dQ 0.047 * 16 = 0.75 -> 1, (2 * 1.5 + 3) / 5 = 1.2; hd128
    forward and backward stay under the matmuls, matmul by matmul too."""
    assert attention.fa2_smem_over_mma(_op(256), 90) == pytest.approx(1.125)
    assert attention.fa2_smem_over_mma(_op(256, True), 90) == pytest.approx(1.05)
    saved = attention.FA2_SMEM_PER_MATMUL
    try:
        attention.FA2_SMEM_PER_MATMUL = True
        assert attention.fa2_smem_over_mma(_op(256, True), 90) == pytest.approx(1.2)
        assert attention.fa2_smem_over_mma(_op(128, True), 90) == 1.0
    finally:
        attention.FA2_SMEM_PER_MATMUL = saved
    assert attention.fa2_smem_over_mma(_op(128), 90) == 1.0
    assert attention.fa2_smem_over_mma(_op(128, True), 90) == 1.0
    assert attention.fa2_smem_over_mma(_op(64, True), 90) == 1.0
    assert attention.fa2_smem_over_mma(_op(256), 80) == pytest.approx(1.125)  # 128 x 64, 8 warps
    assert attention.fa2_smem_over_mma(_op(192), 90) == pytest.approx(1.125)


def _rate(gpu, op: Attention) -> float:
    return op.flops / attention.fused_attention_work(gpu, op)


def test_fa2_head_dim_256_forward_no_faster_than_128():
    """H200, 16k tokens, hidden 2048, non-causal: FA2's forward measured 315 TFLOP/s at head dim
    256 against 343 at 128 (kernels_h200_s41.csv: 0.92); without the shared-memory pace the
    model priced 256 1.1x faster than 128 (half the exponentials a FLOP), with it at par."""
    gpu = dataclasses.replace(catalog_gpu("h200-sxm-141gb"), sustained_of_burst=1.0)
    ratio = _rate(gpu, _op(256)) / _rate(gpu, _op(128))
    assert 0.95 < ratio < 1.03
    saved = attention.FA2_SMEM_BOUND
    try:
        attention.FA2_SMEM_BOUND = False
        assert _rate(gpu, _op(256)) / _rate(gpu, _op(128)) == pytest.approx(ratio * 1.125, rel=0.03)
    finally:
        attention.FA2_SMEM_BOUND = saved


def test_smem_pace_only_for_fa2_kernels_on_nvidia():
    gpu = catalog_gpu("h200-sxm-141gb")
    mi300 = catalog_gpu("mi300x")
    cases = [(gpu, impl) for impl in ("cudnn", "flash3", "mem_efficient", "flex")] + [(mi300, "ck")]
    saved = attention.FA2_SMEM_BOUND
    try:
        for g, impl in cases:
            op = _op(256, impl=impl)
            attention.FA2_SMEM_BOUND = True
            with_bound = attention.fused_attention_work(g, op)
            attention.FA2_SMEM_BOUND = False
            assert attention.fused_attention_work(g, op) == with_bound, impl
        attention.FA2_SMEM_BOUND = False
        before = attention.fused_attention_work(gpu, _op(256, impl="sdpa"))
        attention.FA2_SMEM_BOUND = True
        assert attention.fused_attention_work(gpu, _op(256, impl="sdpa")) > 1.05 * before
    finally:
        attention.FA2_SMEM_BOUND = saved


def _s41_errors(keep) -> dict[tuple[str, str, str], list[float]]:
    """Signed rate errors of the s41 attention rows ``keep`` selects, priced by ``trainsim
    validate`` with the harness's ``qkv.unbind`` named in the note (device_checks41.py
    ``attn_grid`` unbinds Q, K, V from one packed tensor: ``validate.kernels.unbind_stack``)."""
    with open(S41, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["kind"].startswith("attention") and keep(r)]
    errors: dict[tuple[str, str, str], list[float]] = {}
    for r in rows:
        res = predict_kernel_row({**r, "note": r["note"] + "; q, k, v from qkv.unbind(2)"})
        assert not res.error, res.error
        key = (r["implementation"], r["kind"], r["head_dim"])
        errors.setdefault(key, []).append(res.predicted / res.measured - 1)
    return errors


def test_h200_s41_fa2_rows_check():
    """FA2 at head dim 128 and 256 in the 41st session's H200 grid: within 10 % / 16 % MAPE per
    direction (head dim 256 forward 33 -> 14 % with the shared-memory pace), priced no longer
    fast by a quarter at 256."""
    # the grid ran SDPA's flash backend: its rows say sdpa since the 63rd session (attn63)
    errors = _s41_errors(lambda r: r["implementation"] == "sdpa" and r["head_dim"] != "64")
    assert len(errors) == 4
    for (impl, kind, hd), e in errors.items():
        mape = statistics.mean(abs(x) for x in e)
        assert mape < (0.10 if hd == "128" else 0.16), (impl, kind, hd, mape)
        assert statistics.mean(e) < 0.16


def test_unbind_stack_only_where_the_note_says_so():
    row = {"id": "x", "gpu": "h200-sxm-141gb", "kind": "attention_bwd", "implementation": "flash2",
           "dtype": "bf16", "batch": "4", "seq_len": "4096", "heads": "16", "kv_heads": "16",
           "head_dim": "128", "causal": "1", "measured_value": "300", "measured_unit": "TFLOP/s",
           "note": "SDPA"}
    plain = predict_kernel_row(row).extra["time_s"]
    stacked = predict_kernel_row({**row, "note": "SDPA on qkv.unbind(2) views"}).extra["time_s"]
    gpu = catalog_gpu("h200-sxm-141gb")
    copy = 2 * 2 * 3 * 4 * 4096 * 16 * 128 / gpu.hbm_bw_Bps  # 100 MB read + written
    assert copy <= stacked - plain < 1.5 * copy + 20e-6
    fwd = predict_kernel_row({**row, "kind": "attention_fwd", "note": "qkv.unbind"})
    assert fwd.extra["time_s"] == predict_kernel_row({**row, "kind": "attention_fwd"}).extra["time_s"]


@pytest.mark.slow
def test_h200_s41_attention_grid_check():
    """The whole s41 attention grid (FA2 and cuDNN, head dim 64 / 128 / 256) by ``trainsim
    validate``: head dims 64 / 128 within 13 % per kernel and direction; cuDNN's head dim 256
    backward (no published tile) the known miss, priced a third fast."""
    errors = _s41_errors(lambda r: True)
    assert len(errors) == 12
    for (impl, kind, hd), e in errors.items():
        mape = statistics.mean(abs(x) for x in e)
        if hd != "256":
            assert mape < 0.13, (impl, kind, hd, mape)
    assert statistics.mean(errors[("cudnn", "attention_bwd", "256")]) > 0.25
