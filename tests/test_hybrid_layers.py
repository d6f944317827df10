"""Hybrid Mamba-2 / attention / MLP / MoE layer stacks (config.hybrid, model.mamba,
catalog.hf_hybrid): the pattern, exact parameter counts, model FLOPs, the hub reader, and the
refusal to simulate what the step does not price."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import pytest

from trainsim import catalog
from trainsim.catalog import run_config_from_dict
from trainsim.catalog.hf_config import model_from_hf_config
from trainsim.config import ModelConfig
from trainsim.errors import ConfigError
from trainsim.model import mamba
from trainsim.model.counts import (
    active_params,
    layer_params,
    layer_tensors,
    model_flops_per_token,
    total_params,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

NANO = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"

# transformers 5.24.0 NemotronHForCausalLM built on the meta device from each preset's shapes
# (benchmarks/hybrid_params.py prints them); the model cards' sizes beside them
TRANSFORMERS_COUNT = {"nemotron-h-8b": 8_100_852_736, "nemotron-h-47b": 46_791_554_816,
                      "nemotron-h-56b": 56_324_350_464,
                      "nemotron-3-nano-30b-a3b": 31_577_937_344}
PUBLISHED = {"nemotron-h-8b": 8e9, "nemotron-h-47b": 47e9, "nemotron-h-56b": 56e9,
             "nemotron-3-nano-30b-a3b": 31.6e9}


@pytest.mark.parametrize("name", sorted(TRANSFORMERS_COUNT))
def test_preset_parameters_equal_the_hugging_face_models(name):
    """Each hybrid preset counts exactly the parameters transformers builds from its shapes,
    and lies within 2 % of the size the model card publishes."""
    m = catalog.model(name)
    assert total_params(m) == TRANSFORMERS_COUNT[name]
    assert total_params(m) == pytest.approx(PUBLISHED[name], rel=0.02)


def test_nano_active_parameters_match_the_model_card():
    """Nemotron 3 Nano: 3.6B active with the embeddings, 3.2B without the input embedding
    (model card: 31.6B total, 3.2B active, 3.6B including embeddings)."""
    m = catalog.model("nemotron-3-nano-30b-a3b")
    assert active_params(m) == 3_580_073_408
    assert active_params(m) - m.vocab_size * m.hidden_size == pytest.approx(3.2e9, rel=0.01)
    assert m.num_moe_layers == 23 and [m.is_moe_layer(i) for i in range(3)] == [0, 1, 0]


def test_mamba_layer_tensors_by_hand():
    """A Nemotron-H 8B Mamba layer: norm 4096; in_proj 4096 x (2*8192 + 2*8*128 + 128); conv1d
    10240 x 4 and its bias; dt_bias, A_log, D of 128; gated norm 8192; out_proj 8192 x 4096."""
    m = catalog.model("nemotron-h-8b")
    expected = [4096, 4096 * 18560, 10240 * 4, 10240, 128, 128, 128, 8192, 8192 * 4096]
    assert layer_tensors(m, 0) == [(n, False) for n in expected]
    assert layer_params(m, 0) == sum(expected)
    assert layer_params(m, 1) == 4096 + 2 * 4096 * 21504  # '-': norm + up / down
    assert layer_params(m, 7) == 4096 + 4096 * (4096 + 2 * 1024) + 4096 * 4096  # '*'


def test_attention_and_mlp_layers_in_pairs_are_a_transformer():
    """A pattern of '*-' pairs holds what a plain transformer of half the layers holds: the
    same parameters and model FLOPs (each hybrid layer has one norm, a plain layer two)."""
    plain = ModelConfig(hidden_size=1024, num_layers=4, num_attention_heads=16, num_kv_heads=4,
                        ffn_hidden_size=4096, vocab_size=32000, normalization="rmsnorm",
                        position_embedding="rope", tied_embeddings=False,
                        add_bias_linear=False)
    hybrid = dataclasses.replace(plain, num_layers=8, hybrid_layer_pattern="*-" * 4)
    assert total_params(hybrid) == total_params(plain)
    assert model_flops_per_token(hybrid, 4096) == model_flops_per_token(plain, 4096)


def test_mamba_scan_flops_follow_the_ssd_chunks():
    """The SSD scan per token: 2 G Q N + 2 H Q P + 4 H N P, the chunk capped at the
    sequence; the mixer's projections count through 6 N like every weight."""
    m = catalog.model("nemotron-3-nano-30b-a3b")
    assert mamba.scan_flops(m, 8192) == 2 * 8 * 128 * 128 + 2 * 64 * 128 * 64 + 4 * 64 * 128 * 64
    assert mamba.scan_flops(m, 64) == 2 * 8 * 64 * 128 + 2 * 64 * 64 * 64 + 4 * 64 * 128 * 64
    assert mamba.matmul_params(m) == 2688 * (10304 + 4096)


def test_bridge_formula_reproduces_the_archive_flops():
    """Megatron-Bridge's hybrid FLOPs formula, re-derived, gives the archive's Nano TFLOP/s
    per tokens/s within 1 % (its rounding: 26.04.01 writes tokens/s in steps of 512, +-0.8 % of
    32768); trainsim's count is within 2 % of it."""
    import nemotron3_flops as diag

    m = catalog.model(diag.PRESET)
    rows = [t for t in diag.archive.table() if t["model"] == "Nemotron_3_Nano"]
    assert len(rows) == 9
    for t in rows:
        implied = float(t["tflops"]) * 1e12 / float(t["tokens"])
        assert diag.bridge_flops_per_token(m, int(t["seq"])) == pytest.approx(implied, rel=0.01)
    assert model_flops_per_token(m, 8192) == pytest.approx(
        diag.bridge_flops_per_token(m, 8192), rel=0.02)


@pytest.mark.parametrize("change,match", [
    ({"hybrid_layer_pattern": "M*-G"}, "Gated DeltaNet"),
    ({"hybrid_layer_pattern": "M*-"}, "has 3 layers but model.num_layers=4"),
    ({"hybrid_layer_pattern": "M*-E"}, "num_experts is not set"),
    ({"hybrid_layer_pattern": "M*--", "num_experts": 8}, "no E"),
    ({"hybrid_layer_pattern": "M*-M", "mamba_num_heads": 12}, "mamba_num_groups=8 must divide"),
    ({"mamba_state_dim": 64}, "no hybrid_layer_pattern"),
    ({"hybrid_layer_pattern": "**--", "mamba_head_dim": 32}, "no M layer"),
    ({"hybrid_layer_pattern": "M*-E", "num_experts": 8, "moe_layer_freq": 2}, "E symbols"),
])
def test_impossible_patterns_are_refused_by_name(change, match):
    with pytest.raises(ConfigError, match=match):
        ModelConfig(hidden_size=512, num_layers=4, num_attention_heads=8, **change)


def test_simulating_what_the_hybrid_step_does_not_price_is_refused():
    """Context parallelism over Mamba layers is not priced: the run is refused, naming the
    field (the rest of the hybrid step is: tests/test_mamba_block.py)."""
    with pytest.raises(ConfigError, match="parallel.cp=2 with Mamba layers"):
        run_config_from_dict({"model": "nemotron-h-8b", "training": {"global_batch_size": 8},
                              "parallel": {"cp": 2},
                              "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}})


HUB_NANO = {  # nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json, the fields read
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 2688,
    "hybrid_override_pattern": NANO, "num_hidden_layers": 52, "num_attention_heads": 32,
    "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 1856,
    "mamba_num_heads": 64, "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8,
    "conv_kernel": 4, "chunk_size": 128, "expand": 2, "mlp_hidden_act": "relu2",
    "n_routed_experts": 128, "num_experts_per_tok": 6, "moe_intermediate_size": 1856,
    "moe_shared_expert_intermediate_size": 3712, "n_shared_experts": 1, "n_group": 1,
    "vocab_size": 131072, "tie_word_embeddings": False, "use_bias": False,
    "mlp_bias": False, "attention_bias": False, "use_conv_bias": True,
    "max_position_embeddings": 262144, "time_step_limit": [0.0, math.inf]}


def _read(tmp_path, cfg: dict) -> ModelConfig:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))  # json.dump writes Infinity, as transformers does
    return model_from_hf_config(path)


def test_hub_config_reads_as_the_preset(tmp_path):
    """The hub's Nemotron 3 Nano config.json (with its Python Infinity) reads to the preset's
    shapes and counts; a layers_block_type list reads as the same pattern."""
    m = _read(tmp_path, HUB_NANO)
    assert total_params(m) == TRANSFORMERS_COUNT["nemotron-3-nano-30b-a3b"]
    assert m.hybrid_layer_pattern == NANO and m.mamba_state_dim == 128
    assert m.position_embedding == "none"  # no rotary in nemotron_h attention
    names = {"M": "mamba", "E": "moe", "*": "attention", "-": "mlp"}
    listed = {k: v for k, v in HUB_NANO.items() if k != "hybrid_override_pattern"}
    listed["layers_block_type"] = [names[c] for c in NANO]
    assert _read(tmp_path, listed).hybrid_layer_pattern == NANO


@pytest.mark.parametrize("change,match", [
    ({"num_nextn_predict_layers": 1}, "mtp_hybrid_override_pattern"),
    ({"hybrid_override_pattern": "M*X"}, "'X'"),
    ({"use_conv_bias": False}, "conv1d bias"),
    ({"mamba_num_heads": 60}, "mamba_num_groups=8 must divide"),
])
def test_hub_structures_not_modelled_are_refused(tmp_path, change, match):
    with pytest.raises(ConfigError, match=match):
        _read(tmp_path, {**HUB_NANO, **change})
