"""Transformer Engine runs cuDNN attention in training on Blackwell only for heads of at most 128
(query/key and value): NVIDIA/TransformerEngine v2.0 common/fused_attn/fused_attn.cpp line 156,
v2.2-v2.4 line 221 (``!(sm_arch_ >= 100 && (head_dim_qk > 128 || head_dim_v > 128))``); MLA's
(192, 128) from v2.5 line 250 with cuDNN >= 9.11. Wider heads run FlashAttention 2 (equal
widths up to 256) or the unfused attention (v2.3 pytorch/attention/dot_product_attention/
utils.py lines 475-505). NeMo 25.02 / 25.04 (profile ``cudnn_sm100_head_dim_max``,
``cudnn_sm100_mla``): Nemotron-4 340B's 192-wide heads on FlashAttention 2, DeepSeek-V3's MLA
unfused, both on cuDNN on Hopper; 128-wide heads on cuDNN everywhere."""

from __future__ import annotations

import warnings

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import framework_profile
from trainsim.catalog.te_attention import head_dims
from trainsim.errors import ConfigError, SettingReplaced


def _cfg(name: str, gpu: str, version: str = "25.04", framework: str = "nemo", **training):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = run_config_from_dict({
            "model": name, "parallel": {"tp": 8, "pp": 1, "sequence_parallel": True},
            "training": {"seq_length": 4096, "global_batch_size": 64, "micro_batch_size": 1,
                         "framework": framework, "framework_version": version, **training},
            "cluster": {"gpu": gpu, "num_gpus": 8}})
    notes = [str(w.message) for w in caught if issubclass(w.category, SettingReplaced)]
    return cfg.training.attention, notes


def test_head_widths_as_transformer_engine_reads_them():
    from trainsim.catalog import model

    assert head_dims(model("nemotron4-340b")) == (192, 192)
    assert head_dims(model("deepseek-v3")) == (192, 128)
    assert head_dims(model("llama3.1-405b")) == (128, 128)


@pytest.mark.parametrize("version", ["25.02", "25.04"])
def test_nemo_runs_nemotron4_340b_on_flash_attention_on_blackwell(version):
    for gpu in ("gb200", "b200-sxm-180gb"):
        kernel, notes = _cfg("nemotron4-340b", gpu, version)
        assert kernel == "flash2"
        assert any("attention cudnn -> flash2" in n and "192" in n for n in notes)
    assert _cfg("nemotron4-340b", "h100-sxm-80gb", version) == ("cudnn", [])
    assert _cfg("llama3.1-405b", "gb200", version) == ("cudnn", [])


def test_mla_heads_run_unfused_before_te_2_5_and_cudnn_where_the_cudnn_is_unknown():
    assert _cfg("deepseek-v3", "gb200")[0] == "unfused"  # 25.04: TE bee4649c, no MLA clause
    assert _cfg("deepseek-v3", "h100-sxm-80gb")[0] == "cudnn"
    # Megatron-Bridge: TE v2.8 takes MLA's heads with cuDNN >= 9.11 (the cuDNN not stated:
    # cudnn_sm100_mla null keeps cuDNN), no TE takes Nemotron-4 340B's 192/192 in training
    bridge = {"framework": "megatron-bridge", "version": "26.04"}
    assert _cfg("deepseek-v3", "gb200", **bridge)[0] == "cudnn"
    assert _cfg("nemotron4-340b", "gb200", **bridge)[0] == "flash2"


def test_profiles_state_the_limit_and_a_named_cudnn_is_refused():
    assert framework_profile("nemo", "25.04").features["cudnn_sm100_head_dim_max"] == 128
    assert framework_profile("nemo", "25.04").features["cudnn_sm100_mla"] is False
    assert framework_profile("megatron-bridge", "26.04").features.get("cudnn_sm100_mla") is None
    assert framework_profile("nemo", "24.09").features.get("cudnn_sm100_head_dim_max") is None
    # a profile that states no limit keeps the kernel (no Blackwell-built TE in 24.09)
    assert _cfg("nemotron4-340b", "gb200", "24.09", attention="cudnn") == ("cudnn", [])
    with pytest.raises(ConfigError, match="set training.attention=flash2"):
        _cfg("nemotron4-340b", "gb200", attention="cudnn")


def test_nemo_25_07_takes_mla_heads_on_cudnn_but_not_nemotron4_340b():
    """NeMo 25.07 (v2.4.0) pins TE f05f12c97 (v2.5): fused_attn.cpp L249-251 takes MLA's
    (192, 128) heads in training on Blackwell with cuDNN >= 9.11, the container's cuDNN is stated
    nowhere read (cudnn_sm100_mla null: cuDNN kept); L233-248 keep other heads over 128 off
    cuDNN in training (Nemotron-4 340B: FlashAttention 2 as on 25.04)."""
    feats = framework_profile("nemo", "25.07").features
    assert framework_profile("nemo", "v2.4.0").version == "25.07"
    assert feats["cudnn_sm100_head_dim_max"] == 128 and feats["cudnn_sm100_mla"] is None
    assert _cfg("deepseek-v3", "gb200", "25.07")[0] == "cudnn"
    assert _cfg("deepseek-v3", "gb200", "25.04")[0] == "unfused"
    assert _cfg("nemotron4-340b", "gb200", "25.07")[0] == "flash2"
    assert _cfg("llama3.1-405b", "gb200", "25.07") == ("cudnn", [])
