"""robust49: the failure classes fuzz49 found, one test each (benchmarks/fuzz49.py)."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

from trainsim.errors import ConfigError
from trainsim.workload import token_ids


def _exact(tokens: float, weights: np.ndarray, monkeypatch) -> tuple[float, float]:
    with monkeypatch.context() as m:
        m.setattr(token_ids, "MID_LISTED", 2**62)
        return token_ids.expected_segments(tokens, weights)


def test_many_ids_drawn_a_few_times_are_binned_within_a_part_in_1e8(monkeypatch):
    """Past MID_LISTED such ids the Poisson block is summed in bins of BIN_RATIO (robust48:
    1e8 ids over 3M rows held a 2M x 200 table, 51-64 s): 82k ids here, the binned partials
    within 1e-8 of the exact sum, the distinct ids identical."""
    w = token_ids.zipf_weights(262_144)
    lam = 1e6 * w
    assert np.sum((lam > 0.5) & (lam <= token_ids.POISSON_EXACT_MAX)) > token_ids.MID_LISTED
    exact = _exact(1e6, w, monkeypatch)
    binned = token_ids.expected_segments(1e6, w)
    assert binned[0] == exact[0]
    assert abs(binned[1] / exact[1] - 1) < 1e-8


def test_few_ids_drawn_a_few_times_keep_the_exact_sum(monkeypatch):
    w = token_ids.zipf_weights(32_000)
    assert token_ids.expected_segments(8192, w) == _exact(8192, w, monkeypatch)


def test_a_hundred_million_ids_over_three_million_rows_take_seconds_not_a_minute():
    start = time.process_time()
    distinct, partials, top, chunk = token_ids.text_segments(10**8, 3_000_000)
    assert time.process_time() - start < 10  # main: 51-64 CPU s, GBs
    assert 0 < distinct <= 3_000_000 and distinct < partials < distinct + 10**8 / 10
    assert partials == pytest.approx(11_706_631.60356531, rel=1e-8)  # main's exact sum
    assert math.isfinite(top) and 0 < chunk <= 32


def test_uniform_ids_over_two_billion_rows_need_no_table_of_them():
    """A kernel database's zeroed table of 2**31 rows (``database`` reads its segments as
    ``uniform_segments``): main allocated 16 GiB of weights."""
    from trainsim.compute.embedding_bwd import uniform_segments

    distinct, partials = uniform_segments(1e8, 2**31)
    lam = 1e8 / 2**31
    assert distinct == pytest.approx(2**31 * -math.expm1(-lam), rel=1e-12)
    assert distinct <= partials <= 1e8
    small = uniform_segments(4e6, 2**19)  # one bin of equal ids past MID_LISTED: exact
    assert small[0] == pytest.approx(2**19 * -math.expm1(-4e6 / 2**19), rel=1e-12)


def test_two_uneven_groups_of_one_shape_are_priced_on_their_own_ranks():
    """On 2 nodes of 4 GPUs, 3 ranks 2 apart ({0, 2, 4}) and 3 ranks 3 apart ({0, 3, 6}) both
    span 2 nodes with a smallest share of 1 (edge48 lead 2: the second shared the first's
    ranks, and its cost)."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.network.flow import FlowNetwork
    from trainsim.network.topology import from_cluster

    cluster = run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 4,
                    "compute_db": None, "network_backend": "flow"}}).cluster
    shared = FlowNetwork(from_cluster(cluster))
    first, second = shared.span(3, 2), shared.span(3, 3)
    assert (first.size, first.per_node, first.nodes) == (second.size, second.per_node,
                                                         second.nodes) == (3, 1, 2)
    assert (first.ranks, second.ranks) == ((0, 2, 4), (0, 3, 6))
    fresh = FlowNetwork(from_cluster(cluster))
    for kind in ("all_reduce", "all_to_all"):
        assert shared.collective(kind, 1e8, second).time_s == \
            fresh.collective(kind, 1e8, fresh.span(3, 3)).time_s
    assert shared.collective("all_reduce", 1e8, first).time_s != \
        shared.collective("all_reduce", 1e8, second).time_s  # rail 0 -> 0 vs 0 -> 2


NEMOTRON_H = {  # the shape of nvidia/Nemotron-H-8B-Base-8K's config.json, cut to 4 layers
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
    "hidden_size": 4096, "num_hidden_layers": 4, "num_attention_heads": 32,
    "num_key_value_heads": 8, "intermediate_size": 21504, "vocab_size": 131072,
    "hybrid_override_pattern": "M-M*", "mamba_num_heads": 128, "mamba_head_dim": 64,
    "ssm_state_size": 128, "conv_kernel": 4, "time_step_limit": [0.0, math.inf]}


def _hf(tmp_path, cfg: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))  # json.dump writes Infinity, as transformers does
    assert "Infinity" in path.read_text() or "NaN" in path.read_text()
    return str(path)


def test_a_hub_file_with_pythons_infinity_in_an_unread_field_is_read(tmp_path):
    """Nemotron-H's config.json holds ``"time_step_limit": [0.0, Infinity]`` (Python's JSON):
    main said only "Infinity is not a JSON number"; robust49 named its Mamba layers instead;
    since mamba50 the hybrid reader (catalog.hf_hybrid) reads the file, the unread field
    ignored."""
    from trainsim.catalog.hf_config import model_from_hf_config

    m = model_from_hf_config(_hf(tmp_path, NEMOTRON_H))
    assert m.hybrid_layer_pattern == "M-M*" and m.mamba_num_heads == 128


def test_infinity_in_a_file_trainsim_can_read_names_its_field(tmp_path):
    from trainsim.catalog.hf_config import model_from_hf_config

    llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
             "hidden_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8,
             "intermediate_size": 1024, "vocab_size": 32000, "hidden_act": "silu",
             "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "time_step_limit": [0.0, math.inf]}
    with pytest.raises(ConfigError, match=r"time_step_limit\[1\] is not a finite JSON number"):
        model_from_hf_config(_hf(tmp_path, llama))
    llama.pop("time_step_limit")
    llama["rope_theta"] = math.nan
    with pytest.raises(ConfigError, match=r"rope_theta is not a finite JSON number"):
        model_from_hf_config(_hf(tmp_path, llama))


@pytest.mark.parametrize("kind, meant", [("Full_Attention", "full_attention"),
                                         ("sliding-attention", "sliding_attention"),
                                         ("", None)])
def test_a_misspelt_softmax_layer_type_is_named_as_misspelt(tmp_path, kind, meant):
    """fuzz49 hf: main refused 'Full_Attention' as a layer trainsim cannot model ("no
    state-space, linear-attention, convolution or recurrent layers")."""
    from trainsim.catalog.hf_config import model_from_hf_config

    qwen3 = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 512,
             "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4,
             "head_dim": 64, "intermediate_size": 1024, "vocab_size": 32000,
             "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 1e6,
             "layer_types": ["full_attention"] * 3 + [kind]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(qwen3))
    with pytest.raises(ConfigError, match="no layer type transformers knows") as refused:
        model_from_hf_config(str(path))
    assert "state-space" not in str(refused.value)
    assert (f"did you mean '{meant}'" in str(refused.value)) == (meant is not None)


def test_the_zero_bubble_search_places_what_it_placed_before_its_rewrite():
    """zb_search's hot path (place, make_room, fill_wait_with_w) rewritten for speed (robust49:
    zb_2p at pp 16 x 4,096 micro-batches took 16 CPU s; the search 1.5x faster): every variant's
    orders and span on 16 shapes hash as main's (ea53e530) did."""
    import hashlib

    from trainsim.workload import zb_search

    h = hashlib.sha256()
    for pp, m in ((2, 7), (4, 24), (5, 13), (8, 40)):
        for cost, comm in (((1.0, 1.0, 1.0), 0.0), ((1.3, 0.7, 0.45), 0.05)):
            for limit, w in ((2.0 * pp, 0.5), (1.5 * pp, 0.3)):
                for variant in zb_search.VARIANTS:
                    orders, span = zb_search.build_order(pp, m, cost, comm, limit, w, variant)
                    h.update(repr(([[tuple(x) for x in o] for o in orders], span)).encode())
    assert h.hexdigest() == "7640aa9d339351ad166c6d36faa3868a4509c010808e8debdaf89ab2b2c493e5"


def test_a_request_bodys_unknown_key_is_refused_naming_the_nearest(tmp_path):
    """fuzz49 http: ``{"kind": "simulate", "config": ..., "option": {"trace": true}}`` was
    queued with its options dropped in silence (pydantic ignores extra keys by default)."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from trainsim.service import Settings, create_app

    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'jobs.db'}", workers=0,
                              checkers=0), start_workers=False)
    config = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                        "vocab_size": 1024},
              "training": {"global_batch_size": 16, "seq_length": 512},
              "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "compute_db": None}}
    with TestClient(app) as client:
        headers = {"Authorization": f"Bearer {app.state.store.create_token('t')}"}
        r = client.post("/api/v1/jobs", json={"kind": "simulate", "config": config,
                                              "option": {"trace": True}}, headers=headers)
        assert r.status_code == 422
        assert r.json() == {"error": "option: Extra inputs are not permitted (did you mean "
                                     "'options'?)", "field": "option"}
        r = client.post("/api/v1/simulate", json={"kind": "simulate", "config": config},
                        headers=headers)
        assert r.status_code == 422 and r.json()["field"] == "kind"
        ok = client.post("/api/v1/jobs", json={"kind": "simulate", "config": config,
                                               "options": {}}, headers=headers)
        assert ok.status_code == 202
