"""Transformer Engine's UnfusedDotProductAttention beside the score passes (workload.te_unfused)."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict
from trainsim.compute import host
from trainsim.workload import te_unfused
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of


def _cfg(framework: str, version: str | None, seq: int = 4096, gpu_node: str = "dgx-h100",
         recompute: str = "none", heads: int = 32, tp: int = 1) -> object:
    return run_config_from_dict({
        "model": {"preset": "llama2-7b", "num_attention_heads": heads, "num_kv_heads": heads},
        "training": {"global_batch_size": 8, "seq_length": seq, "micro_batch_size": 1,
                     "attention": "unfused", "framework": framework,
                     "framework_version": version},
        "parallel": {"tp": tp, "recompute": recompute},
        "cluster": {"node": gpu_node, "num_gpus": 8}})


def _extra(cfg) -> dict[str, object]:
    return {op.name: op for op in layer_forward(cfg, shard_of(cfg))
            if op.name.split(".")[0] in te_unfused.CORE_ATTENTION_OPS}


def test_get_full_mask_bytes_follow_the_ops_te_runs():
    """81 bytes an element in 11 kernels (int64 where, TE 2.0-2.5); 37 in 10 (bools, TE 2.6+):
    summed op by op from get_full_mask's code, not fitted."""
    int64 = 4 + (4 + 4) + (4 + 4) + (4 + 1) + (1 + 8) + (4 + 1) + (1 + 8) + (16 + 8) + (8 + 1)
    bools = 4 + (4 + 4) + (4 + 4) + (4 + 1) + (4 + 1) + (1 + 1) + (2 + 1) + (1 + 1)
    assert te_unfused.MASK_BUILD_INT64 == (int64, 11)
    assert te_unfused.MASK_BUILD_BOOL == (bools, 10)


def test_te_2_2_builds_the_mask_per_call_not_per_head():
    """NeMo 25.04 (TE 2.2): one [s, s] mask a call, whatever the heads; no backward."""
    few, many = _extra(_cfg("nemo", "25.04", heads=8)), _extra(_cfg("nemo", "25.04", heads=32))
    assert few["te_unfused_mask"].bytes == many["te_unfused_mask"].bytes == 81.0 * 4096 ** 2
    assert few["te_unfused_mask"].kernels == 11
    cfg = _cfg("nemo", "25.04")
    bwd = [op for op in backward_of(layer_forward(cfg, shard_of(cfg)), shard_of(cfg))
           if op.name == "te_unfused_mask.bwd"]
    assert bwd and bwd[0].bytes == 0.0 and host.launches(bwd[0]) == 0


def test_te_2_6_and_later_build_it_from_bools():
    mask = _extra(_cfg("megatron-bridge", "26.02"))["te_unfused_mask"]  # TE 2.12
    assert (mask.bytes, mask.kernels) == (37.0 * 4096 ** 2, 10)


def test_te_1_x_and_unknown_te_build_no_mask():
    """TE 1.x ran causal scores through its mask-free kernel; a profile naming no TE release
    (NeMo 25.02) is priced as that, a lower bound."""
    assert _extra(_cfg("nemo", "24.07")) == {}   # TE 1.8
    assert _extra(_cfg("nemo", "25.02")) == {}   # te_version null


def test_the_mask_read_costs_hbm_only_past_the_l2():
    """Each head re-reads the [s, s] mask after 5 bytes a score went through L2: at 4k keys
    (84 MB) an H100's 52 MB L2 misses and a GB200's 132 MB holds it; at 8k both miss."""
    h100 = _extra(_cfg("nemo", "25.04"))
    assert h100["te_unfused_mask_read"].bytes == 32 * 4096 ** 2
    assert "te_unfused_mask_read" not in _extra(_cfg("nemo", "25.04", gpu_node="gb200-nvl72"))
    assert "te_unfused_mask_read" in _extra(_cfg("nemo", "25.04", seq=8192,
                                                 gpu_node="gb200-nvl72"))


@pytest.mark.parametrize("b,np,sq,sk,causal,te2,runs", [
    (1, 64, 4096, 4096, True, True, True),      # DeepSeek-V3 at TP 2, 4k
    (1, 64, 16384, 16384, True, True, False),   # 16k keys: not 16 < sk < 16384
    (1, 64, 8192, 8192, True, True, True),
    (1, 3, 4096, 4096, True, True, False),      # b * np not a multiple of 4
    (1, 3, 4096, 4096, True, False, True),      # TE 1.x's causal kernel takes it
    (1, 64, 4096, 4100, True, True, False),     # sk % 8
    (1, 64, 2048, 4096, True, True, False),     # causal needs sq == sk on TE 2.x
])
def test_fused_softmax_availability_as_te_checks_it(b, np, sq, sk, causal, te2, runs):
    assert te_unfused.te_fused_softmax_runs(b, np, sq, sk, causal, te2) is runs


def test_16k_keys_take_the_fp32_fallback_and_price_it():
    """At 16,384 keys TE's softmax runs in fp32 as PyTorch ops: 24 more bytes a score forward
    (28 for 4), 34 more backward (40 for 6), 3 and 4 more kernels."""
    cfg = _cfg("nemo", "25.04", seq=16384)
    ops = _extra(cfg)
    fwd = ops["te_softmax_fallback"].bytes + ops["te_softmax_fallback.masked_fill"].bytes
    core = next(op for op in layer_forward(cfg, shard_of(cfg)) if isinstance(op, Attention))
    scores = core.batch * core.heads * core.pairs
    assert fwd == pytest.approx(24.0 * scores)
    assert ops["te_softmax_fallback"].kernels + ops["te_softmax_fallback.masked_fill"].kernels == 3
    bwd = [op for op in backward_of(list(ops.values()), shard_of(cfg))
           if op.name.startswith("te_softmax_fallback")]
    assert sum(op.bytes for op in bwd) == pytest.approx(34.0 * scores)
    assert sum(op.kernels for op in bwd) == 4
    assert "te_softmax_fallback" not in _extra(_cfg("nemo", "25.04", seq=8192))


def test_selective_recompute_of_core_attention_builds_the_mask_again():
    cfg = _cfg("nemo", "25.04", recompute="selective")
    sh = shard_of(cfg)
    names = [op.name for op in layer_recompute(cfg, sh, layer_forward(cfg, sh))]
    assert "recompute.attn_core" in names and "recompute.te_unfused_mask" in names


def test_other_frameworks_and_fused_kernels_get_nothing():
    """Megatron's own unfused core (legacy Megatron-LM), the pytorch profile's eager path and a
    fused kernel on a TE framework build no TE mask."""
    assert _extra(_cfg("megatron-lm", "2023-12")) == {}
    assert _extra(_cfg("pytorch", None)) == {}
    cfg = run_config_from_dict({
        "model": {"preset": "llama2-7b"},
        "training": {"global_batch_size": 8, "seq_length": 4096, "micro_batch_size": 1,
                     "attention": "cudnn", "framework": "nemo", "framework_version": "25.04"},
        "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    assert _extra(cfg) == {}


def test_the_mask_makes_the_layer_slower_by_its_bytes():
    """The layer's priced forward grows by the mask's bytes at HBM speed and its launches, no
    more (a check that the ops are priced, not a fit)."""
    from trainsim.compute.roofline import HBM_EFFICIENCY, LAUNCH_S, RooflineModel

    cfg = _cfg("nemo", "25.04")
    model = RooflineModel(cfg.cluster.gpu)
    mask = _extra(cfg)["te_unfused_mask"]
    bw = cfg.cluster.gpu.hbm_bw_Bps * HBM_EFFICIENCY
    assert model.time(mask) == pytest.approx(mask.bytes / bw + 11 * LAUNCH_S, rel=0.05)


def test_the_fp32_fallback_keeps_its_fp32_softmax_output():
    """torch.nn.Softmax's backward reads its fp32 output: 4 more bytes a kept score where TE
    falls back (16k keys), none where its fused kernel runs or the core is recomputed."""
    from trainsim.memory.scores import score_bytes

    long, short = _cfg("nemo", "25.04", seq=16384), _cfg("nemo", "25.04", seq=8192)
    assert score_bytes(long, 1, 32, 16384, 16384, False) == 6.0 * 32 * 16384 ** 2
    assert score_bytes(short, 1, 32, 8192, 8192, False) == 2.0 * 32 * 8192 ** 2
    assert score_bytes(long, 1, 32, 16384, 16384, True) == 0.0
