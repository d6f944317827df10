"""Selective recompute of Megatron-core's ``--recompute-modules`` other than ``core_attn``
(core_v0.14.0 megatron/core/transformer/transformer_layer.py ``recompute_mlp`` for a dense MLP,
moe/moe_layer.py ``moe_layer_recompute`` around router, dispatch, experts and shared experts,
moe/shared_experts.py, multi_latent_attention.py ``qkv_up_checkpoint``): the matmuls the time
path re-runs before each backward are the ones the HFU numerator counts (matmul FLOPs; a norm's
or an activation's re-run adds none)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trainsim import simulate
from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError
from trainsim.model.counts import hardware_flops_per_iteration, model_flops_per_token
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Attention, Gemm
from trainsim.workload.recompute import core_attn_rerun, layer_recompute
from trainsim.workload.shard import shard_of


def _cfg(modules: list[str], q_lora_rank: int | None = 256):
    """A small DeepSeek-V3-like model on one GPU: MLA with a query LoRA, one dense layer then
    MoE layers (16 experts, top 4, a shared expert), one MTP module; flash attention, so
    ``core_attn`` is not among the re-runs without a framework that checkpoints it."""
    return run_config_from_dict({
        "model": {"hidden_size": 512, "num_layers": 3, "num_attention_heads": 8,
                  "vocab_size": 4096, "ffn_hidden_size": 1536, "activation": "swiglu",
                  "q_lora_rank": q_lora_rank, "kv_lora_rank": 128, "qk_head_dim": 64,
                  "qk_pos_emb_head_dim": 32, "v_head_dim": 64, "num_experts": 16,
                  "moe_router_topk": 4, "moe_ffn_hidden_size": 256,
                  "moe_shared_expert_intermediate_size": 256, "moe_first_dense_layers": 1,
                  "mtp_num_layers": 1},
        "parallel": {"recompute": "selective", "recompute_modules": modules},
        "training": {"global_batch_size": 4, "micro_batch_size": 2, "seq_length": 1024,
                     "attention": "flash2"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 1}})


def _rerun_matmul_flops(cfg) -> float:
    """FLOPs of the GEMMs the time path re-runs in one iteration: per layer (the MTP module's
    like the last layer's, as ``chunks`` builds it) and micro-batch."""
    sh, m = shard_of(cfg), cfg.model
    kinds = [m.is_moe_layer(i) for i in range(m.num_layers)]
    kinds += [kinds[-1]] * m.mtp_num_layers

    def layer(moe: bool) -> float:
        redo = layer_recompute(cfg, sh, layer_forward(cfg, sh, moe=moe))
        return sum(op.flops for op in redo if isinstance(op, Gemm))
    return cfg.num_microbatches * sum(layer(k) for k in kinds)


def _hfu_extra(cfg) -> float:
    model = model_flops_per_token(cfg.model, cfg.training.seq_length) * cfg.tokens_per_iteration
    return hardware_flops_per_iteration(cfg, core_attn_rerun(cfg, fused=True)) - model


@pytest.mark.parametrize("modules", [
    ["mlp"], ["moe"], ["shared_experts"], ["mla_up_proj"], ["mla_up_proj", "mlp"],
    ["moe", "shared_experts", "mlp"], ["moe_act", "layernorm"]])
def test_hfu_counts_the_matmuls_each_module_reruns(modules):
    cfg = _cfg(modules)
    rerun = _rerun_matmul_flops(cfg)
    assert _hfu_extra(cfg) == pytest.approx(rerun, rel=1e-9, abs=1.0)


def test_mla_up_proj_without_a_query_lora_reruns_the_query_projection():
    """Megatron-core's ``qkv_up_proj_and_rope_apply`` (the ``mla_up_proj`` checkpoint) runs
    ``linear_q_proj`` where the query has no LoRA (core_v0.14.0 multi_latent_attention.py):
    time and HFU re-run it. A GQA model's mla_up_proj is refused, as Megatron-core refuses it
    ("only supported with multi_latent_attention"; it was priced as recomputing nothing)."""
    cfg = _cfg(["mla_up_proj"], q_lora_rank=None)
    sh = shard_of(cfg)
    names = {op.name for op in layer_recompute(cfg, sh, layer_forward(cfg, sh, moe=False))}
    assert {"recompute.mla_q_proj", "recompute.kv_up_proj"} <= names
    assert _hfu_extra(cfg) == pytest.approx(_rerun_matmul_flops(cfg), rel=1e-9, abs=1.0)
    with pytest.raises(ConfigError, match="recompute_modules mla_up_proj"):
        run_config_from_dict({
            "model": {"hidden_size": 512, "num_layers": 2, "num_attention_heads": 8,
                      "num_kv_heads": 2, "vocab_size": 4096, "normalization": "rmsnorm"},
            "parallel": {"recompute": "selective", "recompute_modules": ["mla_up_proj"]},
            "training": {"global_batch_size": 4, "micro_batch_size": 2, "seq_length": 1024,
                         "modules": "eager"},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 1}})


def test_every_module_with_matmuls_adds_to_hfu():
    for modules in (["mlp"], ["moe"], ["shared_experts"], ["mla_up_proj"]):
        assert _hfu_extra(_cfg(modules)) > 0, modules
    # norms and the experts' activation run no matmul
    assert _hfu_extra(_cfg(["moe_act", "layernorm"])) == pytest.approx(0.0, abs=1.0)


def test_moe_module_reruns_the_shared_experts_too():
    """moe_layer.py ``custom_forward`` (router, dispatch, ``experts_compute`` with the shared
    experts, combine) is what ``moe`` checkpoints: its re-run runs the shared expert again."""
    cfg = _cfg(["moe"])
    sh = shard_of(cfg)
    names = {op.name for op in layer_recompute(cfg, sh, layer_forward(cfg, sh, moe=True))}
    assert {"recompute.shared_fc1", "recompute.shared_act", "recompute.shared_fc2",
            "recompute.router", "recompute.expert_fc1"} <= names


def _full_cfg(layers_per_stage: int | None):
    """Four layers on two pipeline stages under full recompute; the unfused attention counts
    every score (as the HFU convention does: causal masking not halved)."""
    return run_config_from_dict({
        "model": {"hidden_size": 512, "num_layers": 4, "num_attention_heads": 8,
                  "vocab_size": 4096, "ffn_hidden_size": 1536, "activation": "swiglu"},
        "parallel": {"pp": 2, "recompute": "full"}
        | ({"recompute_num_layers": layers_per_stage} if layers_per_stage else {}),
        "training": {"global_batch_size": 4, "micro_batch_size": 1, "seq_length": 1024,
                     "attention": "unfused"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 2}})


@pytest.mark.parametrize("layers_per_stage", [None, 1])
def test_full_recompute_hfu_counts_the_layers_that_rerun(layers_per_stage):
    """Megatron's block method re-runs the first ``recompute_num_layers`` layers of each
    stage (``RunConfig.recomputed_layers``, the layers the time path re-runs), not all."""
    cfg = _full_cfg(layers_per_stage)
    sh = shard_of(cfg)
    redo = layer_recompute(cfg, sh, layer_forward(cfg, sh, moe=False))
    per_layer = sum(op.flops for op in redo if isinstance(op, (Gemm, Attention)))
    rerun = cfg.num_microbatches * len(cfg.recomputed_layers) * per_layer
    assert len(cfg.recomputed_layers) == (2 if layers_per_stage else 4)
    assert _hfu_extra(cfg) == pytest.approx(rerun, rel=1e-9)


@pytest.mark.parametrize("activation", ["swiglu", "gelu"])
@pytest.mark.parametrize("norm", ["rmsnorm", "layernorm"])
def test_hfu_counts_the_matmuls_torchtitan_per_op_checkpointing_reruns(activation, norm):
    """torchtitan's selective recompute (per-op SAC, profile ``per_op_sac``) re-runs every
    other matmul of a block and saves the attention's output: the HFU extra is those matmuls,
    with separate Q/K/V and gate/up projections (an eager RMSNorm model) or fused ones."""
    from trainsim.workload.recompute import per_op_sac_layout

    cfg = run_config_from_dict({
        "model": {"hidden_size": 512, "num_layers": 2, "num_attention_heads": 8,
                  "num_kv_heads": 2, "vocab_size": 4096, "ffn_hidden_size": 1536,
                  "activation": activation, "normalization": norm},
        "parallel": {"recompute": "selective"},
        "training": {"global_batch_size": 4, "micro_batch_size": 2, "seq_length": 1024,
                     "framework": "torchtitan", "framework_version": "2024-12"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 1}})
    assert per_op_sac_layout(cfg) == (norm == "rmsnorm")
    rerun = _rerun_matmul_flops(cfg)
    assert rerun > 0
    model = model_flops_per_token(cfg.model, cfg.training.seq_length) * cfg.tokens_per_iteration
    extra = hardware_flops_per_iteration(cfg, core_attn_rerun(cfg, fused=True),
                                         per_op_sac_layout(cfg)) - model
    assert extra == pytest.approx(rerun, rel=1e-9)


@pytest.mark.parametrize("inner,ops", [
    ("shared_experts", {"shared_fc1", "shared_act", "shared_fc2"}),
    ("moe_act", {"expert_act"})])
def test_a_module_checkpointed_inside_moe_reruns_twice(inner, ops):
    """Megatron-core nests the checkpoints (core_v0.14.0 moe_layer.py ``custom_forward`` under
    ``moe``'s, the shared experts under ``tensor_parallel.checkpoint``, experts.py's activation
    under ``CheckpointWithoutOutput``): the outer re-run runs the inner module once, the inner
    checkpoint's own backward again. Time and HFU count both."""
    cfg = _cfg(["moe", inner])
    sh = shard_of(cfg)
    names = [op.name for op in layer_recompute(cfg, sh, layer_forward(cfg, sh, moe=True))]
    assert all(names.count(f"recompute.{n}") == 2 for n in ops), names
    assert names.count("recompute.expert_fc1") == 1
    assert _hfu_extra(cfg) == pytest.approx(_rerun_matmul_flops(cfg), rel=1e-9, abs=1.0)
    if inner == "shared_experts":  # the activation runs no matmul
        assert _hfu_extra(cfg) > _hfu_extra(_cfg(["moe"]))


def _mtp_cfg(layers_per_stage: int | None):
    d = _full_cfg(layers_per_stage)
    return replace(d, model=replace(d.model, mtp_num_layers=1))


def test_mtp_recompute_follows_the_uniform_method_only():
    """Megatron-core re-runs an MTP module (its eh_proj and layer) under the uniform method and
    skips it under block (core_v0.14.0 multi_token_prediction.py ``_checkpointed_forward``):
    block over every layer of each stage re-runs the same layers, not the MTP module."""
    uniform, block = _mtp_cfg(None), _mtp_cfg(2)
    assert uniform.recomputed_layers == block.recomputed_layers
    assert uniform.mtp_recomputed and not block.mtp_recomputed
    sh = shard_of(uniform)
    redo = layer_recompute(uniform, sh, layer_forward(uniform, sh, moe=False))
    layer = sum(op.flops for op in redo if isinstance(op, (Gemm, Attention)))
    proj = 2.0 * sh.tokens * 2 * 512 * 512  # eh_proj: 2h -> h
    assert _hfu_extra(uniform) - _hfu_extra(block) == \
        pytest.approx(uniform.num_microbatches * (layer + proj), rel=1e-9)
    assert simulate(uniform).iteration_time_s > simulate(block).iteration_time_s
