"""Thirteenth robustness sweep (26th session, fuzz13; benchmarks/fuzz_sweep13.py): config.json
keys left out, doubled or named otherwise against the model transformers 5.24.0 builds, and
``--plot`` names no file system holds. Each case failed on main 871e57e before its fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.catalog import model_from_hf_config
from trainsim.errors import ConfigError
from trainsim.model.counts import total_params

ROOT = Path(__file__).resolve().parents[1]
CORE = {"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
        "vocab_size": 1000}


def _read(tmp_path: Path, cfg: dict):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return model_from_hf_config(path)


# ------------------------------------------- class defaults of the families trainsim reads

@pytest.mark.parametrize(("kind", "field", "value"), [
    ("phimoe", "ffn_hidden_size", 6400), ("phimoe", "num_experts", 16),
    ("granitemoe", "num_experts", 8), ("minimax_m2", "num_experts", 256),
    ("flex_olmo", "num_experts", 7), ("smollm3", "ffn_hidden_size", 11008),
    ("exaone", "ffn_hidden_size", 14336), ("helium", "num_kv_heads", 20),
    ("persimmon", "ffn_hidden_size", 16384), ("opt", "ffn_hidden_size", 3072)])
def test_a_field_left_out_takes_its_class_default(tmp_path, kind, field, value):
    """Before: trainsim's own default (a dense model for the MoE families: PhiMoE -90 %
    parameters; SmolLM3 -39 %): hf_class_defaults.py now generates these families too."""
    heads = {"num_attention_heads": 20} if kind == "helium" else {}
    assert getattr(_read(tmp_path, {"model_type": kind, **CORE, **heads}), field) == value


def test_an_moe_family_reads_its_own_expert_names_only(tmp_path):
    """MiniMax-M2's experts are num_local_experts (num_experts its attribute_map alias);
    FlexOlmo's are num_experts (num_local_experts the alias)."""
    m2 = _read(tmp_path, {"model_type": "minimax_m2", **CORE, "num_experts": 4,
                          "num_experts_per_tok": 2})
    flex = _read(tmp_path, {"model_type": "flex_olmo", **CORE, "num_local_experts": 6,
                            "num_experts_per_tok": 2})
    assert (m2.num_experts, flex.num_experts) == (4, 6)


def test_olmo3_without_layer_types_windows_three_layers_of_four(tmp_path):
    model = _read(tmp_path, {"model_type": "olmo3", **CORE})
    assert (model.sliding_window, model.window_attn_skip_freq) == (4096, 4)


# ------------------------------------------- keys a family names its own way

@pytest.mark.parametrize(("multi_query", "kv"), [(True, 1), (False, 8), (None, 1)])
def test_gpt_bigcode_multi_query_sets_the_key_value_heads(tmp_path, multi_query, kv):
    """StarCoder's config.json: multi_query true, no num_key_value_heads (before: one key/value
    head per query head, +11.7 % parameters); a stale num_key_value_heads is overwritten, as
    GPTBigCodeConfig.__post_init__ does."""
    cfg = {"model_type": "gpt_bigcode", "n_embd": 1024, "n_layer": 4, "n_head": 8,
           "vocab_size": 1000, "num_key_value_heads": 4}
    if multi_query is not None:
        cfg["multi_query"] = multi_query
    assert _read(tmp_path, cfg).num_kv_heads == kv


def test_falcon_ffn_hidden_size_is_read(tmp_path):
    cfg = {"model_type": "falcon", **CORE, "ffn_hidden_size": 3000}
    assert _read(tmp_path, cfg).ffn_hidden_size == 3000


def test_opt_projected_embeddings_refused_naming_the_key(tmp_path):
    cfg = {"model_type": "opt", **CORE, "word_embed_proj_dim": 512}
    with pytest.raises(ConfigError, match="word_embed_proj_dim=512"):
        _read(tmp_path, cfg)
    same = _read(tmp_path, {**cfg, "word_embed_proj_dim": 1024})
    assert total_params(same) > 0


def test_a_missing_mpt_width_names_d_model(tmp_path):
    cfg = {"model_type": "mpt", "d_model": None, "n_heads": 8, "n_layers": 4,
           "vocab_size": 1000}
    with pytest.raises(ConfigError, match="d_model"):
        _read(tmp_path, cfg)


def test_counts_match_transformers_for_starcoder_and_falcon(tmp_path):
    """The oracle the sweep uses: transformers' own model on the meta device."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cases = [("gpt_bigcode", {"n_embd": 512, "n_layer": 2, "n_head": 8, "vocab_size": 1000}),
             ("falcon", {**CORE, "ffn_hidden_size": 3000, "new_decoder_architecture": True,
                         "num_kv_heads": 2})]
    for kind, fields in cases:
        conf = transformers.AutoConfig.for_model(kind, **fields)
        with torch.device("meta"):
            ref = sum(p.numel() for p in
                      transformers.AutoModelForCausalLM.from_config(conf).parameters())
        got = total_params(_read(tmp_path, {"model_type": kind, **fields}))
        assert abs(got / ref - 1) < 0.01, (kind, got, ref)


# ------------------------------------------- --plot names no file system holds

def test_plot_name_over_name_max_refused_before_the_work(tmp_path):
    from click.testing import CliRunner

    from trainsim.cli import main
    path = tmp_path / ("p" * 300 + ".png")
    result = CliRunner().invoke(main, ["simulate", str(ROOT / "examples" / "llama3-8b-h100.yaml"),
                                       "--plot", str(path)], env={"TRAINSIM_DEBUG": "1"})
    assert result.exit_code == 2, result.output
    assert "'--plot'" in result.stderr and "304 bytes" in result.stderr
    assert result.stdout == ""  # nothing simulated first


# ------------------------------------------- the sweep itself

@pytest.mark.slow
def test_fuzz_sweep13_finds_no_failure_class(capsys):
    fuzz_sweep13 = load_script(ROOT / "benchmarks" / "fuzz_sweep13.py")
    os.environ.setdefault("MPLBACKEND", "Agg")
    status = fuzz_sweep13.main(["--n", "60", "--seed", "3"])
    assert status == 0, capsys.readouterr().out  # the classes and their first inputs


# ------------------------------------------- a validate job's uploaded CSV

@pytest.mark.parametrize("text", ["", "a,b\n1,2\n", "id,model,measured_iteration_s\n",
                                  "id,model,measured_iteration_s\n1,2\n"])
def test_an_upload_refused_names_options_csv_not_the_servers_file(tmp_path, text):
    """Before: 422 as field 'config', "/tmp/trainsim-job-XXXX/upload.csv: ..." (a path the
    client never wrote, on the server)."""
    from trainsim.service import Settings, jobs
    settings = Settings(db_url=f"sqlite:///{tmp_path / 'jobs.db'}", workers=0, checkers=0)
    status, field, message = jobs.problem("validate", {}, {"csv": text}, settings)
    assert (status, field) == (422, "options.csv")
    assert message.startswith("options.csv") and "trainsim-job" not in message
