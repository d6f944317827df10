"""What Megatron-core's ``--recompute-modules mlp`` re-runs and frees in a dense layer (issue 17).

``TransformerLayer._forward_mlp`` checkpoints ``apply_module(self.mlp)`` whole (NVIDIA/Megatron-LM
core_r0.18.0 d0b3b775 transformer_layer.py L501-503, L824-840): the linears' tensor-parallel
communication (sequence-parallel all-gather into fc1, fc2's reduce-scatter or all-reduce) runs
again, and under the Transformer Engine spec the pre-MLP norm fused into ``linear_fc1``
(gpt_layer_specs.py L282/L313/L336 ``pre_mlp_layernorm=... IdentityOp`` for a dense layer),
whose output LayerNormLinear saved is freed. With a separate norm the norm lies outside and its
output, the checkpoint's input, stays. The bias-dropout-add is outside in both.
"""

from __future__ import annotations

import pytest

import trainsim
from trainsim.memory.layer_activations import activation_bytes_per_layer
from trainsim.workload.layers import layer_forward
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

H, F, SEQ = 4096, 14336, 4096  # llama3-8b


def _cfg(tp=2, sp=True, te_spec=False, dtype="bf16", modules=("mlp",)):
    training = {"global_batch_size": 64, "seq_length": SEQ, "dtype": dtype}
    if te_spec:
        training["framework"], training["framework_version"] = "megatron-core", "0.12"
    return trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tensor_model_parallel_size": tp, "sequence_parallel": sp,
                     "recompute": "selective", "recompute_modules": list(modules)},
        "training": training,
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})


def _rerun(cfg):
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=False)
    names = [op.name for op in fwd]
    redo = [op.name.removeprefix("recompute.") for op in layer_recompute(cfg, sh, fwd)]
    return names, redo


@pytest.mark.parametrize("tp,sp", [(2, True), (4, False), (1, False)])
@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_te_spec_mlp_reruns_every_op_between_the_attention_residual_and_the_mlp_residual(tp, sp, dtype):
    names, redo = _rerun(_cfg(tp, sp, te_spec=True, dtype=dtype))
    block = names[names.index("attn_bias_dropout_add") + 1:names.index("mlp_bias_dropout_add")]
    assert "mlp_norm" in block
    assert redo == block
    if tp > 1:
        assert any(n.startswith("mlp.") for n in redo)  # the TP comm inside the checkpoint


@pytest.mark.parametrize("tp,sp", [(2, True), (4, False)])
def test_local_spec_mlp_reruns_the_tp_comm_but_not_the_separate_norm(tp, sp):
    names, redo = _rerun(_cfg(tp, sp, te_spec=False))
    block = names[names.index("mlp_norm") + 1:names.index("mlp_bias_dropout_add")]
    assert redo == block
    assert {"mlp.all_gather", "mlp.reduce_scatter"} <= set(redo) if sp else "mlp.all_reduce" in redo


def _freed(cfg_mlp, cfg_base):
    """Bytes per layer that ``mlp`` frees, against a module that frees nothing in a dense layer."""
    return activation_bytes_per_layer(cfg_base) - activation_bytes_per_layer(cfg_mlp)


@pytest.mark.parametrize("tp,sp", [(2, True), (4, False)])
def test_mlp_frees_the_fc1_input_only_where_the_norm_is_fused(tp, sp):
    T = SEQ  # micro-batch 1
    inner = T * (2 * 2 * F + 2 * F) / tp  # SwiGLU's 16-bit input (both halves) and output
    fc1_input = T * H * 2 / (tp if sp else 1)
    local = _freed(_cfg(tp, sp), _cfg(tp, sp, modules=("shared_experts",)))
    te = _freed(_cfg(tp, sp, te_spec=True), _cfg(tp, sp, te_spec=True, modules=("shared_experts",)))
    assert local == pytest.approx(inner)
    assert te == pytest.approx(inner + fc1_input)


def test_jax_remat_keeps_its_own_rerun_list():
    """MaxText's remat is JAX's (``remat_dce``), not Megatron's module: no comm or norm added."""
    cfg = _cfg(2, True)
    jax_cfg = trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tensor_model_parallel_size": 2, "sequence_parallel": True,
                     "recompute": "selective", "recompute_modules": ["mlp"]},
        "training": {"global_batch_size": 64, "seq_length": SEQ, "dtype": "bf16",
                     "framework": "maxtext"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})
    _, redo = _rerun(jax_cfg)
    assert not any(n.startswith("mlp") for n in redo)
    assert "swiglu" in redo and "fc2" not in redo  # DCE, as before
    assert "mlp.reduce_scatter" in _rerun(cfg)[1]


def test_moe_layer_is_not_checkpointed_by_mlp():
    cfg = trainsim.run_config_from_dict({
        "model": {"preset": "qwen3-30b-a3b"},
        "parallel": {"tensor_model_parallel_size": 2, "sequence_parallel": True,
                     "expert_model_parallel_size": 8, "recompute": "selective",
                     "recompute_modules": ["mlp"]},
        "training": {"global_batch_size": 64, "seq_length": SEQ, "dtype": "bf16",
                     "framework": "megatron-core", "framework_version": "0.12"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})
    sh = shard_of(cfg)
    assert layer_recompute(cfg, sh, layer_forward(cfg, sh, moe=True)) == []
