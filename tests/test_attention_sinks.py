"""A model whose softmax has a sink (``ModelConfig.softmax_type``, gpt-oss's learned logit per
head) runs on a kernel that can add it (``config.training.SINK_ATTENTION``): Transformer
Engine's FlashAttention cannot (v2.8-v2.16 dot_product_attention/utils.py, "Filter: Softmax
type"), its cuDNN FusedAttention can (fused_attn.cpp, cuDNN >= 9.13.1), FlexAttention can
(NeMo Automodel flex_attention.py: the sink rescales the output by the log-sum-exp)."""

from __future__ import annotations

import json

import pytest

from trainsim.catalog import model, model_from_hf_config, run_config_from_dict
from trainsim.errors import ConfigError


def _cfg(name: str = "gpt-oss-20b", gpu: str = "h100-sxm-80gb", **training):
    return run_config_from_dict({
        "model": name, "parallel": {"tp": 1, "pp": 1},
        "training": {"seq_length": 4096, "global_batch_size": 64, "micro_batch_size": 1,
                     **training},
        "cluster": {"gpu": gpu, "num_gpus": 8}})


def test_the_gpt_oss_presets_and_hf_configs_have_learnable_sinks(tmp_path):
    assert model("gpt-oss-20b").softmax_type == "learnable"
    assert model("gpt-oss-120b").softmax_type == "learnable"
    assert model("llama3-8b").softmax_type == "vanilla"
    path = tmp_path / "config.json"
    hf = {"hidden_size": 2880, "num_hidden_layers": 2, "num_attention_heads": 64,
          "vocab_size": 1000, "hidden_act": "silu"}
    for model_type, softmax in (("gpt_oss", "learnable"), ("qwen3_moe", "vanilla")):
        path.write_text(json.dumps({**hf, "model_type": model_type}))
        assert model_from_hf_config(path).softmax_type == softmax


@pytest.mark.parametrize("kernel", ["flash2", "flash3", "sdpa", "flash1", "mem_efficient"])
def test_a_kernel_without_a_sink_is_refused_by_name(kernel):
    with pytest.raises(ConfigError, match=f"training.attention={kernel} .*softmax_type=learnable"):
        _cfg(attention=kernel)


@pytest.mark.parametrize("kernel", ["cudnn", "flex", "unfused", "eager", "flash4"])
def test_a_kernel_that_takes_a_sink_is_kept(kernel):
    assert _cfg(attention=kernel).training.attention == kernel


def test_transformer_engine_frameworks_fall_back_to_cudnn_where_their_default_is_flash():
    """Megatron-Bridge's default before Hopper is FlashAttention-2 (profile attention_by_arch
    sm80); TE drops FlashAttention for a sink and prefers FusedAttention to its unfused path."""
    bridge = {"framework": "megatron-bridge", "framework_version": "26.04"}
    assert _cfg("llama3-8b", "a100-sxm-80gb", **bridge).training.attention == "flash2"
    assert _cfg(gpu="a100-sxm-80gb", **bridge).training.attention == "cudnn"
    assert _cfg(**bridge).training.attention == "cudnn"  # Hopper: cuDNN already


def test_pytorch_frameworks_fall_back_to_what_they_list():
    """Automodel's gpt-oss runs FlexAttention (layers.py asserts it); llm-foundry's torch path
    computes the softmax in plain ops; with no framework the fused kernel that takes a sink."""
    assert _cfg(framework="automodel").training.attention == "flex"
    assert _cfg(framework="llm-foundry").training.attention == "eager"
    assert _cfg().training.attention == "cudnn"
    assert _cfg("llama3-8b").training.attention == "flash2"  # a vanilla softmax: untouched


def _forward(cfg):
    from trainsim.workload.layers import layer_forward
    from trainsim.workload.shard import shard_of

    return layer_forward(cfg, shard_of(cfg), moe=cfg.model.is_moe_layer(0))


def test_flex_adds_the_sink_after_the_kernel_as_automodel_does():
    """Automodel flex_attention.py @ 89e3a9fd: ``out * sigmoid(lse - sink)`` then ``.to(bf16)``
    in PyTorch ops: per output element 2 + 4 (the fp32-promoted product) and 4 + 2 (the cast)
    bytes, per row 8 + 8 (difference and sigmoid) and the scale's 4; backward 34 an element,
    32 a row, in 8 kernels (workload.softmax docstring)."""
    ops = {op.name: op for op in _forward(_cfg(framework="automodel"))}
    sink, core = ops["attn_sink_rescale"], ops["attn_core"]
    rows = 1 * 64 * 4096  # micro-batch 1, gpt-oss-20b's 64 query heads, 4096 queries
    assert (core.impl, core.batch * core.heads * core.q_len, core.head_dim) == ("flex", rows, 64)
    assert sink.bytes == rows * 64 * (2 + 4 + 4 + 2) + rows * (8 + 8 + 4)
    assert (sink.kernels, sink.bwd_bytes, sink.bwd_kernels) == (4, rows * (64 * 34 + 32), 8)
    compiled = {op.name: op for op in _forward(_cfg(framework="automodel", compile=True))}
    assert compiled["attn_sink_rescale"].bytes == rows * 64 * 4 + rows * 4
    assert compiled["attn_sink_rescale"].kernels == 1


def test_no_rescale_where_the_kernel_adds_the_sink_or_there_is_none():
    assert "attn_sink_rescale" not in {op.name for op in _forward(_cfg(attention="cudnn"))}
    vanilla = _cfg("qwen3-30b-a3b", attention="flex")
    assert "attn_sink_rescale" not in {op.name for op in _forward(vanilla)}


def test_a_validation_row_without_a_framework_runs_a_sink_preset_fused_on_cudnn():
    """The row reader's default for a fused row without a framework is FlashAttention-2; a
    preset with a sink takes cuDNN there instead of being refused."""
    from trainsim.validate.row_settings import training_base

    row = {"id": "x", "model": "gpt-oss-20b", "gpu": "h100-sxm-80gb", "num_gpus": "8",
           "tp": "1", "pp": "1", "global_batch_size": "8", "seq_length": "4096",
           "options": "fused_kernels"}
    raw, _ = training_base(row)
    assert raw["training"]["attention"] == "cudnn"
    assert training_base({**row, "model": "llama3-8b"})[0]["training"]["attention"] == "flash2"
