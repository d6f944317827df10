"""Model presets for runs people publish: each preset's parameter count against its published
figure, the mechanisms its config.json names (windows, dense-then-MoE layers, shared experts,
parallel blocks, MLA), and a small simulation of each."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest

from trainsim import run_config_from_dict, simulate
from trainsim.catalog import model
from trainsim.model import active_params, embedding_params, mtp_params, total_params
from trainsim.model.counts import expert_params, mlp_params

# name: (total, activated or None, where the figure is published). A figure written with
# digit separators is an exact count; "6.7B" is rounded (or truncated) by its publisher, so
# the count must lie within 1 % or one unit of its last digit, whichever is wider.
PUBLISHED = {
    "llama-7b": ("6.7B", None, "LLaMA (arXiv:2302.13971) Table 2"),
    "llama-13b": ("13.0B", None, "LLaMA Table 2"),
    "llama-33b": ("32.5B", None, "LLaMA Table 2"),
    "llama-65b": ("65.2B", None, "LLaMA Table 2"),
    "llama3.1-8b": ("8,030,261,248", None, "keras-hub llama3.1_8b preset (HF checkpoint)"),
    "llama3.1-70b": ("70.6B", None, "HF meta-llama/Llama-3.1-70B"),
    "llama3.2-1b": ("1.23B", None, "Llama 3.2 model card"),
    "llama3.2-3b": ("3.21B", None, "Llama 3.2 model card"),
    "codellama-34b": ("34B", None, "Code Llama (arXiv:2308.12950)"),
    "qwen2.5-0.5b": ("494,032,768", None, "keras-hub qwen2.5_0.5b_en preset"),
    "qwen2.5-1.5b": ("1,543,434,240", None, "keras-hub qwen2.5_coder_1.5b preset (same shape)"),
    "qwen2.5-3b": ("3,085,938,688", None, "keras-hub qwen2.5_3b_en preset"),
    "qwen2.5-7b": ("7.61B", None, "Qwen2.5-7B model card"),
    "qwen2.5-14b": ("14.7B", None, "Qwen2.5-14B model card"),
    "qwen2.5-32b": ("32,763,876,352", None, "keras-hub qwen2.5_instruct_32b_en preset"),
    "qwen2.5-72b": ("72,706,203,648", None, "keras-hub qwen2.5_instruct_72b_en preset"),
    "qwen3-0.6b": ("596,049,920", None, "keras-hub qwen3_0.6b_en preset"),
    "qwen3-1.7b": ("1,720,574,976", None, "keras-hub qwen3_1.7b_en preset"),
    "qwen3-4b": ("4,022,468,096", None, "keras-hub qwen3_4b_en preset"),
    "qwen3-8b": ("8,190,735,360", None, "keras-hub qwen3_8b_en preset"),
    "qwen3-14b": ("14,768,307,200", None, "keras-hub qwen3_14b_en preset"),
    "qwen3-32b": ("32,762,123,264", None, "keras-hub qwen3_32b_en preset"),
    "qwen2-57b-a14b": ("57B", "14B", "Qwen2 report (arXiv:2407.10671) Table 1"),
    "qwen3-coder-480b-a35b": ("480B", "35B", "Qwen3-Coder-480B-A35B model card"),
    "llama4-maverick": ("400B", "17B", "Llama-4-Maverick-17B-128E model card (text: 400.7B)"),
    "deepseek-v2": ("236B", "21B", "DeepSeek-V2 (arXiv:2405.04434) abstract"),
    "deepseek-moe-16b": ("16.4B", "2.8B", "DeepSeekMoE (arXiv:2401.06066) §5"),
    "deepseek-llm-7b": ("7B", None, "DeepSeek LLM (arXiv:2401.02954) Table 2"),
    "deepseek-llm-67b": ("67B", None, "DeepSeek LLM Table 2"),
    "moonlight-16b-a3b": ("15,960,111,936", "3B", ("HF Moonlight-16B-A3B checkpoint count; model "
                           "card (3B activated)")),
    "mistral-7b": ("7,241,732,096", None, "keras-hub mistral_7b_en preset (v0.1)"),
    "mistral-7b-v0.3": ("7,248,023,552", None, "HF mistralai/Mistral-7B-v0.3 checkpoint count"),
    "mistral-nemo-12b": ("12,247,782,400", None, "HF Mistral-Nemo-Instruct-2407 checkpoint count"),
    "mistral-large-2": ("123B", None, "Mistral Large 2 announcement"),
    "gemma-2b": ("2,506,172,416", None, "keras-hub gemma_2b_en preset"),
    "gemma-7b": ("8,537,680,896", None, "keras-hub gemma_7b_en preset"),
    # keras-team/keras-hub@cf8818bc keras_hub/src/models/gemma/gemma_presets.py and
    # @00d9f10a keras_hub/src/models/gemma3/gemma3_presets.py "params"
    "gemma-2-2b": ("2,614,341,888", None, "keras-hub gemma2_2b_en preset"),
    "gemma-2-9b": ("9,241,705,984", None, "keras-hub gemma2_9b_en preset"),
    "gemma-2-27b": ("27,227,128,320", None, "keras-hub gemma2_27b_en preset"),
    "gemma-3-1b": ("999,885,952", None, "keras-hub gemma3_1b preset"),
    "phi-3-mini": ("3,821,079,552", None, "keras-hub phi3_mini_4k_instruct_en preset"),
    "phi-3-medium": ("14B", None, "Phi-3 (arXiv:2404.14219) §2"),
    "gpt-neox-20b": ("20,554,567,680", None, "GPT-NeoX-20B (arXiv:2204.06745) Table 1"),
    "pythia-1b": ("1,011,781,632", None, "EleutherAI/pythia README"),
    "pythia-2.8b": ("2,775,208,960", None, "EleutherAI/pythia README"),
    "pythia-6.9b": ("6,857,302,016", None, "EleutherAI/pythia README"),
    "pythia-12b": ("11,846,072,320", None, "EleutherAI/pythia README"),
    "opt-175b": ("175B", None, "OPT (arXiv:2205.01068) Table 1"),
    "olmo-1b": ("1,176,764,416", None, "HF allenai/OLMo-1B checkpoint count"),
    "olmo-7b": ("7B", None, "OLMo Table 1"),
    "olmo2-7b": ("7B", None, "OLMo 2 (arXiv:2501.00656) Table 1"),
    "olmo2-13b": ("13B", None, "OLMo 2 Table 1"),
    "olmoe-1b-7b": ("6.9B", "1.3B", "OLMoE (arXiv:2409.02060) Table 1"),
    "dbrx": ("132B", "36B", "Databricks DBRX announcement / model card"),
    "starcoder2-15b": ("15B", None, "StarCoder 2 (arXiv:2402.19173)"),
    "granite-3-8b": ("8B", None, "Granite 3.0 model card"),
}

CONVENTION = {
    # GLM-4.5's 355B / 106B total leave out the MTP layer, its 32B / 12B activated also the
    # embedding and output layer (with MTP: 356.8B / 109.2B; with embeddings: 34.0B / 13.7B).
    "glm-4.5": ("355B", "32B", "GLM-4.5 (arXiv:2508.06471) abstract"),
    "glm-4.5-air": ("106B", "12B", "GLM-4.5 (arXiv:2508.06471) abstract"),
    # DeepSeek-V2-Lite's 2.4B activated leaves out the input embedding (2.45B without it,
    # 2.66B with it), while DeepSeekMoE 16B's 2.8B keeps it (2.83B).
    "deepseek-v2-lite": ("15.7B", "2.4B", "DeepSeek-V2 (arXiv:2405.04434) Appendix B"),
    # Kimi K2's report says 1.04T total; its config.json (MaxText kimi-k2-1t.yml) counts to
    # 1.0264T, 1.3 % less: the gap is not in any config field trainsim reads.
    "kimi-k2": ("1.04T", "32.6B", "Kimi K2 (arXiv:2507.20534) abstract"),
}

UNPUBLISHED = ["falcon-7b", "falcon-40b", "falcon-180b"]
"""Falcon's sizes are published only by name (7B, 40B, 180B): counted by hand below."""

NEW_PRESETS = sorted({*PUBLISHED, *CONVENTION, *UNPUBLISHED})


EXACT = 5e-4
"""Relative tolerance of an exact published count (digit separators): 0.05 %, below a
vocabulary off by 768 rows in Llama-3.1-8B (2 x 768 x 4096 = 6.3M = 0.078 %). What the
catalog leaves out on purpose is added back by ``documented_gap`` first."""


def _figure(text: str) -> tuple[float, float]:
    """A published figure as (value, tolerance): an exact count (digit separators) within
    ``EXACT``; a rounded one within 1 % or one unit of its last digit."""
    if "," in text:
        value = float(text.replace(",", ""))
        return value, EXACT * value
    digits, scale = re.fullmatch(r"([\d.]+)([BT])", text).groups()
    unit = 10.0 ** -len(digits.partition(".")[2]) * {"B": 1e9, "T": 1e12}[scale]
    value = float(digits) * {"B": 1e9, "T": 1e12}[scale]
    return value, max(0.01 * value, unit)


def documented_gap(name: str, m) -> float:
    """Parameters the checkpoint has and the preset leaves out by its documented choice (the
    published count minus trainsim's), by hand from the preset's shape:
    Qwen2 attention's q/k/v biases (the presets keep add_bias_linear false: qwen2.5-*.yaml),
    h + 2 x kv_heads x head_dim per layer; OLMo-1B's weightless LayerNorms, which
    trainsim counts as 2h each (olmo-1b.yaml), 2 per layer and the final one. (Qwen3's q/k
    RMSNorm weights, 2 x head_dim per layer, are in ``total_params`` since 2026-11-25.)"""
    if name.startswith("qwen2.5-"):
        return m.num_layers * (m.hidden_size + 2 * m.kv_heads * m.kv_channels)
    if name == "olmo-1b":
        return -(2 * m.num_layers + 1) * 2 * m.hidden_size
    return 0.0


def test_figure_tolerance():
    """'2.4B' allows one unit (0.1B), '236B' 1 %, an exact count 0.05 %."""
    assert _figure("2.4B") == pytest.approx((2.4e9, 0.1e9))
    assert _figure("236B") == pytest.approx((236e9, 2.36e9))
    assert _figure("1,011,781,632") == pytest.approx((1011781632, 505890.816))


def test_an_exact_count_catches_a_vocabulary_off_by_768_rows():
    """A vocabulary 768 rows off (32000 for 32768, Mistral v0.1 for v0.3) in Llama-3.1-8B's
    two untied embeddings fails the exact-count check."""
    m = model("llama3.1-8b")
    value, tol = _figure(PUBLISHED["llama3.1-8b"][0])
    assert abs(total_params(m) - value) <= tol
    wrong = dataclasses.replace(m, vocab_size=m.vocab_size - 768)
    assert abs(total_params(wrong) - value) > tol


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_preset_matches_published_count(name):
    """Total (and activated, for MoE) parameters are the published figure's."""
    total, active, _ = PUBLISHED[name]
    m = model(name)
    value, tol = _figure(total)
    counted = total_params(m) + (documented_gap(name, m) if "," in total else 0.0)
    assert abs(counted - value) <= tol, (name, total_params(m))
    assert (active is None) == (not m.is_moe)
    if active:
        value, tol = _figure(active)
        assert abs(active_params(m) - value) <= tol, (name, active_params(m))


def _active_mtp(m):
    """Activated parameters of the MTP layers (each an MoE layer like the last one)."""
    idle = expert_params(m) - m.moe_router_topk * mlp_params(m, m.expert_ffn_size)
    return mtp_params(m) - m.mtp_num_layers * idle


def test_glm_counts_as_published():
    """GLM-4.5 (355B / 32B) and -Air (106B / 12B) without MTP, activated without embeddings."""
    for name in ("glm-4.5", "glm-4.5-air"):
        total, active, _ = CONVENTION[name]
        m = model(name)
        value, tol = _figure(total)
        assert abs(total_params(m) - mtp_params(m) - value) <= tol
        body = active_params(m) - _active_mtp(m) - 2 * m.vocab_size * m.hidden_size
        value, tol = _figure(active)
        assert abs(body - value) <= tol, (name, body)


def test_deepseek_v2_lite_counts_as_published():
    """DeepSeek-V2-Lite: 15.7B total, 2.4B activated without the input embedding."""
    m = model("deepseek-v2-lite")
    value, tol = _figure("15.7B")
    assert abs(total_params(m) - value) <= tol
    value, tol = _figure("2.4B")
    assert abs(active_params(m) - embedding_params(m) - value) <= tol


def test_kimi_k2_counts():
    """Kimi K2: 32.6B activated (within 1 %); 1.0264T total, 1.3 % under the report's 1.04T."""
    m = model("kimi-k2")
    assert active_params(m) == pytest.approx(32.6e9, rel=0.01)
    assert total_params(m) == pytest.approx(1.04e12, rel=0.015)


def test_falcon_by_hand():
    """Falcon from its config.json by hand: parallel block, tied embeddings, no biases, GELU
    4h MLP; LayerNorms (weight and bias): Falcon-7B's one input_layernorm a block, the
    new_decoder_architecture's two (ln_attn, ln_mlp; transformers 5.24.0 modeling_falcon.py
    FalconDecoderLayer). Falcon-7B = 6,921,720,704 as transformers counts it on the meta
    device (FalconForCausalLM, tiiuae/falcon-7b's config), Falcon-40B 41,303,293,952."""
    for name, h, layers, heads, kv, n in [("falcon-7b", 4544, 32, 71, 1, 1),
                                          ("falcon-40b", 8192, 60, 128, 8, 2),
                                          ("falcon-180b", 14848, 80, 232, 8, 2)]:
        d = 64
        attention = h * (heads * d + 2 * kv * d) + heads * d * h
        mlp = 2 * h * 4 * h
        norms = n * 2 * h
        expected = layers * (attention + mlp + norms) + 65024 * h + 2 * h
        m = model(name)
        assert m.parallel_block and m.tied_embeddings and not m.add_bias_linear
        assert total_params(m) == expected
    assert total_params(model("falcon-7b")) == 6_921_720_704
    assert total_params(model("falcon-40b")) == 41_303_293_952
    # the names' sizes: 6.92B, 41.3B, 178.6B
    for name, size in [("falcon-7b", 7e9), ("falcon-40b", 40e9), ("falcon-180b", 180e9)]:
        assert total_params(model(name)) == pytest.approx(size, rel=0.035)


# ------------------------------------------------------------------ mechanisms named in configs

def test_sliding_windows():
    """Mistral 7B v0.1 (4096), Phi-3 (2047) and StarCoder2 (4096) window every layer; Mistral
    v0.3 and NeMo none."""
    for name, window in [("mistral-7b", 4096), ("phi-3-mini", 2047), ("phi-3-medium", 2047),
                         ("starcoder2-15b", 4096), ("mistral-7b-v0.3", None),
                         ("mistral-nemo-12b", None)]:
        m = model(name)
        assert {m.layer_window(i) for i in range(m.num_layers)} == {window}, name


def test_dense_then_moe_layers():
    """first_k_dense_replace: DeepSeek-V2 / Lite / MoE-16B, Moonlight, Kimi K2 and GLM-4.5-Air
    keep 1 dense layer, GLM-4.5 3; Qwen2-57B, Qwen3-Coder, OLMoE and DBRX none."""
    for name, dense in [("deepseek-v2", 1), ("deepseek-v2-lite", 1), ("deepseek-moe-16b", 1),
                        ("moonlight-16b-a3b", 1), ("kimi-k2", 1), ("glm-4.5", 3),
                        ("glm-4.5-air", 1), ("qwen2-57b-a14b", 0),
                        ("qwen3-coder-480b-a35b", 0), ("olmoe-1b-7b", 0), ("dbrx", 0)]:
        m = model(name)
        assert [m.is_moe_layer(i) for i in range(m.num_layers)] == \
            [False] * dense + [True] * (m.num_layers - dense), name


def test_shared_experts_and_mla():
    """Shared expert widths (2 x 1536 for V2, 2 x 1408 for Lite/Moonlight/MoE-16B, 20480 for
    Qwen2-57B); MLA with query compression only where q_lora_rank is set."""
    assert model("deepseek-v2").moe_shared_expert_intermediate_size == 2 * 1536
    for name in ("deepseek-v2-lite", "moonlight-16b-a3b", "deepseek-moe-16b"):
        assert model(name).moe_shared_expert_intermediate_size == 2 * 1408
    assert model("qwen2-57b-a14b").moe_shared_expert_intermediate_size == 20480
    assert model("deepseek-v2").q_lora_rank == model("kimi-k2").q_lora_rank == 1536
    assert model("deepseek-v2-lite").q_lora_rank is None and model("deepseek-v2-lite").is_mla
    assert not model("deepseek-moe-16b").is_mla


def test_parallel_blocks():
    """GPT-NeoX, Pythia and Falcon compute attention and MLP from the same input."""
    for name in ("gpt-neox-20b", "pythia-1b", "pythia-12b", "falcon-7b", "falcon-180b"):
        assert model(name).parallel_block, name
    assert not model("llama-7b").parallel_block


@pytest.mark.parametrize("name", NEW_PRESETS)
def test_preset_simulates(name):
    """Each new preset runs on one 8-GPU node (EP as wide as its experts allow) and its model
    FLOPs per token are at least 6 x its activated matmul parameters."""
    m = model(name)
    par = {"ep": max(e for e in (1, 2, 4, 8) if m.num_experts % e == 0)} if m.is_moe else {}
    cfg = run_config_from_dict({"model": name, "parallel": par,
                                "training": {"global_batch_size": 8, "seq_length": 2048},
                                "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    r = simulate(cfg)
    assert math.isfinite(r.iteration_time_s) and r.iteration_time_s > 0
    per_token = r.model_flops / cfg.tokens_per_iteration
    assert per_token >= 6 * (active_params(m) - embedding_params(m))
