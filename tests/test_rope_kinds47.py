"""Unknown rope kinds in a Hugging Face config (robust47; fuzz46's lead 5): one that spells a
known kind is refused naming it, another is read as plain RoPE with a warning that names the
known kinds (every kind but yarn prices as plain RoPE); Phi-3's old ``yarn`` is longrope, as
transformers 5.24.0 configuration_phi3.py L100-103 reads it."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from trainsim.catalog.hf_config import model_from_hf_config
from trainsim.errors import ConfigError, TrainsimWarning

BASE = json.loads((Path(__file__).resolve().parents[1] /
                   "examples/hf/llama3-8b/config.json").read_text())


def _read(tmp_path, kind, **extra):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**BASE, **extra, "rope_scaling": {"type": kind, "factor": 4.0}}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = model_from_hf_config(path)
    return model, [str(w.message) for w in caught if issubclass(w.category, TrainsimWarning)]


@pytest.mark.parametrize("kind,meant", [("yarm", "yarn"), ("llama_3", "llama3"),
                                        ("long_rope", "longrope"), ("lineer", "linear"),
                                        ("YaRN", "yarn"), ("dynamic_ntk", "dynamic")])
def test_a_misspelt_known_kind_is_refused_with_its_name(tmp_path, kind, meant):
    with pytest.raises(ConfigError, match=rf"{kind!r} is no RoPE kind.*did you mean '{meant}'"):
        _read(tmp_path, kind)


@pytest.mark.parametrize("kind", ["bogus", "ntk", "rope", "None", "xpos"])
def test_an_unknown_kind_is_named_in_a_warning_with_the_known_ones(tmp_path, kind):
    model, said = _read(tmp_path, kind)
    assert model.rope_scaling is None and model.position_embedding == "rope"
    assert len(said) == 1 and repr(kind) in said[0]
    assert "yarn, longrope" in said[0] and "priced as plain RoPE" in said[0]


@pytest.mark.parametrize("kind,read", [("yarn", "yarn"), ("linear", None), ("su", None),
                                       ("mrope", None), ("ntk_alpha", None), ("", None)])
def test_known_kinds_read_without_a_word(tmp_path, kind, read):
    model, said = _read(tmp_path, kind)
    assert model.rope_scaling == read and not said


@pytest.mark.parametrize("model_type", ["phi3", "phi4_multimodal"])
def test_phi3s_old_yarn_is_longrope(tmp_path, model_type):
    model, said = _read(tmp_path, "yarn", model_type=model_type)
    assert model.rope_scaling is None and not said


def test_a_remote_code_models_own_kind_is_not_refused(tmp_path):
    remote = {"auto_map": {"AutoModelForCausalLM": "modeling_x.XForCausalLM"}}
    model, said = _read(tmp_path, "yarn2", **remote)
    assert model.rope_scaling is None and len(said) == 1 and "'yarn2'" in said[0]
