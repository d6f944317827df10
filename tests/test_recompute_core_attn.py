"""Selective recompute of ``core_attn`` with a fused attention kernel: Megatron-core checkpoints
the attention whatever its backend (core_v0.8.0 .. core_v0.15.0 megatron/core/transformer/
attention.py ``_checkpointed_attention_forward``), so the kernel's forward runs again before its
backward; legacy Megatron-LM skips the checkpoint under flash (megatron/model/transformer.py
``if not self.use_flash_attn``). The time path and the HFU count must agree."""

from __future__ import annotations

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.model.counts import (
    _attention_work,
    hardware_flops_per_iteration,
    model_flops_per_token,
)
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Attention
from trainsim.workload.recompute import core_attn_rerun, layer_recompute
from trainsim.workload.shard import shard_of


def _cfg(framework: str | None, version: str | None, attention: str | None = None,
         modules: list[str] | None = None):
    training = {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 4096}
    if framework:
        training |= {"framework": framework, "framework_version": version}
    if attention:
        training["attention"] = attention
    return run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tp": 2, "sequence_parallel": True, "recompute": "selective"}
        | ({"recompute_modules": modules} if modules else {}),
        "training": training,
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}})


def _attention_reruns(cfg):
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    redo = layer_recompute(cfg, sh, fwd)
    return [op for op in fwd if isinstance(op, Attention)], redo


def _extra_flops(cfg) -> float:
    """Hardware FLOPs beyond the model's: the recompute's share of the HFU numerator."""
    model = model_flops_per_token(cfg.model, cfg.training.seq_length) * cfg.tokens_per_iteration
    return hardware_flops_per_iteration(cfg, core_attn_rerun(cfg, fused=True)) - model


@pytest.mark.parametrize("framework, version, attention", [
    ("megatron-core", "0.8", "cudnn"), ("megatron-core", "0.15", "flash2"),
    ("megatron-bridge", "25.09", "cudnn"), ("nemo", "24.07", "flash2"),
    ("megatron-lm", "2024-06", "cudnn")])  # Megatron-core models by default from 53f901c662
def test_megatron_core_reruns_the_fused_attention_forward_once(framework, version, attention):
    cfg = _cfg(framework, version, attention)
    attn, redo = _attention_reruns(cfg)
    assert len(attn) == 1 and attn[0].impl == attention
    # exactly one more attention forward, the same kernel on the same shapes, nothing else
    assert redo == [attn[0].__class__(**{**attn[0].__dict__, "name": "recompute." + attn[0].name})]
    s = cfg.training.seq_length
    assert _extra_flops(cfg) == pytest.approx(
        2.0 * _attention_work(cfg.model, s) * cfg.tokens_per_iteration)


@pytest.mark.parametrize("framework, version, attention", [
    ("megatron-lm", "2023-07", "flash2"), (None, None, "flash2"), (None, None, "cudnn")])
def test_legacy_flash_and_profileless_runs_rerun_no_attention(framework, version, attention):
    cfg = _cfg(framework, version, attention)
    _, redo = _attention_reruns(cfg)
    assert redo == []
    assert _extra_flops(cfg) == pytest.approx(0.0, abs=1.0)


def test_unfused_attention_is_rerun_everywhere():
    cfg = _cfg("megatron-lm", "2022-05", "unfused")
    attn, redo = _attention_reruns(cfg)
    assert [op.name for op in redo if isinstance(op, Attention)] == ["recompute." + attn[0].name]
    assert _extra_flops(cfg) > 0


def test_core_attn_left_out_of_the_modules_reruns_no_attention():
    cfg = _cfg("megatron-core", "0.15", "cudnn", modules=["mlp"])
    _, redo = _attention_reruns(cfg)
    assert redo and not any(isinstance(op, Attention) for op in redo)
    # only the MLP's forward matmuls again (3 h f per token and layer, SwiGLU)
    m = cfg.model
    mlp = 2.0 * 3 * m.hidden_size * m.ffn_size * m.num_layers * cfg.tokens_per_iteration
    assert _extra_flops(cfg) == pytest.approx(mlp)
