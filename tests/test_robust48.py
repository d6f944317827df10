"""robust48's failure classes, one test each: Gemma 3's per-layer-type ``rope_parameters`` read
for their kinds; ZB-2p's order search shared by the ranks and counted in the work limit; a
vocabulary past 2**21 ids priced from binned Zipf weights instead of a table per id."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.catalog.hf_config import model_from_hf_config
from trainsim.errors import ConfigError, TrainsimWarning
from trainsim.limits import (
    ZB_SEARCH_VARIANTS,
    WorkLimitError,
    check_simulation,
)
from trainsim.workload import pipeline_schedules, token_ids

GEMMA3 = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
          "hidden_size": 640, "intermediate_size": 2048, "num_attention_heads": 4,
          "num_key_value_heads": 1, "head_dim": 256, "num_hidden_layers": 6,
          "vocab_size": 4096, "rms_norm_eps": 1e-6, "hidden_activation": "gelu_pytorch_tanh",
          "sliding_window": 512, "max_position_embeddings": 32768,
          "layer_types": ["sliding_attention"] * 5 + ["full_attention"]}
DEFAULT = {"rope_type": "default", "rope_theta": 10000.0}


def _gemma(tmp_path, full, sliding=DEFAULT):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**GEMMA3, "rope_parameters": {"full_attention": full,
                                                               "sliding_attention": sliding}}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = model_from_hf_config(path)
    return model, [str(w.message) for w in caught if issubclass(w.category, TrainsimWarning)]


def test_a_misspelt_per_layer_type_rope_kind_is_refused_naming_its_layer_type(tmp_path):
    with pytest.raises(ConfigError, match=r"rope_parameters.full_attention rope_type 'yarm' "
                                          r"is no RoPE kind.*did you mean 'yarn'"):
        _gemma(tmp_path, {"rope_type": "yarm", "factor": 8.0})


def test_a_per_layer_type_entry_that_is_no_mapping_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"rope_parameters.full_attention must be a mapping"):
        _gemma(tmp_path, "linear")


def test_an_unknown_per_layer_type_kind_is_named_in_a_warning(tmp_path):
    model, said = _gemma(tmp_path, {"rope_type": "bogus"})
    assert model.rope_scaling is None and model.position_embedding == "rope"
    assert len(said) == 1 and "rope_parameters.full_attention rope_type 'bogus'" in said[0]


def test_yarn_on_one_layer_type_is_priced_as_yarn_with_a_warning_naming_the_others(tmp_path):
    model, said = _gemma(tmp_path, {"rope_type": "yarn", "factor": 8.0})
    assert model.rope_scaling == "yarn"
    assert len(said) == 1 and "full_attention by YaRN but not sliding_attention" in said[0]


def test_yarn_on_every_layer_type_is_yarn_without_a_word(tmp_path):
    model, said = _gemma(tmp_path, {"rope_type": "yarn", "factor": 8.0},
                         {"rope_type": "yarn", "factor": 4.0})
    assert model.rope_scaling == "yarn" and not said


@pytest.mark.parametrize("full", [DEFAULT, {"rope_type": "linear", "factor": 8.0}, None])
def test_gemma3s_own_kinds_read_as_plain_rope_without_a_word(tmp_path, full):
    model, said = _gemma(tmp_path, full)
    assert model.rope_scaling is None and model.position_embedding == "rope" and not said


def test_a_flat_rope_parameters_is_read_as_before(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**GEMMA3, "rope_parameters": {"rope_type": "yarn",
                                                               "factor": 4.0}}))
    assert model_from_hf_config(path).rope_scaling == "yarn"


def _zb(pp: int, microbatches: int, schedule: str = "zb_2p"):
    return run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": pp, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "parallel": {"pp": pp, "pipeline_schedule": schedule},
        "training": {"global_batch_size": microbatches, "seq_length": 256},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": pp, "gpus_per_node": pp,
                    "compute_db": None}})


def test_zb_2p_ranks_share_one_equal_times_search(monkeypatch):
    calls = []
    real = pipeline_schedules.orders
    monkeypatch.setattr(pipeline_schedules, "orders",
                        lambda *a, **k: calls.append(a) or real(*a, **k))
    pipeline_schedules.stage_order.cache_clear()
    pipeline_schedules._equal_zb_2p.cache_clear()
    got = [pipeline_schedules.stage_order("zb_2p", s, 4, 1, 24) for s in range(4)]
    assert len(calls) == 1
    assert [list(o) for o in got] == [list(o) for o in real("zb_2p", 4, 1, 24)]


def test_a_zb_2p_search_over_the_work_limit_is_refused_before_it_runs():
    from trainsim.steady_state import simulated_tasks

    cfg = _zb(8, 200_000)
    # settle58: its searches settle and the shortcut proves the period: ~0.1 CPU s, accepted
    check_simulation(cfg, simulated_tasks(cfg))
    with pytest.raises(WorkLimitError, match=r"simulated tasks.*TRAINSIM_MAX_TASKS"):
        check_simulation(cfg)  # every micro-batch simulated (and searched): refused
    check_simulation(_zb(8, 20_000, "zb_h1"))  # the other schedules' walks are cheap
    check_simulation(_zb(4, 256))


def test_the_limit_counts_every_variant_the_search_builds():
    from trainsim.workload.zb_search import VARIANTS
    assert ZB_SEARCH_VARIANTS == len(VARIANTS)


def test_a_vocabulary_past_the_listed_ids_is_binned_not_tabled():
    weights, ids = token_ids.binned_zipf(2**31)
    assert weights.size < token_ids.VOCAB_LISTED + 10_000 and ids.sum() == 2**31
    assert np.isclose(float(np.sum(weights * ids)), 1.0, rtol=1e-12)
    got = token_ids.text_segments(8192, 2**31)
    assert all(np.isfinite(got)) and 0 < got[0] <= got[1]


@pytest.mark.parametrize("tokens", [4096, 65536])
def test_binned_weights_match_the_listed_ones(tokens):
    vocab = 3_000_000
    listed = token_ids.expected_segments(tokens, token_ids.zipf_weights(vocab))
    binned = token_ids._binned_segments(tokens, *token_ids.binned_zipf(vocab))
    assert np.allclose(binned, listed, rtol=1e-9)


def test_vocabularies_at_and_past_the_listed_ids_price_alike():
    at = token_ids.text_segments(8192, token_ids.VOCAB_LISTED)
    past = token_ids.text_segments(8192, token_ids.VOCAB_LISTED + 1)
    assert np.allclose(at, past, rtol=1e-6)


def test_the_flow_backend_names_a_group_that_straddles_nodes_unevenly():
    """robust48 named the cause of this refusal; edge48 prices the group on its real ranks
    instead (tests/test_edge48.py): the only refusal left is a group too big for the fabric."""
    from trainsim.network.flow import FlowNetwork
    from trainsim.network.topology import from_cluster

    net = FlowNetwork(from_cluster(run_config_from_dict(FLOW_UNEVEN).cluster))
    with pytest.raises(ConfigError, match=r"a group of 4 node\(s\) x 1 GPU\(s\) does not fit"):
        net.ranks_of(4, 1)


FLOW_UNEVEN = {
    "model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
              "vocab_size": 1024, "num_experts": 8, "moe_router_topk": 2,
              "moe_ffn_hidden_size": 256},
    "parallel": {"ep": 2},
    "training": {"global_batch_size": 24, "seq_length": 512},
    "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 6, "gpus_per_node": 3,
                "compute_db": None, "network_backend": "flow"}}
