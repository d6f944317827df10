"""cuDNN attention as torchtitan runs it: SDPA's CUDNN_ATTENTION backend, first in torchtitan's own
``sdpa_kernel`` list on sm100 from 3b85aa31f (2025-05-14, #1196) and on every GPU from
6a3a9da95 (2025-10-09, #1776); no key of its config names it (profile ``sdpa_backends``): a
torchtitan row stating ``cudnn`` runs it through SDPA."""

from __future__ import annotations

import pytest

from trainsim.catalog import gpu as catalog_gpu
from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import framework_profile
from trainsim.compute import compute_model_for
from trainsim.errors import ConfigError
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Attention
from trainsim.workload.shard import kv_repeated, sdpa_kernels, shard_of


def _cfg(version: str, attention: str = "cudnn", gqa: bool = False, framework="torchtitan"):
    training = {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 8192,
                "framework": framework, "framework_version": version, "attention": attention}
    if gqa:
        training["sdpa_enable_gqa"] = True
    return run_config_from_dict({
        "model": {"preset": "llama3-8b"}, "parallel": {"zero_stage": 3},
        "training": training, "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}})


def test_sdpa_backends_by_date():
    """None before #1196; cuDNN, flash, efficient and math from 2025-05; math dropped 2025-10."""
    assert framework_profile("torchtitan", "2025-03").features.get("sdpa_backends") is None
    assert framework_profile("torchtitan", "2025-06").features["sdpa_backends"] == [
        "cudnn", "flash2", "mem_efficient", "unfused"]
    assert framework_profile("torchtitan", "2025-11").features["sdpa_backends"] == [
        "cudnn", "flash2", "mem_efficient"]
    assert sdpa_kernels("torchtitan", "2026-08") == ("cudnn", "flash2", "mem_efficient")


def test_the_fallback_kernel_rule_is_unchanged():
    """``supports`` (the fallback's kernel rule) answers from ``attention_kernels`` alone: a
    kernel reached only through SDPA is not offered to rows of unknown frameworks (it made the
    blind scores worse: benchmarks/RESULTS.md, 55th session, titan55)."""
    assert framework_profile("torchtitan", "2025-11").supports("cudnn") is False
    assert framework_profile("torchtitan", "2025-11").supports("sdpa") is True
    assert framework_profile("megatron-core", "core_v0.13.0").supports("cudnn") is True


def test_sdpa_cudnn_repeats_kv_as_sdpa_does():
    """torchtitan repeats GQA's K and V before SDPA until ff0829c10 (2026-01): a row stating
    cuDNN runs it through SDPA, so the copies come with it; before 2025-05 SDPA never ran cuDNN
    for torchtitan, so a stated cuDNN is not SDPA's."""
    assert kv_repeated(_cfg("2025-11"))
    assert not kv_repeated(_cfg("2026-02"))  # enable_gqa, no repeats
    assert not kv_repeated(_cfg("2025-03"))
    assert kv_repeated(_cfg("2025-11", attention="sdpa"))  # as before


def test_sdpa_enable_gqa_accepts_the_cudnn_backend():
    """enable_gqa is an SDPA argument: accepted for torchtitan's SDPA cuDNN, still refused for a
    kernel SDPA does not run for it."""
    cfg = _cfg("2025-11", gqa=True)
    assert cfg.training.sdpa_enable_gqa and not kv_repeated(cfg)
    with pytest.raises(ConfigError, match="enable_gqa"):
        _cfg("2025-11", attention="flash3", gqa=True)


def test_priced_by_the_cudnn_attention_model():
    """The attention op is the cuDNN kernel and costs what the cuDNN model says, not flash's."""
    cfg = _cfg("2025-11")
    attn = [op for op in layer_forward(cfg, shard_of(cfg)) if isinstance(op, Attention)]
    assert [op.impl for op in attn] == ["cudnn"]
    model = compute_model_for(cfg.cluster.gpu, None, catalog_gpu)
    flash = _cfg("2025-11", attention="flash2")
    fattn = [op for op in layer_forward(flash, shard_of(flash)) if isinstance(op, Attention)]
    assert model.time(attn[0]) != pytest.approx(model.time(fattn[0]))
