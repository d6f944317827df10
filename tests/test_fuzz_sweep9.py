"""Ninth robustness sweep (22nd session, fuzz9): a Hugging Face config.json's switches, counts,
``model_type`` and ``hidden_act`` are read as written, or refused in one line; before, a list,
a word or a fraction was read by its truth value or through ``str()`` and changed the model
silently. Each class checked failing on main 5d83267 before its fix."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from trainsim.catalog import model_from_hf_config
from trainsim.errors import ConfigError
from trainsim.model.counts import total_params

ROOT = Path(__file__).resolve().parents[1]
LLAMA = {"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8,
         "num_key_value_heads": 8, "num_hidden_layers": 4, "vocab_size": 1000,
         "intermediate_size": 2816, "hidden_act": "silu", "rms_norm_eps": 1e-5,
         "rope_theta": 10000.0, "tie_word_embeddings": False}
MPT = {"model_type": "mpt", "d_model": 1024, "n_heads": 8, "n_layers": 4, "vocab_size": 1000,
       "expansion_ratio": 4, "max_seq_len": 2048, "no_bias": True,
       "attn_config": {"alibi": True, "attn_type": "multihead_attention"}}


def _count(tmp_path: Path, cfg: dict) -> int:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return total_params(model_from_hf_config(path))


def _refused(tmp_path: Path, cfg: dict, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as err:
        _count(tmp_path, cfg)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("value", [0, ["llama"], {"a": 1}, True, 1e30])
def test_a_model_type_that_is_not_text_is_refused(tmp_path, value):
    # a Gemma 2 config with model_type 0 was read through str() as '0': not gated, untied
    _refused(tmp_path, {**LLAMA, "model_type": value}, "model_type must be text")


def test_an_unknown_model_type_word_is_still_read_as_a_generic_decoder(tmp_path):
    assert _count(tmp_path, {**LLAMA, "model_type": "my_llama_variant"}) == _count(tmp_path, LLAMA)


@pytest.mark.parametrize("value", ["abc", "geglu", 0, ["silu"], {"name": "silu"}])
def test_a_hidden_act_transformers_does_not_know_is_refused(tmp_path, value):
    # 'abc' was a two-matrix GELU MLP: glm4_moe's default config -32 % parameters
    _refused(tmp_path, {**LLAMA, "model_type": "x", "hidden_act": value}, "hidden_act")


def test_known_activations_read_as_before(tmp_path):
    # transformers ACT2CLS names (5.24.0 activations.py): SiLU gated, the GELUs two matrices
    # an unknown type: GPT-2's own class reads activation_function, not hidden_act (fuzz31)
    dense = {**LLAMA, "model_type": "my_dense", "attention_bias": False}
    silu = _count(tmp_path, {**dense, "hidden_act": "SiLU"})
    gelu = _count(tmp_path, {**dense, "hidden_act": "gelu_new"})
    assert _count(tmp_path, {**dense, "hidden_act": None}) == gelu  # null: the GELU default
    assert silu - gelu == 4 * 1024 * 2816  # one more 1024 x 2816 matrix in each of 4 layers


@pytest.mark.parametrize("field, value", [("num_local_experts", []), ("num_local_experts", 8.5),
                                          ("num_local_experts", "eight"),
                                          ("n_shared_experts", 0.5), ("n_shared_experts", [1]),
                                          ("kv_lora_rank", {}), ("kv_lora_rank", -1)])
def test_an_expert_or_latent_count_that_is_not_a_whole_number_is_refused(tmp_path, field, value):
    # [] was read as "no experts" (a dense model), 0.5 shared experts as half an expert's width
    moe = {**LLAMA, "model_type": "x", "num_local_experts": 8, "num_experts_per_tok": 2,
           "moe_intermediate_size": 512}
    _refused(tmp_path, {**moe, field: value}, f"{field} must be a whole number")


def test_zero_experts_is_still_a_dense_model(tmp_path):
    assert _count(tmp_path, {**LLAMA, "num_local_experts": 0}) == _count(tmp_path, LLAMA)


@pytest.mark.parametrize("where, field, value", [
    ("attn_config", "qk_ln", "abc"), ("attn_config", "alibi", []), ("attn_config", "rope", -1),
    (None, "no_bias", []), (None, "learned_pos_emb", "maybe")])
def test_an_mpt_switch_that_is_not_true_or_false_is_refused(tmp_path, where, field, value):
    # attn_config.qk_ln 'abc' added q/k norms; no_bias [] added every bias
    cfg = json.loads(json.dumps(MPT))
    (cfg[where] if where else cfg)[field] = value
    _refused(tmp_path, cfg, "must be true/false")


def test_mpt_switches_written_as_words_or_numbers_read_as_booleans(tmp_path):
    base = _count(tmp_path, MPT)
    assert _count(tmp_path, {**MPT, "no_bias": "yes"}) == base
    assert _count(tmp_path, {**MPT, "no_bias": 0}) > base  # biases back


@pytest.mark.parametrize("field, value", [("multi_query", []), ("new_decoder_architecture", "x"),
                                          ("alibi", [1])])
def test_a_falcon_switch_that_is_not_true_or_false_is_refused(tmp_path, field, value):
    falcon = {"model_type": "falcon", "hidden_size": 1024, "num_attention_heads": 8,
              "num_hidden_layers": 4, "vocab_size": 1000}
    _refused(tmp_path, {**falcon, field: value}, "must be true/false")


def test_a_neox_parallel_residual_that_is_not_a_switch_is_refused(tmp_path):
    neox = {"model_type": "gpt_neox", "hidden_size": 1024, "num_attention_heads": 8,
            "num_hidden_layers": 4, "vocab_size": 1000, "intermediate_size": 4096,
            "rotary_pct": 0.25}
    _refused(tmp_path, {**neox, "use_parallel_residual": "sometimes"}, "true/false")


@pytest.mark.parametrize("cfg, words", [({**MPT, "attn_config": []}, "attn_config must be a mapping"),
                                        ({**MPT, "attn_config": 0}, "attn_config must be a mapping"),
                                        ({**LLAMA, "rope_parameters": []}, "rope_parameters"),
                                        ({**LLAMA, "rope_parameters": "x"}, "rope_parameters")])
def test_a_sub_mapping_that_is_not_a_mapping_is_refused(tmp_path, cfg, words):
    # an MPT attn_config of 0 or [] was read as {} (learned positions instead of ALiBi)
    _refused(tmp_path, cfg, words)


def test_bitnet_has_rotary_positions_whatever_rope_parameters_holds(tmp_path):
    # BitNetModel builds rotary_emb and no position table (transformers 5.24.0
    # modeling_bitnet.py line 342); a rope_parameters without rope_theta added a learned table
    bitnet = {**LLAMA, "model_type": "bitnet", "hidden_act": "relu2",
              "rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"}}
    del bitnet["rope_theta"]
    assert _count(tmp_path, {**bitnet, "rope_parameters": {}}) == _count(tmp_path, bitnet)


@pytest.mark.parametrize("model_type", ["phi", "gpt_neox", "persimmon"])
def test_a_rope_parameters_mapping_marks_rotary_positions_without_its_theta(tmp_path, model_type):
    # transformers v5 writes rope_parameters for rotary families only; one without rope_theta
    # (the default theta) added a learned max_position_embeddings x hidden table (Phi +0.30 %)
    cfg = {**LLAMA, "model_type": model_type, "hidden_act": "gelu_new",
           "max_position_embeddings": 2048}
    del cfg["rope_theta"]
    with_theta = _count(tmp_path, {**cfg, "rope_parameters": {"rope_theta": 1e4}})
    assert _count(tmp_path, {**cfg, "rope_parameters": {"rope_type": "default"}}) == with_theta
    # no mapping: still rotary, each class having rope_parameters (fuzz31; a learned
    # max_position_embeddings x hidden table before, which transformers does not build)
    assert _count(tmp_path, cfg) == with_theta


# ------------------------------------------- the sweep itself

def _sweep():
    script = ROOT / "benchmarks" / "fuzz_sweep9.py"
    sys.path.insert(0, str(script.parent))
    spec = importlib.util.spec_from_file_location("fuzz_sweep9", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_seeded_sample_of_the_ninth_sweep_finds_no_failure(capsys):
    assert _sweep().main(["--seed", "1", "--n", "120", "--only", "combos,hf"]) == 0, \
        capsys.readouterr().out


@pytest.mark.slow
def test_the_whole_ninth_sweep_finds_no_failure(capsys):
    assert _sweep().main(["--seed", "2", "--n", "4000"]) == 0, capsys.readouterr().out
