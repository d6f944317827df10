"""Nineteenth robustness round (31st session, fuzz31): config.json read as transformers reads it.

``benchmarks/hf_reference.json`` (written by ``benchmarks/hf_reference.py`` from transformers
5.24.0) holds, for each family trainsim has class defaults for, a config.json written in full
and one written with only the fields that differ from the class defaults, and what
transformers builds from it: the parameter count, key/value heads, router top-k and windowed
layers. trainsim must read both files as that model; the gaps below are structures no
ModelConfig field holds, each stated with its size."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import pytest
from helpers import hf_config_read

from trainsim.catalog import hf_unread, model_from_hf_config
from trainsim.errors import ConfigError, TrainsimWarning
from trainsim.model.counts import total_params

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = json.loads((ROOT / "benchmarks" / "hf_reference.json").read_text())
FAMILIES = REFERENCE["families"]

GAPS = {
    # untied LM head bias (GPTJForCausalLM, CodeGenForCausalLM, PhiForCausalLM lm_head)
    "gptj": lambda m: -m.vocab_size, "codegen": lambda m: -m.vocab_size,
    "phi": lambda m: -m.vocab_size,
    # Qwen2MoeSparseMoeBlock.shared_expert_gate: hidden x 1 a layer
    "qwen2_moe": lambda m: -m.hidden_size * m.num_layers,
    # GptOssTopKRouter.bias (one per expert) and GptOssAttention.sinks (one per head)
    "gpt_oss": lambda m: -(m.num_experts + m.num_attention_heads) * m.num_layers,
    # BitNetAttention.attn_sub_norm (hidden) and BitNetMLP.ffn_sub_norm (ffn) a layer
    "bitnet": lambda m: -(m.hidden_size + m.ffn_hidden_size) * m.num_layers,
    # OlmoLayerNorm holds no weight nor bias: two norms a layer and the final one
    "olmo": lambda m: 2 * m.hidden_size * (2 * m.num_layers + 1),
    # PhimoeDecoderLayer's nn.LayerNorm biases (read as RMSNorm by rms_norm_eps)
    "phimoe": lambda m: -m.hidden_size * (2 * m.num_layers + 1),
    # OPTLearnedPositionalEmbedding: max_position_embeddings + 2 rows (offset 2)
    "opt": lambda m: -2 * m.hidden_size,
    # ApertusMLP's XIELUActivation learns two scalars (alpha_p, alpha_n) a layer
    "apertus": lambda m: -2 * m.num_layers,
}


REFUSED = {
    # DeepseekV2Config.num_experts_per_tok defaults to None: the router cannot run
    "deepseek_v2": "no num_experts_per_tok",
}


def _read(tmp_path: Path, cfg: dict):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrainsimWarning)
        return model_from_hf_config(path)


def _windowed(m) -> list[bool]:
    if m.sliding_window is None:
        return [False] * m.num_layers
    skip = m.window_attn_skip_freq
    return [not skip or (i + 1) % skip != 0 for i in range(m.num_layers)]


@pytest.mark.parametrize("form", ["minimal", "full"])
@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_each_family_reads_as_transformers_builds_it(tmp_path, kind, form):
    ref = FAMILIES[kind]
    if kind in REFUSED:
        with pytest.raises(ConfigError, match=REFUSED[kind]):
            _read(tmp_path, ref[form])
        return
    m = _read(tmp_path, ref[form])
    got = total_params(dataclasses.replace(m, mtp_num_layers=0))
    assert got - ref["params"] == GAPS.get(kind, lambda m: 0)(m), (kind, got, ref["params"])
    assert (m.num_kv_heads or m.num_attention_heads) == ref["kv_heads"]
    if m.num_experts:
        assert m.moe_router_topk == ref["topk"]
    assert _windowed(m) == ref["windowed"]
    if ref["window"] is not None:
        assert m.sliding_window == ref["window"]


@pytest.mark.parametrize("form", ["minimal", "full"])
@pytest.mark.parametrize("kind", sorted(REFERENCE["other_activation"]))
def test_the_family_not_the_activation_decides_a_gated_mlp(tmp_path, kind, form):
    """fuzz31b: a Mistral or Qwen2 file with gelu still builds MistralMLP's gate_proj, a
    GPT-NeoX, Phi or StarCoder2 file with silu still two matrices (hf_defaults.GATED_MLP).
    Before: read by the activation's name, 4 layers of each: Mistral -234.8 M parameters of
    3.020 B, Qwen2 -180.4 M of 1.682 B, GPT-NeoX +201.4 M of 1.544 B, Phi +66.8 M of 1.275 B,
    StarCoder2 +100.6 M of 0.774 B."""
    ref = REFERENCE["other_activation"][kind]
    m = _read(tmp_path, ref[form])
    got = total_params(m)
    assert got - ref["params"] == GAPS.get(kind, lambda m: 0)(m), (kind, got, ref["params"])


def test_a_family_transformers_cannot_build_keeps_the_activation_rule(tmp_path):
    for act, kind in (("silu", "swiglu"), ("gelu", "gelu")):
        assert _read(tmp_path, {**BASE, "model_type": "my_remote", "hidden_act": act}
                     ).activation == kind


# ----------------------------------------- a name the family's classes never read is ignored

BASE = {"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 8, "vocab_size": 1000, "intermediate_size": 2816,
        "hidden_act": "silu", "rms_norm_eps": 1e-5}


def _warned(tmp_path: Path, cfg: dict) -> tuple:
    return hf_config_read(tmp_path, cfg)


@pytest.mark.parametrize(("kind", "extra", "field", "as_transformers"), [
    # MistralAttention q/k/v/o_proj bias=False whatever the file says
    ("mistral", {"attention_bias": True}, "qkv_bias", False),
    # Mistral windows whenever sliding_window is set (no use_sliding_window in its class)
    ("mistral", {"use_sliding_window": False, "sliding_window": 4096}, "sliding_window", 4096),
    ("llama", {"use_qk_norm": True}, "qk_layernorm", False),
    ("llama", {"attention_chunk_size": 1024}, "attention_chunk_size", None),
    ("llama", {"swiglu_limit": 7.0}, "activation_clamp", None),
    ("llama", {"attn_logit_softcapping": 30.0}, "attn_logit_softcapping", None),
    ("qwen3", {"mlp_bias": True}, "mlp_bias", False),
    # MixtralExperts are intermediate_size wide; no dense first layers, no shared expert
    ("mixtral", {"num_local_experts": 8, "moe_intermediate_size": 512}, "moe_ffn_hidden_size",
     None),
    ("mixtral", {"num_local_experts": 8, "first_k_dense_replace": 2}, "moe_first_dense_layers",
     0),
    ("qwen3_moe", {"num_experts": 8, "shared_expert_intermediate_size": 4096},
     "moe_shared_expert_intermediate_size", None),
    # GPTNeoXAttention: hidden / heads per head, every head its own key/value head
    ("gpt_neox", {"num_key_value_heads": 2}, "num_kv_heads", None),
])
def test_a_name_the_family_does_not_read_is_ignored_with_a_warning(tmp_path, kind, extra, field,
                                                                   as_transformers):
    """Before: each was read as written for any family (a Mistral file's attention_bias priced
    four biased projections transformers does not build)."""
    model, said = _warned(tmp_path, {**BASE, "model_type": kind, **extra})
    assert getattr(model, field) == as_transformers
    named = next(k for k in extra if k not in ("sliding_window", "num_local_experts",
                                               "num_experts"))
    assert any(named in s and f"read by no {kind} class" in s for s in said), said


def test_an_unknown_family_still_reads_every_name(tmp_path):
    model, said = _warned(tmp_path, {**BASE, "model_type": "my_remote", "use_qk_norm": True,
                                     "attention_bias": True})
    assert model.qk_layernorm and model.qkv_bias and not said


def test_an_off_value_is_dropped_without_a_word(tmp_path):
    # the bundled DeepSeek-V3 file writes moe_layer_freq 1 (remote code's field): no warning
    _, said = _warned(tmp_path, {**BASE, "model_type": "mistral", "attention_bias": False,
                                 "moe_layer_freq": 1})
    assert not said
    _, said = _warned(tmp_path, json.loads((ROOT / "examples/hf/deepseek-v3/config.json")
                                           .read_text()))
    assert not said


def test_gpt2_reads_activation_function_not_hidden_act(tmp_path):
    gpt2 = {"model_type": "gpt2", "n_embd": 1024, "n_layer": 2, "n_head": 8, "vocab_size": 1000}
    model, said = _warned(tmp_path, {**gpt2, "hidden_act": "silu"})
    assert model.activation == "gelu" and any("hidden_act is read by no gpt2" in s for s in said)
    # GPT2MLP is c_fc and c_proj whatever activation_function names (hf_defaults.GATED_MLP)
    model, said = _warned(tmp_path, {**gpt2, "activation_function": "silu"})
    assert model.activation == "gelu" and model.position_embedding == "learned" and not said


def test_qwen3_next_of_full_attention_layers_is_refused_for_its_gate(tmp_path):
    """Before: read as plain attention (-4.2 % parameters of the default Qwen3.5 text model,
    its query GEMM half priced)."""
    cfg = {**BASE, "model_type": "qwen3_5_text", "layer_types": ["full_attention"] * 4}
    with pytest.raises(ConfigError, match="gates each attention output"):
        _warned(tmp_path, cfg)


def test_unread_leaves_a_family_without_a_list_alone():
    cfg = {"model_type": "exaone", "use_qk_norm": True}  # no modeling file: no list
    assert hf_unread.unread(cfg, "config.json") == cfg


@pytest.mark.slow
@pytest.mark.parametrize(("script", "output"), [
    ("hf_class_defaults.py", "src/trainsim/catalog/hf_defaults.py"),
    ("hf_reference.py", "benchmarks/hf_reference.json")])
def test_the_generated_tables_are_what_the_installed_transformers_gives(script, output):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    if transformers.__version__ != REFERENCE["transformers"]:
        pytest.skip(f"written with transformers {REFERENCE['transformers']}")
    import subprocess
    import sys

    run = subprocess.run([sys.executable, script], cwd=ROOT / "benchmarks", capture_output=True,
                         text=True, check=True)
    assert run.stdout.strip() == (ROOT / output).read_text().strip()
