"""benchmarks/attention_gaps.py: SDPA's flash backward at short sequences, FlashAttention-2 at
head dim 256 and attention dropout's cost, each against its kernel's source and the measured
files (issue 17 item 1, 38th session)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gaps():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("attention_gaps",
                                                  ROOT / "benchmarks" / "attention_gaps.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("attention_gaps", None)


def test_fa2_forward_shared_memory_bytes_per_mma_by_hand(gaps):
    """Hand counts from the launch template's traits: head dim 128 on H100 runs 128 x 64 tiles
    on 4 warps (32 query rows a warp): per key block a warp reads its Q rows and the K and V
    tiles, 2 x 128 x (32 + 2 x 64) = 40,960 B, for 32 x 64 x 128 / 1024 = 256 MMAs: 160 B.
    Head dim 256 runs 64 x 64 on 4 warps on H100 and 128 x 64 on 8 on A100, 16 rows a warp
    either way: 2 x 256 x (16 + 128) / (16 x 64 x 256 / 1024) = 288 B, past the 256 B that
    mma.sync's 4,096 FLOPs leave at 128 B a clock and 2,048 FLOPs a clock."""
    assert gaps.fa2_fwd_warps(128, 90) == 4 and gaps.fa2_fwd_warps(256, 90) == 4
    assert gaps.fa2_fwd_warps(256, 80) == 8 and gaps.fa2_fwd_warps(192, 90) == 8
    assert gaps.fa2_fwd_smem_bytes_per_mma(128, 90) == pytest.approx(160.0)
    assert gaps.fa2_fwd_smem_bytes_per_mma(64, 90) == pytest.approx(144.0)
    for arch in (80, 90):
        assert gaps.fa2_fwd_smem_bytes_per_mma(256, arch) == pytest.approx(288.0)
    budget = 4096 / gaps.MMA_SYNC_FLOPS_PER_SM_CLOCK * gaps.SMEM_BYTES_PER_SM_CLOCK
    assert gaps.fa2_fwd_smem_bytes_per_mma(128, 90) < budget < \
        gaps.fa2_fwd_smem_bytes_per_mma(256, 90)


def test_dropout_slowing_every_matmul_matches_the_measured_constant_ratio(gaps):
    """PR #2597 measured FA4's dropout at 60-70 % of the no-dropout backward rate, "roughly
    constant across seqlen": as shipped the priced ratio is flat (within 0.01) and inside that
    band; the 36th session's fix (dropout slows only the tiles' scores) puts the short-sequence
    backward at 0.80-0.86, outside it, so the fix is not taken."""
    table = gaps.dropout_table()
    for direction in ("fwd", "bwd"):
        for hd in (64, 128):
            shipped = [r[3] for r in table if r[0] == direction and r[1] == hd]
            assert max(shipped) - min(shipped) < 0.01
    bwd = {(hd, s): (shipped, fixed) for d, hd, s, shipped, fixed in table if d == "bwd"}
    for hd in (64, 128):
        assert all(0.60 <= shipped <= 0.71 for (h, _), (shipped, _) in bwd.items() if h == hd)
        assert bwd[(hd, 1024)][1] > 0.75  # the fix, at 1k tokens
        assert bwd[(hd, 32768)][1] == pytest.approx(bwd[(hd, 32768)][0], abs=0.01)


@pytest.mark.slow
def test_sdpa_flash_backward_carries_a_fixed_cost_cudnn_does_not(gaps):
    """Causal backward rows up to 8k tokens, same harness: SDPA's flash backward runs 100-150 us
    a call beyond its price on both GPUs (the fixed part of a least-squares split), cuDNN's
    far less; the part that grows with the query elements is at most the side kernels' HBM
    time and shrinks with the H200's faster HBM."""
    fits = {}
    for label, path in (("h100", gaps.H100_FILE), ("h200", gaps.H200_FILE)):
        for impl in ("flash2", "cudnn"):
            table, fixed, per_m, side_m = gaps.backward_gaps(path, impl)
            assert len(table) == 6 and all(n == 5 for _, n, *_ in table)
            fits[(label, impl)] = fixed, per_m, side_m
    for label in ("h100", "h200"):
        fixed, per_m, side_m = fits[(label, "flash2")]
        assert 100 < fixed < 150
        assert 0.5 * side_m < per_m <= side_m
        assert fits[(label, "cudnn")][0] < fixed - 50
    assert fits[("h200", "flash2")][1] < fits[("h100", "flash2")][1]


@pytest.mark.slow
def test_fa2_head_dim_256_is_slower_than_128_but_no_bound_form_prices_it(gaps):
    """Measured, FA2's forward at head dim 256 runs 0.91 (FA3 paper, H100) and 0.95 (H200 device
    checks) of its rate at 128; priced as shipped 1.12 (half the exponentials per FLOP); the
    shared-memory bound as a max does not bind (1.12) and as a sum overshoots (0.77)."""
    for name, pairs, r in gaps.hd256_table():
        assert pairs == 12, name
        assert r["add"] < r["measured"] < 1.0 < r["shipped"]
        assert r["max"] == pytest.approx(r["shipped"], rel=0.01)


@pytest.mark.slow
def test_fit_kernels_by_impl_partitions_the_attention_rows(gaps):
    """``fit_kernels.py --by-impl``: every fused attention row lands in exactly one (kind,
    implementation, GPU, part) cell, the never-fitted H200 file only in 'held-out GPU' cells,
    and a cell's MAPE bounds its mean signed error."""
    import fit_kernels
    from kernel_rows import load, split

    rows = load([fit_kernels.BUNDLED_DIR / f for f in fit_kernels.FILES])
    held = split(rows)
    rows = fit_kernels.with_gpu_files(rows, held)
    cells = fit_kernels.by_impl(rows, held)
    attn = [r for r in rows if r.kind.startswith("attention") and fit_kernels.attention_impl(r)]
    assert sum(n for *_, n, _, _ in cells) == len(attn)
    assert len({c[:4] for c in cells}) == len(cells)
    h200 = {(kind, impl, part) for kind, impl, gpu, part, *_ in cells if gpu.startswith("h200")}
    assert {part for *_, part in h200} == {"held-out GPU"}
    assert {("attention_bwd", "flash2"), ("attention_fwd", "cudnn")} <= {k[:2] for k in h200}
    assert all(abs(mean) <= mape + 1e-12 for *_, mape, mean in cells)
