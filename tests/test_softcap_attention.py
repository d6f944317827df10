"""Attention-logit soft-capping (Gemma 2): read from config.json and the presets, priced as
three passes over materialized scores, and run unfused under Megatron-Bridge, whose Gemma 2
layer spec builds Gemma2DotProductAttention (NVIDIA-NeMo/Megatron-Bridge@2394d359
src/megatron/bridge/models/gemma/gemma2_provider.py)."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest

from trainsim import run_config_from_dict
from trainsim.catalog import model, model_from_hf_config
from trainsim.errors import ConfigError, SettingReplaced, TrainsimWarning
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of
from trainsim.workload.softmax import SOFTCAP_EAGER, softcap_op


def _cfg(framework="megatron-bridge", attention=None, name="gemma-2-2b", **model_changes):
    training = {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 4096,
                "framework": framework}
    if attention:
        training["attention"] = attention
    m = {**dataclasses.asdict(model(name)), **model_changes} if model_changes else name
    return run_config_from_dict({"model": m, "training": training,
                                 "cluster": {"node": "dgx-h100", "num_gpus": 8}})


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
