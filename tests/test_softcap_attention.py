"""Attention-logit soft-capping (Gemma 2): read from config.json and the presets, priced as
three passes over materialized scores, and run unfused under Megatron-Bridge, whose Gemma 2
layer spec builds Gemma2DotProductAttention (NVIDIA-NeMo/Megatron-Bridge@2394d359
src/megatron/bridge/models/gemma/gemma2_provider.py)."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest
from helpers import dgx_h100_run

from trainsim import run_config_from_dict
from trainsim.catalog import model, model_from_hf_config
from trainsim.errors import ConfigError, SettingReplaced, TrainsimWarning
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of
from trainsim.workload.softmax import SOFTCAP_EAGER, softcap_op


def _cfg(framework="megatron-bridge", attention=None, name="gemma-2-2b", **model_changes):
    return dgx_h100_run(framework, attention, name, 4096, **model_changes)


def test_presets_and_config_json_carry_the_cap(tmp_path):
    assert {model(n).attn_logit_softcapping for n in ("gemma-2-2b", "gemma-2-9b",
                                                      "gemma-2-27b")} == {50.0}
    assert model("gemma-3-1b").attn_logit_softcapping is None
    path = tmp_path / "config.json"
    base = {"model_type": "gemma2", "hidden_size": 2304, "num_hidden_layers": 26,
            "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
            "intermediate_size": 9216, "vocab_size": 256000, "rms_norm_eps": 1e-6,
            "hidden_activation": "gelu_pytorch_tanh"}
    for extra, cap in (({}, 50.0), ({"attn_logit_softcapping": 30.0}, 30.0),
                       ({"attn_logit_softcapping": None}, None)):
        path.write_text(json.dumps({**base, **extra}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TrainsimWarning)
            assert model_from_hf_config(path).attn_logit_softcapping == cap


def test_megatron_bridge_runs_a_soft_capped_model_unfused():
    """Its default cuDNN attention is replaced, and said; a model without the cap keeps it; a
    named fused kernel is refused; frameworks without the feature keep their kernel."""
    with pytest.warns(SettingReplaced, match="attn_logit_softcapping=50"):
        assert _cfg().training.attention == "unfused"
    assert _cfg(attn_logit_softcapping=None).training.attention != "unfused"
    with pytest.raises(ConfigError, match="training.attention=cudnn: megatron-bridge"):
        _cfg(attention="cudnn")
    assert _cfg(attention="unfused").training.attention == "unfused"
    assert _cfg(framework="megatron-core").training.attention != "unfused"


def test_the_cap_is_three_passes_over_the_scores_in_the_layer():
    """Unfused: an ``attn_softcap`` op over every materialized score (b x heads/tp x s x s),
    12 bytes and 3 kernels forward, 14 bytes backward; none beside a fused kernel."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SettingReplaced)
        cfg = _cfg()
    sh = shard_of(cfg)
    ops = layer_forward(cfg, sh)
    cap = [op for op in ops if op.name == "attn_softcap"]
    scores = 1 * 8 * 4096 * 4096  # mb 1, 8 heads (tp 1), a 4096 x 4096 score matrix
    assert len(cap) == 1 and cap[0].bytes == pytest.approx(SOFTCAP_EAGER[0][0] * scores)
    assert cap[0].kernels == 3 and cap[0].bwd_bytes == pytest.approx(14 * scores)
    assert [op.name for op in backward_of(ops, sh) if 'softcap' in op.name]
    fused = _cfg(framework="megatron-core")
    assert not [op for op in layer_forward(fused, shard_of(fused)) if op.name == "attn_softcap"]
    assert softcap_op(10.0, compiled=True).bytes == 40.0


def _quiet(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SettingReplaced)
        return _cfg(**kw)


def test_the_cap_keeps_tanh_output_per_score():
    """Eager ``c * tanh(s / c)`` keeps tanh's 16-bit output for its backward: 2 bytes a score
    more per layer (gemma-2-2b, mb 1, 8 heads, s 4096), nothing under selective recompute of
    core attention or beside a fused kernel."""
    from trainsim.memory.estimate import activation_bytes_per_layer
    capped, plain = _quiet(), _quiet(attn_logit_softcapping=None, attention="unfused")
    scores = 1 * 8 * 4096 * 4096
    assert activation_bytes_per_layer(capped) - activation_bytes_per_layer(plain) \
        == pytest.approx(2.0 * scores)
    assert activation_bytes_per_layer(capped, "selective") \
        == pytest.approx(activation_bytes_per_layer(plain, "selective"))
    fused = _cfg(framework="megatron-core")
    fused_plain = _cfg(framework="megatron-core", attn_logit_softcapping=None)
    assert activation_bytes_per_layer(fused) == activation_bytes_per_layer(fused_plain)


def test_nemo_runs_the_same_spec_and_cp_is_refused():
    """NeMo's gemma2 layer spec is Bridge's (unfused); Gemma2DotProductAttention asserts
    context_parallel_size == 1, so cp > 1 is one error naming both fields; a framework with a
    fused soft-capping path (megatron-core here: no feature) keeps cp."""
    with pytest.warns(SettingReplaced, match="attn_logit_softcapping=50"):
        assert _cfg(framework="nemo").training.attention == "unfused"
    for fw in ("megatron-bridge", "nemo"):
        with pytest.raises(ConfigError, match=r"parallel.cp=2: .*attn_logit_softcapping=50"):
            run_config_from_dict({"model": "gemma-2-9b", "parallel": {"cp": 2, "tp": 2},
                                  "training": {"global_batch_size": 8, "micro_batch_size": 1,
                                               "seq_length": 8192, "framework": fw},
                                  "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    cfg = run_config_from_dict({"model": "gemma-2-9b",
                                "parallel": {"cp": 2, "tp": 2, "cp_comm_type": "a2a"},
                                "training": {"global_batch_size": 8, "micro_batch_size": 1,
                                             "seq_length": 8192, "framework": "megatron-core"},
                                "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    assert cfg.parallel.cp == 2


def test_windowed_layers_materialize_the_full_score_matrix():
    """Unfused attention computes every s x s score and masks the window afterwards where the
    profile says so (``masked_window_scores``: Bridge's get_swa mask, Hugging Face's eager
    mask): a windowed layer's score GEMMs, softmax and cap price q_len x kv_len pairs; a fused
    kernel still skips the keys outside the window, and so does an unfused kernel on a
    framework that skips them (MegaScale: its Table 4 sliding-window step raises MFU)."""
    from trainsim.workload.ops import Attention
    win = Attention("core_attn", batch=1, heads=8, kv_heads=4, q_len=8192, kv_len=8192,
                    head_dim=256, window=4096, impl="unfused", masked_window=True)
    assert win.pairs == 8192 * 8192
    assert dataclasses.replace(win, masked_window=False).pairs == 8192 * 4096
    fused = dataclasses.replace(win, impl="flash2")
    w = 4096
    assert fused.pairs == pytest.approx(8192 * w - w * (w - 1) / 2)
    cfg = run_config_from_dict({"model": "gemma-2-2b",
                                "training": {"global_batch_size": 8, "micro_batch_size": 1,
                                             "seq_length": 8192, "attention": "unfused",
                                             "framework": "megatron-bridge"},
                                "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    sh = shard_of(cfg)
    assert sh.masked_window
    caps = {op.bytes for op in layer_forward(cfg, sh) if op.name == "attn_softcap"}
    assert caps == {SOFTCAP_EAGER[0][0] * 8 * 8192 * 8192}
    mega = run_config_from_dict({"model": "gemma-2-2b",
                                 "training": {"global_batch_size": 8, "micro_batch_size": 1,
                                              "seq_length": 8192, "attention": "unfused",
                                              "framework": "megascale"},
                                 "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    assert not shard_of(mega).masked_window


def test_search_space_offers_no_cp_to_a_soft_capped_model_on_the_unfused_spec():
    """The search builds its candidates without the loader, so the same rule
    (``search.rules.softcap_cp_fits``) keeps cp 1 for Gemma 2 under Megatron-Bridge and NeMo;
    a framework without the soft-capping spec (megatron-core) and a model without the cap
    still get cp > 1."""
    from trainsim.search.space import Base, SearchSpace

    def cps(framework, **model_changes):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TrainsimWarning)
            cfg = run_config_from_dict({
                "model": {**dataclasses.asdict(model("gemma-2-9b")), **model_changes},
                "training": {"global_batch_size": 16, "micro_batch_size": 1,
                             "seq_length": 8192, "framework": framework},
                "cluster": {"node": "dgx-h100", "num_gpus": 16}})
        return {k.cp for k in SearchSpace().memory_keys(Base.of(cfg), 16)}

    assert cps("megatron-bridge") == cps("nemo") == {1}
    assert max(cps("megatron-core")) > 1
    assert max(cps("megatron-bridge", attn_logit_softcapping=None)) > 1
