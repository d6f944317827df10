"""A model whose softmax has a sink (``ModelConfig.softmax_type``, gpt-oss's learned logit per
head) runs on a kernel that can add it (``config.training.SINK_ATTENTION``): Transformer
Engine's FlashAttention cannot (v2.8-v2.16 dot_product_attention/utils.py, "Filter: Softmax
type"), its cuDNN FusedAttention can (fused_attn.cpp, cuDNN >= 9.13.1), FlexAttention can
(NeMo Automodel flex_attention.py: the sink rescales the output by the log-sum-exp)."""

from __future__ import annotations

import json
import warnings

import pytest

from trainsim.catalog import model, model_from_hf_config, run_config_from_dict
from trainsim.errors import ConfigError, SettingReplaced


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


def _row(**cells):
    return {"id": "x", "model": "gpt-oss-20b", "gpu": "h100-sxm-80gb", "num_gpus": "8",
            "tp": "1", "pp": "1", "global_batch_size": "8", "seq_length": "4096",
            "options": "fused_kernels", **cells}


def test_a_validation_row_without_a_framework_leaves_the_kernel_to_the_sink_rule():
    """The row reader's fused kernel without a framework is TrainingConfig's default,
    FlashAttention-2; it leaves the field unset, so the config's sink rule replaces it for a
    model with a sink however the model is described, as it does for the presets: cuDNN on an
    NVIDIA GPU, FlexAttention on an AMD one; a vanilla model keeps FlashAttention-2."""
    from trainsim.validate.row_settings import training_base

    raw, _ = training_base(_row())
    assert "attention" not in raw["training"]
    with pytest.warns(SettingReplaced):
        assert run_config_from_dict(raw).training.attention == "cudnn"
    raw, _ = training_base(_row(gpu="mi300x"))
    with pytest.warns(SettingReplaced):
        assert run_config_from_dict(raw).training.attention == "flex"
    raw, _ = training_base(_row(model="llama3-8b"))
    assert run_config_from_dict(raw).training.attention == "flash2"
    raw, _ = training_base(_row(options=""))  # no fused option: Megatron's softmax
    assert raw["training"]["attention"] == "unfused"


def test_a_hugging_face_gpt_oss_config_takes_the_sink_rule_too(tmp_path):
    """gpt_oss from config.json (not a preset) without a framework or a kernel: cuDNN."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"hidden_size": 2880, "num_hidden_layers": 2,
                                "num_attention_heads": 64, "num_key_value_heads": 8,
                                "head_dim": 64, "vocab_size": 1000, "hidden_act": "silu",
                                "model_type": "gpt_oss"}))
    with pytest.warns(SettingReplaced, match="attention flash2 -> cudnn"):
        cfg = run_config_from_dict({
            "model": {"hf_config": str(path)}, "parallel": {"tp": 1, "pp": 1},
            "training": {"seq_length": 4096, "global_batch_size": 8, "micro_batch_size": 1},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}})
    assert cfg.training.attention == "cudnn"


def test_an_amd_gpu_never_falls_back_to_cudnn():
    """cuDNN is NVIDIA's library: without a framework an AMD GPU takes FlexAttention (Inductor
    generates it as Triton kernels on ROCm); a Transformer Engine framework whose only sink
    kernel is cuDNN (NeMo 24.07) runs its unfused softmax there, which ROCm Transformer Engine
    with NVTE_FUSED_ATTN=0 runs anyway (nothing replaced)."""
    with pytest.warns(SettingReplaced, match="attention flash2 -> flex"):
        assert _cfg(gpu="mi300x").training.attention == "flex"
    nemo = {"framework": "nemo", "framework_version": "24.07"}
    assert _cfg(gpu="h100-sxm-80gb", **nemo).training.attention == "cudnn"
    with warnings.catch_warnings():
        warnings.simplefilter("error", SettingReplaced)
        assert _cfg(gpu="mi300x", **nemo).training.attention == "unfused"
    assert _cfg(gpu="mi300x", framework="automodel").training.attention == "flex"


def test_a_replaced_framework_default_is_said():
    """Bridge on Ampere runs FlashAttention-2 by default; for a sink it runs cuDNN, and says so."""
    bridge = {"framework": "megatron-bridge", "framework_version": "26.04"}
    with pytest.warns(SettingReplaced) as caught:
        _cfg(gpu="a100-sxm-80gb", **bridge)
    assert [str(w.message) for w in caught if w.category is SettingReplaced] == [
        "attention flash2 -> cudnn: model.softmax_type=learnable"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", SettingReplaced)
        _cfg(**bridge)  # Hopper: cuDNN already, nothing replaced
        _cfg(attention="flex")  # named by the user, nothing replaced


def test_a_validation_row_lists_the_replacement_in_its_result():
    from trainsim.validate.training import predict_training_row

    res = predict_training_row({**_row(gpu="a100-sxm-80gb", framework="megatron-bridge",
                                       framework_version="26.04", options="",
                                       micro_batch_size="1"),
                                "measured_iteration_s": "1.0"}, compute_db=None)
    assert res.error is None, res.error
    assert res.extra["settings"]["attention"] == "cudnn"
    assert res.extra["notes"] == ["attention flash2 -> cudnn: model.softmax_type=learnable"]
    # the text table shows it too, beside what the tuner chose (review finding: JSON only)
    from rich.console import Console

    from trainsim.report.table import render_validation

    console = Console(width=400, record=True)
    console.print(render_validation("training", [res], "s/iteration"))
    assert "attention flash2 -> cudnn: model.softmax_type=learnable" in console.export_text()


@pytest.mark.parametrize(("training", "gpu", "offered"), [
    ({"framework": "automodel"}, "h100-sxm-80gb", "flex, unfused"),
    ({"framework": "megatron-bridge", "framework_version": "26.04"}, "h100-sxm-80gb",
     "cudnn, unfused"),
    ({"framework": "megatron-bridge", "framework_version": "26.04"}, "mi300x", "unfused"),
    ({}, "mi300x", "eager, flex, unfused"),
    ({}, "h100-sxm-80gb", "cudnn, eager, flash4, flex, unfused"),
])
def test_a_refusal_offers_only_what_the_framework_runs_here_with_a_sink(training, gpu, offered):
    with pytest.raises(ConfigError, match=f"use one of {offered} \\("):
        _cfg(gpu=gpu, attention="flash2", **training)


def test_run_config_built_directly_offers_no_nvidia_library_on_an_amd_gpu():
    from dataclasses import replace

    cfg = _cfg(gpu="mi300x", attention="flex")
    with pytest.raises(ConfigError, match="use one of eager, flex, unfused$"):
        replace(cfg, training=replace(cfg.training, attention="flash2"))


def test_the_eager_sink_rescale_bytes_by_hand():
    """Automodel flex_attention.py: ``scale = sigmoid(lse - w.view(1, -1, 1)).unsqueeze(-1)``,
    ``out = out * scale``, ``out.to(q.dtype)``; bf16 ``out``, fp32 ``lse``. Autograd's eager
    backward, kernel by kernel: (bytes an element, bytes a row)."""
    from trainsim.workload.softmax import SINK_RESCALE_EAGER

    bf16, fp32 = 2, 4
    forward = [(0, fp32 + fp32),                   # lse - w
               (0, fp32 + fp32),                   # sigmoid
               (bf16 + fp32, fp32),                # out * scale: out, product; the scale
               (fp32 + bf16, 0)]                   # .to(bf16)
    backward = [(bf16 + fp32, 0),                  # ToCopyBackward: grad to fp32
                (fp32 + fp32, fp32),               # grad * scale
                (fp32 + bf16, 0),                  # ... cast to out's dtype
                (fp32 + bf16 + fp32, 0),           # grad * out
                (fp32, fp32),                      # sum over the head dim -> [B, H, S, 1]
                (0, fp32 + fp32 + fp32),           # SigmoidBackward: grad, result, grad in
                (0, fp32 + fp32),                  # SubBackward: -grad for the sink
                (0, fp32)]                         # sum to the sink's [1, H, 1]
    for ops, (elem, row, kernels) in zip((forward, backward), SINK_RESCALE_EAGER, strict=True):
        assert (sum(e for e, _ in ops), sum(r for _, r in ops), len(ops)) == (elem, row, kernels)
