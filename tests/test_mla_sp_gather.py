"""Megatron-core MLA under sequence parallelism (core_v0.14.0 multi_latent_attention.py
351-413, 509-552): the down-projections (TELinear 'duplicated') run on the rank's own
s/TP rows; the up-projections (LayerNormColumnParallelLinear) norm and all-gather the
compressed query and key/value; the shared rotary key is gathered in 16 bits; the hidden
state itself is not gathered. DeepSeek-V3's sizes, TP 2 with SP, one 4096-token sequence."""

from __future__ import annotations

import trainsim
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of

T, TP, H, Q_LORA, KV_LORA, ROPE = 4096, 2, 7168, 1536, 512, 64


def _ops(framework: str = "megatron-bridge", version: str = "25.09") -> tuple[dict, dict]:
    cfg = trainsim.run_config_from_dict({
        "model": {"preset": "deepseek-v3"},
        "parallel": {"tp": TP, "sequence_parallel": True, "ep": 8},
        "training": {"global_batch_size": 64, "seq_length": T, "dtype": "fp8",
                     "fp8_recipe": "delayed", "framework": framework,
                     "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8}})
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=True)
    return {op.name: op for op in fwd}, {op.name: op for op in backward_of(fwd, sh)}


def test_down_projections_run_on_local_rows_and_the_latents_are_gathered():
    fwd, bwd = _ops()
    assert "attn.all_gather" not in fwd
    assert fwd["q_down_proj"].m == T // TP and fwd["kv_down_proj"].m == T // TP
    assert fwd["q_down_proj.cast_transpose"].bytes == T // TP * H * 4  # read 2, write 1 + 1
    assert fwd["q_norm"].bytes == T // TP * Q_LORA * 4
    assert fwd["q_up_proj.all_gather"].bytes == T * Q_LORA  # fp8, the norm wrote it
    assert fwd["kv_up_proj.all_gather"].bytes == T * KV_LORA
    assert fwd["k_pos_emb.all_gather"].bytes == T * ROPE * 2
    assert fwd["q_up_proj"].m == T and fwd["kv_up_proj"].m == T
    assert "q_up_proj.fp8_cast" not in fwd  # delayed scaling: the fused norm wrote fp8
    # backward: the latents' gradients reduce-scattered in 16 bits, the inputs re-gathered
    # for wgrad; the rotary key's gradient reduce-scattered, nothing gathered again for it
    assert bwd["q_up_proj.all_gather.bwd"].bytes == T * Q_LORA * 2
    assert bwd["q_up_proj.all_gather.bwd_regather"].bytes == T * Q_LORA
    assert bwd["k_pos_emb.all_gather.bwd"].kind == "reduce_scatter"
    assert "k_pos_emb.all_gather.bwd_regather" not in bwd


def test_without_the_mechanism_the_hidden_state_is_gathered():
    """A run naming no framework: one gather of the 7168-wide hidden state, the
    down-projections on all 4096 rows."""
    fwd, _ = _ops(framework=None, version=None)
    assert fwd["attn.all_gather"].bytes == T * H
    assert fwd["q_down_proj"].m == T
    assert "q_up_proj.all_gather" not in fwd


def test_megatron_core_duplicates_the_down_projections_from_0_14():
    """Megatron-core itself, not only the recipes on it: 'duplicated' TELinear
    down-projections from core_v0.14.0 (multi_latent_attention.py 370, 409), column-parallel
    at core_v0.13.0; Megatron-LM's main from 720c8b40 (2025-07-29)."""
    for framework, version in (("megatron-core", "0.14"), ("megatron-core", "0.16"),
                               ("megatron-lm", "2025-08")):
        fwd, _ = _ops(framework, version)
        assert "attn.all_gather" not in fwd, (framework, version)
        assert fwd["q_down_proj"].m == T // TP and fwd["kv_down_proj"].m == T // TP
        assert fwd["k_pos_emb.all_gather"].bytes == T * ROPE * 2
    for framework, version in (("megatron-core", "0.13"), ("megatron-lm", "2025-07")):
        fwd, _ = _ops(framework, version)
        assert fwd["attn.all_gather"].bytes == T * H, (framework, version)
        assert fwd["q_down_proj"].m == T
