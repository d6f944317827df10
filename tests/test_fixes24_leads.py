"""Leads of the 24th session's sweeps (fixes), each failing before: a ``--vary`` list's repeated
values were each simulated; a config.json's expert count was taken from whichever expert key
came first, a foreign family's key included; ``full_attention_interval`` refused families
whose transformers config has no such field; ``search --dispatcher`` on a dense model was
silently ignored while ``--ep``/``--etp`` were refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import BASE, cli

from trainsim.catalog import model_from_hf_config
from trainsim.errors import ConfigError
from trainsim.search.whatif import Vary


def _error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


# ---------------------------------------------------------------------------- sweep --vary


def test_repeated_vary_values_are_kept_once_in_first_order():
    v = Vary.parse("parallel.tp=2,1,2,4,1,2")
    assert v.values == (2, 1, 4) and v.repeated == 3
    assert v.note() == "--vary parallel.tp: 3 repeated values dropped"
    assert Vary.parse("parallel.tp=1,2").note() is None


def test_repeats_are_the_same_value_of_the_same_type():
    """2 and 2.0 stay two points (a field may take one and refuse the other); names are
    compared as written."""
    assert Vary.parse("training.global_batch_size=2,2.0").values == (2, 2.0)
    assert Vary.parse("cluster.gpu=h100-sxm-80gb,H100-SXM-80GB,h100-sxm-80gb").repeated == 1


def test_sweep_cli_simulates_a_repeated_value_once(tmp_path):
    (tmp_path / "run.yaml").write_text(BASE)
    values = ",".join(["1"] * 500 + ["2", "1"])
    r = cli("sweep", "run.yaml", "--vary", f"parallel.tp={values}", "--format", "json",
            cwd=tmp_path)
    assert r.exit_code == 0, r.output
    assert [row["parallel.tp"] for row in json.loads(r.stdout)["rows"]] == [1, 2]
    assert r.stderr.strip() == "--vary parallel.tp: 500 repeated values dropped"


# ---------------------------------------------------------------------------- search --dispatcher


def test_search_refuses_a_dispatcher_for_a_dense_model(tmp_path):
    (tmp_path / "m.yaml").write_text(BASE.splitlines()[0] + "\n")
    line = _error_line(cli("search", "m.yaml", "--gpus", "8", "--global-batch", "16", "--seq",
                           "512", "--workers", "1", "--dispatcher", "alltoall", cwd=tmp_path))
    assert line.startswith("error: --dispatcher: ") and "dense" in line


# ---------------------------------------------------------------------------- config.json keys

DSV3 = {"model_type": "deepseek_v3", "hidden_size": 1024, "num_hidden_layers": 4,
        "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 1000,
        "intermediate_size": 4096,
        "moe_intermediate_size": 512, "n_routed_experts": 16, "n_shared_experts": 1,
        "num_experts_per_tok": 2, "first_k_dense_replace": 1}
QWEN3_MOE = {"model_type": "qwen3_moe", "hidden_size": 1024, "num_hidden_layers": 4,
             "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 128,
             "vocab_size": 1000, "intermediate_size": 4096, "moe_intermediate_size": 512,
             "num_experts": 16, "num_experts_per_tok": 2}
GEMMA3 = {"model_type": "gemma3_text", "hidden_size": 1024, "num_hidden_layers": 6,
          "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 128,
          "vocab_size": 1000, "intermediate_size": 4096}


def _model(tmp_path: Path, cfg: dict):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return model_from_hf_config(path)


def test_a_foreign_expert_key_is_ignored_with_a_warning(tmp_path):
    """DeepSeek-V3 reads n_routed_experts only (DeepseekV3MoE): num_experts: 0 beside it made
    the model dense, the first expert name found winning."""
    with pytest.warns(Warning, match="num_experts is no deepseek_v3 field .*n_routed_experts"):
        m = _model(tmp_path, {**DSV3, "num_experts": 7})
    assert m.num_experts == 16
    assert _model(tmp_path, {**DSV3, "num_experts": 0}).num_experts == 16


def test_an_attribute_map_alias_is_the_familys_own_key(tmp_path):
    """DeepseekV3Config.attribute_map: num_local_experts sets n_routed_experts."""
    cfg = {k: v for k, v in DSV3.items() if k != "n_routed_experts"}
    assert _model(tmp_path, {**cfg, "num_local_experts": 32}).num_experts == 32


def test_olmoe_reads_its_attribute_map_name(tmp_path):
    """OlmoeConfig.attribute_map: num_local_experts sets num_experts (no warning)."""
    cfg = {**QWEN3_MOE, "model_type": "olmoe"}
    del cfg["num_experts"], cfg["moe_intermediate_size"]  # OLMoE's experts: intermediate_size
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _model(tmp_path, {**cfg, "num_local_experts": 32}).num_experts == 32


def test_a_dense_family_reads_no_expert_key(tmp_path):
    with pytest.warns(Warning, match="num_local_experts is no gemma3_text field"):
        m = _model(tmp_path, {**GEMMA3, "num_local_experts": 8})
    assert not m.is_moe


def test_an_unknown_family_with_disagreeing_expert_keys_is_refused(tmp_path):
    cfg = {**QWEN3_MOE, "model_type": "mystery", "n_routed_experts": 256, "num_experts": 0}
    with pytest.raises(ConfigError, match="disagree on the expert count"):
        _model(tmp_path, cfg)
    assert _model(tmp_path, {**cfg, "num_experts": 256}).num_experts == 256


def test_decoder_sparse_step_is_read_only_where_the_class_has_it(tmp_path):
    assert _model(tmp_path, {**QWEN3_MOE, "decoder_sparse_step": 2}).moe_layer_freq == 2
    assert _model(tmp_path, {**DSV3, "decoder_sparse_step": 2}).moe_layer_freq == 1
    # Qwen3.5-MoE's class has none (its gated attention is refused since fuzz31: the key is
    # dropped before, with a warning)
    from trainsim.catalog import hf_unread

    qwen35 = {**QWEN3_MOE, "model_type": "qwen3_5_moe_text", "decoder_sparse_step": 2}
    with pytest.warns(Warning, match="decoder_sparse_step is read by no qwen3_5_moe_text"):
        assert "decoder_sparse_step" not in hf_unread.unread(qwen35, "config.json")


def test_full_attention_interval_refuses_only_the_families_that_define_it(tmp_path):
    """Gemma 3's class has no full_attention_interval: the key sets nothing there."""
    assert _model(tmp_path, {**GEMMA3, "full_attention_interval": 4}).num_layers == 6
    assert _model(tmp_path, {**GEMMA3, "linear_num_key_heads": 16}).num_layers == 6
    for kind in ("qwen3_next", "mystery"):
        with pytest.raises(ConfigError, match="full_attention_interval=4"):
            _model(tmp_path, {**QWEN3_MOE, "model_type": kind, "full_attention_interval": 4})
