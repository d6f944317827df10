"""edge44: a framework's default ROCm Transformer Engine CK attention at heads CK refuses (512 and
wider) runs what ROCm TE falls back to (``catalog.te_attention.ck_wide_head_attention``,
``config.validity.CK_FALLBACK_SOURCE``): unfused where AOTriton's filter refuses too (MLA's
unequal widths, grouped key/value heads, ALiBi), a one-line refusal
naming AOTriton where it would run (not priced). The replacements fail on the previous src."""

from __future__ import annotations

import copy
import warnings

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.config.validity import ck_head_fallback
from trainsim.errors import ConfigError
from trainsim.simulator import simulate

BASE = {"model": {"hidden_size": 2048, "num_layers": 4, "num_attention_heads": 8,
                  "vocab_size": 32000, "head_dim": 512},
        "parallel": {}, "training": {"global_batch_size": 16, "seq_length": 2048,
                                     "framework": "megatron-core"},
        "cluster": {"gpu": "mi300x", "num_gpus": 8, "gpus_per_node": 8}}


def _raw(model=None, training=None):
    cfg = copy.deepcopy(BASE)
    cfg["model"].update(model or {})
    cfg["training"].update(training or {})
    return cfg


def _replaced(raw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = run_config_from_dict(raw)
    return cfg, [str(w.message) for w in caught if "attention ck ->" in str(w.message)]


@pytest.mark.parametrize("model", [
    {"num_kv_heads": 2},                                           # GQA
    {"head_dim": None, "kv_lora_rank": 512, "qk_head_dim": 512, "v_head_dim": 256,
     "qk_pos_emb_head_dim": 64, "position_embedding": "rope"},    # MLA (576, 256)
    {"position_embedding": "alibi"},                               # bias
])
def test_default_ck_past_512_runs_unfused_where_aotriton_refuses_too(model):
    raw = _raw({k: v for k, v in model.items() if v is not None})
    if model.get("head_dim", 0) is None:
        del raw["model"]["head_dim"]
    cfg, notes = _replaced(raw)
    assert cfg.training.attention == "unfused"
    assert len(notes) == 1 and "ROCm Transformer Engine's CK attention" in notes[0]
    assert simulate(cfg).iteration_time_s > 0


def test_default_ck_where_aotriton_would_run_is_refused_naming_it():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ConfigError, match=r"runs AOTriton .*not priced"):
            run_config_from_dict(_raw())  # multi-head, equal widths of 512


def test_a_stated_ck_past_512_stays_refused():
    with pytest.raises(ConfigError, match="attention=ck trains heads narrower than 512"):
        run_config_from_dict(_raw({"num_kv_heads": 2}, {"attention": "ck"}))


def test_default_ck_below_512_is_kept():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = run_config_from_dict(_raw({"num_kv_heads": 2, "head_dim": 256}))
    assert cfg.training.attention == "ck"


def test_ck_head_fallback_follows_aotritons_filter():
    assert ck_head_fallback(512, 512, False, False, False) == "aotriton"
    assert ck_head_fallback(576, 512, False, False, False) == "unfused"
    assert ck_head_fallback(512, 512, True, False, False) == "unfused"
    assert ck_head_fallback(512, 512, False, True, False) == "unfused"
    assert ck_head_fallback(512, 512, False, False, True) == "unfused"
