"""Grouped GEMMs (an MoE layer's experts) priced by how their implementation runs them."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import moe_layer_cfg, published_kernel_rows

from trainsim.catalog import gpu
from trainsim.catalog.frameworks import framework_profile
from trainsim.compute import RooflineModel, roofline
from trainsim.workload.ops import Gemm

H100 = dataclasses.replace(gpu("h100-sxm-80gb"), sustained_of_burst=1.0)


def _rate(op: Gemm) -> float:
    return op.flops / RooflineModel(H100).time(op)


def _experts(rows: int, impl: str, ragged: bool = False, groups: int = 16) -> Gemm:
    return Gemm("expert_fc1", rows, 1536, 2048, "bf16", groups,
                grouped=impl, ragged=ragged)  # type: ignore[arg-type]


def test_per_expert_gemms_waste_partial_waves_when_experts_get_few_tokens():
    """Transformer Engine tiles each expert's GEMM on its own: 256 rows per expert fill few
    SMs per GEMM, so the rate falls well below that of 4,096 rows per expert."""
    small, large = _rate(_experts(256, "multi_stream")), _rate(_experts(4096, "multi_stream"))
    assert small < 0.85 * large


def test_large_experts_run_per_expert_near_the_batched_rate():
    """With thousands of rows per expert each GEMM fills the GPU: within 5 % of the same GEMMs
    as one batched kernel, never faster."""
    batched = _rate(Gemm("g", 4096, 1536, 2048, "bf16", 16))
    per_expert = _rate(_experts(4096, "multi_stream"))
    assert 0.95 * batched < per_expert <= batched


def test_streams_fill_what_one_expert_leaves_idle():
    """Four streams of per-expert GEMMs run faster than the same GEMMs one after another."""
    assert _rate(_experts(256, "multi_stream")) > 1.2 * _rate(_experts(256, "loop"))


def test_ragged_groups_cost_a_half_tile_each():
    """Dropless routing leaves each expert's last row tile half full on average."""
    for impl in ("multi_stream", "cutlass"):
        assert _rate(_experts(1024, impl, ragged=True)) < _rate(_experts(1024, impl))


def test_one_kernel_grouped_gemms_run_at_their_fitted_fraction():
    """A CUTLASS grouped GEMM with full tiles on Hopper: the dense rate of PyTorch's 128x256
    tiles over every group (``grouped.torch_sm90_tile``) times its fraction."""
    op = _experts(4096, "cutlass")
    dense = Gemm("g", 4096, 1536, 2048, "bf16", 16)
    grid = roofline.tile_grid_efficiency(H100.num_sms, dense, 128, 256,
                                         roofline.GEMM_TILE_OVERHEAD_K, 1.0)
    frac = roofline.GROUPED_OF_GEMM["cutlass"]
    ceiling = H100.gemm_ceiling("bf16")
    assert _rate(op) == pytest.approx(ceiling * grid * frac, rel=0.01)


def test_per_expert_gemms_launch_one_kernel_per_stream_round():
    assert roofline.grouped_launches(_experts(256, "multi_stream")) == 4
    assert roofline.grouped_launches(_experts(256, "loop")) == 16
    assert roofline.grouped_launches(_experts(256, "cutlass")) == 2  # setup kernel + grouped GEMM


def test_megatron_bridge_runs_experts_on_transformer_engine_grouped_linear():
    """The profile names a mechanism (TE GroupedLinear's per-expert cuBLAS GEMMs), not a speed."""
    assert framework_profile("megatron-bridge", "26.04").defaults["grouped_gemm"] == "multi_stream"


@pytest.mark.parametrize("version", ["2025-04", "0.1.0", "0.2.2", "2026-06"])
def test_torchtitan_runs_experts_on_grouped_mm_since_april_2025(version):
    """torchtitan's MoE runs torch._grouped_mm over all local experts from dbb34ccbd
    (2025-04-10, #1084; use_grouped_mm True at v0.1.0, f7084fc78): one launch per projection,
    not a per-expert loop (the sanity sweep found v0.1.0 at 2.3x its newest time, all host)."""
    assert framework_profile("torchtitan", version).defaults["grouped_gemm"] == "cutlass"
    prof = framework_profile("torchtitan", version)
    # below SM90 update_from_config turns use_grouped_mm off (has_cuda_capability(9, 0):
    # experiments/llama4/model/args.py L66-70 at v0.1.0): the per-expert for-loop on A100;
    # ROCm reports gfx9xx as 9.x, so AMD GPUs keep torch._grouped_mm
    assert [prof.grouped_gemm_for(a) for a in ("sm80", "sm89", "sm90", "sm100", "amd")] == \
        ["loop", "loop", "cutlass", "cutlass", "cutlass"]


def test_the_run_gpu_picks_torchtitans_expert_gemms():
    """A torchtitan MoE run on A100 prices the for-loop, on H100 the grouped GEMM."""
    from trainsim.workload.moe_block import grouped_gemm_impl

    cfg = moe_layer_cfg(ep=1, framework="torchtitan", experts=8, topk=2, gpus=1)
    assert grouped_gemm_impl(cfg) == "cutlass"
    a100 = dataclasses.replace(cfg, cluster=dataclasses.replace(cfg.cluster,
                                                                gpu=gpu("a100-sxm-80gb")))
    assert grouped_gemm_impl(a100) == "loop"


def test_moe_block_uses_the_framework_grouped_gemm():
    from trainsim.workload.moe_block import moe_block
    from trainsim.workload.shard import shard_of

    for framework, want in (("megatron-bridge", "multi_stream"), (None, "")):
        cfg = moe_layer_cfg(ep=1, framework=framework, experts=8, topk=2, gpus=1)
        ops: list = []
        moe_block(ops, cfg, shard_of(cfg))
        experts = [op for op in ops if isinstance(op, Gemm) and op.name.startswith("expert")]
        assert experts and all(op.grouped == want and op.ragged for op in experts)


def test_published_grouped_rows_of_the_fitted_families():
    """PyTorch's torch._grouped_mm (pytorch/ao #2490), Liger's Triton fused MoE and DeepGEMM's
    grouped kernels: mean error within 10 %, every row within 35 % (DeepGEMM's 4 groups of 256
    rows, where each group's weights stream beside its tiles, is the worst at +30 %)."""

    from trainsim.validate.kernels import predict_kernel_row

    rows = published_kernel_rows(lambda r: r["kind"] in ("gemm_grouped", "moe_block")
                                 and r["id"].split("-")[0] in ("ao2490", "liger", "deepgemm"))
    assert len(rows) >= 15
    errors = []
    for row in rows:
        res = predict_kernel_row(row)
        assert res.predicted is not None, res.error
        errors.append(abs(res.predicted / res.measured - 1))
        assert errors[-1] < 0.35, row["id"]
    assert sum(errors) / len(errors) < 0.10
