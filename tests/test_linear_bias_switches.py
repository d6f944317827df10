"""Separate bias switches for the attention's Q/K/V, its output projection and the MLP
(``ModelConfig.add_qkv_bias``, ``add_proj_bias``, ``add_mlp_bias``; None = ``add_bias_linear``),
read from a config.json (Llama's ``attention_bias`` / ``mlp_bias``, Qwen2's q/k/v-only biases)
and counted in the parameters, the FSDP1 flat parameter and the bias kernels. Every count is
checked against the model transformers builds from the same config on the meta device, exactly."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import pytest

from trainsim import run_config_from_dict
from trainsim.catalog import model_from_hf_config
from trainsim.config import ModelConfig
from trainsim.model.counts import layer_matrices, layer_params, layer_tensors, total_params
from trainsim.workload.layers import layer_forward
from trainsim.workload.shard import linear_bias_kernels, shard_of
from trainsim.workload.sharding_grads import _module_order

SMALL = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 8,
         "num_key_value_heads": 2, "intermediate_size": 704, "vocab_size": 1000,
         "max_position_embeddings": 512, "tie_word_embeddings": False}


def _hf(model_type: str, **kw) -> tuple[dict, int]:
    """(config.json mapping, transformers' parameter count) of a small ``model_type`` model."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = transformers.AutoConfig.for_model(model_type, **{**SMALL, **kw})
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(cfg)
    return cfg.to_dict(), sum(p.numel() for p in model.parameters())


def _read(tmp_path: Path, data: dict) -> ModelConfig:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "one switch for both sublayers" warning any more
        return model_from_hf_config(path)


@pytest.mark.parametrize(("attention", "mlp"), [(False, False), (True, True), (True, False),
                                                (False, True)])
def test_llama_attention_and_mlp_bias_count_as_transformers_builds_them(tmp_path, attention,
                                                                        mlp):
    """LlamaAttention q/k/v/o_proj ``bias=config.attention_bias``, LlamaMLP gate/up/down_proj
    ``bias=config.mlp_bias`` (transformers 5.24.0 modeling_llama.py). Before (146c9c8) the
    two differing rows read as biases everywhere: (True, False) counted 2 x (2 x 704 + 256) =
    3,328 too many, (False, True) 2 x (256 + 2 x 64 + 256) = 1,280 too many."""
    data, ref = _hf("llama", attention_bias=attention, mlp_bias=mlp)
    m = _read(tmp_path, data)
    assert (m.qkv_bias, m.proj_bias, m.mlp_bias) == (attention, attention, mlp)
    assert total_params(m) == ref


@pytest.mark.parametrize("model_type", ["qwen2", "qwen2_moe"])
def test_qwen2_has_qkv_biases_and_no_output_or_mlp_bias(tmp_path, model_type):
    """Qwen2Attention: q/k/v_proj ``bias=True``, o_proj ``bias=False``; Qwen2MLP no bias
    (modeling_qwen2.py lines 41-43, 181-184); Qwen2-MoE the same with ``qkv_bias`` (default
    True). Before, Qwen2's config.json (no attention_bias key) read as no bias at all: 2 x
    (256 + 2 x 64) = 768 too few here, 129,024 (0.0017 %) on Qwen2.5-7B."""
    extra = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128,
             "shared_expert_intermediate_size": 256} if model_type == "qwen2_moe" else {}
    # Qwen2-MoE's shared_expert_gate (nn.Linear(hidden, 1, bias=False) per layer,
    # modeling_qwen2_moe.py line 338) is no ModelConfig field: a known h per layer, no bias
    gate = SMALL["num_hidden_layers"] * SMALL["hidden_size"] if extra else 0
    data, ref = _hf(model_type, **extra)
    m = _read(tmp_path, data)
    assert (m.qkv_bias, m.proj_bias, m.mlp_bias) == (True, False, False)
    assert not m.add_bias_linear and m.add_qkv_bias
    assert total_params(m) == ref - gate
    if model_type == "qwen2_moe":
        data, ref = _hf(model_type, qkv_bias=False, **extra)
        m = _read(tmp_path, data)
        assert not m.any_linear_bias and total_params(m) == ref - gate


def test_unset_switches_follow_add_bias_linear():
    for on in (True, False):
        m = ModelConfig(add_bias_linear=on)
        assert (m.qkv_bias, m.proj_bias, m.mlp_bias, m.any_linear_bias) == (on,) * 4


@pytest.mark.parametrize("groups", [(True, False, False), (False, True, False),
                                    (False, False, True), (True, False, True)])
def test_every_tensor_list_sums_to_the_layer_count(groups):
    """layer_tensors (ZeRO / FSDP2 sharding, fp8 weights) and the FSDP1 flat parameter's module
    order (workload.sharding_grads._module_order, tp 1) hold the same biases as layer_params, and the
    biases are never counted as GEMM weights."""
    qkv, proj, mlp = groups
    for activation in ("gelu", "swiglu"):
        m = ModelConfig(hidden_size=256, num_attention_heads=8, num_kv_heads=2, num_layers=2,
                        ffn_hidden_size=704, activation=activation, add_bias_linear=False,
                        add_qkv_bias=qkv, add_proj_bias=proj, add_mlp_bias=mlp)
        none = dataclasses.replace(m, add_qkv_bias=None, add_proj_bias=None, add_mlp_bias=None)
        mats = 3 if activation == "swiglu" else 2
        biases = (m.q_size + 2 * m.kv_size) * qkv + 256 * proj + ((mats - 1) * 704 + 256) * mlp
        assert layer_params(m) - layer_params(none) == biases
        assert sum(n for n, _ in layer_tensors(m)) == layer_params(m)
        assert sum(n for (n, _), w in zip(layer_tensors(m), layer_matrices(m), strict=True)
                   if w) == sum(n for (n, _), w in zip(layer_tensors(none),
                                                       layer_matrices(none), strict=True) if w)
        cfg = run_config_from_dict({
            "model": dataclasses.asdict(m), "parallel": {"tp": 1, "pp": 1},
            "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 512},
            "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
        assert sum(_module_order(cfg, 0)) == layer_params(m)


def _megatron(model: dict) -> object:
    return run_config_from_dict({
        "model": {"hidden_size": 2048, "num_layers": 4, "num_attention_heads": 16,
                  "vocab_size": 51200, "activation": "gelu", **model},
        "parallel": {"tp": 2, "pp": 1, "sequence_parallel": True},
        "training": {"global_batch_size": 32, "micro_batch_size": 4, "seq_length": 2048,
                     "dtype": "fp16", "framework": "megatron-lm", "framework_version": "2023-08"},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})


def test_bias_kernels_only_for_the_linears_that_have_biases():
    """Megatron-LM 2023-08 adds query_key_value's and dense_4h_to_h's biases in kernels of
    their own (test_linear_bias_kernels); a model with only QKV biases keeps the first and
    loses the second, one with only MLP biases the reverse, and the run with every bias is as
    before (the switches unset)."""
    every = linear_bias_kernels(_megatron({"add_bias_linear": True}))
    assert {"qkv", "fc2"} <= every
    qkv = linear_bias_kernels(_megatron({"add_bias_linear": False, "add_qkv_bias": True}))
    assert qkv == every & {"qkv"}
    mlp = linear_bias_kernels(_megatron({"add_bias_linear": False, "add_mlp_bias": True}))
    assert mlp == every & {"fc1", "fc2"} and "qkv" not in mlp
    assert linear_bias_kernels(_megatron({"add_bias_linear": False})) == frozenset()
    c = _megatron({"add_bias_linear": False, "add_qkv_bias": True})
    names = [op.name for op in layer_forward(c, shard_of(c)) if op.name.endswith(".bias_add")]
    assert names == ["qkv_proj.bias_add"]


@pytest.mark.parametrize("model_type", ["llama", "qwen3", "glm4"])
def test_attention_bias_alone_leaves_the_mlp_unbiased(tmp_path, model_type):
    """A config.json with ``attention_bias: true`` and no ``mlp_bias`` key: transformers builds
    the MLP without biases (LlamaConfig ``mlp_bias=False``; Qwen3 and GLM-4 have no MLP bias)
    and GLM-4 its o_proj too (modeling_glm4.py ``bias=False``). Before, a missing ``mlp_bias``
    followed ``attention_bias`` and GLM-4's o_proj took a bias: 3 x hidden per layer too many."""
    data, ref = _hf(model_type, attention_bias=True, pad_token_id=None)
    data.pop("mlp_bias", None)
    m = _read(tmp_path, data)
    assert (m.qkv_bias, m.proj_bias, m.mlp_bias) == (True, model_type != "glm4", False)
    assert total_params(m) == ref
