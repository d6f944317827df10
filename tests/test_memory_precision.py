"""Low-precision optimizer states and saved activations as Megatron-core stores them
(DeepSeek-V3 report §3.3.3; issue 20 acceptance 4), and the MoE block's saved tensors."""

from __future__ import annotations

import pytest

import trainsim
from trainsim.errors import ConfigError
from trainsim.memory.layer_activations import _moe_block_bytes, activation_bytes_per_layer
from trainsim.memory.state import model_state


def cfg_of(model="llama3-8b", **training):
    return trainsim.run_config_from_dict({
        "model": {"preset": model},
        "parallel": {"distributed_optimizer": True},
        "training": {"global_batch_size": 64, "seq_length": 4096, **training},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8},
    })


def test_bf16_moments_halve_adams_state():
    """TE FusedAdam with exp_avg_dtype = exp_avg_sq_dtype = bf16 keeps 2 + 2 bytes of moments
    per parameter beside the fp32 master copy: 4 + 4 instead of 4 + 8 bytes (sharded). An fp8
    run, whose master copy stays fp32 (bf16 training: the next test)."""
    fp8 = {"dtype": "fp8", "fp8_recipe": "current"}
    fp32 = model_state(cfg_of(**fp8), 0).optimizer
    bf16 = model_state(cfg_of(use_precision_aware_optimizer=True, exp_avg_dtype="bf16",
                              exp_avg_sq_dtype="bf16", **fp8), 0).optimizer
    assert bf16 / fp32 == pytest.approx((4 + 2 + 2) / (4 + 4 + 4))


def test_bf16_precision_aware_optimizer_keeps_16_bit_master_remainders():
    """In bf16 training Megatron-core's precision-aware optimizer stores only the 16 low bits
    of each fp32 master value (store_param_remainders, distrib_optimizer.py: an int16 shard):
    2 + 2 + 2 bytes per sharded parameter with bf16 moments, 2 + 4 + 4 with fp32 ones; under
    fp8 (current scaling) Megatron-core keeps its fp32 master copy: 4 + 2 + 2."""
    fp32 = model_state(cfg_of(), 0).optimizer
    aware = {"use_precision_aware_optimizer": True}
    low = {**aware, "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16"}
    assert model_state(cfg_of(**low), 0).optimizer / fp32 == pytest.approx((2 + 2 + 2) / 12)
    assert model_state(cfg_of(**aware), 0).optimizer / fp32 == pytest.approx((2 + 4 + 4) / 12)
    fp8 = model_state(cfg_of(dtype="fp8", fp8_recipe="current"), 0).optimizer
    assert model_state(cfg_of(dtype="fp8", fp8_recipe="current", **low), 0).optimizer / fp8 \
        == pytest.approx((4 + 2 + 2) / 12)


def test_fp8_delayed_scaling_keeps_master_remainders():
    """Under fp8 delayed scaling Megatron-core hands the master weights to TE's FusedAdam
    (optimizer_config.py ``use_precision_aware_optimizer_no_fp8_or_ds_fp8``), which stores the
    bf16 parameters' 16-bit remainders: 2 + 2 + 2 bytes with bf16 moments; blockwise keeps
    Megatron's own fp32 master: 4 + 2 + 2."""
    low = {"use_precision_aware_optimizer": True, "exp_avg_dtype": "bf16",
           "exp_avg_sq_dtype": "bf16"}
    for recipe, master in (("delayed", 2), ("blockwise", 4)):
        plain = model_state(cfg_of(dtype="fp8", fp8_recipe=recipe), 0).optimizer
        aware = model_state(cfg_of(dtype="fp8", fp8_recipe=recipe, **low), 0).optimizer
        assert aware / plain == pytest.approx((master + 2 + 2) / 12), recipe


def test_delayed_fp8_param_gather_with_precision_aware_optimizer_is_refused():
    """With fp8_param_gather the delayed-scaling weights are Float8Tensors of nominal dtype
    bf16: TE FusedAdam (v2.14 fused_adam.py L611) keeps int16 remainders for them and
    multi_tensor_adam_fp8 (adam.cu L808) rejects a non-fp32 master at the first step."""
    bad = {"dtype": "fp8", "fp8_recipe": "delayed", "fp8_param_gather": True,
           "use_precision_aware_optimizer": True}
    with pytest.raises(ConfigError, match="adam.cu"):
        cfg_of(**bad)
    cfg_of(**{**bad, "use_precision_aware_optimizer": False})
    cfg_of(**{**bad, "fp8_recipe": "current"})


def test_low_precision_moments_need_the_precision_aware_optimizer():
    """Megatron-core's optimizer_config.py asserts exp_avg_dtype is fp32 without it."""
    with pytest.raises(ConfigError, match="use_precision_aware_optimizer"):
        cfg_of(exp_avg_dtype="bf16")
    with pytest.raises(ConfigError, match="adam"):
        cfg_of(optimizer="sgd", use_precision_aware_optimizer=True, exp_avg_sq_dtype="bf16")


def test_precision_aware_optimizer_needs_megatron_cores_distributed_optimizer():
    """Megatron-core asserts the distributed optimizer (optimizer_config.py L394-399); other
    data-parallel optimizers (FSDP, DeepSpeed, Apex DistributedFusedAdam under MLPerf's NeMo
    1.x, profile feature precision_aware_optimizer: false) do not run it."""
    def run(parallel, **training):
        return trainsim.run_config_from_dict({
            "model": {"preset": "llama3-8b"}, "parallel": parallel,
            "training": {"global_batch_size": 64, "seq_length": 4096,
                         "use_precision_aware_optimizer": True, **training},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
    with pytest.raises(ConfigError, match="distributed optimizer"):
        run({"distributed_optimizer": False})
    with pytest.raises(ConfigError, match="distributed optimizer"):
        run({"data_parallel_impl": "fsdp2", "zero_stage": 3})
    with pytest.raises(ConfigError, match="precision aware optimizer"):
        run({"distributed_optimizer": True}, framework="mlperf-nemo", framework_version="4.0")
    run({"distributed_optimizer": True})
    run({"distributed_optimizer": True}, framework="mlperf-nemo", framework_version="5.0")


def test_precision_aware_optimizer_arrives_with_its_commit():
    """use_precision_aware_optimizer arrived in Megatron-LM@47a175b4c4 (2024-12-19), first
    released in core_v0.11.0 (core_r0.10.0's optimizer_config.py lacks it): older releases
    refuse it and the message names the introducing commit."""
    def run(framework, version):
        return cfg_of(use_precision_aware_optimizer=True, framework=framework,
                      framework_version=version)
    for framework, old, new in (("megatron-core", "0.10", "0.11"), ("megatron-core", "0.4", "0.11"),
                                ("megatron-lm", "2024-12-18", "2024-12-19")):
        with pytest.raises(ConfigError, match="47a175b4c4"):
            run(framework, old)
        assert run(framework, new).training.use_precision_aware_optimizer


def test_swiglu_input_stored_in_fp8_saves_one_byte_per_element():
    """fused_bias_swiglu.py saves input.to(torch.float8_e4m3fn): the FC1 output (2f per token,
    both SwiGLU halves) drops from 2 bytes to 1 per element."""
    base = cfg_of(dtype="fp8")
    fp8 = cfg_of(dtype="fp8", activation_func_fp8_input_store=True)
    m = base.model
    tokens = 4096
    saved = activation_bytes_per_layer(base) - activation_bytes_per_layer(fp8)
    assert saved == pytest.approx(tokens * 2 * m.ffn_size * 1.0)


def test_moe_combine_keeps_no_token_copies():
    """Megatron-core >= 0.13 multiplies the routing probabilities inside the expert and
    unpermutes without them: besides the norm and router inputs and the router's fp32 scores
    only the expert side holds routed copies (inputs, inner tensors, fp32 probabilities).
    With no framework named the block is the one trainsim prices (Megatron-core 0.13's
    weighted SwiGLU), so the same. Older Megatron-core and frameworks whose profile does not
    say so keep the combine's weighted copies of the expert outputs (2 bytes per routed token
    and hidden unit)."""
    cfg = cfg_of("qwen3-30b-a3b", framework="megatron-core", framework_version="0.13")
    m = cfg.model
    tokens = 4096
    routed = tokens * m.moe_router_topk * m.moe_token_imbalance
    inner = 2 * 2 * m.expert_ffn_size + 2 * m.expert_ffn_size
    want = tokens * m.hidden_size * 4 + tokens * m.num_experts * 4 \
        + routed * (2 * m.hidden_size + inner + 4)
    assert _moe_block_bytes(cfg) == pytest.approx(want)
    assert _moe_block_bytes(cfg_of("qwen3-30b-a3b")) == pytest.approx(want)
    older = cfg_of("qwen3-30b-a3b", framework="megatron-core", framework_version="0.12")
    assert _moe_block_bytes(older) == pytest.approx(want + routed * 2 * m.hidden_size)


def test_deepep_buffers_as_its_size_hints_give_them():
    """DeepSeek-V3 (hidden 7168, 14,336 bytes per token) over 64 EP ranks, DeepEP v1.2.1
    config.hpp with 20 SMs (10 channels): NVLink ring 10 x 8 peers x (288 tokens x (14,336 +
    8 + 1,024 + 512 + 512) + 19 x 4) and RDMA ring 10 x 8 x (128 x (16,392 + 16) x 2 + 144),
    outside PyTorch's allocator; nothing without the flex dispatcher."""
    from trainsim.memory.allocator import context_bytes, deepep_buffer_bytes

    def ds(dispatcher):
        return trainsim.run_config_from_dict({
            "model": {"preset": "deepseek-v3"},
            "parallel": {"pp": 16, "ep": 64, "moe_token_dispatcher_type": dispatcher,
                         "decoder_first_pipeline_num_layers": 4,
                         "decoder_last_pipeline_num_layers": 1},
            "training": {"global_batch_size": 1024, "seq_length": 4096},
            "cluster": {"gpu": "h800-sxm-80gb", "num_gpus": 1024, "gpus_per_node": 8},
        })

    nvl = 10 * 8 * (288 * (14336 + 8 + 1024 + 512 + 512) + 19 * 4)
    rdma = 10 * 8 * (128 * (14336 + 8 + 1024 + 512 + 512 + 16) * 2 + 144)
    assert deepep_buffer_bytes(ds("deepep")) == nvl + rdma
    assert deepep_buffer_bytes(ds("alltoall")) == 0
    assert context_bytes(ds("deepep")) - context_bytes(ds("alltoall")) == nvl + rdma


@pytest.mark.parametrize("attention", ["cudnn", "unfused"])
def test_fp8_attention_output_is_kept_twice_by_a_fused_attention_kernel(attention):
    """Under fp8 the out-projection saves its own 8-bit cast of the attention output
    (TE linear.py saves the quantized input), while a fused attention kernel also keeps the
    16-bit output it wrote for its own backward (TE FusedAttnFunc saves ``out``); Megatron's
    unfused attention saves only the softmax and V, so there the 8-bit copy is alone. Against
    bf16 (one shared 16-bit tensor) the fp8 layer changes the QKV and FC1 inputs (2 -> 1 byte,
    h per token each), FC2's input (f) and the attention output (q: 2 -> 1 + 2, or 2 -> 1)."""
    bf16 = cfg_of(dtype="bf16", attention=attention)
    fp8 = cfg_of(dtype="fp8", fp8_recipe="current", attention=attention)
    m = bf16.model
    tokens = 4096
    out = +1 if attention == "cudnn" else -1
    want = tokens * (-2 * m.hidden_size - m.ffn_size + out * m.q_size)
    assert activation_bytes_per_layer(fp8) - activation_bytes_per_layer(bf16) == \
        pytest.approx(want)
