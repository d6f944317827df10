"""What Megatron-core's ``--recompute-modules`` layernorm and moe_act free in fp8 and MoE layers,
and DeepSeek-V3's MoE layer under its report's recipe, by hand (issues 16 and 20)."""

from __future__ import annotations

import pytest

import trainsim
from trainsim.memory.layer_activations import _moe_block_bytes, activation_bytes_per_layer

T = 4096  # tokens of one micro-batch (micro-batch 1, sequence 4096, no CP)


def cfg_of(model="llama3-8b", modules=("core_attn",), parallel=None, **training):
    return trainsim.run_config_from_dict({
        "model": {"preset": model},
        "parallel": {"recompute": "selective", "recompute_modules": list(modules),
                     **(parallel or {})},
        "training": {"global_batch_size": 64, "seq_length": T, **training},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8},
    })


def freed_by_layernorm(moe=False, model="llama3-8b", **training):
    keep = cfg_of(model, **training)
    drop = cfg_of(model, modules=("core_attn", "layernorm"), **training)
    return activation_bytes_per_layer(keep, moe=moe) - activation_bytes_per_layer(drop, moe=moe)


def test_layernorm_recompute_frees_what_the_norm_outputs_fed():
    """Dense bf16: the QKV and FC1 inputs are the two norm outputs, 2 bytes each (4h per
    token). Under fp8 (delayed: 1 byte) they are the linears' 8-bit copies, which Megatron-core
    drops by saving the discarded original instead (set_save_original_input): 2 x 1 byte, not
    the 16-bit outputs that were never kept."""
    h = cfg_of().model.hidden_size
    assert freed_by_layernorm() == pytest.approx(T * h * (2 + 2))
    assert freed_by_layernorm(dtype="fp8") == pytest.approx(T * h * (1 + 1))


def test_layernorm_recompute_in_an_moe_layer_frees_the_router_input():
    """MoE bf16 without shared experts: the QKV input and the router's 16-bit input (2 + 2);
    DeepSeek-V3 under fp8 blockwise (1 + 4/128 bytes): the down-projection's copy, the router's
    16-bit input and the shared experts' FC1 copy."""
    h = cfg_of("qwen3-30b-a3b").model.hidden_size
    assert freed_by_layernorm(True, "qwen3-30b-a3b") == pytest.approx(T * h * (2 + 2))
    x = 1 + 4 / 128
    h = cfg_of("deepseek-v3").model.hidden_size
    got = freed_by_layernorm(True, "deepseek-v3", dtype="fp8", fp8_recipe="blockwise")
    assert got == pytest.approx(T * h * (x + 2 + x))


def test_a_shared_expert_in_bf16_reads_the_routers_saved_input():
    """In 16-bit the shared experts' FC1 input is the pre-MLP norm output the router already
    saved: one tensor, so only the shared experts' inner tensors add to the routed block."""
    cfg = cfg_of("deepseek-v3", modules=())
    m = cfg.model
    routed = T * m.moe_router_topk * m.moe_token_imbalance
    f, s = m.expert_ffn_size, m.moe_shared_expert_intermediate_size
    want = T * m.hidden_size * (2 + 2) + T * m.num_experts * 4 \
        + routed * (2 * m.hidden_size + 2 * 2 * f + 2 * f + 4) + T * (2 * 2 * s + 2 * s)
    assert _moe_block_bytes(cfg) == pytest.approx(want)


def test_moe_act_in_megatron_core_keeps_the_16bit_fc1_output():
    """Megatron-core's CheckpointWithoutOutput saves its input, the 16-bit FC1 output, and runs
    the SwiGLU under no_grad, so activation_func_fp8_input_store saves nothing under moe_act
    there; without a framework (DeepSeek-V3 §3.3.3: the SwiGLU's inputs cached in fp8, its output
    recomputed) the store halves them: 2f bytes per routed copy less."""
    def moe_act(store, **fw):
        return activation_bytes_per_layer(
            cfg_of("qwen3-30b-a3b", modules=("moe_act",), dtype="fp8",
                   activation_func_fp8_input_store=store, **fw), moe=True)

    core = {"framework": "megatron-core"}
    assert moe_act(False, **core) == pytest.approx(moe_act(True, **core))
    m = cfg_of("qwen3-30b-a3b").model
    routed = T * m.moe_router_topk * m.moe_token_imbalance
    assert moe_act(False) - moe_act(True) == pytest.approx(routed * 2 * m.expert_ffn_size)


def test_deepseek_v3_moe_layer_under_its_reports_recipe():
    """One MoE layer of DeepSeek-V3 per token (TP 1, fp8 blockwise x = 1 + 4/128, RMSNorm and
    MLA up-projections recomputed, SwiGLU inputs in fp8 with its output recomputed):
    attention: norm input 2h, latents 2 (q_lora + kv_lora), out-projection input x v beside
    the fused attention's own 16-bit output 2 v (mla_up_proj recomputes Q, K, V, not the
    attention), fp32 log-sum-exp 4 per head; MoE: norm input 2h, fp32 router scores 4E, per routed copy
    (x h + 2f + 4), the shared expert's SwiGLU input 2s and FC2 input x s."""
    cfg = cfg_of("deepseek-v3", modules=("layernorm", "mla_up_proj", "moe_act"), dtype="fp8",
                 fp8_recipe="blockwise", activation_func_fp8_input_store=True)
    m = cfg.model
    x, h, f, s = 1 + 4 / 128, m.hidden_size, m.expert_ffn_size, m.moe_shared_expert_intermediate_size
    k = m.moe_router_topk * m.moe_token_imbalance
    per = (2 * h + 2 * (m.q_lora_rank + m.kv_lora_rank) + (x + 2) * m.v_dim + 4 * m.num_attention_heads
           + 2 * h + 4 * m.num_experts + k * (x * h + 2 * f + 4) + 2 * s + x * s)
    assert activation_bytes_per_layer(cfg, moe=True) == pytest.approx(T * per)
