"""The head width a fused attention kernel runs (42nd session, hd42): FlashAttention-2's
instantiated head dims 160 and 224 (PyTorch's copy), the padded matmul width of kernels built
for wider heads (``compute.attention_head_dims``), MLA's query/key width carried by the
attention op, and the H200 s41 rows as a check."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import trainsim
from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import attention
from trainsim.compute.attention_head_dims import kernel_head_dims, padded_mma_share
from trainsim.compute.fa2_traits import Fa2Traits, fa2_traits
from trainsim.validate.kernels import predict_kernel_row
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Attention
from trainsim.workload.shard import shard_of

ROOT = Path(__file__).resolve().parents[1]
HD = ROOT / "benchmarks" / "h200_2026-11-27_s41" / "kernels_h200_s41_hd.csv"
H100, A100, SM86 = 90, 80, 86


def _op(impl: str, head_dim: int, qk: int | None = None, backward: bool = False) -> Attention:
    return Attention("a", batch=1, heads=16, kv_heads=16, q_len=4096, kv_len=4096,
                     head_dim=head_dim, impl=impl, backward=backward,  # type: ignore[arg-type]
                     qk_head_dim=qk)


def test_fa2_160_and_224_are_pytorchs_launch_choices():
    """pytorch flash_fwd_launch_template.h run_mha_fwd_hdim160/224, flash_bwd_launch_template.h
    run_mha_bwd_hdim160/224, as read by hand."""
    assert fa2_traits(160, False, False, arch=H100) == Fa2Traits(128, 32, 4)
    assert fa2_traits(160, True, False, arch=A100) == Fa2Traits(128, 32, 4)
    assert fa2_traits(160, False, False, arch=SM86) == Fa2Traits(128, 64, 8)
    assert fa2_traits(160, True, False, arch=SM86) == Fa2Traits(64, 64, 4)
    assert fa2_traits(160, True, True, arch=H100) == Fa2Traits(64, 64, 8, 4, 4, 4, False)
    assert fa2_traits(224, False, False, arch=H100) == Fa2Traits(128, 64, 8)
    assert fa2_traits(224, False, False, arch=SM86) == Fa2Traits(64, 64, 4)  # 99 KiB < 112
    assert fa2_traits(224, False, True, arch=H100) == Fa2Traits(64, 64, 8, 4, 4, 4, False)
    # 150 and 200 run the 160 and 224 kernels, 130 the 160 one (not 192's)
    assert fa2_traits(150, False, False, arch=H100) == fa2_traits(160, False, False, arch=H100)
    assert fa2_traits(200, False, True, arch=H100) == fa2_traits(224, False, True, arch=H100)
    assert attention.fa2_tile(130, False, False, arch=H100) == (128, 32)


def test_kernel_widths_round_up_to_the_instantiated_head_dims():
    """FA2: 32, 64, 96, 128, 160, 192, 224, 256; FA3 and cuDNN: 64, 96, 128, 192, 256; others
    run the model's width; a width above the largest stays."""
    assert kernel_head_dims(_op("flash2", 80)) == (96, 96)
    assert kernel_head_dims(_op("sdpa", 160)) == (160, 160)
    assert kernel_head_dims(_op("flash3", 80)) == (96, 96)
    assert kernel_head_dims(_op("cudnn", 160)) == (192, 192)
    assert kernel_head_dims(_op("cudnn", 96)) == (96, 96)
    assert kernel_head_dims(_op("flash1", 80)) == (80, 80)
    assert kernel_head_dims(_op("cudnn", 320)) == (320, 320)
    assert padded_mma_share(_op("flash2", 80)) == pytest.approx(1.2)
    assert padded_mma_share(_op("cudnn", 160)) == pytest.approx(1.2)
    assert padded_mma_share(_op("cudnn", 128)) == 1.0


def test_mla_heads_run_their_query_key_width():
    """MLA's 192 / 128 heads: the op's head_dim is their mean (the FLOPs), the kernel is chosen
    by 192 and runs 192 / 128 unpadded on cuDNN and FA3."""
    op = _op("cudnn", 160, qk=192)
    assert kernel_head_dims(op) == (192, 128)
    assert padded_mma_share(op) == 1.0
    assert kernel_head_dims(_op("flash3", 160, qk=192)) == (192, 128)
    # FA2's tile is its 192 kernel's, not its 160 one's
    assert attention.computed_scores(_op("flash2", 160, qk=192), H100) == \
        attention.computed_scores(_op("flash2", 192), H100)


def test_deepseek_v3_attention_op_carries_its_query_key_width():
    """workload.layers passes MLA's query/key head width (128 + 64) with the mean as head_dim."""
    cfg = trainsim.run_config_from_dict({
        "model": {"preset": "deepseek-v3"},
        "parallel": {"tp": 2, "sequence_parallel": True, "ep": 8},
        "training": {"global_batch_size": 64, "seq_length": 4096, "dtype": "bf16"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8}})
    core = next(op for op in layer_forward(cfg, shard_of(cfg), moe=True)
                if isinstance(op, Attention))
    assert (core.head_dim, core.qk_head_dim) == (160, 192)


def test_padding_prices_cudnn_160_as_wide_as_192():
    """Measured on the H200 (cuDNN 9.19): 12 heads of 160 took 1.10-1.22x the time of 10 heads
    of 192 (same FLOPs) forward and backward; priced within 10 % of each measured ratio (at
    the model's own width 1.02-1.05x, up to 23 % short)."""
    with open(HD, newline="") as fh:
        rows = {(r["kind"], r["causal"], r["seq_len"], r["head_dim"]): r
                for r in csv.DictReader(fh) if r["implementation"] == "cudnn"}
    for (kind, causal, s, hd), row in rows.items():
        if hd != "160":
            continue
        wide = rows[(kind, causal, s, "192")]
        times = []
        for r in (row, wide):
            res = predict_kernel_row(r)
            assert res.predicted is not None
            times.append((res.extra["time_s"], res.extra["time_s"] * res.predicted / res.measured))
        priced, measured = times[0][0] / times[1][0], times[0][1] / times[1][1]
        assert priced == pytest.approx(measured, rel=0.10), (kind, causal, s)


def test_padding_raises_the_matmul_work_not_the_bytes(monkeypatch):
    """A kernel padded to a wider head computes 1.2x the matmuls (the exponentials, one a score,
    do not grow) but reads and writes the model's tensors."""
    from trainsim.compute import attention_head_dims

    gpu = catalog_gpu("h100-sxm-80gb")
    for backward in (False, True):
        op = _op("cudnn", 160, backward=backward)
        padded, bytes_padded = attention.fused_attention_work(gpu, op), op.bytes
        with monkeypatch.context() as m:
            m.delitem(attention_head_dims.KERNEL_HEAD_DIMS, "cudnn")
            exact = attention.fused_attention_work(gpu, op)
        assert 1.1 < padded / exact < 1.2
        assert op.bytes == bytes_padded == 2 * 4096 * 16 * 160 * 2 * 2 * (2 if backward else 1)


def test_width_table_of_the_diagnostic():
    """benchmarks/hd42_headdim.py's evidence table: equal FLOPs for 160 / 192, the kernel widths
    cuDNN 1.2x and FA2 1.0x, and cuDNN's measured ratios near the kernel width."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import hd42_headdim

    wid = hd42_headdim.width(hd42_headdim.load_rows())
    for part in ("fwd", "bwd"):
        # the grid ran SDPA's flash backend: its rows say sdpa since the 63rd session (attn63)
        cudnn, fa2 = wid[f"cudnn {part} hd160/hd192"], wid[f"sdpa {part} hd160/hd192"]
        assert cudnn["n"] == fa2["n"] == 12
        assert cudnn["flops"] == pytest.approx(1.0)
        assert (cudnn["kernel_width"], fa2["kernel_width"]) == (pytest.approx(1.2), 1.0)
        assert 1.1 < cudnn["mean"] < 1.25
