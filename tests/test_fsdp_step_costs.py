"""Two costs of Megatron-FSDP runs on Transformer Engine fp8 that trainsim left out (issue 17
item 2, the NeMo 25.04/25.07 and Megatron-Bridge FSDP rows):

* ``workload.megatron_fsdp``: with the recipes' gradient_accumulation_fusion False, each unit's
  post-backward hook copies its 16-bit weight gradients into the gradient bucket on the compute
  stream, every micro-batch (Megatron-LM custom_fsdp / megatron_fsdp ``_grad_acc``);
* ``workload.te_weight_cache``: TE casts each 16-bit fp8 weight into its cached workspace once
  an iteration (``is_first_microbatch``), under FSDP every weight of the gathered layers."""

from __future__ import annotations

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import framework_supports, profile_supports
from trainsim.chunks import chunks
from trainsim.pricing import Pricer
from trainsim.sharded_passes import unit_gather_waits
from trainsim.simulator import simulate
from trainsim.workload import megatron_fsdp, te_weight_cache
from trainsim.workload.fp8_gather import fp8_weight_shapes, fp8_weights_gathered
from trainsim.workload.shard import shard_of
from trainsim.workload.sharding import _grad_tensors


def _cfg(framework: str = "nemo", version: str = "25.04", zero: int = 3, dtype: str = "fp8",
         gpu: str = "gb200", gbs: int = 16, fp8_param_gather: bool | None = None):
    training = {"global_batch_size": gbs, "micro_batch_size": 1, "seq_length": 2048,
                "dtype": dtype, "framework": framework, "framework_version": version}
    if dtype == "fp8":
        training["fp8_recipe"] = "current"
    if fp8_param_gather is not None:
        training["fp8_param_gather"] = fp8_param_gather
    return run_config_from_dict({
        "model": {"preset": "llama3-8b", "num_layers": 2},
        "parallel": {"tp": 1, "pp": 1, "zero_stage": zero, "distributed_optimizer": True},
        "training": training,
        "cluster": {"gpu": gpu, "num_gpus": 8, "gpus_per_node": 8},
    })


def test_profiles_select_the_unfused_copy_by_release():
    # NeMo perf scripts from v2.3.0 (25.04); Bridge perf configs from v0.2.0 (25.11), not
    # v0.1.0rc3 (25.09), which turns the fusion on
    assert framework_supports("nemo", "25.04", "megatron_fsdp_unfused_wgrad")
    assert framework_supports("nemo", "25.07", "megatron_fsdp_unfused_wgrad")
    assert framework_supports("megatron-bridge", "26.04", "megatron_fsdp_unfused_wgrad")
    assert not framework_supports("megatron-bridge", "25.09", "megatron_fsdp_unfused_wgrad")
    assert not framework_supports("megatron-core", "0.13", "megatron_fsdp_unfused_wgrad")


def test_grad_copy_reads_the_16bit_gradient_and_writes_the_bucket_every_tensor():
    cfg = _cfg()
    tensors = _grad_tensors(cfg, range(2), True, True)
    (op,) = megatron_fsdp.grad_copies(cfg, range(2), True, True)
    assert op.name == megatron_fsdp.GRAD_COPY
    assert op.bytes == pytest.approx((2 + 2) * sum(tensors))  # bf16 gradients reduced in bf16
    assert op.kernels == len(tensors)
    # not without FSDP, nor where the recipe keeps the fusion
    assert megatron_fsdp.grad_copies(_cfg(zero=1), range(2), True, True) == []
    assert megatron_fsdp.grad_copies(_cfg("megatron-bridge", "25.09"), range(2), True, True) == []


def test_weight_cast_is_the_activation_cast_of_every_fp8_weight_and_skips_fp8_params():
    cfg = _cfg()
    elements = 2 * sum(r * c * n for r, c, n, _ in fp8_weight_shapes(cfg, 0))
    (op,) = te_weight_cache.weight_quantization(cfg, range(2))
    assert op.bytes == pytest.approx(shard_of(cfg).fp8_cast_bytes * elements)
    # current scaling: amax read 2, cast read 2, row-wise write 1; NeMo 25.04's TE (bee4649c)
    # makes no column-wise copy on Blackwell (the profile's fp8_non_tn_layouts, bwfp861) ...
    assert op.bytes == pytest.approx(5 * elements)
    # ... and the column-wise copy 1 more where GEMMs are TN only (Hopper)
    (tn,) = te_weight_cache.weight_quantization(_cfg(gpu="h100-sxm-80gb"), range(2))
    assert tn.bytes == pytest.approx(6 * elements)
    # Bridge 26.04's TE on Blackwell takes fp8 in any layout: no column-wise copy
    (bw,) = te_weight_cache.weight_quantization(
        _cfg("megatron-bridge", "26.04", fp8_param_gather=False), range(2))
    assert bw.bytes == pytest.approx(5 * elements)
    assert te_weight_cache.weight_quantization(_cfg(dtype="bf16"), range(2)) == []
    assert te_weight_cache.weight_quantization(
        _cfg("megatron-bridge", "26.04", fp8_param_gather=True), range(2)) == []


def test_fp8_params_are_transposed_once_an_iteration_where_gemms_are_tn_only():
    """NeMo 25.07 keeps its weights in fp8 under Megatron-FSDP too (v2.4.0's perf scripts no
    longer turn fp8_param_gather off): no cast, but where its TE makes column-wise copies each
    weight's transpose is made again after the step (read 1 byte, write 1), one kernel a
    tensor (Hopper); none where TE takes fp8 in any layout (Blackwell: NeMo 25.04+'s TE,
    Bridge 26.04's)."""
    cfg = _cfg(version="25.07", gpu="h100-sxm-80gb")
    # 25.04 keeps them in fp8 too, except under Megatron-FSDP (its perf scripts turn it off):
    # the rule holds for any config the search makes, whatever its zero stage
    assert fp8_weights_gathered(cfg) and not fp8_weights_gathered(_cfg())
    assert fp8_weights_gathered(_cfg(zero=0)) and _cfg().training.fp8_param_gather
    shapes = fp8_weight_shapes(cfg, 0)
    (op,) = te_weight_cache.weight_quantization(cfg, range(2))
    assert op.name == te_weight_cache.WEIGHT_TRANSPOSE
    assert op.bytes == pytest.approx(2 * 2 * sum(r * c * n for r, c, n, _ in shapes))
    assert op.kernels == 2 * sum(n for *_, n, _ in shapes)
    assert te_weight_cache.weight_quantization(_cfg(version="25.07", dtype="bf16"), range(2)) == []
    assert te_weight_cache.weight_quantization(_cfg(version="25.07"), range(2)) == []  # GB200


def _without(monkeypatch, *lines: str) -> None:
    """The profiles as if their features ``lines`` were removed."""
    def supports(cfg, name):
        return False if name in lines else profile_supports(cfg, name)
    for mod in (megatron_fsdp, te_weight_cache):
        monkeypatch.setattr(mod, "profile_supports", supports)


def test_the_copy_ends_every_backward_pass_on_the_compute_stream(monkeypatch):
    """Hand sum: the backward pass minus the same pass without the line is the priced copy of
    the stage's gradients; the forward does not move."""
    c = _cfg()
    pricer = Pricer(c)
    side = [0.0]
    out = unit_gather_waits(c, pricer, chunks(c, pricer, shard_of(c)), side)
    copy = pricer.price(megatron_fsdp.grad_copies(c, range(2), True, True)).duration_s
    assert copy > 0
    _without(monkeypatch, "megatron_fsdp_unfused_wgrad")
    plain = unit_gather_waits(c, pricer, chunks(c, pricer, shard_of(c)), [0.0])
    assert out[0][0].duration_s == pytest.approx(plain[0][0].duration_s, rel=1e-12)
    assert out[0][1].duration_s - plain[0][1].duration_s == pytest.approx(copy, rel=1e-9)


def test_an_iteration_is_longer_by_one_weight_cast_and_a_copy_per_micro_batch(monkeypatch):
    """Two micro-batches on one stage, nothing else overlapping the compute stream's added
    work: the iteration grows by the cast once and the copy twice (to within the reductions
    the copies push later)."""
    c = _cfg()
    assert c.schedule_microbatches == 2
    pricer = Pricer(c)
    cast = pricer.price(te_weight_cache.weight_quantization(c, range(2))).duration_s
    copy = pricer.price(megatron_fsdp.grad_copies(c, range(2), True, True)).duration_s
    both = simulate(c).iteration_time_s
    _without(monkeypatch, "megatron_fsdp_unfused_wgrad")
    no_copy = simulate(_cfg()).iteration_time_s
    _without(monkeypatch, "megatron_fsdp_unfused_wgrad", "te_weight_cache")
    neither = simulate(_cfg()).iteration_time_s
    assert no_copy - neither == pytest.approx(cast, rel=0.05)
    assert both - no_copy == pytest.approx(2 * copy, rel=0.25)
