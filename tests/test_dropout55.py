"""Where a run's dropout comes from (issue 17 item 2, dropout55): the run's own value, else the
framework profile's for the model's position-embedding family, else the model preset's, else
ModelConfig's 0.0 (``catalog.defaults.DROPOUTS``); a validation row says whose it took."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from trainsim.catalog import frameworks as fw
from trainsim.catalog import run_config_from_dict
from trainsim.catalog.defaults import DROPOUTS, profile_dropouts
from trainsim.catalog.defaults_schema import DEFAULTS
from trainsim.errors import CatalogError
from trainsim.validate.assumed import dropout_assumed

BASE = {"parallel": {"tp": 8, "pp": 1},
        "training": {"global_batch_size": 512, "micro_batch_size": 1, "seq_length": 2048},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 512}}


def _cfg(model, framework=None, version=None):
    d = copy.deepcopy(BASE)
    d["model"] = model
    if framework:
        d["training"]["framework"] = framework
    if version:
        d["training"]["framework_version"] = version
    return run_config_from_dict(d)


def _dropouts(cfg):
    return tuple(getattr(cfg.model, k) for k in DROPOUTS)


def test_mlperf_reference_sets_no_dropout_over_the_gpt3_preset():
    # conf/custom.yaml L71-72 (training_results_v3.1): 0.0 whatever the preset says
    assert _dropouts(_cfg("gpt3-175b")) == (0.1, 0.1)
    assert _dropouts(_cfg("gpt3-175b", "mlperf-nemo", "3.1")) == (0.0, 0.0)
    assert _dropouts(_cfg("gpt3-175b", "mlperf-nemo", "4.1")) == (0.0, 0.0)


def test_the_runs_own_value_beats_the_profile_field_by_field():
    cfg = _cfg({"preset": "gpt3-175b", "attention_dropout": 0.05}, "mlperf-nemo")
    assert _dropouts(cfg) == (0.05, 0.0)


def test_a_profile_that_leaves_it_to_the_model_keeps_the_preset():
    assert _dropouts(_cfg("gpt3-175b", "pytorch")) == (0.1, 0.1)
    assert _dropouts(_cfg("llama3-8b", "pytorch")) == (0.0, 0.0)


def test_megatron_keys_its_default_by_family_not_by_name():
    # --attention-dropout 0.1 under the GPT-3 scripts; 0.0 in every RoPE-family recipe
    assert _dropouts(_cfg("gpt3-175b", "megatron-core")) == (0.1, 0.1)
    assert _dropouts(_cfg("llama3-70b", "megatron-core")) == (0.0, 0.0)
    # the same shape with learned positions is the GPT-3 family: the argparse default
    learned = _cfg({"preset": "llama3-70b", "position_embedding": "learned"}, "megatron-core")
    assert _dropouts(learned) == (0.1, 0.1)
    # a family the mapping does not list is the model's own: BLOOM's ALiBi under Megatron-core
    alibi = _cfg({"preset": "bloom-176b", "attention_dropout": 0.0}, "megatron-core")
    assert _dropouts(alibi) == (0.0, 0.1)


def test_megatron_deepspeed_bloom_keeps_megatrons_defaults():
    assert _dropouts(_cfg("bloom-176b", "megatron-deepspeed")) == (0.1, 0.1)
    assert _dropouts(_cfg("llama2-7b", "megatron-deepspeed")) == (0.0, 0.0)


def test_a_model_with_no_preset_and_no_profile_default_is_dropout_free():
    shape = {"name": "m", "hidden_size": 1024, "num_layers": 4, "num_attention_heads": 8,
             "ffn_hidden_size": 4096, "vocab_size": 32000, "max_position_embeddings": 4096}
    assert _dropouts(_cfg(shape, "pytorch")) == (0.0, 0.0)
    assert _dropouts(_cfg(shape, "megatron-lm")) == (0.1, 0.1)  # learned: Megatron's 0.1


@pytest.mark.parametrize("name", sorted(fw.framework_names()))
def test_every_profile_states_both_dropouts_the_same_way(name):
    prof = fw.framework_profile(name)
    for family in ("learned", "rope", "alibi", "none"):
        got = profile_dropouts(prof, family)
        assert set(got) in (set(), set(DROPOUTS)), (name, family, got)
        assert all(0.0 <= v < 1.0 for v in got.values())


@pytest.mark.parametrize("value, needle", [
    (1.5, "probability"), (1.0, "below 1"), ({"gpt3": 0.1}, "position-embedding family"),
    ({"rope": 2}, "rope"), ({"rope": None, "learned": 0.1}, None), (0.1, None)])
def test_the_schema_reads_a_number_or_a_family_mapping(value, needle):
    problem = DEFAULTS["attention_dropout"](value)
    assert (problem is None) if needle is None else (needle in problem)


def test_a_bad_family_in_a_profile_file_is_a_one_line_error(tmp_path: Path):
    src = Path(fw.__file__).parent / "frameworks" / "torchtitan.yaml"
    data = yaml.safe_load(src.read_text())
    data["versions"][0]["defaults"]["hidden_dropout"] = {"llama": 0.0}
    path = tmp_path / "torchtitan.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CatalogError, match=r"torchtitan\.yaml.*hidden_dropout.*'llama'") as exc:
        fw._read(path)
    assert "\n" not in str(exc.value)


def _row(**cells):
    return {"model": "gpt3-175b", "attention_dropout": "", "hidden_dropout": "", **cells}


def test_a_row_says_whose_dropout_it_took():
    note = dropout_assumed(_row(), _cfg("gpt3-175b", "mlperf-nemo"))
    assert note == "attention and hidden 0 (mlperf-nemo's, not the preset's 0.1)"
    note = dropout_assumed(_row(), _cfg("gpt3-175b", "megatron-lm"))
    assert note == "attention and hidden 0.1 (megatron-lm's for learned-position models)"
    assert dropout_assumed(_row(), _cfg("gpt3-175b", "pytorch")) == \
        "attention and hidden 0.1 (gpt3-175b preset's)"


def test_a_row_that_states_its_dropouts_or_prices_none_has_no_note():
    stated = _row(attention_dropout="0", hidden_dropout="0")
    cfg = _cfg({"preset": "gpt3-175b", "attention_dropout": 0.0, "hidden_dropout": 0.0})
    assert dropout_assumed(stated, cfg) is None
    llama = _row(model="llama3-8b")
    assert dropout_assumed(llama, _cfg("llama3-8b", "megatron-core")) is None
