"""Twelfth robustness round (25th session, fuzz12): the classes the earlier sweeps found with new
seeds, and the leads of the eleventh (RESULTS.md "25th session, fuzz11" / "fuzzleads"). Each
case failed on main 7451986 before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli, one_error_line

from trainsim.catalog import model_from_hf_config
from trainsim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 128, "vocab_size": 100}


def _read(tmp_path: Path, cfg: dict):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return model_from_hf_config(path)


# ------------------------------------------------- a composite's text_config.model_type

@pytest.mark.parametrize("value", [[], [1], {"a": 1}])
def test_a_text_config_model_type_that_is_not_text_is_refused(tmp_path, value):
    # fuzz_sweep9 --seed 12: TypeError (unhashable) at hf_families._not_modelled
    cfg = {"model_type": "llama4", "text_config": {**SMALL, "model_type": value}}
    with pytest.raises(ConfigError, match=r"text_config: model_type must be text") as err:
        _read(tmp_path, cfg)
    assert "\n" not in str(err.value)


# ------------------------------------------------- is_encoder_decoder (fuzzleads lead)

def test_an_unknown_family_that_says_it_is_an_encoder_decoder_is_refused(tmp_path):
    # before: read as a decoder by every name trainsim knows
    cfg = {**SMALL, "model_type": "my_seq2seq", "is_encoder_decoder": True}
    with pytest.raises(ConfigError, match=r"config\.json: is_encoder_decoder is true: an "
                                          r"encoder-decoder") as err:
        _read(tmp_path, cfg)
    assert "\n" not in str(err.value)


def test_a_text_config_that_says_it_is_an_encoder_decoder_is_refused(tmp_path):
    cfg = {"model_type": "my_composite", "vision_config": {},
           "text_config": {**SMALL, "is_encoder_decoder": True}}
    with pytest.raises(ConfigError, match=r"text_config: is_encoder_decoder is true"):
        _read(tmp_path, cfg)


@pytest.mark.parametrize("value", [False, None])
def test_an_unknown_family_that_says_it_is_no_encoder_decoder_still_reads(tmp_path, value):
    cfg = {**SMALL, "model_type": "my_decoder", "is_encoder_decoder": value}
    assert _read(tmp_path, cfg).num_layers == 2


# ------------------------------------------------- tokens under one global batch (fuzzleads)

@pytest.mark.parametrize("tokens, batch", [("1e-9", []), ("4M", []),
                                           ("1000", ["--global-batch", "1"])])
def test_plan_of_fewer_tokens_than_its_global_batch_is_refused(tokens, batch):
    # before: accepted, 0 MWh (the batch is plan's default ~4M tokens or --global-batch)
    line = one_error_line(cli("plan", "llama3-8b", "--tokens", tokens, "--days", "1", *batch),
                          warnings=False)
    assert line.startswith(f"error: --tokens={float(tokens.replace('M', 'e6')):g} is fewer "
                           "tokens than one global batch"), line


def test_a_plan_job_of_fewer_tokens_than_its_global_batch_is_refused_when_submitted():
    pytest.importorskip("sqlalchemy")
    from trainsim.service import Settings, jobs
    settings = Settings(db_url="sqlite:///unused.db", workers=0, checkers=0)
    run = {"model": "llama3-8b", "cluster": {"gpu": "h100-sxm-80gb"}}
    status, field, message = jobs.problem("plan", run, {"tokens": "1e-9", "days": 1}, settings)
    assert (status, field) == (422, "options.tokens")
    assert message.startswith("options.tokens=1e-09 is fewer tokens than one global batch")
    assert jobs.problem("plan", run, {"tokens": "15T", "days": 30}, settings) is None


def test_simulate_train_tokens_under_one_batch_are_refused():
    # before: days 8e-10, cost $4e-7 for 5 tokens of a 1,048,576-token batch
    line = one_error_line(cli("simulate", str(ROOT / "examples" / "llama3-8b-h100.yaml"),
                        "--set", "training.train_tokens=5"), warnings=False)
    assert "training.train_tokens=5 is fewer tokens than one global batch (1,048,576" in line
