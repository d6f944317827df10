"""A config.json of Llama 4's text model, Qwen3-Next, OLMoE or Qwen3.5(-MoE)'s text model that
gives no expert fields reads its transformers 5.24.0 config class defaults
(``Llama4TextConfig``: 16 local experts, top-1; ``Qwen3NextConfig``: 512 experts, top-10;
``OlmoeConfig``: 64 experts, top-8; ``Qwen3_5MoeTextConfig``: 256 experts, top-8), not a dense
model, and Qwen3.5's dense text model its class widths (``Qwen3_5TextConfig``: 4 key/value
heads, 12288 wide): these families were missing from the generated ``catalog/hf_defaults.py``
(``benchmarks/hf_class_defaults.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainsim.catalog import model_from_hf_config
from trainsim.catalog.hf_defaults import NOT_NULL
from trainsim.catalog.hf_families import class_defaults
from trainsim.errors import ConfigError

CORE = {"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
        "vocab_size": 1000}
LLAMA4 = {"model_type": "llama4_text", **CORE}
# every layer full attention: trainsim refuses Qwen3-Next's default Gated DeltaNet layers
QWEN3_NEXT = {"model_type": "qwen3_next", **CORE, "full_attention_interval": 1}
OLMOE = {"model_type": "olmoe", **CORE}
QWEN3_5_MOE = {"model_type": "qwen3_5_moe_text", **CORE, "full_attention_interval": 1}
QWEN3_5 = {"model_type": "qwen3_5_text", **CORE, "full_attention_interval": 1}


def _model(tmp_path: Path, cfg: dict):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return model_from_hf_config(path)


@pytest.mark.parametrize(("cfg", "experts", "topk"), [(LLAMA4, 16, 1), (OLMOE, 64, 8)])
def test_no_expert_fields_read_the_class_default_experts(tmp_path, cfg, experts, topk):
    model = _model(tmp_path, cfg)
    assert (model.num_experts, model.moe_router_topk) == (experts, topk)


@pytest.mark.parametrize(("cfg", "field", "experts", "topk"), [
    (QWEN3_NEXT, "num_experts", 512, 10), (QWEN3_5_MOE, "num_experts", 256, 8)])
def test_gated_attention_families_take_the_class_default_experts(cfg, field, experts, topk):
    # their files are refused whole (output-gated attention, fuzz31); the defaults still apply
    filled = class_defaults(cfg, "config.json")
    assert (filled[field], filled["num_experts_per_tok"]) == (experts, topk)


@pytest.mark.parametrize("cfg", [QWEN3_NEXT, QWEN3_5_MOE, QWEN3_5])
def test_gated_attention_families_are_refused_in_one_line(tmp_path, cfg):
    with pytest.raises(ConfigError, match="gates each attention output"):
        _model(tmp_path, cfg)


@pytest.mark.parametrize(("cfg", "field"), [(LLAMA4, "num_local_experts"),
                                            (OLMOE, "num_experts")])
def test_the_generated_default_is_what_a_written_field_gives(tmp_path, cfg, field):
    # the table's value, written out, reads the same model; another value reads differently
    default = NOT_NULL[cfg["model_type"]][field]
    assert _model(tmp_path, {**cfg, field: default}) == _model(tmp_path, cfg)
    assert _model(tmp_path, {**cfg, field: 32}).num_experts == 32


def test_qwen3_5_dense_text_reads_its_class_widths():
    filled = class_defaults(QWEN3_5, "config.json")
    assert (filled["num_key_value_heads"], filled["intermediate_size"]) == (4, 12288)
    assert "num_experts" not in filled
