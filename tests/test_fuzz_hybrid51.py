"""The failure class of the hybrid fuzz round (benchmarks/fuzz_hybrid51.py, 51st session) and a
cheap sample of it; the whole round runs under ``-m slow``."""
from __future__ import annotations

import json
import os
import sys

import pytest

from trainsim.catalog.hf_config import model_from_hf_config
from trainsim.errors import ConfigError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))

HF = {"model_type": "nemotron_h", "hybrid_override_pattern": "M-M*MEM*", "hidden_size": 256,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024,
      "intermediate_size": 512, "mamba_num_heads": 8, "mamba_head_dim": 64, "n_groups": 2,
      "ssm_state_size": 64, "n_routed_experts": 8, "num_experts_per_tok": 2,
      "moe_intermediate_size": 256, "moe_shared_expert_intermediate_size": 256,
      "mtp_hybrid_override_pattern": "*E"}


@pytest.mark.parametrize("depths", [2**53, 10**6, 9, -1, 1.5, "2", True, float("nan")])
def test_nextn_predict_layers_that_are_no_count_of_depths_are_refused_by_name(tmp_path, depths):
    """fuzz_hybrid51 hfjson: ``num_nextn_predict_layers`` 2**53 raised MemoryError (the MTP
    pattern repeated 2**53 times), a string, float or NaN a TypeError; each is now one line
    naming the field as written, and counts above the main layers are refused as Megatron-core
    refuses more prediction modules than layers."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(HF, num_nextn_predict_layers=depths)))
    with pytest.raises(ConfigError, match=r"num_nextn_predict_layers=.* must be a whole number "
                                          r"of MTP depths from 0 to the 8 main layers") as info:
        model_from_hf_config(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("depths,layers", [(0, 8), (1, 11), (2, 14), (8, 32), (None, 8)])
def test_nextn_predict_layers_in_range_still_read(tmp_path, depths, layers):
    """A count of depths from 0 to the main layers still builds ``<main>/<mtp>...``."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(HF, num_nextn_predict_layers=depths)))
    model = model_from_hf_config(path)
    assert model.mtp_num_layers == (depths or 0)
    assert len(model.hybrid_layer_pattern) == layers
    assert model.hybrid_layer_pattern.split("/")[0] == "M-M*MEM*"


def test_a_cheap_sample_of_the_hybrid_fuzz_round_is_clean(capsys):
    import fuzz_hybrid51

    assert fuzz_hybrid51.main(["--only", "fields,patterns,hfjson", "--count", "25"]) == 0


@pytest.mark.slow
def test_the_whole_hybrid_fuzz_round_is_clean(capsys):
    import fuzz_hybrid51

    assert fuzz_hybrid51.main([]) == 0
