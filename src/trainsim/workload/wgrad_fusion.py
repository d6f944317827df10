"""Whether a run's weight-gradient GEMMs accumulate into the gradient buffer themselves
(Megatron's ``gradient_accumulation_fusion``) or a separate kernel adds each micro-batch's
gradients into it: the framework profile's answer (``unfused_grad_accumulation``) unless the run
states its own (``TrainingConfig.gradient_accumulation_fusion``, a validation row's
``gradient_accumulation_fusion`` column).

Megatron-LM's ``--no-gradient-accumulation-fusion`` (arguments.py, from NVIDIA/Megatron-LM@
83b1e42f, 2022-02-13) makes ``LinearWithGradAccumulationAndAsyncCommunication.backward`` write
a fresh 16-bit ``grad_weight`` (``grad_output.t().matmul(total_input)``) that the local DDP's
gradient hook then adds into the parameter's ``main_grad`` (``param.main_grad.add_(
param.grad.data)``; alibaba/Megatron-LLaMA@d2e05b8, Megatron-LM of 2023-05-11,
megatron/core/tensor_parallel/layers.py L308-L321 and megatron/model/distributed.py
L179-L188). Pure functions of the config; ``workload.grad_accumulation`` and
``workload.shard.wgrad_accumulates`` price the two sides."""

from __future__ import annotations

from trainsim.catalog.frameworks import framework_feature
from trainsim.config import RunConfig
from trainsim.workload.sharding import reduces_every_microbatch, zero2_reduces_every_microbatch


def unfused_grad_accumulation(cfg: RunConfig) -> str | None:
    """The gradient dtypes whose per-micro-batch accumulation runs outside the weight-gradient
    GEMM on this run: ``"none"`` (the GEMM accumulates: fused), ``"16bit"`` (fp16 gradients
    only, the fusion into fp32 ``main_grad`` alone), ``"all"`` (16-bit and fp32 ``main_grad``
    added by a kernel a tensor), ``"optimizer"`` (no fusion, and the optimizer's own gradient
    hook moves each gradient into its bucket: Megatron-LLaMA's overlapped optimizer, which
    turns the fusion off itself, arguments.py L187-L189, and whose copy-in
    ``workload.sharding.bucket_copy_in`` prices), or None (no framework, or a framework whose
    profile does not say: nothing to price here).

    A run that states the fusion off reads ``"all"``; one that states it on reads the
    profile's answer but ``"all"`` (the loader refuses it on a release without the fusion,
    ``catalog.defaults``), which is ``"none"`` or ``"16bit"`` (Megatron-LM before 2022-09-27
    turns the fusion off where gradients are not accumulated in fp32, as its validate_args
    does)."""
    t = cfg.training
    if not t.framework:
        return None
    if reduces_every_microbatch(cfg, False) and not zero2_reduces_every_microbatch(cfg, False):
        return "optimizer"
    if t.gradient_accumulation_fusion is False:
        return "all"
    feature = framework_feature(t.framework, t.framework_version, "unfused_grad_accumulation")
    if t.gradient_accumulation_fusion and feature in (None, "all"):
        return "none"
    return None if feature is None else str(feature)


def stated_unfused(cfg: RunConfig) -> bool:
    """Whether the run states its fused weight-gradient accumulation off
    (``gradient_accumulation_fusion`` false): Megatron-FSDP's post-backward copy applies
    whatever the profile's recipe default (``workload.megatron_fsdp``)."""
    return cfg.training.gradient_accumulation_fusion is False
